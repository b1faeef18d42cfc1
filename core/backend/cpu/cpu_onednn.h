// What the CPU backend's oneDNN users share (cpu_gemm.cpp, cpu_conv_onednn.cpp): the engine,
// and each calling thread's stream and scratchpad. Each thread runs oneDNN single-threaded: the
// backend's pool is the only source of parallelism, so OpenMP never starts a team whose spinning
// threads would compete with it. Only in builds with oneDNN.
#pragma once

#if defined(AMPGAN_HAVE_ONEDNN)
#include <cstdint>
#include <string>
#include <vector>

#include <dnnl.hpp>

namespace ampgan::cpu {

dnnl::engine& onednn_engine();

struct OnednnThread {
  dnnl::stream stream;
  std::vector<uint8_t> scratch;
  OnednnThread();
  // A scratchpad memory for a primitive whose scratchpad is desc (user mode), grown as needed.
  dnnl::memory scratchpad(const dnnl::memory::desc& desc);
};
OnednnThread& onednn_thread();

// Whether a primitive's implementation is a JIT kernel (a reference one is far too slow to use).
inline bool is_jit(const char* impl) { return std::string(impl).rfind("ref", 0) != 0; }

}  // namespace ampgan::cpu
#endif
