// The table of backend op cases (run by tests/test_backend_ops.cpp, in the manner of ggml's
// test-backend-ops). An OpCase is one op (or a short sequence of calls, e.g. Adam over four steps)
// written once as a function of (Backend&, DType): it makes its inputs deterministically (the same
// bits on every backend), runs the op and adds its named outputs, each with its comparator. The
// runner runs it on the CPU (the reference) and on every other available backend and compares
// every output. A GradCase is a differentiable op whose backward is checked against central
// differences of its own forward, on every available backend, the CPU included.
//
// The cases, by op family in the order of core/backend/backend.h: op_cases_memory.cpp (fill,
// copy, cast, normal numbers, device scalars), op_cases_linalg.cpp (gemm, TF32, convolutions,
// bias), op_cases_batchnorm.cpp, op_cases_elementwise.cpp (activations), op_cases_resample.cpp
// (residual add, resampling, spectral norm), op_cases_conditioning.cpp (modulation, projection),
// op_cases_losses.cpp, op_cases_amp.cpp (gradient
// statistics, histogram, Adam, EMA, scaler, activation clamp, nan_to_num).
//
// ---- Tolerances: ||backend - cpu|| / ||cpu|| (normalised) unless marked ulp or exact ----------
//
// | family                                  | f32        | f16        | bf16       |
// |-----------------------------------------|------------|------------|------------|
// | exact element-wise (fill, copy, cast,   | exact bits | exact bits | exact bits |
// |   relu/lrelu/identity, bias_add, scalar |            |            |            |
// |   ops, scaler_update, counts, histogram,|            |            |            |
// |   clamp, nan_to_num, residual add,      |            |            |            |
// |   resampling, EMA)                      |            |            |            |
// | a*b+c element-wise (tanh backward, Adam | exact bits (1e-5 / 2e-3 / 1e-2 if FMA      |
// |   moments, batch norm eval) with        |   contraction is on: see kFmaNote in       |
// |   --fmad=false                          |   op_check.cpp)                            |
// | transcendental (tanh, philox normal)    | <= 8 ulp   | <= 1 ulp   | <= 1 ulp   |
// | gemm, convolutions (FP32 accumulate)    | 1e-5       | 2e-3       | 1e-2       |
// | batch norm, bias gradient (FP32 stats)  | 1e-5       | 2e-3       | 1e-2       |
// | TF32 gemm / convolution                 | 5e-3       |            |            |
// | losses: values / dlogits                | 1e-6 relative / 1e-5, FP32 only         |
// | grad sum of squares                     | 1e-5 relative                           |
// | Adam master weights / half copies       | 1e-6       | <= 1 ulp   | <= 1 ulp   |
// | spectral norm: u, v / sigma             | <= 4 ulp / <= 2 ulp, FP32               |
// | spectral norm: w_sn, backward           | < 1e-6     | < 1e-3     | < 8e-3     |
// | 10 training steps, per-step losses      | 2e-3 (fp32), 3e-2 (fp16), |d| / max(1, |cpu|)|
//   (the training steps are scenarios in tests/test_gpu_parity.cpp)
//
// Why:
// - Exact: the CUDA kernels call the same functions (core/backend/elementwise.h, half.h, rng.h)
//   on the same input bits; IEEE +, *, /, sqrt are correctly rounded on both sides, subnormals
//   are kept (nvcc's default -ftz=false), so the bits must agree. The only exception is nvcc's
//   default FMA contraction (--fmad=true) of a * b + c, which rounds once where the CPU rounds
//   twice; outputs that depend on it ask the backend (cuda_fma_contraction) and relax.
// - Transcendentals: CUDA's expf/logf/tanhf/sinf/cosf are within 1-2 ulp of glibc's; the normal
//   numbers go through logf, sqrtf, cosf/sinf and a product (a few ulp in FP32). Storing to a
//   16-bit format rounds away all but at most one half-ulp step.
// - Reductions (gemm, conv, batch norm, bias gradient, sums of squares): FP32 accumulation in a
//   different order; relative error ~1e-7 * sqrt(terms), so 1e-5 in FP32. Half outputs are the
//   FP32 result rounded once: where the two FP32 results straddle a rounding boundary the stored
//   values differ by one half-ulp (2^-11 relative in f16, 2^-8 in bf16); the normalised error is
//   at most about sqrt(fraction flipped) * ulp, hence 2e-3 / 1e-2.
// - TF32 rounds inputs to 10 mantissa bits: ~1e-3 relative per product.
// - Adam: the bias corrections use powf (ulp differences in the step size), which moves the
//   weights by ~1e-7 of an update; the moments are exact.
// - Spectral norm: FP32 with double accumulation on both sides, summed in different fixed orders,
//   so sigma and the vectors may differ in the last bit or two, and the results derived from them
//   by about as much relative to their norm (the backward subtracts nearly equal terms, so a
//   per-element ulp bound would not hold): a few ulps, or one rounding flip in the half formats.
// - Whole steps: per-op differences compound through 10 GAN steps; the bounds leave room for that
//   while catching any real divergence (a wrong op moves the losses by far more).
//
// ---- The gradient check -------------------------------------------------------------------------
//
// L = sum(r * forward(x)) with fixed random r (or, for a loss, the loss value itself); for each
// FP32 input, on a deterministic sample of at most kGradSamples elements, the central difference
// (L(x + h) - L(x - h)) / (2h), L summed in double, against the backend's backward.
// - FP32 only: a half step (2^-10 relative in f16, 2^-7 in bf16) is far too coarse for finite
//   differences, and half outputs would round away the change the step makes.
// - Step h = 1e-2 on inputs of unit scale: the ops are linear (conv, gemm, bias, add, resampling)
//   or smooth with small third derivatives (tanh, softplus, softmax, spectral norm's W / sigma),
//   so the truncation error h^2 f''' / 6 stays below ~1e-4 of the gradient; the FP32 rounding of
//   the outputs the step changes (~6e-8 relative each, and of an FP32 loss value) is divided by
//   2h: ~1e-5 to 1e-4 relative. Inputs are kept 5h from every kink (relu and leaky relu at 0,
//   clamp at +-c, hinge at +-1), so no difference straddles one.
// - Batch norm takes h = 1e-1 (kGradStepBatchNorm): one x moves every output of its channel
//   through the FP32 mean and variance, so the rounding noise grows with the values per channel
//   (1e-3 at 1024 values with h = 1e-2), while the curvature in one x is O(1 / values), so the
//   larger step costs nothing.
// - Bound kGradTol = 1e-3 on the normalised error over the sample, ||fd - backward|| /
//   ||backward||. Measured on the CPU: at most 1.7e-4 (spectral norm, batch norm with 18 values
//   per channel, G's first conv), most cases 1e-5 to 1e-4; a wrong backward is off by far more
//   (a quarter that is a half: 0.5; batch norm without its variance term: 0.02 to 0.2).
#pragma once

#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "tests/op_check.h"
#include "tests/test_support.h"

namespace ampgan::testing {

// ---- tolerances (see the table above), by the dtype the case runs in -------------------------------

constexpr PerDType kReduceTol{1e-5, 2e-3, 1e-2};
constexpr PerDType kFp32Tol{1e-5, 1e-5, 1e-5};  // FP32 outputs (statistics, bias gradients) in every mode
constexpr PerDType kTranscendentalUlps{8, 1, 1};
constexpr double kTf32Tol = 5e-3;
constexpr double kLossTol = 1e-6;     // loss values (sums in double of per-logit FP32 terms)
constexpr double kDlogitsTol = 1e-5;  // sigmoid(x) - target: expf's ulps, amplified where they cancel
constexpr double kSumSqTol = 1e-5;

constexpr double kGradStep = 1e-2;
constexpr double kGradStepBatchNorm = 1e-1;
constexpr double kGradTol = 1e-3;
constexpr int kGradSamples = 64;

// ---- the table -------------------------------------------------------------------------------------

// name: op and geometry, [A-Za-z0-9_] (it becomes part of the test's name, with the dtype).
using CaseFn = std::function<void(Backend& b, DType t, Outputs& out)>;
struct OpCase {
  std::string name;
  std::vector<DType> dtypes;
  CaseFn run;
};

using GradFn = std::function<GradProblem(Backend& b)>;
struct GradCase {
  std::string name;
  GradFn make;
};

// Every case, by family in the order of backend.h.
const std::vector<OpCase>& op_cases();
const std::vector<GradCase>& grad_cases();

// One per family file.
void add_memory_cases(std::vector<OpCase>& ops);
void add_linalg_cases(std::vector<OpCase>& ops, std::vector<GradCase>& grads);
void add_batchnorm_cases(std::vector<OpCase>& ops, std::vector<GradCase>& grads);
void add_elementwise_cases(std::vector<OpCase>& ops, std::vector<GradCase>& grads);
void add_resample_cases(std::vector<OpCase>& ops, std::vector<GradCase>& grads);
void add_conditioning_cases(std::vector<OpCase>& ops, std::vector<GradCase>& grads);
void add_loss_cases(std::vector<OpCase>& ops, std::vector<GradCase>& grads);
void add_amp_cases(std::vector<OpCase>& ops, std::vector<GradCase>& grads);

// ---- what the cases share --------------------------------------------------------------------------

const std::vector<DType>& all_types();  // f32, f16, bf16
const std::vector<DType>& f32_only();

// A tensor on b with the given FP32 values rounded to dtype; an uninitialised one.
Tensor input(Backend& b, Shape s, DType t, const std::vector<float>& v, MemCategory cat = MemCategory::Data);
Tensor blank(Backend& b, Shape s, DType t);
// A copy on b of a tensor of the reference backend (an input derived from an op on the CPU).
Tensor from_reference(Backend& b, const Tensor& ref, MemCategory cat = MemCategory::Data);

std::vector<float> scaled_normal(size_t n, uint64_t seed, float stddev, float mean = 0.0f);
// Values with the awkward cases of every format mixed into normal numbers.
std::vector<float> special_values(size_t n, uint64_t seed);
// v with every value within `margin` of a kink moved to `margin` away from it (same side).
std::vector<float> away_from(std::vector<float> v, std::initializer_list<float> kinks, float margin);
// Fixed weights r of the objective sum(r * y), for an output of n elements.
std::vector<float> objective_weights(size_t n, uint64_t seed);

std::string bool_name(bool b);  // "true" / "false"

// The convolution geometries (each a case in every dtype, and a gradient check): the DCGAN's
// (4x4 kernels, stride 2 pad 1; the 4x4 stride-1 pad-0 ends), the 1- and 3-channel image layers,
// channel counts that are not multiples of 8 (the latent's 100, the logit's 1), odd image sizes,
// and 3x3 / 1x1 kernels.
struct ConvCase {
  const char* role;  // where the DCGAN has it, or what it exercises
  int n, h, w, c, k, r, stride, pad;
  ConvGeometry geometry() const;
  std::string name() const;  // e.g. "k4s2p1_n4h16w16c1k8_D_first_grey"
};
const std::vector<ConvCase>& conv_cases();
// The convolution case: forward, backward data, backward filter (accumulating and not); with
// `deterministic`, also that a repeated forward gives the same bits.
CaseFn conv_case(const ConvCase& cc, bool deterministic);

}  // namespace ampgan::testing
