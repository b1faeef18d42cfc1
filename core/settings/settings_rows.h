// The settings table's rows, in three files by `ampgan train --help`'s sections, and what the
// rows share: the field accessors, the ranges' constants, the panel's choices. Only
// settings_table.cpp and the row files include it; everything else sees settings().
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "core/settings/run_config.h"
#include "core/settings/settings_table.h"

namespace ampgan::setting_rows {

// A row's field: get as JSON, set from a checked value (narrowed to the field's type here only).
#define AMPGAN_FIELD(field)                                            \
  .get = [](const RunConfig& c) -> nlohmann::json { return c.field; }, \
  .set = [](RunConfig& c, const nlohmann::json& v) { c.field = v.get<std::remove_cvref_t<decltype(c.field)>>(); }

// An enum field stored in JSON as its name.
#define AMPGAN_NAMED(field, name_of, parse)                                     \
  .get = [](const RunConfig& c) -> nlohmann::json { return name_of(c.field); }, \
  .set = [](RunConfig& c, const nlohmann::json& v) { c.field = parse(v.get<std::string>()); }

inline constexpr int64_t kIntMax = std::numeric_limits<int>::max();
inline constexpr double kFp32Max = std::numeric_limits<float>::max();
inline constexpr double kFp32MinNormal = std::numeric_limits<float>::min();  // 1/S stays finite above it

inline constexpr SettingChoice kChannels[] = {{"0", "As the dataset"}, {"1", "Grey (1)"}, {"3", "Colour (3)"}};
inline constexpr SettingChoice kModels[] = {{"dcgan", "DCGAN"}, {"resnet", "ResNet (SNGAN/BigGAN)"}};
inline constexpr SettingChoice kResolutions[] = {{"32", "32 × 32"}, {"64", "64 × 64"}, {"128", "128 × 128"}};
inline constexpr SettingChoice kLosses[] = {{"bce", "BCE with logits"}, {"hinge", "Hinge"}};
inline constexpr SettingChoice kPrecisions[] = {{"fp32", "FP32"}, {"tf32", "TF32"}, {"fp16", "FP16"}, {"bf16", "BF16"}};
inline constexpr SettingChoice kBackends[] = {{"auto", "Automatic"}, {"cpu", "CPU"}, {"cuda", "CUDA"}};
inline constexpr SettingChoice kCpuKernels[] = {
    {"auto", "Fastest measured"}, {"openblas", "OpenBLAS"}, {"onednn", "oneDNN"}};
// Short: the panel's combo is narrow (at 1600 px "Automatic (FP16 sca…" was cut); the tooltip
// says what each does.
inline constexpr SettingChoice kAmpStrategies[] = {
    {"auto", "Automatic"}, {"scale", "Loss scaling"}, {"nan_to_num", "nan_to_num"}, {"none", "None"}};
inline constexpr SettingChoice kScalers[] = {{"per-network", "One per network (G, D)"},
                                             {"shared", "Shared by G and D"}};

// Each section's rows, in --help's order.
std::span<const Setting> data_and_model();  // settings_rows_model.cpp
std::span<const Setting> precision();       // settings_rows_precision.cpp
std::span<const Setting> output();          // settings_rows_output.cpp

}  // namespace ampgan::setting_rows
