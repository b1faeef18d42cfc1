// The machinery of the backend-op tests (tests/test_backend_ops.cpp, in the manner of ggml's
// test-backend-ops): the backends under test, the outputs a case reads back, the comparators with
// their tolerance per dtype, and the finite-difference gradient check. The table of cases, the
// tolerances and the reasons for them are in tests/op_cases.h.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/backend/backend.h"
#include "core/backend/cpu/cpu_backend.h"

namespace ampgan::testing {

// ---- the backends ----------------------------------------------------------------------------------

// The CPU backend: the reference every other backend is compared with, and the maker of inputs
// that are derived from an op (e.g. the y an activation's backward reads), so that every backend
// gets the same input bits. Its products are OpenBLAS's on widened operands, whatever kernels a
// run would choose. Created once, never destroyed (tensors may outlive static teardown).
CpuBackend& reference();

// Every backend the tests know, in order: "cpu" first, the reference; then the CPU backend with
// each oneDNN kernel forced for every product ("cpu-onednn-f32", and "cpu-onednn-bf16", whose BF16
// operands are multiplied as BF16: AVX512-BF16 only), and with oneDNN's direct convolutions for
// every convolution ("cpu-onednn-conv"; im2col where oneDNN has none), then "cuda".
const std::vector<std::string>& backend_names();
// The backend of that name, created once for the whole program; null with *why saying why when
// it is not available here (no usable GPU, the plugin missing, ...).
Backend* backend_named(const std::string& name, std::string* why);
// The backend ready for the next case: no capture left over, TF32 off, deterministic algorithms
// (chosen for the CPU's arithmetic: exact replays, comparable sums).
void reset_backend(Backend& b);

// ---- what a case reads back ---------------------------------------------------------------------

// A tolerance per dtype of the case (the dtype it runs in, not necessarily the output's).
struct PerDType {
  double f32 = 0, f16 = 0, bf16 = 0;
  double at(DType t) const { return t == DType::F16 ? f16 : t == DType::BF16 ? bf16 : f32; }
};
inline PerDType all_dtypes(double v) { return PerDType{v, v, v}; }

enum class CmpKind {
  Bits,            // every element bit-identical, NaNs included (counts: equal)
  ExactUnlessFma,  // Bits, or normalised error <= bound where the backend contracts FMAs
  Ulps,            // at most bound ulps of the storage format apart, element by element
  Norm,            // ||b - cpu|| / ||cpu|| <= bound
  NormBelow,       // ||b - cpu|| / ||cpu|| < bound (strict)
  Rel,             // each element |b - cpu| / |cpu| <= bound; an infinite cpu value wants an infinite one
  Equal,           // each element == (so a NaN never matches), exact counts
};

struct Check {
  CmpKind kind = CmpKind::Bits;
  PerDType bound;
};
inline Check bits_exact() { return {CmpKind::Bits, {}}; }
inline Check exact_unless_fma(PerDType if_fma) { return {CmpKind::ExactUnlessFma, if_fma}; }
inline Check ulps(PerDType n) { return {CmpKind::Ulps, n}; }
inline Check norm(PerDType tol) { return {CmpKind::Norm, tol}; }
inline Check norm_below(PerDType tol) { return {CmpKind::NormBelow, tol}; }
inline Check rel(double tol) { return {CmpKind::Rel, all_dtypes(tol)}; }
inline Check equal() { return {CmpKind::Equal, {}}; }

// One named output: its storage bits (widened to 32) and values, read back when it was added.
struct Output {
  std::string name;
  DType dtype = DType::F32;
  std::string shape;
  std::vector<uint32_t> bits;  // empty for counts (they are compared as numbers)
  std::vector<double> values;  // the elements as numbers
  std::vector<Check> checks;
};

// The outputs of one run of a case on one backend, in the order the case added them.
class Outputs {
 public:
  explicit Outputs(Backend& b) : b_(b) {}
  // A tensor's current contents (read back now: later calls may change the tensor).
  void tensor(const std::string& name, const Tensor& t, std::vector<Check> checks);
  // Elements [first, first + n) of an FP32 tensor (e.g. some slots of a scalars tensor).
  void slice(const std::string& name, const Tensor& t, int first, int n, std::vector<Check> checks);
  // An FP32 [lo, hi] count (ew::count_load) at t[slot, slot + 1], compared as a number.
  void count(const std::string& name, const Tensor& t, int slot);
  const std::vector<Output>& items() const { return items_; }

 private:
  Backend& b_;
  std::vector<Output> items_;
};

// Every output of `got` (run on backend `who`) against the reference's, by name and order, with
// the reference output's checks (or `instead`, for every output). `what` names the case and its
// dtype for the messages.
void compare_outputs(const std::string& what, DType case_dtype, const std::string& who, Backend& backend,
                     const Outputs& ref, const Outputs& got, const Check* instead = nullptr);

// One comparison of two read-back outputs; the message names the output, the error, its bound
// and the worst element. `fma`: whether the compared backend contracts FMAs.
::testing::AssertionResult compare_output(const Output& ref, const Output& got, const Check& c, DType case_dtype,
                                          bool fma, const std::string& who);

// A number with 9 significant digits, for messages.
std::string fmt(double v);

// Raw element bits (widened to 32 bits) of a tensor on backend b.
std::vector<uint32_t> tensor_bits(Backend& b, const Tensor& t);

// ---- the gradient check ------------------------------------------------------------------------

// One FP32 input of a differentiable op, perturbed in place by the check.
struct GradInput {
  std::string name;
  Tensor x;
};

// A differentiable op on one backend, made by a GradCase: the objective L (in double) of its
// current inputs, and the backend's own backward, dL/d(input i) for every input, at the inputs
// as they were made.
struct GradProblem {
  std::vector<GradInput> inputs;
  std::function<double()> objective;
  std::function<std::vector<Tensor>()> gradients;
  double step = 0;  // the finite-difference step; 0: kGradStep
};

// L = sum(r * y) in double over the FP32 output y, with fixed weights r (the usual objective).
double weighted_sum(Backend& b, const Tensor& y, const std::vector<float>& r);

// Central differences of the objective on a deterministic sample of each input's elements,
// against the backend's gradients (the step and the bound, and why: tests/op_cases.h). `what`
// names the case and the backend.
void check_gradients(const std::string& what, Backend& b, GradProblem p);

}  // namespace ampgan::testing
