// CUDA backend: convolutions (cuDNN, legacy API, NHWC); the CPU's are in core/backend/cpu/cpu_conv.cpp.
//
// They take inputs of one dtype, accumulate in FP32 and round once to the output's dtype, as the
// CPU backend does. FP32 mode forbids TF32 (CUDNN_FMA_MATH) unless
// set_allow_tf32(true); half modes use tensor cores (CUDNN_TENSOR_OP_MATH, FP32 compute type).
//
// Convolution algorithms are chosen once per (operation, geometry, dtype, math, mode) and cached;
// the choice, like every workspace allocation, happens eagerly, never during graph capture. By
// default the candidates are timed (cudnnFind*Ex) and the fastest is taken, deterministic or not;
// in the deterministic mode (set_deterministic, AMPGAN_CUDNN_DETERMINISTIC=1; the parity tests)
// cuDNN's heuristics rank them (cudnnGet*Algorithm_v7, no trial runs) and deterministic GEMM-style
// ones come first. AMPGAN_LOG_CONV=1 prints each choice (operation, geometry, algorithm, how it
// was chosen, math, workspace) to stderr.
// Tensor cores want channel counts that are multiples of 8: in half modes the 1- and 3-channel
// image layers (and the 100-channel latent, and the 1-channel logit) run on zero-padded copies in
// workspace, and results are sliced back -- the extra zero channels add exact zeros to every sum.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/common/error.h"
#include "gpu/cuda_backend_impl.h"
#include "gpu/cuda_conv_calls.h"
#include "gpu/kernels.h"

namespace ampgan::gpu {

namespace {

enum ConvOp : int { kForward = 0, kBackwardData = 1, kBackwardFilter = 2 };

const char* op_name(int op) {
  switch (op) {
    case kForward:
      return "conv2d_forward";
    case kBackwardData:
      return "conv2d_backward_data";
    default:
      return "conv2d_backward_filter";
  }
}

cudnnDataType_t cudnn_type(DType t) {
  switch (t) {
    case DType::F16:
      return CUDNN_DATA_HALF;
    case DType::BF16:
      return CUDNN_DATA_BFLOAT16;
    default:
      return CUDNN_DATA_FLOAT;
  }
}

const char* math_name(int m) {
  switch (m) {
    case CUDNN_TENSOR_OP_MATH:
      return "tensor-op";
    case CUDNN_FMA_MATH:
      return "fma (no TF32)";
    case CUDNN_DEFAULT_MATH:
      return "default (TF32 allowed)";
    default:
      return "allow-conversion";
  }
}

const char* algo_name(int op, int algo) {
  static const char* const fwd[] = {"implicit_gemm", "implicit_precomp_gemm", "gemm", "direct", "fft", "fft_tiling",
                                    "winograd",      "winograd_nonfused"};
  static const char* const bwd_data[] = {"algo_0", "algo_1", "fft", "fft_tiling", "winograd", "winograd_nonfused"};
  static const char* const bwd_filter[] = {"algo_0",    "algo_1", "fft", "algo_3", "winograd", "winograd_nonfused",
                                           "fft_tiling"};
  if (algo < 0) return "?";
  if (op == 0) return algo < 8 ? fwd[algo] : "?";
  if (op == 1) return algo < 6 ? bwd_data[algo] : "?";
  return algo < 7 ? bwd_filter[algo] : "?";
}

bool log_conv_plans() {
  static const bool on = [] {
    const char* v = std::getenv("AMPGAN_LOG_CONV");
    return v && *v && std::string(v) != "0";
  }();
  return on;
}

int round8(int v) { return (v + 7) / 8 * 8; }

// " [channels 3->8: algo 0 CUDNN_STATUS_NOT_SUPPORTED ...]", for the error when no layout works.
std::string tried_text(int cp, int kp, const std::vector<ConvCandidate>& cands) {
  std::string t = " [channels " + std::to_string(cp) + "->" + std::to_string(kp) + ":";
  for (const ConvCandidate& cand : cands)
    t += " algo " + std::to_string(cand.algo) + " " + cudnnGetErrorString(cand.status);
  return t + "]";
}

// Channel layouts to try, best first: half modes want multiples of 8 (tensor cores); FP32 runs
// unpadded and pads only if cuDNN supports nothing else.
std::vector<std::pair<int, int>> channel_layouts(const ConvGeometry& g, bool half) {
  const std::pair<int, int> exact{g.c, g.k}, padded{round8(g.c), round8(g.k)};
  std::vector<std::pair<int, int>> layouts = half ? std::vector{padded, exact} : std::vector{exact, padded};
  if (layouts[0] == layouts[1]) layouts.pop_back();
  return layouts;
}

std::string describe(int op, const ConvGeometry& g, DType dt) {
  return std::string(op_name(op)) + " " + dtype_name(dt) + " x(n=" + std::to_string(g.n) +
         ", h=" + std::to_string(g.h) + ", w=" + std::to_string(g.w) + ", c=" + std::to_string(g.c) +
         ") w(k=" + std::to_string(g.k) + ", " + std::to_string(g.r) + "x" + std::to_string(g.s) + ") stride " +
         std::to_string(g.stride) + " pad " + std::to_string(g.pad);
}

void check(bool ok, const char* op, const std::string& what) {
  if (!ok) throw Error(std::string("CUDA backend: ") + op + ": " + what, "", "this is a bug in the caller");
}

}  // namespace

namespace {
constexpr size_t kMaxConvWorkspace = size_t{512} << 20;
}  // namespace

CudaBackend::ConvPlan::~ConvPlan() {
  if (x) (void)cudnnDestroyTensorDescriptor(x);
  if (y) (void)cudnnDestroyTensorDescriptor(y);
  if (w) (void)cudnnDestroyFilterDescriptor(w);
  if (conv) (void)cudnnDestroyConvolutionDescriptor(conv);
}

bool CudaBackend::ConvKey::operator==(const ConvKey& o) const {
  return op == o.op && n == o.n && h == o.h && w == o.w && c == o.c && k == o.k && r == o.r && s == o.s &&
         stride == o.stride && pad == o.pad && dtype == o.dtype && math == o.math && deterministic == o.deterministic;
}

size_t CudaBackend::ConvKeyHash::operator()(const ConvKey& k) const {
  size_t h = 1469598103934665603ull;
  for (int v : {k.op, k.n, k.h, k.w, k.c, k.k, k.r, k.s, k.stride, k.pad, k.dtype, k.math, k.deterministic})
    h = (h ^ static_cast<size_t>(static_cast<unsigned>(v))) * 1099511628211ull;
  return h;
}

// ---- convolutions ---------------------------------------------------------------------------------

// Descriptors of one channel layout (cp input, kp output channels), or nullptr where cuDNN
// computes another output shape (a bug).
std::unique_ptr<CudaBackend::ConvPlan> CudaBackend::conv_descriptors(int op, const ConvGeometry& g, DType dt, int cp,
                                                                     int kp, cudnnMathType_t math) {
  auto plan = std::make_unique<ConvPlan>();
  plan->cp = cp;
  plan->kp = kp;
  const cudnnDataType_t type = cudnn_type(dt);
  AMPGAN_CUDNN(cudnnCreateTensorDescriptor(&plan->x));
  AMPGAN_CUDNN(cudnnCreateTensorDescriptor(&plan->y));
  AMPGAN_CUDNN(cudnnCreateFilterDescriptor(&plan->w));
  AMPGAN_CUDNN(cudnnCreateConvolutionDescriptor(&plan->conv));
  AMPGAN_CUDNN(cudnnSetTensor4dDescriptor(plan->x, CUDNN_TENSOR_NHWC, type, g.n, cp, g.h, g.w));
  AMPGAN_CUDNN(cudnnSetFilter4dDescriptor(plan->w, type, CUDNN_TENSOR_NHWC, kp, cp, g.r, g.s));  // KRSC
  AMPGAN_CUDNN(cudnnSetConvolution2dDescriptor(plan->conv, g.pad, g.pad, g.stride, g.stride, 1, 1,
                                               CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  AMPGAN_CUDNN(cudnnSetConvolutionMathType(plan->conv, math));
  int on = 0, oc = 0, oh = 0, ow = 0;
  AMPGAN_CUDNN(cudnnGetConvolution2dForwardOutputDim(plan->conv, plan->x, plan->w, &on, &oc, &oh, &ow));
  if (on != g.n || oc != kp || oh != g.out_h() || ow != g.out_w())
    throw Error("cuDNN computes a different output shape for " + describe(op, g, dt) + ": (" + std::to_string(on) +
                    ", " + std::to_string(oh) + ", " + std::to_string(ow) + ", " + std::to_string(oc) + ")",
                "", "this is a bug in the CUDA backend");
  AMPGAN_CUDNN(cudnnSetTensor4dDescriptor(plan->y, CUDNN_TENSOR_NHWC, type, g.n, kp, oh, ow));
  return plan;
}

CudaBackend::ConvPlan& CudaBackend::conv_plan(int op, const ConvGeometry& g, DType dt) {
  const bool half = dt != DType::F32;
  const cudnnMathType_t math = half ? CUDNN_TENSOR_OP_MATH : allow_tf32_ ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
  const ConvKey key{op,
                    g.n,
                    g.h,
                    g.w,
                    g.c,
                    g.k,
                    g.r,
                    g.s,
                    g.stride,
                    g.pad,
                    static_cast<int>(dt),
                    static_cast<int>(math),
                    deterministic_ ? 1 : 0};
  const auto found = conv_plans_.find(key);
  if (found != conv_plans_.end()) return *found->second;

  not_while_capturing("choosing a cuDNN convolution algorithm");
  if (dt == DType::BF16 && cc_ < 80)
    throw Error("bf16 convolutions need a GPU of compute capability 8.0 (Ampere) or newer; " + name_ + " is not",
                "--precision bf16", "use fp16 or fp32 on this GPU");

  const ConvCalls& calls = conv_calls(op);
  std::string tried;
  for (const std::pair<int, int>& layout : channel_layouts(g, half)) {
    // Named copies, not structured bindings: the lambdas below capture them (clang rejects that).
    const int cp = layout.first, kp = layout.second;
    std::unique_ptr<ConvPlan> plan = conv_descriptors(op, g, dt, cp, kp, math);
    const ConvDescs d{plan->x, plan->y, plan->w, plan->conv};
    std::vector<ConvCandidate> cands;
    // A layout cuDNN rejects outright (NOT_SUPPORTED, say) is one more layout tried: go on to
    // the next one instead of failing the plan.
    if (const cudnnStatus_t st = calls.heuristics(cudnn_, d, cands); st != CUDNN_STATUS_SUCCESS) {
      tried += " [channels " + std::to_string(cp) + "->" + std::to_string(kp) + ": heuristics " +
               cudnnGetErrorString(st) + "]";
      continue;
    }

    // The math type each algorithm runs with: the one cuDNN evaluated it with (a descriptor left
    // at the requested type can make the workspace query and the run disagree with the ranking).
    // The FP32 baseline stays FMA-only: it skips tensor-op (TF32) candidates and keeps
    // CUDNN_FMA_MATH even for DEFAULT ones, which would allow TF32 on Ampere and newer. FP32 data
    // converted down to half precision is not FP32 (nor TF32) arithmetic.
    auto math_for = [&](cudnnMathType_t rated, cudnnMathType_t* use) {
      if (math == CUDNN_FMA_MATH) {
        if (rated != CUDNN_FMA_MATH && rated != CUDNN_DEFAULT_MATH) return false;
        rated = CUDNN_FMA_MATH;
      }
      if (!half && rated == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) return false;
      *use = rated;
      return true;
    };
    // The workspace cand needs with its math type, if it runs within the cap (CUDNN_STATUS_NOT_
    // SUPPORTED from the size query rules it out).
    auto usable = [&](const ConvCandidate& cand, cudnnMathType_t* cm, size_t* bytes) {
      if (cand.status != CUDNN_STATUS_SUCCESS || !math_for(cand.math, cm)) return false;
      AMPGAN_CUDNN(cudnnSetConvolutionMathType(plan->conv, *cm));
      *bytes = 0;
      if (calls.workspace(cudnn_, d, cand.algo, bytes) != CUDNN_STATUS_SUCCESS) return false;
      *bytes = std::max(*bytes, cand.memory);
      return *bytes <= kMaxConvWorkspace;
    };
    auto take = [&](const ConvCandidate& cand) {
      cudnnMathType_t cm;
      size_t bytes;
      if (!usable(cand, &cm, &bytes)) return false;
      plan->algo = cand.algo;
      plan->math = cm;
      plan->ws_bytes = bytes;
      plan->deterministic = cand.determinism == CUDNN_DETERMINISTIC;
      return true;
    };
    auto keep = [&](const char* how) -> ConvPlan& {
      if (log_conv_plans())
        std::fprintf(stderr, "conv plan: %s -> algo %d (%s) %s, %s math, %s, workspace %zu bytes, channels %d->%d\n",
                     describe(op, g, dt).c_str(), plan->algo, algo_name(op, plan->algo), how, math_name(plan->math),
                     plan->deterministic ? "deterministic" : "non-deterministic", plan->ws_bytes, cp, kp);
      if (plan->ws_bytes) (void)workspace(kWsConv, plan->ws_bytes, op_name(op));  // eagerly, grow-only
      ConvPlan& ref = *plan;
      conv_plans_.emplace(key, std::move(plan));
      return ref;
    };

    // Fastest first: time the candidates once (cudnnFind*Ex, which runs each of them on scratch
    // operands of the plan's shapes), as PyTorch's cudnn.benchmark does. Any failure falls back
    // to the heuristics' order below. The trials' workspace: what the largest usable heuristic
    // candidate needs, within the cap (Find skips algorithms that need more).
    if (!deterministic_) {
      size_t ws_bytes = 0;
      for (const ConvCandidate& cand : cands) {
        cudnnMathType_t cm;
        size_t bytes;
        if (usable(cand, &cm, &bytes)) ws_bytes = std::max(ws_bytes, bytes);
      }
      AMPGAN_CUDNN(cudnnSetConvolutionMathType(plan->conv, math));  // Find tries what it allows
      for (const ConvCandidate& cand : timed_candidates(op, g, dt, *plan, calls, ws_bytes))
        if (take(cand)) {
          char how[48];
          std::snprintf(how, sizeof how, "timed %.3f ms", static_cast<double>(cand.ms));
          return keep(how);
        }
    }

    // Deterministic first, by the heuristics' ranking (no trial runs): GEMM-style algorithms
    // (the CPU's arithmetic; a replayed step equals the eager one bit for bit), then any
    // deterministic one (FFT, Winograd), then anything cuDNN runs.
    for (int pass = 0; pass < 3; ++pass)
      for (const ConvCandidate& cand : cands) {
        if (pass < 2 && cand.determinism != CUDNN_DETERMINISTIC) continue;
        if (pass == 0 && !calls.gemm_style(cand.algo)) continue;
        if (take(cand)) return keep("by heuristics");
      }
    tried += tried_text(cp, kp, cands);
  }
  throw Error(
      "cuDNN offers no usable algorithm for " + describe(op, g, dt) + " with " + math_name(math) + " math;" + tried,
      name_, "try another precision; please report this with 'ampgan devices'");
}

// Every candidate cudnnFind*Ex times on zeroed scratch operands of the plan's shapes, fastest
// first (empty if the trial fails). Zeroed: uninitialised memory could hold NaNs or subnormals,
// which would time slow paths; the real tensors must not be overwritten.
std::vector<ConvCandidate> CudaBackend::timed_candidates(int op, const ConvGeometry& g, DType dt, const ConvPlan& plan,
                                                         const ConvCalls& calls, size_t ws_bytes) {
  void* ws = ws_bytes ? workspace(kWsConv, ws_bytes, op_name(op)) : nullptr;
  Tensor tx = empty(Shape{g.n, g.h, g.w, plan.cp}, dt, MemCategory::Workspace);
  Tensor tw = empty(Shape{plan.kp, g.r, g.s, plan.cp}, dt, MemCategory::Workspace);
  Tensor ty = empty(Shape{g.n, g.out_h(), g.out_w(), plan.kp}, dt, MemCategory::Workspace);
  for (Tensor* t : {&tx, &tw, &ty}) AMPGAN_CUDA(cudaMemsetAsync(t->data(), 0, t->nbytes(), stream_));
  std::vector<ConvCandidate> out;
  const cudnnStatus_t st =
      calls.find(cudnn_, {plan.x, plan.y, plan.w, plan.conv}, tx.data(), tw.data(), ty.data(), ws, ws_bytes, out);
  if (st != CUDNN_STATUS_SUCCESS && log_conv_plans())
    std::fprintf(stderr, "conv plan: %s: timing the candidates failed (%s); using the heuristics' order\n",
                 describe(op, g, dt).c_str(), cudnnGetErrorString(st));
  return out;
}

void CudaBackend::run_conv(int op, const ConvGeometry& g, const Tensor& a, const Tensor& b, Tensor& out,
                           bool accumulate) {
  const DType dt = a.dtype();
  activate();
  ConvPlan& p = conv_plan(op, g, dt);
  const bool pc = p.cp != g.c, pk = p.kp != g.k;
  const size_t es = dtype_size(dt);
  const int64_t rows_x = int64_t{g.n} * g.h * g.w;
  const int64_t rows_y = int64_t{g.n} * g.out_h() * g.out_w();
  const int64_t rows_w = int64_t{g.k} * g.r * g.s, rows_wp = int64_t{p.kp} * g.r * g.s;
  const char* name = op_name(op);
  // Zero-padded copies: x (rows_x, c) -> (rows_x, cp), y-shaped (rows_y, k) -> (rows_y, kp),
  // w (k*r*s, c) -> (kp*r*s, cp) (the extra filters are whole zero rows at the end).
  auto pad_x = [&](const Tensor& t, Workspace slot) -> const void* {
    if (!pc) return t.data();
    void* d = workspace(slot, static_cast<size_t>(rows_x * p.cp) * es, name);
    pad_channels(stream_, es, t.data(), rows_x, g.c, d, rows_x, p.cp);
    return d;
  };
  auto pad_y = [&](const Tensor& t, Workspace slot) -> const void* {
    if (!pk) return t.data();
    void* d = workspace(slot, static_cast<size_t>(rows_y * p.kp) * es, name);
    pad_channels(stream_, es, t.data(), rows_y, g.k, d, rows_y, p.kp);
    return d;
  };
  auto pad_w = [&](const Tensor& t, Workspace slot) -> const void* {
    if (!pc && !pk) return t.data();
    void* d = workspace(slot, static_cast<size_t>(rows_wp * p.cp) * es, name);
    pad_channels(stream_, es, t.data(), rows_w, g.c, d, rows_wp, p.cp);
    return d;
  };
  void* ws = p.ws_bytes ? workspace(kWsConv, p.ws_bytes, name) : nullptr;
  const float one = 1.0f, zero = 0.0f, beta = accumulate ? 1.0f : 0.0f;

  if (op == kForward) {  // a = x, b = w, out = y
    const void* x = pad_x(a, kWsPadA);
    const void* w = pad_w(b, kWsPadB);
    void* y = pk ? workspace(kWsPadOut, static_cast<size_t>(rows_y * p.kp) * es, name) : out.data();
    AMPGAN_CUDNN(cudnnConvolutionForward(cudnn_, &one, p.x, x, p.w, w, p.conv,
                                         static_cast<cudnnConvolutionFwdAlgo_t>(p.algo), ws, p.ws_bytes, &zero, p.y,
                                         y));
    if (pk) slice_channels(stream_, es, y, p.kp, out.data(), rows_y, g.k);
  } else if (op == kBackwardData) {  // a = dy, b = w, out = dx
    const void* dy = pad_y(a, kWsPadA);
    const void* w = pad_w(b, kWsPadB);
    void* dx = pc ? workspace(kWsPadOut, static_cast<size_t>(rows_x * p.cp) * es, name) : out.data();
    AMPGAN_CUDNN(cudnnConvolutionBackwardData(cudnn_, &one, p.w, w, p.y, dy, p.conv,
                                              static_cast<cudnnConvolutionBwdDataAlgo_t>(p.algo), ws, p.ws_bytes, &zero,
                                              p.x, dx));
    if (pc) slice_channels(stream_, es, dx, p.cp, out.data(), rows_x, g.c);
  } else {  // a = x, b = dy, out = dw
    const void* x = pad_x(a, kWsPadA);
    const void* dy = pad_y(b, kWsPadB);
    const bool padded = pc || pk;
    void* dw = out.data();
    if (padded) {
      dw = workspace(kWsPadOut, static_cast<size_t>(rows_wp * p.cp) * es, name);
      // beta = 1 adds to the existing gradient: give cuDNN a padded copy of it.
      if (accumulate) pad_channels(stream_, es, out.data(), rows_w, g.c, dw, rows_wp, p.cp);
    }
    AMPGAN_CUDNN(cudnnConvolutionBackwardFilter(cudnn_, &one, p.x, x, p.y, dy, p.conv,
                                                static_cast<cudnnConvolutionBwdFilterAlgo_t>(p.algo), ws, p.ws_bytes,
                                                &beta, p.w, dw));
    if (padded) slice_channels(stream_, es, dw, p.cp, out.data(), rows_w, g.c);
  }
}

void CudaBackend::conv2d_forward(const ConvGeometry& g, const Tensor& x, const Tensor& w, Tensor& y) {
  check(x.dtype() == w.dtype() && w.dtype() == y.dtype(), "conv2d_forward", "dtypes differ");
  check(x.numel() == g.x_shape().numel() && w.numel() == g.w_shape().numel() && y.numel() == g.y_shape().numel(),
        "conv2d_forward", "shapes do not match the geometry");
  check_device_tensor(x, "conv2d_forward", "x");
  run_conv(kForward, g, x, w, y, false);
}

void CudaBackend::conv2d_backward_data(const ConvGeometry& g, const Tensor& dy, const Tensor& w, Tensor& dx) {
  check(dy.dtype() == w.dtype() && w.dtype() == dx.dtype(), "conv2d_backward_data", "dtypes differ");
  check(dx.numel() == g.x_shape().numel() && w.numel() == g.w_shape().numel() && dy.numel() == g.y_shape().numel(),
        "conv2d_backward_data", "shapes do not match the geometry");
  check_device_tensor(dy, "conv2d_backward_data", "dy");
  run_conv(kBackwardData, g, dy, w, dx, false);
}

void CudaBackend::conv2d_backward_filter(const ConvGeometry& g, const Tensor& x, const Tensor& dy, Tensor& dw,
                                         bool accumulate) {
  check(x.dtype() == dy.dtype() && dy.dtype() == dw.dtype(), "conv2d_backward_filter", "dtypes differ");
  check(x.numel() == g.x_shape().numel() && dw.numel() == g.w_shape().numel() && dy.numel() == g.y_shape().numel(),
        "conv2d_backward_filter", "shapes do not match the geometry");
  check_device_tensor(x, "conv2d_backward_filter", "x");
  run_conv(kBackwardFilter, g, x, dy, dw, accumulate);
}

}  // namespace ampgan::gpu
