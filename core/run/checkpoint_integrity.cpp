#include "core/run/checkpoint_integrity.h"

#include <zlib.h>

#include <cmath>
#include <cstdio>
#include <cstring>

#include "core/common/error.h"

namespace ampgan {

std::string tensor_crc32(const io::StFile& f) {
  uLong crc = crc32(0L, Z_NULL, 0);
  for (const io::StTensor& t : f.tensors) {
    crc = crc32(crc, reinterpret_cast<const Bytef*>(t.name.c_str()), static_cast<uInt>(t.name.size() + 1));
    // zlib takes 32-bit lengths: feed large tensors in pieces.
    for (size_t at = 0; at < t.data.size(); at += size_t{1} << 30) {
      const size_t n = std::min(t.data.size() - at, size_t{1} << 30);
      crc = crc32(crc, reinterpret_cast<const Bytef*>(t.data.data() + at), static_cast<uInt>(n));
    }
  }
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08lx", static_cast<unsigned long>(crc & 0xFFFFFFFFul));
  return buf;
}

std::vector<std::string> nonfinite_tensors(const io::StFile& f) {
  std::vector<std::string> bad;
  for (const io::StTensor& t : f.tensors) {
    if (t.dtype != "F32") continue;
    const size_t n = t.data.size() / sizeof(float);
    for (size_t i = 0; i < n; ++i) {
      float v;
      std::memcpy(&v, t.data.data() + i * sizeof v, sizeof v);
      if (!std::isfinite(v)) {
        bad.push_back(t.name);
        break;
      }
    }
  }
  return bad;
}

std::string name_list(const std::vector<std::string>& names, size_t shown) {
  std::string s;
  for (size_t i = 0; i < names.size() && i < shown; ++i) s += (i ? ", " : "") + names[i];
  if (names.size() > shown) s += " and " + std::to_string(names.size() - shown) + " more";
  return s;
}

void verify_checkpoint_data(const io::StFile& f, const std::filesystem::path& file) {
  if (auto it = f.metadata.find(kTensorCrcKey); it != f.metadata.end()) {
    const std::string actual = tensor_crc32(f);
    if (it->second != actual)
      throw Error("checkpoint's tensor data is damaged: its CRC-32 is " + actual + ", the file says " +
                      it->second.substr(0, 16),
                  file.string(),
                  "the file was corrupted on disk or in a copy; use another checkpoint (resume --checkpoint FILE)");
  }
  const std::vector<std::string> bad = nonfinite_tensors(f);
  if (!bad.empty())
    throw Error("checkpoint holds inf/NaN in " + std::to_string(bad.size()) + " state tensor(s) (" + name_list(bad) +
                    "): training had diverged when it was written",
                file.string(),
                "use an earlier checkpoint whose weights are finite (resume --checkpoint FILE), with a lower "
                "learning rate or in fp32/bf16");
}

}  // namespace ampgan
