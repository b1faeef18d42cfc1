// CUDA backend: construction, memory, host transfers, read-backs, fills and casts. The op families
// are beside it under the CPU's names (cuda_<family>.cpp, core/backend/cpu/cpu_<family>.cpp):
// linalg (GEMM, conv, bias), batchnorm, elementwise, losses, amp, optim, resample, spectral_norm;
// and capture (cuda_capture.cpp), errors (cuda_errors.cpp), devices (cuda_devices.cpp).
#include "gpu/cuda_backend.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "core/common/error.h"
#include "gpu/cuda_backend_impl.h"
#include "gpu/kernels.h"

namespace ampgan {

namespace gpu {

// ---- read-backs: pinned slots, reused once their read-back object is gone ----------------------

class ReadbackPool {
 public:
  struct Slot {
    float* host = nullptr;
    size_t bytes = 0;
    cudaEvent_t done = nullptr;
  };

  ReadbackPool(int initial, size_t bytes) {
    for (int i = 0; i < initial; ++i) free_.push_back(make(bytes));
  }
  ~ReadbackPool() {
    for (auto& s : all_) {
      if (s->done) {
        (void)cudaEventSynchronize(s->done);
        (void)cudaEventDestroy(s->done);
      }
      if (s->host) (void)cudaFreeHost(s->host);
    }
    (void)cudaGetLastError();
  }

  Slot* acquire(size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = 0; i < free_.size(); ++i) {
      if (free_[i]->bytes >= bytes) {
        Slot* s = free_[i];
        free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(i));
        return s;
      }
    }
    if (!free_.empty()) {  // grow a free slot: its last copy must have landed first
      Slot* s = free_.back();
      free_.pop_back();
      AMPGAN_CUDA(cudaEventSynchronize(s->done));
      AMPGAN_CUDA(cudaFreeHost(s->host));
      s->host = nullptr;
      s->bytes = 0;
      AMPGAN_CUDA(cudaHostAlloc(reinterpret_cast<void**>(&s->host), bytes, cudaHostAllocDefault));
      s->bytes = bytes;
      return s;
    }
    return make(bytes);  // more read-backs outstanding than slots: add one
  }
  void release(Slot* s) {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(s);
  }

 private:
  Slot* make(size_t bytes) {
    auto s = std::make_unique<Slot>();
    AMPGAN_CUDA(cudaHostAlloc(reinterpret_cast<void**>(&s->host), bytes, cudaHostAllocDefault));
    s->bytes = bytes;
    AMPGAN_CUDA(cudaEventCreateWithFlags(&s->done, cudaEventDisableTiming));
    all_.push_back(std::move(s));
    return all_.back().get();
  }

  std::mutex mutex_;
  std::vector<std::unique_ptr<Slot>> all_;
  std::vector<Slot*> free_;
};

namespace {

class CudaReadback final : public HostReadback {
 public:
  CudaReadback(std::shared_ptr<ReadbackPool> pool, ReadbackPool::Slot* slot, int device)
      : pool_(std::move(pool)), slot_(slot), device_(device) {}
  ~CudaReadback() override { pool_->release(slot_); }

  bool ready() override {
    activate();
    const cudaError_t st = cudaEventQuery(slot_->done);
    if (st == cudaSuccess) return true;
    if (st == cudaErrorNotReady) {
      (void)cudaGetLastError();
      return false;
    }
    throw_cuda(st, "cudaEventQuery(read-back)", __FILE__, __LINE__);
  }
  const float* wait() override {
    activate();
    AMPGAN_CUDA(cudaEventSynchronize(slot_->done));
    return slot_->host;
  }

 private:
  void activate() const {
    int cur = -1;
    // A failure here resurfaces in the event call that follows; clear it so that it is not
    // reported later against an unrelated kernel launch on this thread.
    if ((cudaGetDevice(&cur) != cudaSuccess || cur != device_) && cudaSetDevice(device_) != cudaSuccess)
      (void)cudaGetLastError();
  }
  std::shared_ptr<ReadbackPool> pool_;
  ReadbackPool::Slot* slot_;
  int device_;
};

size_t round64(size_t bytes) { return (std::max<size_t>(64, bytes) + 63) / 64 * 64; }

}  // namespace

// ---- construction --------------------------------------------------------------------------------

CudaBackend::CudaBackend(int device) : device_(device) {
  if (const char* v = std::getenv("AMPGAN_CUDNN_DETERMINISTIC")) deterministic_ = *v && std::string(v) != "0";
  try {
    int count = 0;
    AMPGAN_CUDA(cudaGetDeviceCount(&count));
    if (device < 0 || device >= count)
      throw Error("GPU " + std::to_string(device) + " does not exist (" + std::to_string(count) + " found)", "--device",
                  "run 'ampgan devices' to list the GPUs");
    AMPGAN_CUDA(cudaSetDevice(device));
    cudaDeviceProp p{};
    AMPGAN_CUDA(cudaGetDeviceProperties(&p, device));
    cc_ = p.major * 10 + p.minor;
    if (cc_ < 75)
      throw Error(std::string("GPU ") + std::to_string(device) + " (" + p.name + ") has compute capability " +
                      std::to_string(p.major) + "." + std::to_string(p.minor),
                  "--backend cuda",
                  "this build (CUDA 13) needs compute capability 7.5 (Turing) or newer; use --backend cpu");
    char buf[320];
    std::snprintf(buf, sizeof buf, "%s (cc %d.%d, %.0f GB)", p.name, p.major, p.minor,
                  static_cast<double>(p.totalGlobalMem) / 1e9);
    name_ = buf;

    AMPGAN_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    AMPGAN_CUDA(cudaDeviceGetDefaultMemPool(&pool_, device));
    uint64_t threshold = std::numeric_limits<uint64_t>::max();  // keep freed blocks for reuse
    AMPGAN_CUDA(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &threshold));

    AMPGAN_CUBLAS(cublasCreate(&cublas_));
    AMPGAN_CUBLAS(cublasSetStream(cublas_, stream_));
    // Half outputs: reduce in FP32 and round once, as the CPU does (no half split-K reductions).
    AMPGAN_CUBLAS(cublasSetMathMode(cublas_, CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION));
    // A fixed workspace of our own, so cuBLAS never allocates (graph capture forbids it) and
    // picks the same kernels eagerly and in capture.
    constexpr size_t kCublasWorkspace = size_t{32} << 20;
    cublas_ws_ = empty(Shape{static_cast<int64_t>(kCublasWorkspace / 4)}, DType::F32, MemCategory::Workspace);
    AMPGAN_CUBLAS(cublasSetWorkspace(cublas_, cublas_ws_.data(), kCublasWorkspace));

    AMPGAN_CUDNN(cudnnCreate(&cudnn_));
    AMPGAN_CUDNN(cudnnSetStream(cudnn_, stream_));

    for (Staging& s : staging_) AMPGAN_CUDA(cudaEventCreateWithFlags(&s.done, cudaEventDisableTiming));
    readbacks_ = std::make_shared<ReadbackPool>(8, 64 * sizeof(float));
  } catch (...) {
    teardown();  // what was created so far; the members themselves are destroyed by the unwinding
    throw;
  }
}

CudaBackend::~CudaBackend() { teardown(); }

void CudaBackend::teardown() noexcept {
  if (!stream_ && !cublas_ && !cudnn_) return;
  (void)cudaSetDevice(device_);
  abandon_capture();
  (void)cudaStreamSynchronize(stream_);
  if (graph_exec_) (void)cudaGraphExecDestroy(graph_exec_);
  if (graph_) (void)cudaGraphDestroy(graph_);
  graph_exec_ = nullptr;
  graph_ = nullptr;
  conv_plans_.clear();
  if (cudnn_) (void)cudnnDestroy(cudnn_);
  if (cublas_) (void)cublasDestroy(cublas_);
  cudnn_ = nullptr;
  cublas_ = nullptr;
  {
    std::lock_guard<std::mutex> lock(alloc_mutex_);
    graph_seq_ = 0;
  }
  for (Tensor& t : ws_) t = Tensor();
  cublas_ws_ = Tensor();
  std::vector<void*> deferred;
  {
    std::lock_guard<std::mutex> lock(alloc_mutex_);
    deferred.swap(deferred_frees_);
  }
  if (stream_)
    for (void* p : deferred) (void)cudaFreeAsync(p, stream_);
  if (stream_) (void)cudaStreamSynchronize(stream_);
  for (Staging& s : staging_) {
    if (s.host) (void)cudaFreeHost(s.host);
    if (s.done) (void)cudaEventDestroy(s.done);
    s = Staging{};
  }
  readbacks_.reset();  // slots die with the last outstanding read-back
  if (stream_) (void)cudaStreamDestroy(stream_);
  stream_ = nullptr;
  (void)cudaGetLastError();
}

void CudaBackend::activate() const {
  int cur = -1;
  if (cudaGetDevice(&cur) != cudaSuccess || cur != device_) AMPGAN_CUDA(cudaSetDevice(device_));
}

bool CudaBackend::fma_contraction() {
  if (fma_contraction_ < 0) {
    activate();
    not_while_capturing("the FMA probe");
    Tensor t = empty(Shape{4}, DType::F32, MemCategory::Workspace);
    const float a = 1.0f + 0x1p-12f;
    const float in[4] = {a, a, -(1.0f + 0x1p-11f), 0.0f};
    upload(t, in, sizeof in);
    gpu::fma_probe(stream_, t.as<float>(), t.as<float>() + 3);
    float out[4];
    download(t, out, sizeof out);
    fma_contraction_ = out[3] != 0.0f ? 1 : 0;  // 2^-24 fused, 0 when rounded between
  }
  return fma_contraction_ == 1;
}

// ---- memory --------------------------------------------------------------------------------------

Tensor CudaBackend::empty(Shape shape, DType dtype, MemCategory category) {
  activate();
  not_while_capturing("allocating device memory");
  const size_t bytes = round64(static_cast<size_t>(shape.numel()) * dtype_size(dtype));
  void* p = nullptr;
  cudaError_t st = cudaMallocFromPoolAsync(&p, bytes, pool_, stream_);
  if (st == cudaErrorMemoryAllocation) {
    // Give cached blocks back to the driver and try once more before giving up.
    (void)cudaGetLastError();
    AMPGAN_CUDA(cudaStreamSynchronize(stream_));
    AMPGAN_CUDA(cudaMemPoolTrimTo(pool_, 0));
    st = cudaMallocFromPoolAsync(&p, bytes, pool_, stream_);
  }
  if (st != cudaSuccess) {
    (void)cudaGetLastError();
    size_t free_b = 0, total_b = 0;
    const bool too_big = cudaMemGetInfo(&free_b, &total_b) == cudaSuccess && bytes > total_b;
    if (st == cudaErrorMemoryAllocation || too_big)  // some drivers reject absurd sizes as invalid values
      throw_oom(bytes, "tensor " + shape.str() + " " + dtype_name(dtype) + " (" + mem_category_name(category) + ")");
    check_cuda(st, "cudaMallocFromPoolAsync", __FILE__, __LINE__);
  }
  {
    std::lock_guard<std::mutex> lock(alloc_mutex_);
    live_[p] = next_seq_++;
  }
  auto s = std::make_shared<Storage>();
  s->ptr = p;
  s->bytes = bytes;
  s->category = category;
  s->owner = this;
  memory_.add(category, bytes);
  return Tensor(std::move(s), shape, dtype, DeviceKind::CUDA);
}

void CudaBackend::release(Storage& s) {
  memory_.remove(s.category, s.bytes);
  void* p = s.ptr;
  s.ptr = nullptr;
  // Under the lock, so that a capture cannot begin between the decision and the free (a free
  // enqueued on a capturing stream would become part of the graph).
  std::lock_guard<std::mutex> lock(alloc_mutex_);
  uint64_t seq = 0;
  const auto it = live_.find(p);
  if (it != live_.end()) {
    seq = it->second;
    live_.erase(it);
  }
  // A block a captured graph may still use must outlive the graph.
  if (capturing_ || seq < graph_seq_) {
    deferred_frees_.push_back(p);
    return;
  }
  if (!stream_) return;
  int cur = -1;
  if (cudaGetDevice(&cur) != cudaSuccess || cur != device_) (void)cudaSetDevice(device_);
  // Cannot throw from a destructor. Clear the thread's last-error state on failure, or the next
  // kernel launch check (cudaGetLastError) would report this free as that kernel's failure; a
  // sticky context error resurfaces at the next call anyway.
  if (cudaFreeAsync(p, stream_) != cudaSuccess) (void)cudaGetLastError();
}

bool CudaBackend::capturing() {
  std::lock_guard<std::mutex> lock(alloc_mutex_);
  return capturing_;
}

void* CudaBackend::workspace(Workspace slot, size_t bytes, const char* op) {
  Tensor& t = ws_[slot];
  if (!t.defined() || t.capacity_bytes() < bytes) {
    if (capturing()) {
      abandon_capture();
      throw Error(
          std::string(op) + " needs a larger workspace (" + std::to_string(bytes) + " bytes) during CUDA graph capture",
          "CUDA backend", "run the step eagerly once before capturing it (this is a bug in the caller)");
    }
    t = Tensor();  // free first (stream-ordered), then allocate the larger block
    t = empty(Shape{static_cast<int64_t>((bytes + 3) / 4)}, DType::F32, MemCategory::Workspace);
  }
  return t.data();
}

void CudaBackend::check_device_tensor(const Tensor& t, const char* op, const char* what) const {
  if (!t.defined() || t.device() != DeviceKind::CUDA)
    throw Error(
        std::string("CUDA backend: ") + op + ": " + what + " is " + (t.defined() ? "a CPU tensor" : "undefined"), "",
        "this is a bug in the caller");
}

void CudaBackend::upload(Tensor& dst, const void* host, size_t nbytes) {
  require(nbytes == dst.nbytes(), "upload",
          "size mismatch (" + std::to_string(nbytes) + " bytes for a tensor of " + std::to_string(dst.nbytes()) + ")");
  check_device_tensor(dst, "upload", "destination");
  activate();
  not_while_capturing("an upload from the host");
  if (nbytes == 0) return;
  constexpr size_t kMaxStaged = size_t{64} << 20;
  if (nbytes > kMaxStaged) {  // rare and large: straight from pageable memory, then wait
    AMPGAN_CUDA(cudaMemcpyAsync(dst.data(), host, nbytes, cudaMemcpyHostToDevice, stream_));
    AMPGAN_CUDA(cudaStreamSynchronize(stream_));
    return;
  }
  Staging& s = staging_[next_staging_];
  next_staging_ ^= 1;
  AMPGAN_CUDA(cudaEventSynchronize(s.done));  // the slot's previous copy has been read
  if (s.bytes < nbytes) {
    if (s.host) AMPGAN_CUDA(cudaFreeHost(s.host));
    s.host = nullptr;
    s.bytes = 0;
    size_t size = size_t{1} << 16;
    while (size < nbytes) size <<= 1;
    AMPGAN_CUDA(cudaHostAlloc(&s.host, size, cudaHostAllocDefault));
    s.bytes = size;
  }
  std::memcpy(s.host, host, nbytes);
  AMPGAN_CUDA(cudaMemcpyAsync(dst.data(), s.host, nbytes, cudaMemcpyHostToDevice, stream_));
  AMPGAN_CUDA(cudaEventRecord(s.done, stream_));
}

void CudaBackend::download(const Tensor& src, void* host, size_t nbytes) {
  require(nbytes == src.nbytes(), "download",
          "size mismatch (" + std::to_string(nbytes) + " bytes for a tensor of " + std::to_string(src.nbytes()) + ")");
  check_device_tensor(src, "download", "source");
  activate();
  not_while_capturing("a download to the host");
  if (nbytes == 0) return;
  AMPGAN_CUDA(cudaMemcpyAsync(host, src.data(), nbytes, cudaMemcpyDeviceToHost, stream_));
  AMPGAN_CUDA(cudaStreamSynchronize(stream_));
}

std::unique_ptr<HostReadback> CudaBackend::read_async(const Tensor& src) {
  require(src.dtype() == DType::F32, "read_async", "takes FP32 tensors");
  check_device_tensor(src, "read_async", "source");
  activate();
  not_while_capturing("an asynchronous read-back");
  const size_t bytes = std::max<size_t>(src.nbytes(), 4);
  ReadbackPool::Slot* slot = readbacks_->acquire(bytes);
  try {
    if (src.nbytes())
      AMPGAN_CUDA(cudaMemcpyAsync(slot->host, src.data(), src.nbytes(), cudaMemcpyDeviceToHost, stream_));
    AMPGAN_CUDA(cudaEventRecord(slot->done, stream_));
  } catch (...) {
    readbacks_->release(slot);
    throw;
  }
  return std::make_unique<CudaReadback>(readbacks_, slot, device_);
}

void CudaBackend::synchronize() {
  activate();
  not_while_capturing("synchronize");
  AMPGAN_CUDA(cudaStreamSynchronize(stream_));
}

// ---- filling and conversion ------------------------------------------------------------------------

void CudaBackend::fill(Tensor& t, float value) {
  check_device_tensor(t, "fill", "tensor");
  activate();
  if (float_bits(value) == 0u) {  // +0 is all-zero bits in every format
    AMPGAN_CUDA(cudaMemsetAsync(t.data(), 0, t.nbytes(), stream_));
    return;
  }
  gpu::fill(stream_, t.data(), t.dtype(), t.numel(), value);
}

void CudaBackend::copy(const Tensor& src, Tensor& dst) {
  require(src.dtype() == dst.dtype() && src.numel() == dst.numel(), "copy", "dtype or size mismatch");
  check_device_tensor(src, "copy", "source");
  check_device_tensor(dst, "copy", "destination");
  activate();
  if (src.data() != dst.data() && src.nbytes())
    AMPGAN_CUDA(cudaMemcpyAsync(dst.data(), src.data(), src.nbytes(), cudaMemcpyDeviceToDevice, stream_));
}

void CudaBackend::cast(const Tensor& src, Tensor& dst) {
  require(src.numel() == dst.numel(), "cast", "size mismatch");
  if (src.dtype() == dst.dtype()) return copy(src, dst);
  check_device_tensor(src, "cast", "source");
  check_device_tensor(dst, "cast", "destination");
  activate();
  gpu::cast(stream_, src.data(), src.dtype(), dst.data(), dst.dtype(), src.numel());
}

void CudaBackend::fill_normal(Tensor& t, uint64_t seed, uint64_t stream, const Tensor& counter, float stddev) {
  check_device_tensor(t, "fill_normal", "tensor");
  if (counter.defined()) {
    check_device_tensor(counter, "fill_normal", "counter");
    require(counter.dtype() == DType::F32 && counter.numel() == 2, "fill_normal",
            "the counter must be an FP32 [lo, hi] count");
  }
  activate();
  gpu::fill_normal(stream_, t.data(), t.dtype(), t.numel(), seed, stream,
                   counter.defined() ? counter.as<float>() : nullptr, stddev);
}

void CudaBackend::copy_scalar(const Tensor& src, int src_index, Tensor& dst, int dst_index) {
  require(src.dtype() == DType::F32 && dst.dtype() == DType::F32 && src_index >= 0 && dst_index >= 0 &&
              src_index < src.numel() && dst_index < dst.numel(),
          "copy_scalar", "FP32 tensors and indices in range");
  activate();
  AMPGAN_CUDA(cudaMemcpyAsync(dst.as<float>() + dst_index, src.as<float>() + src_index, sizeof(float),
                              cudaMemcpyDeviceToDevice, stream_));
}

void CudaBackend::add_scalar(Tensor& dst, int index, float value) {
  require(dst.dtype() == DType::F32 && index >= 0 && index < dst.numel(), "add_scalar", "FP32 tensor, index in range");
  activate();
  gpu::add_scalar(stream_, dst.as<float>(), index, value);
}

void CudaBackend::count_increment(Tensor& count) {
  check_device_tensor(count, "count_increment", "count");
  require(count.dtype() == DType::F32 && count.numel() == 2, "count_increment", "an FP32 [lo, hi] count");
  activate();
  gpu::count_increment(stream_, count.as<float>());
}

}  // namespace gpu

// ---- entry points (gpu_list_devices is in cuda_devices.cpp) ------------------------------------

std::unique_ptr<Backend> gpu_make_backend(int device_index) { return std::make_unique<gpu::CudaBackend>(device_index); }

bool gpu_fma_contraction(Backend& backend) {
  auto* b = dynamic_cast<gpu::CudaBackend*>(&backend);
  return b && b->fma_contraction();
}

}  // namespace ampgan
