// libampgan-mpi.so: the MPI Communicator, the only code that links libmpi. The engine loads it
// with dlopen only when the process was started by mpirun (core/dist/world.cpp), so every other
// program start touches no MPI library.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "core/dist/communicator.h"

namespace ampgan::dist {
namespace {

std::string mpi_error(int code) {
  char buf[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, buf, &len);
  return std::string(buf, static_cast<size_t>(len));
}

class MpiCommunicator final : public Communicator {
 public:
  explicit MpiCommunicator(double timeout_s) : timeout_s_(timeout_s) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    // Errors come back as codes, so they become Error with the rank and the call in the message.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &local_rank_);
    MPI_Comm_free(&local);
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(lib, &len);
    std::string v(lib, static_cast<size_t>(len));
    name_ = "MPI (" + v.substr(0, v.find(',')) + ")";
    watchdog_ = std::thread([this] { watch(); });
  }

  ~MpiCommunicator() override {
    {
      // MPI_Finalize waits for the other ranks too: it stays under the watchdog.
      Watch w(*this, "the end of the run (MPI_Finalize)");
      MPI_Finalize();
    }
    {
      std::lock_guard<std::mutex> lk(mu_);
      quit_ = true;
    }
    cv_.notify_all();
    watchdog_.join();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  std::string name() const override { return name_; }
  DeviceKind device() const override { return DeviceKind::CPU; }

  void all_reduce(Tensor& t, int64_t offset, int64_t count, ReduceOp op, float scale) override {
    AMPGAN_CHECK(t.device() == DeviceKind::CPU && t.dtype() == DType::F32, "MPI all-reduce takes FP32 CPU tensors");
    AMPGAN_CHECK(offset >= 0 && count >= 0 && offset + count <= t.numel(), "all-reduce range outside the tensor");
    float* p = t.as<float>() + offset;
    reduce(p, count, op, "all-reduce");
    if (scale != 1.0f)
      for (int64_t i = 0; i < count; ++i) p[i] *= scale;
  }

  void broadcast(Tensor& t, int root) override {
    AMPGAN_CHECK(t.device() == DeviceKind::CPU, "MPI broadcast takes CPU tensors");
    broadcast_host(t.data(), t.nbytes(), root);
  }

  void all_reduce_host(float* v, int count, ReduceOp op) override { reduce(v, count, op, "all-reduce"); }

  void broadcast_host(void* data, size_t bytes, int root) override {
    Watch w(*this, "broadcast");
    auto* p = static_cast<char*>(data);
    // MPI counts are int: large buffers go in chunks.
    constexpr size_t kChunk = size_t{1} << 30;
    for (size_t done = 0; done < bytes; done += kChunk)
      check(MPI_Bcast(p + done, static_cast<int>(std::min(kChunk, bytes - done)), MPI_BYTE, root, MPI_COMM_WORLD),
            "MPI_Bcast");
  }

  void barrier() override {
    Watch w(*this, "barrier");
    check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
  }

  void set_timeout(double seconds) override {
    std::lock_guard<std::mutex> lk(mu_);
    timeout_s_ = seconds;
  }
  double timeout() const override {
    std::lock_guard<std::mutex> lk(mu_);
    return timeout_s_;
  }

  double seconds_in_collective() const override {
    std::lock_guard<std::mutex> lk(mu_);
    return armed_ ? std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count() : 0.0;
  }

  [[noreturn]] void abort(int code) override {
    std::fflush(stdout);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);
  }

 private:
  // Arms the watchdog for one collective.
  struct Watch {
    Watch(MpiCommunicator& c, const char* what) : c(c) {
      {
        std::lock_guard<std::mutex> lk(c.mu_);
        c.what_ = what;
        c.started_ = std::chrono::steady_clock::now();
        c.noted_ = false;
        c.deadline_ =
            std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                   std::chrono::duration<double>(c.timeout_s_));
        c.armed_ = true;
      }
      c.cv_.notify_all();
    }
    ~Watch() {
      std::lock_guard<std::mutex> lk(c.mu_);
      c.armed_ = false;
    }
    MpiCommunicator& c;
  };

  void watch() {
    std::unique_lock<std::mutex> lk(mu_);
    while (!quit_) {
      if (!armed_) {
        cv_.wait(lk);
        continue;
      }
      const auto deadline = deadline_;
      // A long wait is said once, a quarter of the way (at least 5 s) to the timeout: the rank
      // is not silent while another one is stopped, evaluates or writes a checkpoint.
      const double note_s = std::max(5.0, timeout_s_ / 4);
      const auto note_at = started_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                          std::chrono::duration<double>(note_s));
      if (!noted_ && note_at < deadline) {
        if (cv_.wait_until(lk, note_at) == std::cv_status::timeout && armed_ && deadline_ == deadline && !noted_) {
          noted_ = true;
          std::fprintf(stderr,
                       "ampgan: rank %d of %d: a collective (%s) has waited %.0f s for the other ranks (one may be "
                       "evaluating or writing a checkpoint, or be stopped); this rank gives up after %.0f s "
                       "(--collective-timeout)\n",
                       rank_, size_, what_, note_s, timeout_s_);
          std::fflush(stderr);
        }
        continue;
      }
      if (cv_.wait_until(lk, deadline) == std::cv_status::timeout && armed_ && deadline_ == deadline) {
        // The other ranks cannot be told (they are the ones missing): say what happened and end
        // this rank; mpirun then ends the rest.
        std::fprintf(stderr,
                     "ampgan: rank %d of %d: a collective (%s) waited %.0f s for the other ranks: a rank has "
                     "stopped, crashed or hangs. Stopping this rank (raise --collective-timeout if a rank is "
                     "only slow, e.g. while rank 0 evaluates or writes a checkpoint).\n",
                     rank_, size_, what_, timeout_s_);
        std::fflush(stderr);
        std::_Exit(3);
      }
    }
  }

  void reduce(float* p, int64_t count, ReduceOp op, const char* what) {
    Watch w(*this, what);
    constexpr int64_t kChunk = int64_t{1} << 28;
    for (int64_t done = 0; done < count; done += kChunk)
      check(MPI_Allreduce(MPI_IN_PLACE, p + done, static_cast<int>(std::min(kChunk, count - done)), MPI_FLOAT,
                          op == ReduceOp::Sum ? MPI_SUM : MPI_MAX, MPI_COMM_WORLD),
            "MPI_Allreduce");
  }

  void check(int rc, const char* call) const {
    if (rc != MPI_SUCCESS)
      throw Error(std::string(call) + " failed on rank " + std::to_string(rank_) + ": " + mpi_error(rc), "mpirun",
                  "check that every rank is alive and reachable (a rank that died is named by mpirun above)");
  }

  int rank_ = 0, size_ = 1, local_rank_ = 0;
  std::string name_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::thread watchdog_;
  bool armed_ = false, quit_ = false, noted_ = false;
  const char* what_ = "";
  std::chrono::steady_clock::time_point started_, deadline_;
  double timeout_s_;
};

Communicator* create_world(double timeout_s, std::string* err) {
  int inited = 0;
  MPI_Initialized(&inited);
  if (!inited) {
    int provided = 0;
    // Only the calling thread makes MPI calls (the watchdog never does).
    const int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    if (rc != MPI_SUCCESS) {
      if (err) *err = "MPI_Init failed: " + mpi_error(rc);
      return nullptr;
    }
  }
  return new MpiCommunicator(timeout_s);
}

}  // namespace
}  // namespace ampgan::dist

extern "C" __attribute__((visibility("default"))) const ampgan::dist::MpiPluginApi* ampgan_mpi_plugin_api() {
  static const ampgan::dist::MpiPluginApi api{ampgan::dist::kMpiPluginAbi, &ampgan::dist::create_world};
  return &api;
}
