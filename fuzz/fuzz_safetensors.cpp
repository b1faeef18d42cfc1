// Safetensors decoding and checkpoint validation: the header JSON, offsets, dtypes, shapes,
// the metadata a checkpoint must carry and its embedded configuration.
#include "core/common/error.h"
#include "core/io/safetensors.h"
#include "core/run/checkpoint.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    (void)ampgan::io::decode_safetensors(bytes, "fuzz input");
  } catch (const ampgan::Error&) {}
  const auto p = ampgan::fuzz::write_input("checkpoint.safetensors", data, size);
  try {
    ampgan::CheckpointInfo info;
    (void)ampgan::read_checkpoint(p, &info);
  } catch (const ampgan::Error&) {}
  return 0;
}
