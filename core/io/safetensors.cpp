#include "core/io/safetensors.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <set>

#include <nlohmann/json.hpp>

#include "core/common/error.h"
#include "core/io/atomic_file.h"

namespace ampgan::io {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;  // keeps the header's key order: we write tensors in order

namespace {

constexpr const char* kCorruptHint = "The file is damaged or incomplete; use another checkpoint or export it again";

size_t dtype_bytes_or_zero(const std::string& d) {
  static const std::map<std::string, size_t> sizes = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"F8_E8M0", 1},
      {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},     {"U32", 4},
      {"F32", 4},  {"I64", 8}, {"U64", 8}, {"F64", 8},     {"C64", 8}};
  const auto it = sizes.find(d);
  return it == sizes.end() ? 0 : it->second;
}

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// numel * element size, or false on a negative dimension or overflow.
bool byte_size(const std::vector<int64_t>& shape, size_t elem, uint64_t& out) {
  uint64_t n = elem;
  for (int64_t d : shape) {
    if (d < 0) return false;
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(d), &n)) return false;
  }
  out = n;
  return true;
}

std::string encode_impl(const StFile& f, const std::string& subject) {
  const std::string hint = "This is a bug in the code that built the checkpoint; please report it";
  ojson header = ojson::object();
  if (!f.metadata.empty()) {
    ojson meta = ojson::object();
    for (const auto& [k, v] : f.metadata) meta[k] = v;
    header["__metadata__"] = std::move(meta);
  }
  std::set<std::string> names;
  uint64_t offset = 0;
  for (const StTensor& t : f.tensors) {
    if (t.name == "__metadata__")
      throw Error("A tensor cannot be named __metadata__ (the format reserves it)", subject, hint);
    if (!names.insert(t.name).second) throw Error("Two tensors are named " + t.name, subject, hint);
    const size_t elem = dtype_bytes_or_zero(t.dtype);
    if (elem == 0) throw Error("Tensor " + t.name + " has unknown dtype " + t.dtype, subject, hint);
    uint64_t nbytes = 0;
    if (!byte_size(t.shape, elem, nbytes) || nbytes != t.data.size())
      throw Error("Tensor " + t.name + " has " + std::to_string(t.data.size()) + " bytes of data, but shape " +
                      shape_str(t.shape) + " of " + t.dtype + " needs " +
                      (nbytes ? std::to_string(nbytes) : "an impossible number of"),
                  subject, hint);
    ojson entry = ojson::object();
    entry["dtype"] = t.dtype;
    entry["shape"] = t.shape;
    entry["data_offsets"] = ojson::array({offset, offset + nbytes});
    header[t.name] = std::move(entry);
    offset += nbytes;
  }

  std::string json;
  try {
    json = header.dump();  // compact, as the reference writer's serde_json
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("Could not encode the header (a name is not valid UTF-8?): ") + e.what(), subject, hint);
  }
  // Padding keeps the buffer 8-byte aligned for readers that map the file.
  json.append((8 - json.size() % 8) % 8, ' ');

  std::string out;
  out.reserve(8 + json.size() + offset);
  const uint64_t n = json.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  out += json;
  for (const StTensor& t : f.tensors) out.append(reinterpret_cast<const char*>(t.data.data()), t.data.size());
  return out;
}

// A parsed header entry before its data is copied.
struct Entry {
  std::string name, dtype;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;
};

}  // namespace

size_t dtype_bytes(const std::string& dtype) {
  const size_t n = dtype_bytes_or_zero(dtype);
  if (n == 0)
    throw Error("Unknown safetensors dtype " + dtype, {},
                "Known: BOOL U8 I8 F8_E5M2 F8_E4M3 F8_E8M0 I16 U16 F16 BF16 I32 U32 F32 I64 U64 F64 C64");
  return n;
}

const StTensor* StFile::find(const std::string& name) const {
  for (const StTensor& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

const StTensor& StFile::at(const std::string& name, const fs::path& file_for_errors) const {
  if (const StTensor* t = find(name)) return *t;
  throw Error("The checkpoint has no tensor " + name, file_for_errors.string(),
              "It may come from another model size or another program; check that the file "
              "matches the settings you chose");
}

std::string encode_safetensors(const StFile& f) { return encode_impl(f, "safetensors data"); }

void write_safetensors(const fs::path& path, const StFile& f) {
  write_file_atomic(path, encode_impl(f, path.string()));
}

namespace {

// The 8-byte header size, checked against the bytes that follow it (total: the whole file's size).
uint64_t header_size(const uint8_t* b, uint64_t total, const std::string& name) {
  auto corrupt = [&](const std::string& what) { return Error(what, name, kCorruptHint); };
  if (total < 8)
    throw corrupt("Truncated or not a safetensors file: it is " + std::to_string(total) +
                  " bytes long, too short for the 8-byte header size");
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(b[i]) << (8 * i);
  // The reference reader's limit: a larger size means garbage, not a real header.
  if (n > 100'000'000)
    throw corrupt("Not a safetensors file: the header size says " + std::to_string(n) +
                  " bytes, far more than any real header");
  if (n > total - 8)
    throw corrupt("Truncated or not a safetensors file: the header size says " + std::to_string(n) +
                  " bytes, but only " + std::to_string(total - 8) + " follow");
  return n;
}

// The header's metadata and tensors (no data yet), with each tensor's [begin, end) in the data,
// checked against data_size: the tensors must tile it exactly. Tensors come in data order.
StFile parse_header(std::string_view header_text, uint64_t data_size, const std::string& name,
                    std::vector<Entry>& entries) {
  auto corrupt = [&](const std::string& what) { return Error(what, name, kCorruptHint); };
  if (header_text.empty() || header_text.front() != '{')
    throw corrupt("Not a safetensors file: the header is not a JSON object");
  ojson header;
  try {
    header = ojson::parse(header_text.begin(), header_text.end());
  } catch (const nlohmann::json::exception& e) {
    throw corrupt(std::string("Not a safetensors file: the header is not valid JSON (") + e.what() + ")");
  }
  if (!header.is_object()) throw corrupt("Not a safetensors file: the header is not a JSON object");

  StFile out;
  entries.clear();
  for (const auto& [key, val] : header.items()) {
    if (key == "__metadata__") {
      if (!val.is_object()) throw corrupt("The header's __metadata__ is not a JSON object");
      for (const auto& [mk, mv] : val.items()) {
        if (!mv.is_string()) throw corrupt("The metadata value for " + mk + " is not a string");
        out.metadata[mk] = mv.get<std::string>();
      }
      continue;
    }
    const std::string who = "Tensor " + key;
    if (!val.is_object()) throw corrupt(who + ": its header entry is not a JSON object");
    Entry e;
    e.name = key;

    const auto dt = val.find("dtype");
    if (dt == val.end() || !dt->is_string()) throw corrupt(who + " has no dtype");
    e.dtype = dt->get<std::string>();
    const size_t elem = dtype_bytes_or_zero(e.dtype);
    if (elem == 0) throw corrupt(who + " has unknown dtype " + e.dtype);

    const auto sh = val.find("shape");
    if (sh == val.end() || !sh->is_array()) throw corrupt(who + " has no shape");
    for (const auto& d : *sh) {
      // nlohmann parses non-negative integers as unsigned, negative ones as signed.
      if (!d.is_number_unsigned()) throw corrupt(who + " has a shape entry that is not a non-negative integer");
      if (d.is_number_unsigned() && d.get<uint64_t>() > uint64_t(INT64_MAX))
        throw corrupt(who + " has an impossibly large shape");
      e.shape.push_back(d.get<int64_t>());
    }

    const auto off = val.find("data_offsets");
    if (off == val.end() || !off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
        !(*off)[1].is_number_unsigned())
      throw corrupt(who + " has no valid data_offsets (two non-negative integers)");
    e.begin = (*off)[0].get<uint64_t>();
    e.end = (*off)[1].get<uint64_t>();
    // Only the error messages need it. Built with += : GCC 12 warns falsely (-Wrestrict) about
    // "[" + std::string.
    auto offs = [&e] {
      std::string s = "[";
      s += std::to_string(e.begin) + ", " + std::to_string(e.end) + "]";
      return s;
    };

    if (e.begin > e.end) throw corrupt(who + " has out-of-order data_offsets " + offs());
    uint64_t nbytes = 0;
    if (!byte_size(e.shape, elem, nbytes)) throw corrupt(who + " has an impossibly large shape " + shape_str(e.shape));
    if (e.end - e.begin != nbytes)
      throw corrupt(who + " has data_offsets " + offs() + " (" + std::to_string(e.end - e.begin) +
                    " bytes), but shape " + shape_str(e.shape) + " of " + e.dtype + " needs " + std::to_string(nbytes) +
                    " bytes");
    if (e.end > data_size)
      throw corrupt("Truncated file: tensor " + key + " ends at byte " + std::to_string(e.end) +
                    " of the data, but the file holds only " + std::to_string(data_size) + " bytes of data");
    entries.push_back(std::move(e));
  }

  // The reference reader requires the tensors to tile the buffer exactly.
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.begin < b.begin; });
  uint64_t pos = 0;
  const Entry* prev = nullptr;
  for (const Entry& e : entries) {
    if (e.begin < pos) throw corrupt("Tensors " + prev->name + " and " + e.name + " have overlapping data_offsets");
    if (e.begin > pos)
      throw corrupt("Bytes " + std::to_string(pos) + " to " + std::to_string(e.begin) +
                    " of the data belong to no tensor (a gap before tensor " + e.name + ")");
    pos = e.end;
    prev = &e;
  }
  if (pos != data_size)
    throw corrupt("The data holds " + std::to_string(data_size - pos) +
                  " bytes after the last tensor, which belong to no tensor");
  out.tensors.reserve(entries.size());
  for (const Entry& e : entries) out.tensors.push_back({e.name, e.dtype, e.shape, {}});
  return out;
}

}  // namespace

StFile read_safetensors(const fs::path& path, const std::function<void(const StFile&)>& check_header) {
  // The header first, then only the data it describes: a damaged or hostile file is refused
  // after reading at most its header, and nothing beyond the file's real size is allocated.
  const InputFile in(path);
  const std::string name = path.string();
  uint8_t size_bytes[8] = {};
  in.read_at(0, size_bytes, std::min<uint64_t>(8, in.size()));
  const uint64_t n = header_size(size_bytes, in.size(), name);
  std::string header_text(static_cast<size_t>(n), '\0');
  in.read_at(8, header_text.data(), header_text.size());
  std::vector<Entry> entries;
  StFile out = parse_header(header_text, in.size() - 8 - n, name, entries);
  if (check_header) check_header(out);
  for (size_t i = 0; i < entries.size(); ++i) {
    std::vector<uint8_t>& data = out.tensors[i].data;
    data.resize(static_cast<size_t>(entries[i].end - entries[i].begin));
    in.read_at(8 + n + entries[i].begin, data.data(), data.size());
  }
  return out;
}

StFile decode_safetensors(std::string_view bytes, const std::string& name) {
  const uint64_t n = header_size(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), name);
  const std::string_view buffer = bytes.substr(8 + n);
  std::vector<Entry> entries;
  StFile out = parse_header(bytes.substr(8, n), buffer.size(), name, entries);
  for (size_t i = 0; i < entries.size(); ++i) {
    const auto* p = reinterpret_cast<const uint8_t*>(buffer.data()) + entries[i].begin;
    out.tensors[i].data.assign(p, p + (entries[i].end - entries[i].begin));
  }
  return out;
}

}  // namespace ampgan::io
