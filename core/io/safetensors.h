// The safetensors format (https://github.com/huggingface/safetensors), our checkpoint and
// export format: Python's `safetensors` loads our generators, and we load theirs.
//
//   u64 little-endian N | N bytes of JSON header, space-padded to a multiple of 8 | data buffer
//
// header: {"__metadata__": {str: str}, "name": {"dtype": "F32", "shape": [..],
//          "data_offsets": [begin, end]}, ...}, offsets relative to the buffer's start.
// We write "__metadata__" first (only when there is metadata), then the tensors in the StFile's
// order, each with keys dtype, shape, data_offsets, compact JSON (no spaces), data packed back
// to back with no gaps. Data is little-endian, row-major, as the format requires.
// Reading accepts any key order and requires what the reference reader requires: the tensors
// tile the buffer exactly (no overlaps, no gaps, no trailing bytes).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ampgan::io {

struct StTensor {
  std::string name;
  std::string dtype;           // "F32", "F16", "BF16", "I64", ... (safetensors' names)
  std::vector<int64_t> shape;  // {} for a scalar (one element)
  std::vector<uint8_t> data;   // numel * dtype_bytes(dtype) bytes, little-endian
};

struct StFile {
  std::vector<StTensor> tensors;  // read back in data order, which is the order written
  std::map<std::string, std::string> metadata;

  const StTensor* find(const std::string& name) const;  // nullptr if absent
  // Throws Error "checkpoint has no tensor <name>" naming file_for_errors.
  const StTensor& at(const std::string& name, const std::filesystem::path& file_for_errors) const;
};

// Atomic (write_file_atomic). Throws Error naming path for invalid tensors (unknown dtype, data
// size not matching the shape, duplicate or reserved names) or a failed write.
void write_safetensors(const std::filesystem::path& path, const StFile& f);

// Reads and validates everything (see decode_safetensors); errors name path. The 8-byte size and
// the header are read and checked first, against the file's size: only then is the data read,
// tensor by tensor, so a damaged file costs at most its header. check_header, if given, sees the
// file's metadata and tensors (names, dtypes, shapes; no data yet) and may throw to stop there.
StFile read_safetensors(const std::filesystem::path& path, const std::function<void(const StFile&)>& check_header = {});

std::string encode_safetensors(const StFile& f);
// Throws Error naming name_for_errors when: the bytes are too short for the header size or the
// header size exceeds them (truncated or not a safetensors file), the header is not a JSON
// object, an entry is malformed, a dtype is unknown, data_offsets disagree with shape * dtype
// size, a tensor ends beyond the data (truncated file), tensors overlap, leave gaps or end
// before the data does, or the metadata holds non-strings.
StFile decode_safetensors(std::string_view bytes, const std::string& name_for_errors);

// Bytes per element: BOOL U8 I8 F8_E5M2 F8_E4M3 F8_E8M0 1, I16 U16 F16 BF16 2, I32 U32 F32 4,
// I64 U64 F64 C64 8. Throws Error for a dtype we do not know.
size_t dtype_bytes(const std::string& dtype);

}  // namespace ampgan::io
