// What a checkpoint's tensor data must be, checked when it is written and when it is read: a
// CRC-32 of every tensor (bit rot, a damaged copy), and only finite numbers (a diverged state is
// never saved, and a file holding inf/NaN is never sampled, evaluated, exported or resumed).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/io/safetensors.h"

namespace ampgan {

// Metadata key of the CRC-32 (8 hex digits) over every tensor's name and bytes, in file order.
constexpr const char* kTensorCrcKey = "tensor_crc32";

std::string tensor_crc32(const io::StFile& f);

// Names of the F32 tensors that hold inf or NaN.
std::vector<std::string> nonfinite_tensors(const io::StFile& f);

// "a, b, c and 4 more".
std::string name_list(const std::vector<std::string>& names, size_t shown = 4);

// Throws Error naming file if the CRC in its metadata does not match its tensors (a checkpoint
// written before CRCs were added has none and is accepted), or if a tensor holds inf/NaN.
void verify_checkpoint_data(const io::StFile& f, const std::filesystem::path& file);

}  // namespace ampgan
