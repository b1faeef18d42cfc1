// oneDNN's direct convolutions (forward, data gradient, filter gradient) for a group of whole
// samples, on the calling thread: the other way the CPU backend can run a convolution, beside
// im2col + a matrix product (cpu_linalg.cpp). No columns are gathered: on the 3x3 and 4x4 layers
// of these GANs oneDNN's JIT kernels ran at 1.5-2x the rate of im2col + the best product here,
// in FP32 and in BF16. Operands are the tensors' own (FP32, or BF16 multiplied as BF16 with FP32
// accumulation). Outputs and data gradients are in the operands' dtype: BF16 ones are rounded
// once from the FP32 sums by oneDNN as it stores them (to nearest even, as cpu_convert.h rounds;
// an FP32 output narrowed by a second pass made BF16 steps 5-7% slower on a Zen 4 host). Filter
// gradients are FP32, rounded by the caller if at all. Weights are reordered into the
// primitive's layout once per call (ConvWeights), not once per group.
#pragma once

#include <memory>
#include <vector>

#include "core/backend/backend.h"

namespace ampgan::cpu {

enum class ConvDirection { Forward, BackwardData, BackwardFilter };

// A direct convolution of one direction for groups of g.n samples in operand dtype dt (F32 or
// BF16), made once per geometry and shared by every thread.
class DirectConv {
 public:
  // Null where oneDNN has no JIT kernel for it here (a reference kernel would be far slower).
  static std::shared_ptr<const DirectConv> get(ConvDirection d, const ConvGeometry& g, DType dt);

  // Bytes of the reordered weights forward and backward-data read, or of the filter gradient in
  // the layout the filter-gradient kernel writes.
  size_t weights_bytes() const;
  // Whether the filter gradient is written in the plain (k, r, s, c) layout directly.
  bool gradient_is_plain() const;
  // w (k, r, s, c) in dt, plain, into the primitive's layout at packed (weights_bytes()).
  void pack_weights(const void* w, void* packed) const;
  // Forward: y (dt, n x out_h x out_w x k) from x (dt) and packed weights.
  void forward(const void* x, const void* packed, void* y) const;
  // Data gradient: dx (dt, n x h x w x c) from dy (dt) and packed weights.
  void backward_data(const void* dy, const void* packed, void* dx) const;
  // Filter gradient: dw (f32, k x r x s x c, plain), overwritten, from x and dy (dt); blocked
  // (weights_bytes()) holds the kernel's own layout on the way unless gradient_is_plain().
  void backward_filter(const void* x, const void* dy, float* dw, void* blocked) const;

  struct Impl;
  explicit DirectConv(std::unique_ptr<Impl> impl);
  ~DirectConv();

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace ampgan::cpu
