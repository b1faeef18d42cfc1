// Class conditioning's inputs. A conditional network reads the batch's classes from
// Context::labels, one-hot (n, classes) FP32, beside its one tensor input.
//
// ClassEmbedding: the generator's class input, a learned map per class, y (n, ...) = onehot(y) W,
// W (classes, features) -- nn.Embedding's weight. Summed with the DCGAN generator's first
// transposed convolution (core/models/dcgan.cpp) it is exactly a one-hot class vector
// concatenated to z before that convolution (its 1x1 input makes the convolution linear in the
// concatenation), i.e. Mirza & Osindero's conditional GAN with the class embedding learned.
#pragma once

#include <vector>

#include "core/nn/layer.h"

namespace ampgan {

// The batch's one-hot labels from ctx, checked against the batch size and class count, in
// dtype (cast into buf when the network computes in half precision).
const Tensor& class_one_hot(Context& ctx, int64_t batch, int classes, DType dtype, Tensor& buf, const char* layer);
// Uploads one_hot (n, classes) FP32 for classes[0..n); a class outside [0, classes) throws Error.
void upload_one_hot(Backend& b, Tensor& one_hot, const int32_t* labels, int classes);
// The classes of samples [first, first + n): given[first + i], or (first + i) % classes without.
std::vector<int32_t> sample_classes(int first, int n, int classes, const std::vector<int32_t>& given);
// A sample grid's classes, a row per class (row r: class r % classes); empty when classes is 0.
std::vector<int32_t> grid_row_classes(int rows, int cols, int classes);

class ClassEmbedding final : public Layer {
 public:
  // Each sample gets a map of shape per_sample (e.g. {4, 4, c} for a 4x4 feature map).
  ClassEmbedding(Backend& b, const std::string& prefix, int classes, Shape per_sample);
  std::string type() const override { return "ClassEmbedding"; }
  Shape output_shape(const Shape& in) const override;
  // x only gives the batch size: the output depends on the labels alone.
  const Tensor& forward(Context& ctx, const Tensor& x) override;
  const Tensor& backward(Context& ctx, const Tensor& dy, InputGrad input_grad) override;  // dx = 0
  std::vector<Parameter*> parameters() override { return {&weight_}; }
  double flops(const Shape& in) const override { return 2.0 * in[0] * classes_ * features_; }
  int classes() const { return classes_; }

 private:
  int classes_;
  int64_t features_;
  Shape per_sample_;
  Parameter weight_;
  Tensor labels_, labels_cast_;  // the forward's one-hot labels, for the weight gradient
  Shape in_shape_;
};

}  // namespace ampgan
