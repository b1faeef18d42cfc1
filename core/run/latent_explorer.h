// The latent space of a trained generator, as `ampgan sample --seeds/--truncation/--interpolate`
// and the studio's Explore tab walk it: one seed names one image (its latent drawn from that seed
// alone), BigGAN's truncation trick, and interpolation between two latents.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ampgan {

class Trainer;

enum class LatentPath : uint8_t { Lerp, Slerp };
const char* latent_path_name(LatentPath p);  // "lerp", "slerp"
// "lerp" or "slerp"; throws Error naming `what` otherwise.
LatentPath parse_latent_path(const std::string& text, const std::string& what);

// Truncation thresholds a user may ask for: (0, kMaxTruncation]; 0 means none. Beyond 4 almost no
// standard normal value is redrawn, so larger thresholds change nothing a user could see.
constexpr float kMaxTruncation = 4.0f;
// Throws Error naming `what` for a threshold outside [0, kMaxTruncation] ("truncation 0" is none).
void check_truncation(double t, const std::string& what);

// The latent of seed `seed`: nz standard normal values of stream rng_stream::kExplorerLatents under
// that seed, the same on every host and backend. truncation > 0: BigGAN's truncated normal (Brock
// et al. 2019, sec. 3.1): every value whose magnitude exceeds the threshold is redrawn from the
// same seed until it lies within; values already within are kept as drawn.
std::vector<float> seed_latent(uint64_t seed, int nz, float truncation = 0.0f);
// The latents of batch norm's standing statistics for images of this truncation (count x nz,
// stream rng_stream::kStandingStats, latent i drawn as seed_latent draws seed i): statistics of
// the same distribution as the images', so that truncation makes images more typical, not fainter
// (on untruncated statistics a truncated latent's activations are normalised towards grey).
std::vector<float> standing_latents(int count, int nz, float truncation = 0.0f);
// seed_latent of each seed, back to back (seeds.size() x nz).
std::vector<float> seed_latents(const std::vector<uint64_t>& seeds, int nz, float truncation = 0.0f);

// `frames` latents from a to b (frames >= 2), at t = i / (frames - 1): linear, or spherical
// (slerp: along the great circle, for Gaussian latents whose norm lerp would shrink midway; lerp
// where a and b are nearly parallel). The first frame is a and the last b, bit for bit.
std::vector<float> interpolate_latents(const std::vector<float>& a, const std::vector<float>& b, int frames,
                                       LatentPath path);

// "3", "3,7,9", "10-19", "0-3,8": the seeds, in the order written; at most kMaxSeeds. Throws Error
// naming `what` with an example for anything else (a reversed range, a number beyond 2^63).
constexpr size_t kMaxSeeds = 4096;
std::vector<uint64_t> parse_seed_list(const std::string& text, const std::string& what);

// The images of n latents, each generated alone, so that an image depends on its own latent only:
// the same seed gives the same image in any grid, and an interpolation's end frames are its
// endpoint images. Batch norm uses standing statistics of the weights sampled
// (core/train/standing_stats.h), which look like batch statistics' images; the running averages
// wash an EMA generator's images out. NHWC FP32 in [-1, 1], the EMA generator where the run
// keeps one, in the trainer's precision.
// truncation: the latents' (the standing statistics are drawn alike). progress(done, n) before
// each image and once all are done; returning false throws Cancelled.
// classes: a class-conditional generator's class of each image (i % classes without them).
std::vector<float> explore_images(Trainer& trainer, const std::vector<float>& latents, int n, float truncation = 0,
                                  const std::function<bool(int, int)>& progress = {},
                                  const std::vector<int32_t>& classes = {});
// A run's class by number or (case-insensitively) by name among `names`; throws Error naming
// `what` with the classes there are.
int parse_class(const std::string& text, int classes, const std::vector<std::string>& names, const std::string& what);

}  // namespace ampgan
