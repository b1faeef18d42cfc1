// The NCCL Communicator: all-reduce and broadcast of CUDA tensors, enqueued on the backend's
// stream (so they are captured into the step's CUDA graph like every other op). NCCL is opened
// with dlopen when a multi-rank run asks for it, so the plugin still loads where libnccl.so.2 is
// not installed; its unique id travels over the MPI communicator, as in NVIDIA's examples.
#include <dlfcn.h>

#include <cstdlib>
#include <string>

#include "core/dist/communicator.h"
#include "gpu/cuda_backend.h"
#include "gpu/cuda_backend_impl.h"

#if defined(AMPGAN_HAVE_NCCL)
#include <nccl.h>
#endif

namespace ampgan {

#if defined(AMPGAN_HAVE_NCCL)
namespace {

struct Nccl {
  decltype(&::ncclGetVersion) get_version = nullptr;
  decltype(&::ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&::ncclCommInitRank) init_rank = nullptr;
  decltype(&::ncclCommDestroy) destroy = nullptr;
  decltype(&::ncclCommAbort) abort = nullptr;
  decltype(&::ncclAllReduce) all_reduce = nullptr;
  decltype(&::ncclBroadcast) broadcast = nullptr;
  decltype(&::ncclGetErrorString) error_string = nullptr;
  std::string why;  // empty when loaded
};

const Nccl& nccl() {
  static const Nccl n = [] {
    Nccl l;
    void* h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      l.why = std::string("NCCL is not installed (libnccl.so.2: ") + dlerror() + "); install NVIDIA's libnccl2";
      return l;
    }
    auto sym = [&](auto& f, const char* name) {
      f = reinterpret_cast<std::remove_reference_t<decltype(f)>>(dlsym(h, name));
      if (!f && l.why.empty())
        l.why = std::string("libnccl.so.2 lacks ") + name + " (too old; NCCL 2.10 or newer is needed)";
    };
    sym(l.get_version, "ncclGetVersion");
    sym(l.get_unique_id, "ncclGetUniqueId");
    sym(l.init_rank, "ncclCommInitRank");
    sym(l.destroy, "ncclCommDestroy");
    sym(l.abort, "ncclCommAbort");
    sym(l.all_reduce, "ncclAllReduce");
    sym(l.broadcast, "ncclBroadcast");
    sym(l.error_string, "ncclGetErrorString");
    return l;
  }();
  return n;
}

class NcclCommunicator final : public dist::Communicator {
 public:
  NcclCommunicator(gpu::CudaBackend& backend, dist::Communicator& bootstrap) : backend_(backend), boot_(bootstrap) {
    ncclUniqueId id{};
    if (boot_.rank() == 0) check(nccl().get_unique_id(&id), "ncclGetUniqueId");
    boot_.broadcast_host(&id, sizeof id, 0);
    AMPGAN_CUDA(cudaSetDevice(backend_.device()));
    check(nccl().init_rank(&comm_, boot_.size(), id, boot_.rank()), "ncclCommInitRank");
    int v = 0;
    nccl().get_version(&v);
    name_ = "NCCL " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
  }
  ~NcclCommunicator() override {
    if (comm_) nccl().destroy(comm_);
  }

  int rank() const override { return boot_.rank(); }
  int size() const override { return boot_.size(); }
  int local_rank() const override { return boot_.local_rank(); }
  std::string name() const override { return name_; }
  DeviceKind device() const override { return DeviceKind::CUDA; }

  void all_reduce(Tensor& t, int64_t offset, int64_t count, dist::ReduceOp op, float scale) override {
    AMPGAN_CHECK(t.device() == DeviceKind::CUDA && t.dtype() == DType::F32, "NCCL all-reduce takes FP32 CUDA tensors");
    AMPGAN_CHECK(offset >= 0 && offset + count <= t.numel(), "all-reduce range outside the tensor");
    ncclRedOp_t r = op == dist::ReduceOp::Max ? ncclMax : ncclSum;
    if (scale != 1.0f) {
      // The only scale the trainer asks for is the mean's.
      AMPGAN_CHECK(op == dist::ReduceOp::Sum && scale == 1.0f / static_cast<float>(size()),
                   "NCCL all-reduce scales only to the mean");
      r = ncclAvg;
    }
    float* p = t.as<float>() + offset;
    check(nccl().all_reduce(p, p, static_cast<size_t>(count), ncclFloat32, r, comm_, backend_.stream()),
          "ncclAllReduce");
  }

  void broadcast(Tensor& t, int root) override {
    AMPGAN_CHECK(t.device() == DeviceKind::CUDA, "NCCL broadcast takes CUDA tensors");
    check(nccl().broadcast(t.data(), t.data(), t.nbytes(), ncclUint8, root, comm_, backend_.stream()), "ncclBroadcast");
  }

  void all_reduce_host(float* v, int count, dist::ReduceOp op) override { boot_.all_reduce_host(v, count, op); }
  void broadcast_host(void* data, size_t bytes, int root) override { boot_.broadcast_host(data, bytes, root); }
  void barrier() override { boot_.barrier(); }
  void set_timeout(double seconds) override { boot_.set_timeout(seconds); }
  double timeout() const override { return boot_.timeout(); }
  [[noreturn]] void abort(int code) override {
    if (comm_) nccl().abort(comm_);
    comm_ = nullptr;
    boot_.abort(code);
    std::_Exit(code);  // not reached
  }

 private:
  void check(ncclResult_t rc, const char* call) const {
    if (rc != ncclSuccess)
      throw Error(
          std::string(call) + " failed on rank " + std::to_string(boot_.rank()) + ": " + nccl().error_string(rc),
          "NCCL", "set NCCL_DEBUG=WARN for NCCL's own explanation");
  }

  gpu::CudaBackend& backend_;
  dist::Communicator& boot_;
  ncclComm_t comm_ = nullptr;
  std::string name_;
};

}  // namespace
#endif

dist::Communicator* gpu_make_nccl(Backend& backend, dist::Communicator& bootstrap, std::string* why) {
  std::string reason;
  auto* cuda = dynamic_cast<gpu::CudaBackend*>(&backend);
#if defined(AMPGAN_HAVE_NCCL)
  if (!cuda)
    reason = "the backend is not the CUDA one";
  else
    reason = nccl().why;
#else
  reason = "this CUDA backend was built without NCCL (nccl.h was not found)";
#endif
  // Every rank must take the same path: NCCL's set-up is collective.
  float missing = reason.empty() ? 0.0f : 1.0f;
  bootstrap.all_reduce_host(&missing, 1, dist::ReduceOp::Max);
  if (missing != 0.0f) {
    if (why) *why = reason.empty() ? "another rank has no NCCL" : reason;
    return nullptr;
  }
#if defined(AMPGAN_HAVE_NCCL)
  return new NcclCommunicator(*cuda, bootstrap);
#else
  return nullptr;
#endif
}

}  // namespace ampgan
