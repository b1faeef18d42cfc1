// CUDA backend: graph capture. The Trainer records its step once as a CUDA graph and replays it;
// ops that cannot be recorded (host read-backs, allocation) refuse while capturing.
#include "core/common/error.h"
#include "gpu/cuda_backend_impl.h"

namespace ampgan::gpu {

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
              "run the step eagerly once before capturing it, so every buffer, workspace and algorithm exists (this is "
              "a bug in the caller)");
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
    throw_cuda(st, "cudaStreamEndCapture (the captured step was invalidated by an uncapturable call)", __FILE__,
               __LINE__);
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

}  // namespace ampgan::gpu
