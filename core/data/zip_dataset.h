// Zip archives in the layout of StyleGAN's dataset_tool: images anywhere in the archive
// (dataset_tool writes 00000/img00000000.png, ...) and an optional dataset.json at its root,
// {"labels": [["00000/img00000000.png", 6], ...]} or {"labels": null}. Read through libzip.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/data/image_set.h"

namespace ampgan::data {

// Decodes every image entry (sorted names; hidden entries and folders ignored), as
// load_image_folder does a folder; labelled when dataset.json has labels. Throws ampgan::Error
// naming the archive for a file that is not a readable zip, an archive without images, a damaged
// entry, an entry too large to be an image, and a dataset.json that is larger than labels for
// its images can be, not valid, or does not match the images (a label for a missing image, an
// image without a label, a label that is not a non-negative whole number, more classes than
// images). Entries are unpacked one at a time, each no further than its header allows
// (detail::decode_images), so what is in memory at once stays bounded.
ImageSet load_image_zip(const std::string& path, const LoadOptions& opt);

// dataset.json's labels by image name ({} for {"labels": null}); Error naming `where` for JSON
// that is not dataset_tool's layout (a label that is not a whole class number from 0, an image
// labelled twice).
std::map<std::string, int32_t> parse_dataset_labels(const std::string& text, const std::string& where);
// The most bytes a dataset.json labelling these images can honestly take; a larger one is not
// unpacked.
uint64_t dataset_json_max_bytes(const std::vector<std::string>& image_names);

// True when the file starts with a zip signature (PK\3\4, or PK\5\6 for an empty archive).
bool looks_like_zip(const std::string& path);

}  // namespace ampgan::data
