// The three directions of a convolution (forward, data gradient, filter gradient) as cuDNN's
// calls for each, behind one interface, so that choosing an algorithm is written once
// (CudaBackend::conv_plan in cuda_conv.cpp).
#pragma once

#include <vector>

#include <cudnn.h>

namespace ampgan::gpu {

// The heuristics' candidates for one operation, best first.
struct ConvCandidate {
  int algo;
  cudnnStatus_t status;
  size_t memory;
  cudnnDeterminism_t determinism;
  cudnnMathType_t math;
  float ms = -1.0f;  // measured by cudnnFind*Ex, or -1 (heuristics only)
};

// A plan's descriptors, as the cuDNN calls take them.
struct ConvDescs {
  cudnnTensorDescriptor_t x, y;
  cudnnFilterDescriptor_t w;
  cudnnConvolutionDescriptor_t conv;
};

// The three directions' cuDNN calls behind one interface, so that choosing an algorithm is written
// once (CudaBackend::conv_plan): the heuristics' ranking, the workspace an algorithm needs, a timed
// trial of the algorithms on scratch operands (cudnnFind*Ex, fastest first), and whether an
// algorithm is GEMM-style (FP32 accumulation, one rounding of the output: the CPU's arithmetic).
struct ConvCalls {
  virtual ~ConvCalls() = default;
  virtual cudnnStatus_t heuristics(cudnnHandle_t h, const ConvDescs& d, std::vector<ConvCandidate>& out) const = 0;
  virtual cudnnStatus_t workspace(cudnnHandle_t h, const ConvDescs& d, int algo, size_t* bytes) const = 0;
  // x, w, y: scratch operands of the plan's shapes.
  virtual cudnnStatus_t find(cudnnHandle_t h, const ConvDescs& d, void* x, void* w, void* y, void* ws, size_t ws_bytes,
                             std::vector<ConvCandidate>& out) const = 0;
  virtual bool gemm_style(int algo) const = 0;
};

// op: 0 forward, 1 backward data, 2 backward filter.
const ConvCalls& conv_calls(int op);

}  // namespace ampgan::gpu
