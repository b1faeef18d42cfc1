// Precision modes. fp32: everything FP32, TF32 forbidden (a fair baseline). tf32: FP32 with
// tensor-core TF32 math allowed (the same as fp32 on the CPU). fp16: FP16 compute with dynamic
// loss scaling. bf16: BF16 compute; its FP32-sized exponent makes loss scaling unnecessary, so
// it is off unless asked for.
#pragma once

#include <string>

#include "core/tensor/dtype.h"

namespace ampgan {

enum class Precision : uint8_t { FP32, TF32, FP16, BF16 };

Precision parse_precision(const std::string& s);  // throws Error naming --precision
const char* precision_name(Precision p);          // "fp32", "tf32", "fp16", "bf16"
const char* precision_label(Precision p);         // "FP32", "TF32", "FP16 AMP", "BF16 AMP"
DType compute_dtype(Precision p);
inline bool is_mixed(Precision p) { return p == Precision::FP16 || p == Precision::BF16; }

// How a run guards its half-precision gradients against overflow:
//   auto        fp16: dynamic loss scaling; bf16: none unless bf16_loss_scaling (the defaults
//               before strategies existed, so older runs and options keep their meaning)
//   scale       dynamic loss scaling (GradScaler's rule) in fp16 and bf16; an overflow skips the step
//   nan_to_num  StyleGAN2-ADA's: no loss scaling (S = 1); gradients go through nan_to_num (NaN -> 0,
//               +-inf -> +-1e5, capped at the format's largest finite value) and every step applies
//   none        no loss scaling; an overflow still skips the step
enum class AmpStrategy : uint8_t { Auto, Scale, NanToNum, None };
AmpStrategy parse_amp_strategy(const std::string& s);  // throws Error naming --amp-strategy
const char* amp_strategy_name(AmpStrategy s);          // "auto", "scale", "nan_to_num", "none"
// Whether the loss scaler is on for a precision under a strategy.
bool uses_loss_scaling(AmpStrategy s, Precision p, bool bf16_loss_scaling);
// StyleGAN2-ADA's replacement for +-inf (training/training_loop.py: nan_to_num(nan=0, posinf=1e5, neginf=-1e5)).
constexpr float kNanToNumBound = 1e5f;

}  // namespace ampgan
