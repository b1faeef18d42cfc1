// Zip archives in the layout of StyleGAN's dataset_tool: images anywhere in the archive
// (dataset_tool writes 00000/img00000000.png, ...) and an optional dataset.json at its root,
// {"labels": [["00000/img00000000.png", 6], ...]} or {"labels": null}. Read through libzip.
#pragma once

#include <string>

#include "core/data/image_set.h"

namespace ampgan::data {

// Decodes every image entry (sorted names; hidden entries and folders ignored), as
// load_image_folder does a folder; labelled when dataset.json has labels. Throws ampgan::Error
// naming the archive for a file that is not a readable zip, an archive without images, a damaged
// entry, an entry too large to be an image, and a dataset.json that is not valid or does not
// match the images (a label for a missing image, an image without a label, a label that is not
// a non-negative whole number).
ImageSet load_image_zip(const std::string& path, const LoadOptions& opt);

// True when the file starts with a zip signature (PK\3\4, or PK\5\6 for an empty archive).
bool looks_like_zip(const std::string& path);

}  // namespace ampgan::data
