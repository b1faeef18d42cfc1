// A small persistent thread pool for the CPU backend's loops. Work is cut into chunks whose
// boundaries depend only on the problem size, never on the thread count, and reductions combine
// per-chunk partials in chunk order: results are bit-identical run to run, which exact resume
// relies on. Idle workers spin for at most 50 microseconds, then sleep; OpenBLAS and oneDNN run
// single-threaded inside the pool's tasks, so no other threads compete with them.
#pragma once

#include <cstdint>
#include <functional>

namespace ampgan {

int cpu_threads();            // threads used (AMPGAN_THREADS, else the hardware's count)
void set_cpu_threads(int n);  // before first use

// Runs fn(chunk) for chunk in [0, chunks) across the pool; returns when all are done.
void parallel_chunks(int64_t chunks, const std::function<void(int64_t chunk)>& fn);

// Splits [0, n) into chunks of `grain` elements (the last may be shorter) and runs
// fn(begin, end) on each.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

inline int64_t chunk_count(int64_t n, int64_t grain) { return n <= 0 ? 0 : (n + grain - 1) / grain; }

}  // namespace ampgan
