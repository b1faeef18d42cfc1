#include "gpu/cuda_conv_calls.h"

namespace ampgan::gpu {

namespace {

template <class Perf>
void append_candidates(const Perf* perf, int n, bool timed, std::vector<ConvCandidate>& out) {
  for (int i = 0; i < n; ++i)
    out.push_back({static_cast<int>(perf[i].algo), perf[i].status, perf[i].memory, perf[i].determinism,
                   perf[i].mathType, timed ? perf[i].time : -1.0f});
}

struct ForwardCalls final : ConvCalls {
  cudnnStatus_t heuristics(cudnnHandle_t h, const ConvDescs& d, std::vector<ConvCandidate>& out) const override {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int n = 0;
    const cudnnStatus_t st =
        cudnnGetConvolutionForwardAlgorithm_v7(h, d.x, d.w, d.conv, d.y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, perf);
    if (st == CUDNN_STATUS_SUCCESS) append_candidates(perf, n, false, out);
    return st;
  }
  cudnnStatus_t workspace(cudnnHandle_t h, const ConvDescs& d, int algo, size_t* bytes) const override {
    return cudnnGetConvolutionForwardWorkspaceSize(h, d.x, d.w, d.conv, d.y,
                                                   static_cast<cudnnConvolutionFwdAlgo_t>(algo), bytes);
  }
  cudnnStatus_t find(cudnnHandle_t h, const ConvDescs& d, void* x, void* w, void* y, void* ws, size_t ws_bytes,
                     std::vector<ConvCandidate>& out) const override {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int n = 0;
    const cudnnStatus_t st = cudnnFindConvolutionForwardAlgorithmEx(
        h, d.x, x, d.w, w, d.conv, d.y, y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, perf, ws, ws_bytes);
    if (st == CUDNN_STATUS_SUCCESS) append_candidates(perf, n, true, out);
    return st;
  }
  bool gemm_style(int algo) const override {
    return algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM ||
           algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM || algo == CUDNN_CONVOLUTION_FWD_ALGO_GEMM ||
           algo == CUDNN_CONVOLUTION_FWD_ALGO_DIRECT;
  }
};

struct BackwardDataCalls final : ConvCalls {
  cudnnStatus_t heuristics(cudnnHandle_t h, const ConvDescs& d, std::vector<ConvCandidate>& out) const override {
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    int n = 0;
    const cudnnStatus_t st = cudnnGetConvolutionBackwardDataAlgorithm_v7(
        h, d.w, d.y, d.conv, d.x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, perf);
    if (st == CUDNN_STATUS_SUCCESS) append_candidates(perf, n, false, out);
    return st;
  }
  cudnnStatus_t workspace(cudnnHandle_t h, const ConvDescs& d, int algo, size_t* bytes) const override {
    return cudnnGetConvolutionBackwardDataWorkspaceSize(h, d.w, d.y, d.conv, d.x,
                                                        static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), bytes);
  }
  cudnnStatus_t find(cudnnHandle_t h, const ConvDescs& d, void* x, void* w, void* y, void* ws, size_t ws_bytes,
                     std::vector<ConvCandidate>& out) const override {
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    int n = 0;
    const cudnnStatus_t st = cudnnFindConvolutionBackwardDataAlgorithmEx(
        h, d.w, w, d.y, y, d.conv, d.x, x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, perf, ws, ws_bytes);
    if (st == CUDNN_STATUS_SUCCESS) append_candidates(perf, n, true, out);
    return st;
  }
  bool gemm_style(int algo) const override {
    return algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_0 || algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
  }
};

struct BackwardFilterCalls final : ConvCalls {
  cudnnStatus_t heuristics(cudnnHandle_t h, const ConvDescs& d, std::vector<ConvCandidate>& out) const override {
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    int n = 0;
    const cudnnStatus_t st = cudnnGetConvolutionBackwardFilterAlgorithm_v7(
        h, d.x, d.y, d.conv, d.w, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n, perf);
    if (st == CUDNN_STATUS_SUCCESS) append_candidates(perf, n, false, out);
    return st;
  }
  cudnnStatus_t workspace(cudnnHandle_t h, const ConvDescs& d, int algo, size_t* bytes) const override {
    return cudnnGetConvolutionBackwardFilterWorkspaceSize(h, d.x, d.y, d.conv, d.w,
                                                          static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), bytes);
  }
  cudnnStatus_t find(cudnnHandle_t h, const ConvDescs& d, void* x, void* w, void* y, void* ws, size_t ws_bytes,
                     std::vector<ConvCandidate>& out) const override {
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    int n = 0;
    const cudnnStatus_t st = cudnnFindConvolutionBackwardFilterAlgorithmEx(
        h, d.x, x, d.y, y, d.conv, d.w, w, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n, perf, ws, ws_bytes);
    if (st == CUDNN_STATUS_SUCCESS) append_candidates(perf, n, true, out);
    return st;
  }
  bool gemm_style(int algo) const override {
    return algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0 || algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1 ||
           algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3;
  }
};

}  // namespace

const ConvCalls& conv_calls(int op) {
  static const ForwardCalls fwd;
  static const BackwardDataCalls bwd_data;
  static const BackwardFilterCalls bwd_filter;
  if (op == 0) return fwd;
  if (op == 1) return bwd_data;
  return bwd_filter;
}

}  // namespace ampgan::gpu
