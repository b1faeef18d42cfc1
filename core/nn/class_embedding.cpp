#include "core/nn/class_embedding.h"

#include "core/common/error.h"

namespace ampgan {

const Tensor& class_one_hot(Context& ctx, int64_t batch, int classes, DType dtype, Tensor& buf, const char* layer) {
  if (!ctx.labels)
    throw Error(std::string(layer) + ": this class-conditional network was run without labels", "",
                "pass the batch's classes (Context::labels); a bug in the caller");
  const Tensor& l = *ctx.labels;
  if (l.dtype() != DType::F32 || l.shape().rank != 2 || l.shape()[0] < batch || l.shape()[1] != classes)
    throw Error(std::string(layer) + ": labels must be one-hot (" + std::to_string(batch) + ", " +
                    std::to_string(classes) + ") FP32, not " + l.shape().str(),
                "", "a bug in the caller");
  const Tensor v = l.shape()[0] == batch ? l : l.view(Shape{batch, classes});
  if (dtype == DType::F32) {
    buf = v;
    return buf;
  }
  if (!buf.defined() || buf.dtype() != dtype || buf.shape() != v.shape())
    buf = ctx.backend.empty(v.shape(), dtype, MemCategory::Activation);
  ctx.backend.cast(v, buf);
  return buf;
}

void upload_one_hot(Backend& b, Tensor& one_hot, const int32_t* labels, int classes) {
  const int64_t n = one_hot.shape()[0];
  if (!labels)
    throw Error("this class-conditional model was given a batch without labels", "--conditional",
                "train it on a labelled dataset (Fashion-MNIST, a folder with a subfolder per class, or a zip "
                "with dataset.json labels), or turn --conditional off");
  std::vector<float> h(static_cast<size_t>(n) * classes, 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    if (labels[i] < 0 || labels[i] >= classes)
      throw Error("class " + std::to_string(labels[i]) + " is not one of this model's " + std::to_string(classes) +
                      " classes (0 to " + std::to_string(classes - 1) + ")",
                  "--class", "ask for a class the run was trained on");
    h[static_cast<size_t>(i) * classes + labels[i]] = 1.0f;
  }
  b.upload(one_hot, h.data(), h.size() * sizeof(float));
}

std::vector<int32_t> sample_classes(int first, int n, int classes, const std::vector<int32_t>& given) {
  std::vector<int32_t> c(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) c[i] = given.empty() ? (first + i) % classes : given[first + i];
  return c;
}

std::vector<int32_t> grid_row_classes(int rows, int cols, int classes) {
  std::vector<int32_t> c;
  if (classes <= 0) return c;
  for (int r = 0; r < rows; ++r) c.insert(c.end(), static_cast<size_t>(cols), r % classes);
  return c;
}

ClassEmbedding::ClassEmbedding(Backend& b, const std::string& prefix, int classes, Shape per_sample)
    : classes_(classes), features_(per_sample.numel()), per_sample_(per_sample) {
  weight_ = make_parameter(b, prefix + "weight", Shape{classes, features_}, false);
}

Shape ClassEmbedding::output_shape(const Shape& in) const {
  Shape out;
  out.rank = per_sample_.rank + 1;
  out.d[0] = in[0];
  for (int i = 0; i < per_sample_.rank; ++i) out.d[i + 1] = per_sample_[i];
  return out;
}

const Tensor& ClassEmbedding::forward(Context& ctx, const Tensor& x) {
  const int64_t n = x.shape()[0];
  in_shape_ = x.shape();
  labels_ = class_one_hot(ctx, n, classes_, ctx.dtype, labels_cast_, "ClassEmbedding");
  ensure(ctx.backend, out_, output_shape(x.shape()), ctx.dtype);
  Tensor y = out_.view(Shape{n, features_});
  ctx.backend.gemm(false, false, static_cast<int>(n), static_cast<int>(features_), classes_, 1.0f, labels_,
                   weight_.working, 0.0f, y);
  return out_;
}

const Tensor& ClassEmbedding::backward(Context& ctx, const Tensor& dy, InputGrad input_grad) {
  const int64_t n = in_shape_[0];
  if (ctx.param_grads)
    ctx.backend.gemm(true, false, classes_, static_cast<int>(features_), static_cast<int>(n), 1.0f, labels_,
                     dy.view(Shape{n, features_}), ctx.accumulate ? 1.0f : 0.0f, weight_.grad);
  if (input_grad == InputGrad::Skip) return no_grad();
  ensure(ctx.backend, dx_, in_shape_, ctx.dtype);
  ctx.backend.fill(dx_, 0.0f);
  return dx_;
}

}  // namespace ampgan
