#include "core/amp/precision.h"

#include "core/common/error.h"

namespace ampgan {

Precision parse_precision(const std::string& s) {
  if (s == "fp32") return Precision::FP32;
  if (s == "tf32") return Precision::TF32;
  if (s == "fp16") return Precision::FP16;
  if (s == "bf16") return Precision::BF16;
  throw Error("unknown precision '" + s + "'", "--precision", "use fp32, tf32, fp16 or bf16");
}

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::FP32:
      return "fp32";
    case Precision::TF32:
      return "tf32";
    case Precision::FP16:
      return "fp16";
    case Precision::BF16:
      return "bf16";
  }
  return "?";
}

const char* precision_label(Precision p) {
  switch (p) {
    case Precision::FP32:
      return "FP32";
    case Precision::TF32:
      return "TF32";
    case Precision::FP16:
      return "FP16 AMP";
    case Precision::BF16:
      return "BF16 AMP";
  }
  return "?";
}

DType compute_dtype(Precision p) {
  switch (p) {
    case Precision::FP16:
      return DType::F16;
    case Precision::BF16:
      return DType::BF16;
    default:
      return DType::F32;
  }
}

AmpStrategy parse_amp_strategy(const std::string& s) {
  if (s == "auto") return AmpStrategy::Auto;
  if (s == "scale") return AmpStrategy::Scale;
  if (s == "nan_to_num") return AmpStrategy::NanToNum;
  if (s == "none") return AmpStrategy::None;
  throw Error("unknown AMP strategy '" + s + "'", "--amp-strategy",
              "use auto (default), scale (dynamic loss scaling), nan_to_num (StyleGAN2-ADA's) or none");
}

const char* amp_strategy_name(AmpStrategy s) {
  switch (s) {
    case AmpStrategy::Auto:
      return "auto";
    case AmpStrategy::Scale:
      return "scale";
    case AmpStrategy::NanToNum:
      return "nan_to_num";
    case AmpStrategy::None:
      return "none";
  }
  return "?";
}

bool uses_loss_scaling(AmpStrategy s, Precision p, bool bf16_loss_scaling) {
  switch (s) {
    case AmpStrategy::Auto:
      return p == Precision::FP16 || (p == Precision::BF16 && bf16_loss_scaling);
    case AmpStrategy::Scale:
      return is_mixed(p);
    default:
      return false;
  }
}

}  // namespace ampgan
