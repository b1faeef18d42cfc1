// CUDA backend: device discovery, memory, host transfers, read-backs, graph capture, and the
// element-wise / reduction / optimizer ops (their kernels are in kernels_*.cu). Matrix products
// and convolutions are in cuda_linalg.cpp.
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

// ---- errors --------------------------------------------------------------------------------------

namespace {

std::string where(const char* file, int line) {
  std::string f = file;
  const size_t cut = f.rfind("/gpu/");
  if (cut != std::string::npos) f = f.substr(cut + 1);
  return f + ":" + std::to_string(line);
}

// Errors after which the CUDA context cannot be used any more.
bool sticky(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
      return true;
    default:
      return false;
  }
}

std::string mib(size_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / 1048576.0);
  return buf;
}

}  // namespace

namespace {

std::string memory_note() {
  size_t free_b = 0, total_b = 0;
  if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
    (void)cudaGetLastError();
    return "";
  }
  return " (" + mib(free_b) + " free of " + mib(total_b) + ")";
}

constexpr const char* kOomHint = "try a smaller batch, width or resolution, or close other programs using the GPU";

}  // namespace

void throw_cuda(cudaError_t status, const char* call, const char* file, int line) {
  const std::string what = std::string("CUDA call failed: ") + call + ": " + cudaGetErrorName(status) + " (" +
                           cudaGetErrorString(status) + ")";
  if (status == cudaErrorMemoryAllocation) throw OutOfMemoryError(what + memory_note(), where(file, line), kOomHint);
  std::string hint;
  if (sticky(status))
    hint = "the GPU context is no longer usable: restart the application (this is a bug in the CUDA backend, or a hardware fault; please report it)";
  else if (status == cudaErrorInsufficientDriver || status == cudaErrorNoDevice)
    hint = "run 'ampgan devices' for details, or use --backend cpu";
  else
    hint = "please report this with the command you ran and the output of 'ampgan devices'";
  throw Error(what, where(file, line), hint);
}

void throw_cublas(int status, const char* call, const char* file, int line) {
  const auto st = static_cast<cublasStatus_t>(status);
  const std::string what = std::string("cuBLAS call failed: ") + call + ": " + cublasGetStatusName(st) + " (" +
                           cublasGetStatusString(st) + ")";
  if (st == CUBLAS_STATUS_ALLOC_FAILED) throw OutOfMemoryError(what + memory_note(), where(file, line), kOomHint);
  throw Error(what, where(file, line), "please report this with the command you ran");
}

void throw_cudnn(int status, const char* call, const char* file, int line) {
  char detail[512] = {0};
  cudnnGetLastErrorString(detail, sizeof detail);
  std::string what = std::string("cuDNN call failed: ") + call + ": " +
                     cudnnGetErrorString(static_cast<cudnnStatus_t>(status));
  if (detail[0]) what += std::string(" (") + detail + ")";
  if (status == CUDNN_STATUS_ALLOC_FAILED) throw OutOfMemoryError(what + memory_note(), where(file, line), kOomHint);
  throw Error(what, where(file, line), "please report this with the command you ran and 'ampgan devices'");
}

void throw_oom(size_t requested, const std::string& what) {
  int dev = 0;
  (void)cudaGetDevice(&dev);
  throw OutOfMemoryError("out of GPU memory allocating " + mib(requested) + " on GPU " + std::to_string(dev) +
                             memory_note(),
                         what, kOomHint);
}

void check_launch(const char* kernel, const char* file, int line) {
  const cudaError_t st = cudaGetLastError();
  if (st != cudaSuccess && st != cudaErrorNotReady) throw_cuda(st, kernel, file, line);
}

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

std::string cuda_version(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }

size_t round64(size_t bytes) { return (std::max<size_t>(64, bytes) + 63) / 64 * 64; }

void require(bool ok, const char* op, const std::string& what) {
  if (!ok) throw Error(std::string("CUDA backend: ") + op + ": " + what, "", "this is a bug in the caller");
}

GradDesc grad_desc(const Tensor& t) { return GradDesc{t.data(), t.numel(), static_cast<int32_t>(t.dtype())}; }

}  // namespace

// ---- construction --------------------------------------------------------------------------------

CudaBackend::CudaBackend(int device) : device_(device) {
  if (const char* v = std::getenv("AMPGAN_CUDNN_DETERMINISTIC")) deterministic_ = *v && std::string(v) != "0";
  try {
    int count = 0;
    AMPGAN_CUDA(cudaGetDeviceCount(&count));
    if (device < 0 || device >= count)
      throw Error("GPU " + std::to_string(device) + " does not exist (" + std::to_string(count) + " found)",
                  "--device", "run 'ampgan devices' to list the GPUs");
    AMPGAN_CUDA(cudaSetDevice(device));
    cudaDeviceProp p{};
    AMPGAN_CUDA(cudaGetDeviceProperties(&p, device));
    cc_ = p.major * 10 + p.minor;
    if (cc_ < 75)
      throw Error(std::string("GPU ") + std::to_string(device) + " (" + p.name + ") has compute capability " +
                      std::to_string(p.major) + "." + std::to_string(p.minor),
                  "--backend cuda", "this build (CUDA 13) needs compute capability 7.5 (Turing) or newer; use --backend cpu");
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
      throw Error(std::string(op) + " needs a larger workspace (" + std::to_string(bytes) +
                      " bytes) during CUDA graph capture",
                  "CUDA backend", "run the step eagerly once before capturing it (this is a bug in the caller)");
    }
    t = Tensor();  // free first (stream-ordered), then allocate the larger block
    t = empty(Shape{static_cast<int64_t>((bytes + 3) / 4)}, DType::F32, MemCategory::Workspace);
  }
  return t.data();
}

void CudaBackend::check_device_tensor(const Tensor& t, const char* op, const char* what) const {
  if (!t.defined() || t.device() != DeviceKind::CUDA)
    throw Error(std::string("CUDA backend: ") + op + ": " + what + " is " +
                    (t.defined() ? "a CPU tensor" : "undefined"),
                "", "this is a bug in the caller");
}

void CudaBackend::upload(Tensor& dst, const void* host, size_t nbytes) {
  require(nbytes == dst.nbytes(), "upload", "size mismatch (" + std::to_string(nbytes) + " bytes for a tensor of " +
                                                std::to_string(dst.nbytes()) + ")");
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
  require(nbytes == src.nbytes(), "download", "size mismatch (" + std::to_string(nbytes) + " bytes for a tensor of " +
                                                  std::to_string(src.nbytes()) + ")");
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

// ---- capture -------------------------------------------------------------------------------------

void CudaBackend::abandon_capture() noexcept {
  std::lock_guard<std::mutex> lock(alloc_mutex_);
  if (!capturing_ || !stream_) return;
  capturing_ = false;
  cudaGraph_t g = nullptr;
  (void)cudaStreamEndCapture(stream_, &g);
  if (g) (void)cudaGraphDestroy(g);
  (void)cudaGetLastError();
}

void CudaBackend::not_while_capturing(const char* op) {
  if (!capturing()) return;
  abandon_capture();
  throw Error(std::string(op) + " cannot happen while a CUDA graph is being captured (the capture was abandoned)",
              "CUDA backend",
              "run the step eagerly once before capturing it, so every buffer, workspace and algorithm exists (this is a bug in the caller)");
}

void CudaBackend::begin_capture() {
  activate();
  not_while_capturing("begin_capture");
  drop_capture();
  // Thread-local mode: this thread may not call capture-unsafe APIs (they fail loudly); other
  // threads (the GUI's) are unaffected. The flag and the capture start together under the lock
  // that frees take.
  std::lock_guard<std::mutex> lock(alloc_mutex_);
  AMPGAN_CUDA(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  capturing_ = true;
}

void CudaBackend::end_capture() {
  activate();
  cudaGraph_t g = nullptr;
  cudaError_t st;
  {
    std::lock_guard<std::mutex> lock(alloc_mutex_);
    if (!capturing_) throw Error("end_capture without begin_capture", "CUDA backend", "this is a bug in the caller");
    st = cudaStreamEndCapture(stream_, &g);
    capturing_ = false;
    // Every block allocated so far may be referenced by the graph. Set in the same critical
    // section that clears capturing_: otherwise a release on another thread between the two
    // would see neither flag and free a block the graph is about to use.
    if (st == cudaSuccess) graph_seq_ = next_seq_;
  }
  if (st != cudaSuccess) {
    if (g) (void)cudaGraphDestroy(g);
    (void)cudaGetLastError();
    throw_cuda(st, "cudaStreamEndCapture (the captured step was invalidated by an uncapturable call)", __FILE__, __LINE__);
  }
  cudaGraphExec_t exec = nullptr;
  const cudaError_t ist = cudaGraphInstantiate(&exec, g, 0);
  if (ist != cudaSuccess) {
    (void)cudaGraphDestroy(g);
    (void)cudaGetLastError();
    // No graph exists: the blocks freed meanwhile stay deferred until drop_capture (safe).
    throw_cuda(ist, "cudaGraphInstantiate", __FILE__, __LINE__);
  }
  graph_ = g;
  graph_exec_ = exec;
}

void CudaBackend::replay() {
  activate();
  if (!graph_exec_) throw Error("replay without a captured step", "CUDA backend", "this is a bug in the caller");
  not_while_capturing("replay");
  AMPGAN_CUDA(cudaGraphLaunch(graph_exec_, stream_));
}

void CudaBackend::drop_capture() {
  activate();
  abandon_capture();
  if (graph_exec_ || graph_) {
    AMPGAN_CUDA(cudaStreamSynchronize(stream_));  // no launch of the graph may still be pending
    if (graph_exec_) AMPGAN_CUDA(cudaGraphExecDestroy(graph_exec_));
    if (graph_) AMPGAN_CUDA(cudaGraphDestroy(graph_));
    graph_exec_ = nullptr;
    graph_ = nullptr;
  }
  std::vector<void*> deferred;
  {
    std::lock_guard<std::mutex> lock(alloc_mutex_);
    graph_seq_ = 0;
    deferred.swap(deferred_frees_);
  }
  for (void* p : deferred) AMPGAN_CUDA(cudaFreeAsync(p, stream_));
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
    require(counter.dtype() == DType::F32 && counter.numel() == 2, "fill_normal", "the counter must be an FP32 [lo, hi] count");
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

// ---- element-wise layers -------------------------------------------------------------------------

void CudaBackend::bias_add(Tensor& y, const Tensor& b) {
  require(b.dtype() == DType::F32 && b.numel() > 0 && y.numel() % b.numel() == 0, "bias_add",
          "bias must be FP32 (channels)");
  activate();
  gpu::bias_add(stream_, y.dtype(), y.data(), b.as<float>(), y.numel() / b.numel(), b.numel());
}

void CudaBackend::bias_backward(const Tensor& dy, Tensor& db, bool accumulate) {
  require(db.dtype() == DType::F32 && db.numel() > 0 && dy.numel() % db.numel() == 0, "bias_backward",
          "db must be FP32 (channels)");
  activate();
  const int64_t c = db.numel(), rows = dy.numel() / c;
  void* ws = workspace(kWsReduce, gpu::channel_workspace_bytes(rows, c), "bias_backward");
  gpu::bias_backward(stream_, dy.dtype(), dy.data(), rows, c, db.as<float>(), accumulate, ws);
}

void CudaBackend::batchnorm_forward_train(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                          Tensor& running_mean, Tensor& running_var, float momentum,
                                          float eps, bool update_running, Tensor& y, Tensor& save_mean,
                                          Tensor& save_invstd) {
  const int64_t c = gamma.numel(), rows = c ? x.numel() / c : 0;
  require(x.dtype() == y.dtype() && x.numel() == y.numel() && c > 0 && x.numel() % c == 0 && rows > 1,
          "batchnorm_forward_train", "shape mismatch");
  require(gamma.dtype() == DType::F32 && beta.dtype() == DType::F32 && save_mean.dtype() == DType::F32 &&
              save_invstd.dtype() == DType::F32 && running_mean.dtype() == DType::F32 &&
              running_var.dtype() == DType::F32,
          "batchnorm_forward_train", "statistics and parameters must be FP32");
  activate();
  void* ws = workspace(kWsReduce, gpu::channel_workspace_bytes(rows, c), "batchnorm_forward_train");
  gpu::batchnorm_forward_train(stream_, x.dtype(), x.data(), rows, c, gamma.as<float>(), beta.as<float>(),
                               running_mean.as<float>(), running_var.as<float>(), momentum, eps, update_running,
                               y.data(), save_mean.as<float>(), save_invstd.as<float>(), ws);
}

void CudaBackend::batchnorm_forward_eval(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                         const Tensor& running_mean, const Tensor& running_var, float eps,
                                         Tensor& y) {
  const int64_t c = gamma.numel(), rows = c ? x.numel() / c : 0;
  require(x.dtype() == y.dtype() && x.numel() == y.numel() && c > 0 && x.numel() % c == 0,
          "batchnorm_forward_eval", "shape mismatch");
  activate();
  gpu::batchnorm_forward_eval(stream_, x.dtype(), x.data(), rows, c, gamma.as<float>(), beta.as<float>(),
                              running_mean.as<float>(), running_var.as<float>(), eps, y.data());
}

void CudaBackend::batchnorm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                     const Tensor& save_mean, const Tensor& save_invstd, Tensor& dx,
                                     Tensor& dgamma, Tensor& dbeta, bool accumulate) {
  const int64_t c = gamma.numel(), rows = c ? x.numel() / c : 0;
  require(x.dtype() == dy.dtype() && dy.dtype() == dx.dtype() && x.numel() == dy.numel() &&
              dx.numel() == x.numel() && c > 0 && x.numel() % c == 0,
          "batchnorm_backward", "shape mismatch");
  activate();
  void* ws = workspace(kWsReduce, gpu::channel_workspace_bytes(rows, c), "batchnorm_backward");
  gpu::batchnorm_backward(stream_, x.dtype(), x.data(), dy.data(), rows, c, gamma.as<float>(),
                          save_mean.as<float>(), save_invstd.as<float>(), dx.data(), dgamma.as<float>(),
                          dbeta.as<float>(), accumulate, ws);
}

void CudaBackend::activation_forward(ew::Act act, float alpha, const Tensor& x, Tensor& y) {
  require(x.dtype() == y.dtype() && x.numel() == y.numel(), "activation_forward", "mismatch");
  activate();
  gpu::activation_forward(stream_, x.dtype(), act, alpha, x.data(), y.data(), x.numel());
}

void CudaBackend::activation_backward(ew::Act act, float alpha, const Tensor& y, const Tensor& dy, Tensor& dx) {
  require(y.dtype() == dy.dtype() && dy.dtype() == dx.dtype() && y.numel() == dy.numel() &&
              dy.numel() == dx.numel(),
          "activation_backward", "mismatch");
  activate();
  gpu::activation_backward(stream_, y.dtype(), act, alpha, y.data(), dy.data(), dx.data(), y.numel());
}

// ---- losses ----------------------------------------------------------------------------------------

void CudaBackend::gan_loss(LossKind kind, LossRole role, const Tensor& logits, const Tensor& scaler_state,
                           Tensor& dlogits, Tensor& scalars, int loss_slot, int prob_slot) {
  require(logits.dtype() == DType::F32 && dlogits.dtype() == DType::F32 && logits.numel() == dlogits.numel() &&
              logits.numel() > 0,
          "gan_loss", "logits must be FP32");
  require(scalars.dtype() == DType::F32 && loss_slot >= 0 && loss_slot < scalars.numel() &&
              prob_slot < scalars.numel() && scaler_state.dtype() == DType::F32,
          "gan_loss", "slots out of range");
  activate();
  gpu::gan_loss(stream_, kind, role, logits.as<float>(), logits.numel(), scaler_state.as<float>(),
                dlogits.as<float>(), scalars.as<float>(), loss_slot, prob_slot);
}

void CudaBackend::softmax_cross_entropy(const Tensor& logits, const Tensor& labels, Tensor& dlogits,
                                        Tensor& scalars, int loss_slot, int correct_slot) {
  require(logits.dtype() == DType::F32 && dlogits.dtype() == DType::F32 && logits.shape().rank == 2 &&
              labels.dtype() == DType::F32 && dlogits.numel() == logits.numel(),
          "softmax_cross_entropy", "logits must be FP32 (n, classes)");
  const int64_t n = logits.shape()[0], k = logits.shape()[1];
  require(labels.numel() >= n && n > 0 && k > 0, "softmax_cross_entropy", "labels (n) FP32");
  activate();
  void* ws = workspace(kWsSoftmax, gpu::softmax_ce_workspace_bytes(n), "softmax_cross_entropy");
  gpu::softmax_cross_entropy(stream_, logits.as<float>(), labels.as<float>(), n, k, dlogits.as<float>(),
                             scalars.as<float>(), loss_slot, correct_slot, ws);
}

// ---- mixed precision ---------------------------------------------------------------------------------

void CudaBackend::grad_stats(const std::vector<Tensor>& grads, const Tensor& scaler_state, Tensor& scalars,
                             const GradStatSlots& slots) {
  require(scalars.dtype() == DType::F32 && scaler_state.dtype() == DType::F32, "grad_stats", "FP32 scalars");
  for (int slot : {slots.found_inf, slots.sum_sq})
    require(slot >= 0 && slot < scalars.numel(), "grad_stats", "slot out of range");
  for (int slot : {slots.zeros, slots.subnormals, slots.count})  // counts: [slot, slot + 1]
    require(slot >= 0 && slot + 1 < scalars.numel(), "grad_stats", "count slot out of range");
  if (slots.per_tensor >= 0)
    require(slots.per_tensor + int64_t{kTensorStatSlots} * static_cast<int64_t>(grads.size()) <= scalars.numel(),
            "grad_stats", "per-tensor slots out of range");
  activate();
  std::vector<GradDesc> d;
  d.reserve(grads.size());
  for (const Tensor& g : grads) d.push_back(grad_desc(g));
  void* ws = workspace(kWsReduce, gpu::grad_stats_workspace_bytes(static_cast<int>(d.size())), "grad_stats");
  gpu::grad_stats(stream_, d.data(), static_cast<int>(d.size()), scaler_state.as<float>(), scalars.as<float>(),
                  slots, ws);
}

void CudaBackend::grad_histogram(const std::vector<Tensor>& grads, Tensor& hist) {
  require(hist.dtype() == DType::F32 && hist.numel() >= ew::kHistBins, "grad_histogram", "hist too small");
  activate();
  std::vector<GradDesc> d;
  d.reserve(grads.size());
  for (const Tensor& g : grads) d.push_back(grad_desc(g));
  void* ws = workspace(kWsHist, gpu::grad_histogram_workspace_bytes(), "grad_histogram");
  gpu::grad_histogram(stream_, d.data(), static_cast<int>(d.size()), hist.as<float>(), ws);
}

void CudaBackend::adam_step(const std::vector<AdamTensor>& params, const AdamConfig& cfg, Tensor& step_count,
                            const Tensor& scaler_state, const Tensor& scalars, int found_inf_slot) {
  require(step_count.dtype() == DType::F32 && step_count.numel() == 2 && scaler_state.dtype() == DType::F32 &&
              scalars.dtype() == DType::F32 && found_inf_slot >= 0 && found_inf_slot < scalars.numel(),
          "adam_step", "FP32 [lo, hi] step count, FP32 scaler state and scalars");
  std::vector<AdamDesc> d;
  d.reserve(params.size());
  for (const AdamTensor& p : params) {
    const int64_t n = p.master.numel();
    require(p.master.dtype() == DType::F32 && p.m.dtype() == DType::F32 && p.v.dtype() == DType::F32 &&
                p.grad.numel() == n && p.m.numel() == n && p.v.numel() == n &&
                (!p.half_copy.defined() || p.half_copy.numel() == n),
            "adam_step", "parameter tensors disagree");
    AdamDesc a{};
    a.w = p.master.as<float>();
    a.g = p.grad.data();
    a.m = p.m.as<float>();
    a.v = p.v.as<float>();
    a.h = p.half_copy.defined() ? p.half_copy.data() : nullptr;
    a.n = n;
    a.gdtype = static_cast<int32_t>(p.grad.dtype());
    a.hdtype = static_cast<int32_t>(p.half_copy.defined() ? p.half_copy.dtype() : DType::F32);
    d.push_back(a);
  }
  activate();
  gpu::adam_step(stream_, d.data(), static_cast<int>(d.size()), cfg, step_count.as<float>(),
                 scaler_state.as<float>(), scalars.as<float>(), found_inf_slot);
}

void CudaBackend::scaler_update(Tensor& scaler_state, const ew::ScalerConfig& cfg, const Tensor& scalars,
                                const std::vector<int>& found_inf_slots) {
  require(scaler_state.dtype() == DType::F32 && scaler_state.numel() >= 2 && scalars.dtype() == DType::F32,
          "scaler_update", "FP32 state [scale, growth tracker]");
  require(found_inf_slots.size() <= static_cast<size_t>(gpu::kMaxScalerSlots), "scaler_update",
          "at most " + std::to_string(gpu::kMaxScalerSlots) + " found-inf slots");
  for (int s : found_inf_slots) require(s >= 0 && s < scalars.numel(), "scaler_update", "slot out of range");
  activate();
  gpu::scaler_update(stream_, scaler_state.as<float>(), cfg, scalars.as<float>(), found_inf_slots.data(),
                     static_cast<int>(found_inf_slots.size()));
}

}  // namespace gpu

// ---- entry points ----------------------------------------------------------------------------------

std::vector<GpuInfo> gpu_list_devices(std::string* why_none) {
  std::vector<GpuInfo> out;
  std::string why;
  int n = 0;
  const cudaError_t st = cudaGetDeviceCount(&n);
  if (st != cudaSuccess) {
    int driver = 0, runtime = 0;
    (void)cudaDriverGetVersion(&driver);
    (void)cudaRuntimeGetVersion(&runtime);
    (void)cudaGetLastError();
    const std::string code = std::string(" (") + cudaGetErrorName(st) + ")";
    if (st == cudaErrorInsufficientDriver && driver == 0)
      why = "no NVIDIA driver is installed or loaded" + code;
    else if (st == cudaErrorInsufficientDriver)
      why = "the NVIDIA driver supports CUDA " + gpu::cuda_version(driver) + " but this build needs CUDA " +
            gpu::cuda_version(runtime) + code + ": update the driver";
    else if (st == cudaErrorNoDevice)
      why = "the NVIDIA driver found no CUDA-capable GPU" + code;
    else
      why = std::string("the CUDA runtime could not start: ") + cudaGetErrorString(st) + code;
    if (why_none) *why_none = why;
    return out;
  }
  if (n == 0) {
    if (why_none) *why_none = "the NVIDIA driver found no CUDA-capable GPU";
    return out;
  }
  int previous = -1;
  if (cudaGetDevice(&previous) != cudaSuccess) previous = -1;
  std::vector<std::string> reasons;
  for (int i = 0; i < n; ++i) {
    GpuInfo g;
    g.index = i;
    cudaDeviceProp p{};
    const cudaError_t pst = cudaGetDeviceProperties(&p, i);
    if (pst != cudaSuccess) {
      (void)cudaGetLastError();
      g.name = "GPU " + std::to_string(i);
      reasons.push_back("GPU " + std::to_string(i) + " could not be queried (" + cudaGetErrorName(pst) + ")");
      out.push_back(g);
      continue;
    }
    g.name = p.name;
    g.total_memory = p.totalGlobalMem;
    g.cc_major = p.major;
    g.cc_minor = p.minor;
    g.usable = p.major * 10 + p.minor >= 75;
    if (!g.usable) {
      reasons.push_back("GPU " + std::to_string(i) + " (" + g.name + ") has compute capability " +
                        std::to_string(p.major) + "." + std::to_string(p.minor) +
                        "; this build (CUDA 13) needs 7.5 (Turing) or newer");
    } else {
      size_t free_b = 0, total_b = 0;
      cudaError_t mst = cudaSetDevice(i);
      if (mst == cudaSuccess) mst = cudaMemGetInfo(&free_b, &total_b);
      if (mst != cudaSuccess) {
        (void)cudaGetLastError();
        g.usable = false;
        reasons.push_back("GPU " + std::to_string(i) + " (" + g.name + ") could not be opened: " +
                          cudaGetErrorName(mst) + " (" + cudaGetErrorString(mst) + ")");
      } else {
        g.free_memory = free_b;
      }
    }
    out.push_back(g);
  }
  if (previous >= 0) (void)cudaSetDevice(previous);
  const bool any = std::any_of(out.begin(), out.end(), [](const GpuInfo& g) { return g.usable; });
  if (why_none) {
    why.clear();
    if (!any)
      for (size_t i = 0; i < reasons.size(); ++i) why += (i ? "; " : "") + reasons[i];
    *why_none = why;
  }
  return out;
}

std::unique_ptr<Backend> gpu_make_backend(int device_index) {
  return std::make_unique<gpu::CudaBackend>(device_index);
}

bool gpu_fma_contraction(Backend& backend) {
  auto* b = dynamic_cast<gpu::CudaBackend*>(&backend);
  return b && b->fma_contraction();
}

}  // namespace ampgan
