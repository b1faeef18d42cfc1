#include "core/common/parallel.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

extern "C" void openblas_set_num_threads(int);

namespace ampgan {

namespace {

int default_threads() {
  if (const char* env = std::getenv("AMPGAN_THREADS")) {
    const int n = std::atoi(env);
    if (n > 0) return n;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

// How long an idle worker, and a caller waiting for the workers, spin before they sleep: a
// training step is hundreds of parallel loops microseconds apart, and a futex sleep and wake
// each time cost a fifth of a small ResNet step. Bounded, and yielding after the first
// microseconds, so that a loaded machine's other processes get the cores.
constexpr auto kSpin = std::chrono::microseconds(50);
constexpr auto kPauseOnly = std::chrono::microseconds(5);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Spins until ready() or kSpin has passed; true when ready.
template <typename F>
bool spin_until(F&& ready) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0;; ++i) {
    if (ready()) return true;
    if ((i & 63) != 63) {
      cpu_relax();
      continue;
    }
    const auto waited = std::chrono::steady_clock::now() - start;
    if (waited > kSpin) return false;
    if (waited > kPauseOnly) std::this_thread::yield();
  }
}

// Workers run oneDNN's generated kernels, some of which point the stack pointer into the heap
// (oneDNN 2.6; its issue #4845): a signal handled on such a thread writes its frame there and
// corrupts the heap. So workers take no asynchronous signal; the process's other threads do
// (the CLI's stop signals have a thread of their own: cli/stop_signals.cpp).
void block_async_signals() {
  sigset_t all;
  sigfillset(&all);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT, SIGSYS}) sigdelset(&all, sig);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
}

class Pool {
 public:
  explicit Pool(int threads) : threads_(threads) {
    openblas_set_num_threads(1);  // the CPU backend splits matrix products over this pool
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { worker(); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      quit_.store(true);
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
  }
  int threads() const { return threads_; }

  void run(int64_t chunks, const std::function<void(int64_t)>& fn) {
    if (chunks <= 0) return;
    if (chunks == 1 || threads_ == 1 || in_worker_) {
      for (int64_t i = 0; i < chunks; ++i) fn(i);
      return;
    }
    std::unique_lock<std::mutex> caller(run_mu_);  // one parallel region at a time
    {
      std::lock_guard<std::mutex> lock(mu_);
      fn_ = &fn;
      chunks_ = chunks;
      next_.store(0);
      pending_.store(static_cast<int>(workers_.size()));
      generation_.fetch_add(1, std::memory_order_release);  // spinning workers start here
    }
    cv_.notify_all();   // sleeping ones here
    in_worker_ = true;  // a nested call from fn runs serially instead of deadlocking
    drain();
    in_worker_ = false;
    if (!spin_until([this] { return pending_.load(std::memory_order_acquire) == 0; })) {
      std::unique_lock<std::mutex> lock(mu_);
      done_cv_.wait(lock, [this] { return pending_.load() == 0; });
    }
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = nullptr;
    if (error_) {
      auto e = error_;
      error_ = nullptr;
      std::rethrow_exception(e);
    }
  }

 private:
  void drain() {
    for (;;) {
      const int64_t i = next_.fetch_add(1);
      if (i >= chunks_) break;
      try {
        (*fn_)(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu_);
        if (!error_) error_ = std::current_exception();
      }
    }
  }

  void worker() {
    in_worker_ = true;
    block_async_signals();
    pthread_setname_np(pthread_self(), "ampgan-pool");  // for top -H, gdb and the tests
    uint64_t seen = 0;
    for (;;) {
      const auto started = [&] { return quit_.load() || generation_.load(std::memory_order_acquire) != seen; };
      if (!spin_until(started)) {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, started);
      }
      if (quit_.load()) return;
      seen = generation_.load(std::memory_order_acquire);
      drain();
      if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard<std::mutex> lock(mu_);  // the caller checks pending_ under mu_ before it sleeps
        done_cv_.notify_one();
      }
    }
  }

  int threads_;
  std::vector<std::thread> workers_;
  std::mutex mu_, run_mu_;
  std::condition_variable cv_, done_cv_;
  std::atomic<bool> quit_{false};
  std::atomic<uint64_t> generation_{0};
  const std::function<void(int64_t)>* fn_ = nullptr;
  int64_t chunks_ = 0;
  std::atomic<int64_t> next_{0};
  std::atomic<int> pending_{0};
  std::exception_ptr error_;
  static thread_local bool in_worker_;
};

thread_local bool Pool::in_worker_ = false;

int g_requested = 0;

Pool& pool() {
  static Pool p(g_requested > 0 ? g_requested : default_threads());
  return p;
}

}  // namespace

int cpu_threads() { return pool().threads(); }

void set_cpu_threads(int n) { g_requested = n; }

void parallel_chunks(int64_t chunks, const std::function<void(int64_t)>& fn) { pool().run(chunks, fn); }

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  grain = std::max<int64_t>(1, grain);
  parallel_chunks(chunk_count(n, grain), [&](int64_t c) {
    const int64_t b = c * grain;
    fn(b, std::min(n, b + grain));
  });
}

}  // namespace ampgan
