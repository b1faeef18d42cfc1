#include "core/data/zip_dataset.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include <zip.h>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>

#include "core/common/error.h"
#include "core/data/decode_images.h"
#include "core/data/preprocess.h"
#include "core/io/read_limits.h"

namespace fs = std::filesystem;

namespace ampgan::data {

namespace {

// Before an entry is unpacked: what it claims must be a size an image file can have and that
// its compressed bytes can inflate to (a "zip bomb" of a few KB claiming GBs is refused). The
// decoded pixels are capped later, as for folders (detail::decode_images).
void check_entry_size(const std::string& name, uint64_t size, uint64_t compressed, const std::string& path) {
  if (size > detail::kMaxImageFileBytes)
    throw Error("entry '" + name + "' would unpack to " + io::human_bytes(size) +
                    ", more than an image file of a dataset can need (" + io::human_bytes(detail::kMaxImageFileBytes) +
                    ")",
                path, "rebuild the archive from the images (e.g. with StyleGAN's dataset_tool)");
  if (size > io::max_inflated_size(compressed))
    throw Error("entry '" + name + "' claims to unpack to " + io::human_bytes(size) + " from " +
                    io::human_bytes(compressed) + ", more than compression allows",
                path, "the archive is damaged or crafted; rebuild it from the images");
}

struct ZipCloser {
  void operator()(zip_t* z) const { zip_discard(z); }  // read-only: nothing to write back
};

// libzip's own words ("File already exists", "No error") say little about an archive: ours
// for the codes an archive can cause, libzip's for the rest.
std::string zip_message(int code) {
  switch (code) {
    case ZIP_ER_EXISTS:
      return "two of its entries have the same name";
    case ZIP_ER_NOZIP:
      return "Not a zip archive";
    case ZIP_ER_INCONS:
      return "its table of contents does not match its entries (damaged or cut short)";
    case ZIP_ER_CRC:
      return "an entry's CRC does not match its bytes";
    case ZIP_ER_COMPNOTSUPP:
      return "an entry uses a compression method libzip cannot read";
    case ZIP_ER_ENCRNOTSUPP:
    case ZIP_ER_NOPASSWD:
      return "an entry is encrypted";
    case ZIP_ER_EOF:
      return "it ends before its last entry";
    default:
      break;
  }
  zip_error_t e;
  zip_error_init_with_code(&e, code);
  std::string s = zip_error_strerror(&e);
  zip_error_fini(&e);
  return s;
}

std::string zip_file_message(zip_file_t* f) {
  zip_error_t* e = zip_file_get_error(f);
  const int code = e ? zip_error_code_zip(e) : ZIP_ER_OK;
  return code == ZIP_ER_OK ? std::string() : zip_message(code);
}

// The first min(n, size) bytes of an entry (all of it, CRC checked, when n >= size).
std::string read_entry(zip_t* z, zip_uint64_t index, const std::string& name, uint64_t size, const std::string& path,
                       uint64_t n = UINT64_MAX) {
  const uint64_t want = std::min(n, size);
  std::string buf(static_cast<size_t>(want), '\0');
  zip_file_t* f = zip_fopen_index(z, index, 0);
  if (!f)
    throw Error("cannot open entry '" + name + "': " + zip_message(zip_error_code_zip(zip_get_error(z))), path,
                "the archive is damaged or uses an unsupported compression or encryption; rebuild it");
  zip_int64_t got = want ? zip_fread(f, buf.data(), want) : 0;
  // libzip checks the CRC when it reaches the end of the entry: one more read gets there.
  uint8_t extra;
  if (want == size && got >= 0 && zip_fread(f, &extra, 1) != 0) got = -1;
  std::string why = got < 0 ? zip_file_message(f) : "";
  zip_fclose(f);
  if (got >= 0 && static_cast<uint64_t>(got) != want)
    why = "it ends after " + std::to_string(got) + " of its " + std::to_string(size) + " bytes";
  else if (got < 0 && why.empty())
    why = "its data does not inflate to the " + std::to_string(size) + " bytes it announces";
  if (got < 0 || static_cast<uint64_t>(got) != want)
    throw Error("entry '" + name + "' is damaged: " + why, path,
                "the archive is corrupt (a failed download or copy?); rebuild or fetch it again");
  return buf;
}

}  // namespace

std::map<std::string, int32_t> parse_dataset_labels(const std::string& text, const std::string& where) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("dataset.json is not valid JSON: ") + e.what(), where,
                "fix it, or remove it from the archive to train without labels");
  }
  if (!j.is_object() || !j.contains("labels"))
    throw Error("dataset.json has no \"labels\" key", where,
                "use dataset_tool's layout: {\"labels\": [[\"00000/img00000000.png\", 6], ...]} or {\"labels\": null}");
  std::map<std::string, int32_t> out;
  const nlohmann::json& l = j["labels"];
  if (l.is_null()) return out;
  if (!l.is_array())
    throw Error("dataset.json's \"labels\" is neither a list nor null", where,
                "use [[\"00000/img00000000.png\", 6], ...] or null");
  for (const nlohmann::json& e : l) {
    if (!e.is_array() || e.size() != 2 || !e[0].is_string() || !e[1].is_number_integer() || e[1].get<int64_t>() < 0 ||
        e[1].get<int64_t>() > 1'000'000)
      throw Error(
          "dataset.json has a label that is not [\"name\", class] with a whole class from 0: " + e.dump().substr(0, 80),
          where, "each label must be a pair of an image name in the archive and its class number");
    if (!out.emplace(e[0].get<std::string>(), e[1].get<int32_t>()).second)
      throw Error("dataset.json labels '" + e[0].get<std::string>() + "' twice", where, "give each image one label");
  }
  return out;
}

uint64_t dataset_json_max_bytes(const std::vector<std::string>& image_names) {
  // Each label, ["name", class], with room for \uXXXX escapes and a pretty-printer's indentation.
  uint64_t bytes = 64 << 10;
  for (const std::string& n : image_names) bytes += 6 * uint64_t{n.size()} + 128;
  return bytes;
}

bool looks_like_zip(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  unsigned char sig[4] = {};
  if (!f || std::fread(sig, 1, 4, f.get()) != 4) return false;
  return sig[0] == 'P' && sig[1] == 'K' && ((sig[2] == 3 && sig[3] == 4) || (sig[2] == 5 && sig[3] == 6));
}

namespace {

struct ZipEntry {
  std::string name;
  zip_uint64_t index;
  uint64_t size, compressed;
};

// The archive's entries: images (sorted by name, their claimed sizes checked before any is
// unpacked), dataset.json, other files (ignored, said so) and names that lead out of the root.
struct ZipEntries {
  std::vector<ZipEntry> images;
  std::optional<ZipEntry> json;
  std::vector<std::string> ignored, outside;
};

ZipEntries list_entries(zip_t* z, const std::string& path) {
  ZipEntries out;
  const zip_int64_t n_entries = zip_get_num_entries(z, 0);
  for (zip_int64_t i = 0; i < n_entries; ++i) {
    zip_stat_t st;
    if (zip_stat_index(z, i, 0, &st) != 0 || !(st.valid & ZIP_STAT_NAME) || !(st.valid & ZIP_STAT_SIZE) ||
        !(st.valid & ZIP_STAT_COMP_SIZE))
      throw Error("entry " + std::to_string(i) +
                      " of the archive cannot be read: " + zip_message(zip_error_code_zip(zip_get_error(z))),
                  path, "the archive is damaged; rebuild it");
    const std::string name = st.name;
    if (name.empty() || name.back() == '/') continue;  // folders
    // A name that climbs out of the archive's root ("../x.png", "/etc/x.png") is no part of a
    // dataset_tool archive: skipped, and said so.
    bool climbs = name.front() == '/' || name.find('\\') != std::string::npos;
    for (const auto& part : fs::path(name)) climbs |= part == "..";
    if (climbs) {
      out.outside.push_back(name);
      continue;
    }
    const std::string file = fs::path(name).filename().string();
    bool hidden = file.starts_with(".") || name.starts_with("__MACOSX/");  // macOS's resource forks
    for (const auto& part : fs::path(name)) hidden |= part.string().starts_with(".");
    if (hidden) continue;
    const ZipEntry e{name, static_cast<zip_uint64_t>(i), st.size, st.comp_size};
    if (name == "dataset.json") {
      out.json = e;
    } else if (detail::has_image_extension(file)) {
      check_entry_size(name, st.size, st.comp_size, path);
      out.images.push_back(e);
    } else {
      out.ignored.push_back(name);
    }
  }
  std::sort(out.images.begin(), out.images.end(), [](const ZipEntry& a, const ZipEntry& b) { return a.name < b.name; });
  std::sort(out.ignored.begin(), out.ignored.end());
  std::sort(out.outside.begin(), out.outside.end());
  if (out.images.empty())
    throw Error(out.ignored.empty() ? std::string("the archive holds no images")
                                    : "the archive holds no image files, only " + std::to_string(out.ignored.size()) +
                                          " other file(s): " + detail::list_names(out.ignored),
                path, std::string("put images (") + detail::kImageExtensionList + ") in it, as dataset_tool does");
  return out;
}

// dataset.json's optional "class_names" (not dataset_tool's, which names no classes): a list of
// strings, else empty.
std::vector<std::string> dataset_class_names(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  std::vector<std::string> out;
  if (!j.is_object() || !j.contains("class_names") || !j["class_names"].is_array()) return out;
  for (const nlohmann::json& n : j["class_names"]) {
    if (!n.is_string()) return {};
    out.push_back(n.get<std::string>());
  }
  return out;
}

// dataset.json's labels, each image labelled and each label an image's, checked before
// anything is decoded, and its class names. Empty without a dataset.json (or with "labels": null).
std::map<std::string, int32_t> read_labels(zip_t* z, const ZipEntries& e, const std::vector<std::string>& names,
                                           const std::string& path, const std::string& json_where,
                                           std::vector<std::string>& class_names) {
  std::map<std::string, int32_t> labels;
  if (!e.json) return labels;
  // Labels for n images take little room: a dataset.json larger than that is not unpacked.
  const uint64_t cap = dataset_json_max_bytes(names);
  if (e.json->size > cap)
    throw Error("dataset.json would unpack to " + io::human_bytes(e.json->size) + ", more than the labels of " +
                    std::to_string(names.size()) + " images can take (" + io::human_bytes(cap) + ")",
                json_where,
                "rebuild it with one [\"name\", class] pair per image, or remove it to train without labels");
  check_entry_size(e.json->name, e.json->size, e.json->compressed, path);
  const std::string text = read_entry(z, e.json->index, e.json->name, e.json->size, path);
  labels = parse_dataset_labels(text, json_where);
  if (labels.empty()) return labels;
  class_names = dataset_class_names(text);
  std::vector<std::string> unlabelled, missing;
  for (const std::string& name : names)
    if (!labels.count(name)) unlabelled.push_back(name);
  for (const auto& [name, label] : labels)
    if (!std::binary_search(names.begin(), names.end(), name)) missing.push_back(name);
  if (!missing.empty())
    throw Error("dataset.json labels " + std::to_string(missing.size()) +
                    " image(s) the archive does not hold: " + detail::list_names(missing),
                json_where, "rebuild the archive so that dataset.json matches its images");
  if (!unlabelled.empty())
    throw Error("dataset.json has no label for " + std::to_string(unlabelled.size()) +
                    " image(s) of the archive: " + detail::list_names(unlabelled),
                json_where, "label every image, or set \"labels\": null to train without labels");
  return labels;
}

}  // namespace

ImageSet load_image_zip(const std::string& path, const LoadOptions& opt) {
  int code = 0;
  std::unique_ptr<zip_t, ZipCloser> z(zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code));
  if (!z)
    throw Error("not a readable zip archive: " + zip_message(code), path,
                "give a zip file (as StyleGAN's dataset_tool writes), an image folder or an IDX file");
  ZipEntries entries = list_entries(z.get(), path);
  const std::vector<ZipEntry>& images = entries.images;
  const int n = static_cast<int>(images.size());
  std::vector<std::string> names(n);
  for (int i = 0; i < n; ++i) names[i] = images[i].name;

  const std::string json_where = path + ": dataset.json";
  std::vector<std::string> class_names;
  std::map<std::string, int32_t> labels = read_labels(z.get(), entries, names, path, json_where, class_names);

  // ---- decode in parallel; libzip is not thread-safe on one archive, so entries are unpacked
  // one at a time under a lock, each only as far as the decoder's checks allow ----
  std::mutex zip_lock;
  std::optional<Error> damaged;  // a damaged entry fails the whole archive, after decoding stops
  auto read = [&](int64_t i, uint64_t bytes) {
    std::lock_guard<std::mutex> lock(zip_lock);
    try {
      return read_entry(z.get(), images[i].index, images[i].name, images[i].size, path, bytes);
    } catch (const Error& e) {
      if (!damaged) damaged = e;
      throw;
    }
  };
  detail::ImageSource source;
  source.head = [&](int64_t i, size_t bytes, uint64_t* size) {
    *size = images[i].size;
    return read(i, bytes);
  };
  source.whole = [&](int64_t i, uint64_t max_bytes) {
    if (images[i].size > max_bytes) throw Error("entry '" + images[i].name + "' is larger than expected", path);
    return read(i, UINT64_MAX);
  };
  ImageSet set;
  std::vector<char> ok;
  detail::decode_images(set, n, source, names, opt, path, ok);
  if (damaged) throw *damaged;
  z.reset();
  if (!labels.empty()) {
    std::vector<int32_t> kept;
    for (int i = 0; i < n; ++i)
      if (ok[i]) kept.push_back(labels[names[i]]);
    const int32_t top = *std::max_element(kept.begin(), kept.end());
    detail::set_labels(set, std::move(kept), json_where);
    // Names by class number: not when set_labels renumbered the classes.
    if (set.num_classes == top + 1 && class_names.size() >= static_cast<size_t>(set.num_classes))
      set.class_names.assign(class_names.begin(), class_names.begin() + set.num_classes);
  }
  set.name = fs::path(path).stem().string();
  set.source = path;
  if (!entries.ignored.empty())
    set.warnings.push_back(
        "ignored " + std::to_string(entries.ignored.size()) +
        " file(s) without an image extension in the archive: " + detail::list_names(entries.ignored));
  if (!entries.outside.empty())
    set.warnings.push_back("skipped " + std::to_string(entries.outside.size()) +
                           " entries whose names lead out of the archive's root (.. or an absolute path): " +
                           detail::list_names(entries.outside));
  return set;
}

}  // namespace ampgan::data
