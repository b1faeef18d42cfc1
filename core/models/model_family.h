// The model families the Trainer builds: the DCGAN (core/models/dcgan.h) and the ResNet GAN
// (core/models/resnet.h). Both take their sizes (resolution, channels, width, latent) from a
// DcganSpec; the ResNet's discriminator is spectrally normalised.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/models/dcgan.h"

namespace ampgan {

enum class ModelFamily : uint8_t { DCGAN, ResNet };

ModelFamily parse_model_family(const std::string& s);  // "dcgan" or "resnet"; throws Error naming --model
const char* model_family_name(ModelFamily f);          // "dcgan", "resnet"

struct GanPair {
  std::unique_ptr<Sequential> g, d;
};
// Both networks, built and initialised from Philox streams (seed, stream_g / stream_d).
GanPair make_gan(Backend& b, ModelFamily f, const DcganSpec& spec, uint64_t seed, uint64_t stream_g, uint64_t stream_d);

}  // namespace ampgan
