// Layers with explicit forward and backward passes. Each layer owns its output and input-grad
// buffers and reuses them from step to step (they only grow), so a step allocates nothing after
// the first and buffer addresses stay fixed -- which a captured CUDA graph needs.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/backend/backend.h"

namespace ampgan {

// How a forward pass treats batch norm: Train uses batch statistics and updates the running
// averages; Sample uses batch statistics without touching them (drawing samples between steps
// must not change training); Eval uses the running averages.
enum class Mode : uint8_t { Train, Sample, Eval };

struct Context {
  Backend& backend;
  DType dtype = DType::F32;  // activations and the weights' working copies
  Mode mode = Mode::Train;
  bool param_grads = true;   // compute weight gradients in backward
  bool accumulate = false;   // add weight gradients to the existing ones instead of overwriting
  // Training forwards update staged copies of the running statistics, which the caller commits
  // or reverts once it knows whether the step counts (Sequential::commit_running_stats).
  bool staged_running_stats = false;
};

// A trained tensor: FP32 master weights, the working copy the ops read (the master itself in
// FP32 mode, a half copy otherwise), its gradient, and Adam's FP32 moments.
struct Parameter {
  std::string name;        // PyTorch state_dict key of the peer model, e.g. "3.weight"
  Shape shape;             // our layout (KRSC for convolutions)
  bool fp32_only = false;  // batch-norm scale and shift stay FP32 in every mode (as in autocast)
  Tensor master, working, grad, m, v;

  // Allocates the working copy and gradient for a compute dtype and fills the copy from the
  // master weights. Master weights and moments are untouched: precision can change any time.
  void set_precision(Backend& b, DType compute);
  // Re-derives the working copy after the master weights were changed from outside (loading).
  void refresh_working(Backend& b);
};

// FP32 state that is saved but not trained (batch-norm running averages).
struct StateBuffer {
  std::string name;
  Tensor value;
};

class Layer {
 public:
  virtual ~Layer() = default;
  virtual std::string type() const = 0;
  virtual Shape output_shape(const Shape& in) const = 0;
  virtual const Tensor& forward(Context& ctx, const Tensor& x) = 0;
  // dy has the output's shape. Returns dL/dx (undefined when !need_dx); writes or accumulates
  // weight gradients when ctx.param_grads.
  virtual const Tensor& backward(Context& ctx, const Tensor& dy, bool need_dx) = 0;
  virtual std::vector<Parameter*> parameters() { return {}; }
  virtual std::vector<StateBuffer*> buffers() { return {}; }
  virtual double flops(const Shape& /*in*/) const { return 0.0; }
  // Running statistics with their staged copies (see Context::staged_running_stats).
  virtual void staged_pairs(std::vector<Tensor>& /*running*/, std::vector<Tensor>& /*staged*/) {}
  // One power iteration of every spectral-normalised weight (once per discriminator step).
  virtual void update_spectral_norm(Backend& /*b*/) {}

 protected:
  // Resizes a reusable buffer: keeps its memory when large enough and of the same dtype.
  static void ensure(Backend& b, Tensor& buf, const Shape& shape, DType dtype,
                     MemCategory category = MemCategory::Activation);
  static Parameter make_parameter(Backend& b, std::string name, Shape shape, bool fp32_only);
  static void check_dtype(const Tensor& t, DType expected, const char* layer, const char* what);
  // What backward returns when no input gradient was asked for (the buffer dx_ is kept).
  static const Tensor& no_grad() {
    static const Tensor none;
    return none;
  }

  Tensor out_, dx_;
};

class Sequential {
 public:
  void add(std::unique_ptr<Layer> layer) { layers_.push_back(std::move(layer)); }
  const Tensor& forward(Context& ctx, const Tensor& x);
  const Tensor& backward(Context& ctx, const Tensor& dy, bool need_dx);
  Shape output_shape(Shape in) const;
  double flops(Shape in) const;
  void update_spectral_norm(Backend& b);

  std::vector<Parameter*> parameters();
  std::vector<StateBuffer*> buffers();
  std::vector<Tensor> gradients();  // in parameter order
  // Commits the staged running statistics if every scalars[skip_slots[i]] is 0, else reverts
  // them (Backend::batchnorm_commit_running): on the device, no host synchronisation.
  void commit_running_stats(Backend& b, const Tensor& scalars, const std::vector<int>& skip_slots);
  // Every layer's (running, staged) pairs, nested blocks included.
  void staged_pairs(std::vector<Tensor>& running, std::vector<Tensor>& staged);
  // Staged copies := running statistics, after these were loaded from a checkpoint.
  void reset_staged_running_stats(Backend& b);
  void set_precision(Backend& b, DType compute);
  DType precision() const { return dtype_; }
  size_t size() const { return layers_.size(); }
  Layer& layer(size_t i) { return *layers_[i]; }
  int64_t parameter_count();

 private:
  std::vector<std::unique_ptr<Layer>> layers_;
  DType dtype_ = DType::F32;
  Tensor empty_;
};

}  // namespace ampgan
