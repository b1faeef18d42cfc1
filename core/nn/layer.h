// Layers with explicit forward and backward passes. Each layer owns its output and input-grad
// buffers and reuses them from step to step (they only grow), so a step allocates nothing after
// the first and buffer addresses stay fixed -- which a captured CUDA graph needs.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/backend/backend.h"

namespace ampgan {
class Sequential;
}

namespace ampgan {

// How a forward pass treats batch norm: Train uses batch statistics and updates the running
// averages; Sample uses batch statistics without touching them (drawing samples between steps
// must not change training); Eval uses the running averages.
enum class Mode : uint8_t { Train, Sample, Eval };

// Whether a network's backward returns the gradient of its input (the G step needs D's, to go on
// into G; a network's first layer otherwise need not compute it).
enum class InputGrad : bool { Skip = false, Return = true };

struct Context {
  Backend& backend;
  DType dtype = DType::F32;  // activations and the weights' working copies
  Mode mode = Mode::Train;
  bool param_grads = true;  // compute weight gradients in backward
  bool accumulate = false;  // add weight gradients to the existing ones instead of overwriting
  // Training forwards update staged copies of the running statistics, which the caller commits
  // or reverts once it knows whether the step counts (Sequential::commit_running_stats).
  bool staged_running_stats = false;
  // A class-conditional network's classes for this batch: one-hot (n, classes) FP32
  // (core/nn/class_embedding.h); null for an unconditional one.
  const Tensor* labels = nullptr;
};

// A trained tensor: FP32 master weights, the working copy the ops read (the master itself in
// FP32 mode, a half copy otherwise) and its gradient. (Adam's moments are Adam's: core/optim.)
struct Parameter {
  std::string name;        // PyTorch state_dict key of the peer model, e.g. "3.weight"
  Shape shape;             // our layout (KRSC for convolutions)
  bool fp32_only = false;  // batch-norm scale and shift stay FP32 in every mode (as in autocast)
  Tensor master, working, grad;

  // Allocates the working copy and gradient for a compute dtype and fills the copy from the
  // master weights. The master weights are untouched: precision can change any time.
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
  // dy has the output's shape. Returns dL/dx (undefined with InputGrad::Skip); writes or accumulates
  // weight gradients when ctx.param_grads.
  virtual const Tensor& backward(Context& ctx, const Tensor& dy, InputGrad input_grad) = 0;
  virtual std::vector<Parameter*> parameters() { return {}; }
  virtual std::vector<StateBuffer*> buffers() { return {}; }
  virtual double flops(const Shape& /*in*/) const { return 0.0; }
  // Running statistics with their staged copies (see Context::staged_running_stats).
  virtual void staged_pairs(std::vector<Tensor>& /*running*/, std::vector<Tensor>& /*staged*/) {}
  // One power iteration of every spectral-normalised weight (once per discriminator step).
  virtual void update_spectral_norm(Backend& /*b*/) {}
  // The nested networks of a block (a residual block's two paths); none for a plain layer.
  virtual std::vector<Sequential*> children() { return {}; }
  // Working copies and gradients for a compute dtype (FP32 when this layer is kept in FP32).
  virtual void set_precision(Backend& b, DType compute);

  // The per-layer precision policy (core/nn/layer_policy.h): a layer kept in FP32 computes in
  // FP32 whatever the network's precision; Sequential casts its input and its input gradient.
  bool fp32() const { return fp32_; }
  void set_fp32(bool on) { fp32_ = on; }
  // Activation clamp (StyleGAN2-ADA's conv_clamp): a convolution computing in half precision
  // clamps its output to [-c, c]; 0: off. Other layers ignore it.
  float conv_clamp() const { return conv_clamp_; }
  void set_conv_clamp(float c) { conv_clamp_ = c; }

 protected:
  friend class Sequential;  // its casts reuse ensure()
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

  // For convolutions: y clamped to [-conv_clamp, conv_clamp] when the clamp is on and the layer
  // computes in half precision (else y itself); clamp_grad passes dy back through that clamp.
  const Tensor& clamp_output(Context& ctx, const Tensor& y);
  const Tensor& clamp_grad(Context& ctx, const Tensor& dy);
  // t itself when it has dtype dt, else t cast into buf (kept from step to step).
  static const Tensor& as_dtype(Backend& b, const Tensor& t, DType dt, Tensor& buf);

  Tensor out_, dx_;

 private:
  bool fp32_ = false;
  float conv_clamp_ = 0.0f;
  bool clamped_ = false;  // whether the last forward clamped
  Tensor clamp_out_, clamp_dy_;
};

// Each layer computes in its own dtype: FP32 when it is kept in FP32 (Layer::fp32) or the
// context is FP32; else the context's dtype for a layer with parameters, and its input's dtype
// for a parameter-free one (an activation after an FP32 convolution stays FP32, so a cast
// happens only where a layer with weights needs one). Where a layer's dtype differs from its
// input's, the input is cast on the way in and the input gradient cast back on the way out.
class Sequential {
 public:
  void add(std::unique_ptr<Layer> layer);
  // after (optional) sees each layer's output in turn (the forward probe's checks).
  const Tensor& forward(Context& ctx, const Tensor& x,
                        const std::function<void(size_t, const Tensor&)>& after = nullptr);
  const Tensor& backward(Context& ctx, const Tensor& dy, InputGrad input_grad);
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
  // The dtype layer i computes in, in a network of dtype net, for an input of dtype in.
  DType layer_dtype(size_t i, DType net, DType in) const;

 private:
  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<char> has_params_;           // per layer: whether it owns parameters
  std::vector<DType> in_dtype_;            // per layer, from the last forward: its input's dtype
  std::vector<DType> run_dtype_;           // ... and the dtype it computed in
  std::vector<Tensor> in_cast_, dx_cast_;  // per layer: the cast input and input gradient
  DType dtype_ = DType::F32;
  Tensor empty_;
};

}  // namespace ampgan
