// A folder (searched recursively) of PNG/JPEG/BMP/WebP/TIFF images.
#pragma once

#include <string>

#include "core/data/image_set.h"

namespace ampgan::data {

// Decodes every image under dir (sorted paths, so the order is the same on every machine),
// centre-crops it to a square and resizes it to opt.res. Files that cannot be decoded are
// skipped and reported in ImageSet::warnings; no usable image at all throws ampgan::Error.
// Hidden files and folders (names starting with '.') are ignored. The result is unlabeled.
ImageSet load_image_folder(const std::string& dir, const LoadOptions& opt);

}  // namespace ampgan::data
