#include "core/train/step_scalars.h"

#include <cmath>

#include "core/backend/elementwise.h"

namespace ampgan {

StepScalarsLayout::StepScalarsLayout(int tensors, int tensors_d, int extra_d_steps)
    : tensors_(tensors), tensors_d_(tensors_d), extra_d_steps_(extra_d_steps) {}

NetworkSlots StepScalarsLayout::d() const {
  return {kSlotScaleD,      kSlotFoundInfD, kSlotSumSqD,    kSlotZerosD,
          kSlotSubnormalsD, kSlotCountD,    kSlotReplacedD, tensor(0)};
}

NetworkSlots StepScalarsLayout::g() const {
  return {kSlotScaleG,      kSlotFoundInfG, kSlotSumSqG,    kSlotZerosG,
          kSlotSubnormalsG, kSlotCountG,    kSlotReplacedG, tensor(tensors_d_)};
}

void StepScalarsLayout::decode(const float* s, const std::vector<int64_t>* tensor_numel, StepMetrics& m) const {
  m.loss_d = s[kSlotLossDReal] + s[kSlotLossDFake];
  m.loss_g = s[kSlotLossG];
  m.d_real = s[kSlotDReal];
  m.d_fake = s[kSlotDFake];
  m.scale_d = s[kSlotScaleD];
  m.scale_g = s[kSlotScaleG];
  // The norms, underflow and per-tensor statistics are the last D step's; skips and replaced
  // values count every D step of the iteration.
  m.skipped_d = s[kSlotFoundInfD] != 0.0f;
  m.skipped_g = s[kSlotFoundInfG] != 0.0f;
  m.grad_norm_d = m.skipped_d ? NAN : std::sqrt(s[kSlotSumSqD]);
  m.grad_norm_g = m.skipped_g ? NAN : std::sqrt(s[kSlotSumSqG]);
  // In FP32, as when the counts were single floats (the same bits while they are below 2^24).
  auto underflow = [s](const NetworkSlots& n) -> double {
    const uint64_t count = ew::count_load(s + n.count);
    return count ? static_cast<float>(ew::count_load(s + n.zeros) + ew::count_load(s + n.subnormals)) /
                       static_cast<float>(count)
                 : 0.0;
  };
  m.underflow_d = underflow(d());
  m.underflow_g = underflow(g());
  m.replaced_d = ew::count_load(s + kSlotReplacedD);
  for (int k = 0; k < extra_d_steps_; ++k) {
    const float* x = s + extra_d(k);
    m.skipped_d += x[kExtraFoundInf] != 0.0f;
    m.replaced_d += ew::count_load(x + kExtraReplaced);
  }
  m.replaced_g = ew::count_load(s + kSlotReplacedG);
  m.tensors.clear();
  if (!tensor_numel) return;
  m.tensors.resize(tensor_numel->size());
  for (size_t k = 0; k < m.tensors.size(); ++k) {
    const float* o = s + tensor(static_cast<int>(k));
    const uint64_t n = static_cast<uint64_t>((*tensor_numel)[k]);
    m.tensors[k] = {o[kTensorMaxAbs], ew::count_load(o + kTensorNonFinite),
                    n ? static_cast<double>(ew::count_load(o + kTensorUnderflow)) / static_cast<double>(n) : 0.0};
  }
}

}  // namespace ampgan
