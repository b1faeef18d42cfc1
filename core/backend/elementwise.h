// The element-wise arithmetic of the engine, written once. The CPU backend loops over these
// functions and the CUDA kernels call them, so the GPU's arithmetic is unit-tested on the CPU.
// Everything computes in FP32; storage types only decide where values are rounded.
#pragma once

// One header per family, under core/backend/ew/; this one includes them all.
#include "core/backend/ew/activation.h"
#include "core/backend/ew/amp_guards.h"
#include "core/backend/ew/batchnorm.h"
#include "core/backend/ew/counts.h"
#include "core/backend/ew/histogram.h"
#include "core/backend/ew/loss_scaling.h"
#include "core/backend/ew/losses.h"
#include "core/backend/ew/optim.h"
#include "core/backend/ew/storage.h"
