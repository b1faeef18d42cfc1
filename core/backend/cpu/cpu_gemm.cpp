#include "core/backend/cpu/cpu_gemm.h"

#include <cblas.h>

#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <vector>

#include "core/common/cpu_features.h"
#include "core/common/error.h"

#if defined(AMPGAN_HAVE_ONEDNN)
#include <omp.h>

#include "core/backend/cpu/cpu_onednn.h"
#endif

namespace ampgan::cpu {

const char* gemm_kernel_name(GemmKernel k) {
  switch (k) {
    case GemmKernel::OpenBlas:
      return "openblas";
    case GemmKernel::OneDnnF32:
      return "onednn-f32";
    case GemmKernel::OneDnnBf16:
      return "onednn-bf16";
  }
  return "?";
}

bool parse_gemm_kernel(const std::string& s, GemmKernel* out) {
  for (GemmKernel k : {GemmKernel::OpenBlas, GemmKernel::OneDnnF32, GemmKernel::OneDnnBf16})
    if (s == gemm_kernel_name(k)) {
      *out = k;
      return true;
    }
  return false;
}

namespace {
std::string num(float v) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", double(v));
  return b;
}
}  // namespace

std::string GemmShape::key() const {
  return std::string(ta ? "t" : "n") + (tb ? "t" : "n") + " " + std::to_string(m) + "x" + std::to_string(n) + "x" +
         std::to_string(k) + " lda " + std::to_string(lda) + " ldb " + std::to_string(ldb) + " ldc " +
         std::to_string(ldc) + (alpha != 1.0f || beta != 0.0f ? " alpha " + num(alpha) + " beta " + num(beta) : "");
}

namespace {

void openblas(const GemmShape& s, const float* a, const float* b, float* c) {
  cblas_sgemm(CblasRowMajor, s.ta ? CblasTrans : CblasNoTrans, s.tb ? CblasTrans : CblasNoTrans, s.m, s.n, s.k, s.alpha,
              a, s.lda, b, s.ldb, s.beta, c, s.ldc);
}

}  // namespace

#if defined(AMPGAN_HAVE_ONEDNN)

dnnl::engine& onednn_engine() {
  static dnnl::engine e = [] {
    // As on a CPU without AVX-512 where cpu_features() says so (AMPGAN_CPU_FEATURES=avx2).
    if (!cpu_features().avx512f) {
      try {
        dnnl::set_max_cpu_isa(dnnl::cpu_isa::avx2);
      } catch (const dnnl::error&) {
        // DNNL_MAX_CPU_ISA in the environment already decided it.
      }
    }
    return dnnl::engine(dnnl::engine::kind::cpu, 0);
  }();
  return e;
}

OnednnThread::OnednnThread() : stream(onednn_engine()) { omp_set_num_threads(1); }

dnnl::memory OnednnThread::scratchpad(const dnnl::memory::desc& desc) {
  if (scratch.size() < desc.get_size()) scratch.resize(desc.get_size());
  return dnnl::memory(desc, onednn_engine(), scratch.data());
}

OnednnThread& onednn_thread() {
  thread_local OnednnThread t;
  return t;
}

namespace {

using dnnl::memory;

dnnl::engine& engine() { return onednn_engine(); }

// One product's primitive, made once per shape and kernel and shared by every thread (oneDNN
// primitives may run concurrently; each thread brings its own stream and scratchpad).
struct Matmul {
  dnnl::matmul prim;
  memory::desc a, b, c, scratch;
  bool jit = false;  // not a reference implementation
  std::string impl;
};

std::shared_ptr<Matmul> make(GemmKernel k, const GemmShape& s) {
  const memory::data_type in = k == GemmKernel::OneDnnBf16 ? memory::data_type::bf16 : memory::data_type::f32;
  auto m = std::make_shared<Matmul>();
  m->a = memory::desc({s.m, s.k}, in, s.ta ? memory::dims{1, s.lda} : memory::dims{s.lda, 1});
  m->b = memory::desc({s.k, s.n}, in, s.tb ? memory::dims{1, s.ldb} : memory::dims{s.ldb, 1});
  m->c = memory::desc({s.m, s.n}, memory::data_type::f32, memory::dims{s.ldc, 1});
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  // dst = alpha (A B) + beta dst: the output scale applies before the sum post-op.
  if (s.alpha != 1.0f) attr.set_output_scales(0, {s.alpha});
  if (s.beta != 0.0f) {
    dnnl::post_ops po;
    po.append_sum(s.beta);
    attr.set_post_ops(po);
  }
  try {
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(m->a, m->b, m->c), attr, engine());
    m->impl = pd.impl_info_str();
    m->jit = is_jit(m->impl.c_str());
    m->scratch = pd.scratchpad_desc();
    m->prim = dnnl::matmul(pd);
  } catch (const dnnl::error& e) {
    m->impl = std::string("none (") + e.what() + ")";
    m->jit = false;
  }
  return m;
}

std::shared_ptr<Matmul> matmul_for(GemmKernel k, const GemmShape& s) {
  static std::shared_mutex mu;
  static std::map<std::string, std::shared_ptr<Matmul>> cache;
  const std::string key = std::string(gemm_kernel_name(k)) + " " + s.key();
  {
    std::shared_lock lock(mu);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  auto m = make(k, s);
  std::unique_lock lock(mu);
  return cache.emplace(key, std::move(m)).first->second;
}

}  // namespace

bool onednn_available() { return true; }

std::string onednn_summary() {
  engine();  // first: it may lower the ISA, which the first query would fix
  const dnnl_version_t* v = dnnl_version();
  std::string isa;
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::avx512_core_amx:
      isa = "avx512_core_amx";
      break;
    case dnnl::cpu_isa::avx512_core_bf16:
      isa = "avx512_core_bf16";
      break;
    case dnnl::cpu_isa::avx512_core_vnni:
      isa = "avx512_core_vnni";
      break;
    case dnnl::cpu_isa::avx512_core:
      isa = "avx512_core";
      break;
    case dnnl::cpu_isa::avx2_vnni:
      isa = "avx2_vnni";
      break;
    case dnnl::cpu_isa::avx2:
      isa = "avx2";
      break;
    default:
      isa = "below avx2";
      break;
  }
  return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch) + ", " +
         isa;
}

bool onednn_supports(GemmKernel k, const GemmShape& s) {
  if (k == GemmKernel::OpenBlas) return true;
  return matmul_for(k, s)->jit;
}

void gemm_serial(GemmKernel k, const GemmShape& s, const void* a, const void* b, float* c) {
  if (k == GemmKernel::OpenBlas) {
    openblas(s, static_cast<const float*>(a), static_cast<const float*>(b), c);
    return;
  }
  const std::shared_ptr<Matmul> m = matmul_for(k, s);
  if (!m->jit)
    throw Error(std::string("oneDNN has no fast ") + gemm_kernel_name(k) + " product for " + s.key() + ": " + m->impl,
                "--cpu-kernels", "use --cpu-kernels auto or openblas");
  OnednnThread& t = onednn_thread();
  // oneDNN takes non-const handles; it only reads A and B.
  memory ma(m->a, engine(), const_cast<void*>(a)), mb(m->b, engine(), const_cast<void*>(b)), mc(m->c, engine(), c);
  m->prim.execute(t.stream, {{DNNL_ARG_SRC, ma},
                             {DNNL_ARG_WEIGHTS, mb},
                             {DNNL_ARG_DST, mc},
                             {DNNL_ARG_SCRATCHPAD, t.scratchpad(m->scratch)}});
}

#else  // no oneDNN in this build

bool onednn_available() { return false; }
std::string onednn_summary() { return "oneDNN: not in this build"; }
bool onednn_supports(GemmKernel k, const GemmShape&) { return k == GemmKernel::OpenBlas; }
void gemm_serial(GemmKernel k, const GemmShape& s, const void* a, const void* b, float* c) {
  if (k != GemmKernel::OpenBlas)
    throw Error(std::string(gemm_kernel_name(k)) + " needs oneDNN, which this build does not have", "--cpu-kernels",
                "use --cpu-kernels openblas, or rebuild with libdnnl-dev installed");
  openblas(s, static_cast<const float*>(a), static_cast<const float*>(b), c);
}

#endif

}  // namespace ampgan::cpu
