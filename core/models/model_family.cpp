#include "core/models/model_family.h"

#include "core/common/error.h"
#include "core/models/resnet.h"

namespace ampgan {

ModelFamily parse_model_family(const std::string& s) {
  if (s == "dcgan") return ModelFamily::DCGAN;
  if (s == "resnet") return ModelFamily::ResNet;
  throw Error("unknown model \"" + s + "\"", "--model", "use dcgan or resnet");
}

const char* model_family_name(ModelFamily f) { return f == ModelFamily::ResNet ? "resnet" : "dcgan"; }

GanPair make_gan(Backend& b, ModelFamily f, const DcganSpec& spec, uint64_t seed, uint64_t stream_g,
                 uint64_t stream_d) {
  GanPair p;
  if (f == ModelFamily::DCGAN) {
    p.g = make_generator(b, spec);
    p.d = make_discriminator(b, spec);
    init_dcgan(b, *p.g, seed, stream_g);
    init_dcgan(b, *p.d, seed, stream_d);
    return p;
  }
  ResnetSpec r;
  r.res = spec.res;
  r.channels = spec.channels;
  r.width = spec.width;
  r.latent = spec.latent;
  r.classes = spec.classes;
  p.g = make_resnet_generator(b, r);
  p.d = make_resnet_discriminator(b, r, seed, stream_d);  // u, v of the spectral norms
  init_resnet(b, *p.g, seed, stream_g);
  init_resnet(b, *p.d, seed, stream_d);
  return p;
}

}  // namespace ampgan
