#include "core/data/image_folder.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

#include <opencv2/imgcodecs.hpp>

#include "core/common/error.h"
#include "core/data/decode_images.h"
#include "core/data/preprocess.h"
#include "core/io/atomic_file.h"

namespace fs = std::filesystem;

namespace ampgan::data {

namespace {

// torchvision's ImageFolder layout, root/<class>/.../img.png: each image labelled by its
// first-level subfolder, classes numbered in the sorted order of their names.
struct FolderClasses {
  std::vector<int32_t> labels;     // (files) or empty when the folder is not laid out so
  std::vector<std::string> names;  // (classes), sorted
  std::string warning;             // why a folder that looks like one is not labelled
};

FolderClasses folder_classes(const std::vector<fs::path>& files, const std::string& dir) {
  FolderClasses out;
  std::vector<std::string> first(files.size());  // empty for an image at the root
  int at_root = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    const fs::path rel = files[i].lexically_relative(dir);
    if (std::distance(rel.begin(), rel.end()) > 1)
      first[i] = rel.begin()->string();
    else
      ++at_root;
  }
  std::set<std::string> classes(first.begin(), first.end());  // std::string: byte-wise order
  classes.erase(std::string());
  if (classes.size() < 2) return out;  // one subfolder is not a split into classes
  if (at_root > 0) {
    out.warning = std::to_string(at_root) + " image(s) lie directly in " + dir + ", not in one of its " +
                  std::to_string(classes.size()) + " class subfolders: loaded without labels";
    return out;
  }
  out.names.assign(classes.begin(), classes.end());
  out.labels.resize(files.size());
  for (size_t i = 0; i < files.size(); ++i)
    out.labels[i] =
        static_cast<int32_t>(std::lower_bound(out.names.begin(), out.names.end(), first[i]) - out.names.begin());
  return out;
}

// Labels for the images that decoded (ok), with the class names; every subfolder keeps its
// number even when none of its images decoded.
void label_by_folder(ImageSet& set, const FolderClasses& classes, const std::vector<char>& ok, const std::string& dir) {
  std::vector<int32_t> kept;
  for (size_t i = 0; i < classes.labels.size(); ++i)
    if (ok[i]) kept.push_back(classes.labels[i]);
  if (kept.empty()) return;
  std::vector<int32_t> occurring = kept;
  std::sort(occurring.begin(), occurring.end());
  occurring.erase(std::unique(occurring.begin(), occurring.end()), occurring.end());
  detail::set_labels(set, std::move(kept), dir);
  if (set.num_classes == occurring.back() + 1) {
    set.num_classes = static_cast<int>(classes.names.size());
    set.class_names = classes.names;
  } else {  // set_labels renumbered the classes that occur, in order
    for (int32_t c : occurring) set.class_names.push_back(classes.names[c]);
  }
}

}  // namespace

ImageSet load_image_folder(const std::string& dir, const LoadOptions& opt) {
  if (opt.res < 1) throw Error("invalid resolution " + std::to_string(opt.res), "--res", "use 32, 64 or 128");
  if (opt.channels != 0 && opt.channels != 1 && opt.channels != 3)
    throw Error("invalid channel count " + std::to_string(opt.channels), "--channels", "use 1 or 3");
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw Error("no such folder", dir, "check the path of the image folder");

  // ---- collect candidate files, sorted so the order does not depend on the file system ----
  std::vector<fs::path> files;
  std::vector<std::string> ignored;    // files without an image extension
  std::vector<std::string> not_files;  // FIFOs, devices, dangling links, loops of links
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
  if (ec) throw Error("cannot read folder: " + ec.message(), dir, "check its permissions");
  for (; it != end; it.increment(ec)) {
    if (ec) throw Error("cannot read folder: " + ec.message(), dir, "check its permissions");
    const fs::path& p = it->path();
    if (p.filename().string().starts_with(".")) {  // .git, .DS_Store, editor files
      if (it->is_directory(ec)) it.disable_recursion_pending();
      continue;
    }
    std::error_code st_ec;
    const fs::file_status st = it->status(st_ec);  // through links
    if (fs::is_directory(st)) continue;
    if (!fs::is_regular_file(st)) {
      // Never read (a FIFO would block, a device never end), but never dropped without a word.
      std::error_code lec;
      const bool link = fs::is_symlink(it->symlink_status(lec));
      const char* kind = st_ec.value() == ELOOP    ? "a loop of links"
                         : link && !fs::exists(st) ? "a link to nothing"
                         : fs::is_fifo(st)         ? "a FIFO"
                         : fs::is_socket(st)       ? "a socket"
                                                   : "a device or other non-file";
      not_files.push_back(p.lexically_relative(dir).generic_string() + " (" + kind + ")");
      continue;
    }
    if (detail::has_image_extension(p.filename().string()))
      files.push_back(p);
    else
      ignored.push_back(p.lexically_relative(dir).generic_string());
  }
  std::sort(files.begin(), files.end());
  std::sort(ignored.begin(), ignored.end());
  std::sort(not_files.begin(), not_files.end());
  if (files.empty()) {
    if (!not_files.empty())
      throw Error("the folder holds no image files, only " + std::to_string(not_files.size()) +
                      " entries that are not regular files: " + detail::list_names(not_files) +
                      (ignored.empty() ? std::string() : " and " + std::to_string(ignored.size()) + " other file(s)"),
                  dir, "put image files (not links to missing files, pipes or devices) in it");
    if (ignored.empty())
      throw Error("the folder holds no images", dir,
                  std::string("put image files (") + detail::kImageExtensionList + ") in it or its subfolders");
    throw Error("the folder holds no image files, only " + std::to_string(ignored.size()) +
                    " other file(s): " + detail::list_names(ignored),
                dir, std::string("images must have one of the extensions ") + detail::kImageExtensionList);
  }

  const FolderClasses classes = folder_classes(files, dir);

  // ---- decode in parallel ----
  const int n = static_cast<int>(files.size());
  std::vector<std::string> names(n);
  for (int i = 0; i < n; ++i) names[i] = files[i].lexically_relative(dir).generic_string();
  ImageSet set;
  std::vector<char> ok;
  detail::ImageSource source;
  source.head = [&](int64_t i, size_t bytes, uint64_t* size) {
    const io::InputFile f(files[i], detail::kMaxImageFileBytes);
    *size = f.size();
    std::string head(static_cast<size_t>(std::min<uint64_t>(bytes, f.size())), '\0');
    f.read_at(0, head.data(), head.size());
    return head;
  };
  source.whole = [&](int64_t i, uint64_t max_bytes) { return io::read_file(files[i], max_bytes); };
  detail::decode_images(set, n, source, names, opt, dir, ok);
  if (!classes.labels.empty()) label_by_folder(set, classes, ok, dir);
  fs::path name = fs::absolute(dir, ec).lexically_normal();  // "." names the real folder
  if (!name.has_filename()) name = name.parent_path();       // "photos/" -> "photos"
  set.name = name.filename().string();
  set.source = dir;
  if (!ignored.empty())
    set.warnings.push_back("ignored " + std::to_string(ignored.size()) +
                           " file(s) without an image extension: " + detail::list_names(ignored));
  if (!not_files.empty())
    set.warnings.push_back("skipped " + std::to_string(not_files.size()) +
                           " entries that are not regular files: " + detail::list_names(not_files));
  if (!classes.warning.empty()) set.warnings.push_back(classes.warning);
  return set;
}

}  // namespace ampgan::data
