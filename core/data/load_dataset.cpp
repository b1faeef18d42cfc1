// load_dataset: turns a dataset spec into an ImageSet by dispatching to the loaders.
#include <cstdlib>
#include <filesystem>
#include <new>

#include "core/common/error.h"
#include "core/data/idx_dataset.h"
#include "core/data/image_folder.h"
#include "core/data/image_set.h"
#include "core/data/preprocess.h"
#include "core/data/synthetic.h"
#include "core/data/zip_dataset.h"

namespace fs = std::filesystem;

namespace ampgan::data {

namespace {

// prefix-images-idx3-ubyte(.gz) in dir, compressed preferred; empty when neither exists.
std::string find_idx(const fs::path& dir, const std::string& prefix, const std::string& kind) {
  std::error_code ec;
  const std::string stem = prefix + "-" + kind + "-ubyte";
  for (const char* ext : {".gz", ""}) {
    const fs::path p = dir / (stem + ext);
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  return {};
}

// Fashion-MNIST and MNIST: the same four file names in a folder given by an environment
// variable or a system default.
ImageSet load_known(const std::string& name, const std::string& display, const char* env_var, const char* default_dir,
                    const std::string& install_hint, const std::vector<std::string>& class_names,
                    const LoadOptions& opt) {
  const char* env = std::getenv(env_var);
  const bool from_env = env && *env;
  const fs::path dir = from_env ? fs::path(env) : fs::path(default_dir);
  const std::string prefix = opt.test_split ? "t10k" : "train";
  const std::string images = find_idx(dir, prefix, "images-idx3");
  if (images.empty())
    throw Error(display + " files not found: no " + prefix + "-images-idx3-ubyte(.gz) in the folder" +
                    (from_env ? std::string(" named by ") + env_var : std::string()),
                dir.string(), install_hint);
  const std::string labels = find_idx(dir, prefix, "labels-idx1");
  ImageSet set = load_idx(images, labels, opt);
  set.name = name;
  set.source = labels.empty() ? images : images + "; " + labels;
  if (labels.empty()) set.warnings.push_back("no labels file beside " + images + "; loaded without labels");
  // Files in the folder an environment variable names may hold other labels: names only for
  // the known classes.
  if (!set.labels.empty() && static_cast<size_t>(set.num_classes) <= class_names.size())
    set.class_names.assign(class_names.begin(), class_names.begin() + set.num_classes);
  return set;
}

// Fashion-MNIST's classes in label order (Xiao et al. 2017, the dataset's README).
const std::vector<std::string> kFashionMnistClasses = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                                       "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
const std::vector<std::string> kMnistClasses = {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"};

// The labels file that belongs to an IDX images file, by the MNIST naming convention.
std::string labels_beside(const fs::path& images) {
  std::string file = images.filename().string();
  const auto pos = file.find("images-idx3");
  if (pos == std::string::npos) return {};
  file.replace(pos, 11, "labels-idx1");
  const fs::path p = images.parent_path() / file;
  std::error_code ec;
  return fs::is_regular_file(p, ec) ? p.string() : std::string();
}

}  // namespace

namespace {
ImageSet load_any(const std::string& spec, const LoadOptions& opt);
}  // namespace

ImageSet load_dataset(const std::string& spec, const LoadOptions& opt) {
  try {
    return load_any(spec, opt);
  } catch (const std::bad_alloc&) {
    // Not the batch's fault (the generic advice): the data itself did not fit.
    throw Error("the dataset did not fit in memory while it was loaded", spec.empty() ? "--dataset" : spec,
                "use fewer images or a lower --res, or free memory (a memory limit such as ulimit -v counts too)");
  }
}

namespace {

ImageSet load_any(const std::string& spec, const LoadOptions& opt) {
  if (spec.empty())
    throw Error("no dataset given", "--dataset",
                "give 'synthetic', 'fashion-mnist', 'mnist', an IDX images file or a folder of images");
  if (spec == "synthetic") {
    detail::check_cancel(opt, spec);
    ImageSet set = make_synthetic(opt.synthetic_count, opt.res, opt.channels, opt.seed);
    if (opt.progress) opt.progress(set.count, set.count);
    return set;
  }
  if (spec == "fashion-mnist")
    return load_known("fashion-mnist", "Fashion-MNIST", "AMPGAN_FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist",
                      "install them with `sudo apt install dataset-fashion-mnist` (scripts/setup.sh "
                      "does), or set AMPGAN_FASHION_MNIST_DIR to a folder holding "
                      "train-images-idx3-ubyte.gz and the other three Fashion-MNIST files",
                      kFashionMnistClasses, opt);
  if (spec == "mnist")
    return load_known("mnist", "MNIST", "AMPGAN_MNIST_DIR", "/usr/share/datasets/mnist",
                      "set AMPGAN_MNIST_DIR to a folder holding train-images-idx3-ubyte.gz, "
                      "train-labels-idx1-ubyte.gz and the t10k files of MNIST",
                      kMnistClasses, opt);

  std::error_code ec;
  const fs::file_status st = fs::status(spec, ec);
  if (!fs::exists(st))
    throw Error("no such file or folder", spec,
                "give 'synthetic', 'fashion-mnist', 'mnist', an IDX images file, a folder of images or a zip of them");
  if (fs::is_directory(st)) return load_image_folder(spec, opt);
  // By content, or by name so that a damaged .zip is reported as an archive, not as an IDX file.
  if (fs::is_regular_file(st) && (looks_like_zip(spec) || fs::path(spec).extension() == ".zip"))
    return load_image_zip(spec, opt);
  if (fs::is_regular_file(st)) return load_idx(spec, labels_beside(spec), opt);
  throw Error("not a regular file or folder", spec, "give an IDX images file or a folder of images");
}

}  // namespace

}  // namespace ampgan::data
