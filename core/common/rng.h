// Counter-based random numbers (Philox4x32-10, Salmon et al., SC'11). A value depends only on
// (seed, stream, index), never on call order or thread count, so the CPU and CUDA backends draw
// the same latents and the same initial weights, and a resumed run draws what the uninterrupted
// run would have drawn.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/common/hd.h"

namespace ampgan {

struct Philox4 {
  uint32_t v[4];
};

AMPGAN_HD void mulhilo32(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  const uint64_t p = static_cast<uint64_t>(a) * b;
  hi = static_cast<uint32_t>(p >> 32);
  lo = static_cast<uint32_t>(p);
}

AMPGAN_HD Philox4 philox4x32(uint64_t counter, uint64_t stream, uint64_t seed) {
  uint32_t c0 = static_cast<uint32_t>(counter), c1 = static_cast<uint32_t>(counter >> 32);
  uint32_t c2 = static_cast<uint32_t>(stream), c3 = static_cast<uint32_t>(stream >> 32);
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo32(0xD2511F53u, c0, hi0, lo0);
    mulhilo32(0xCD9E8D57u, c2, hi1, lo1);
    const uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return Philox4{{c0, c1, c2, c3}};
}

// Uniform in (0, 1): never 0, so log() below is finite.
AMPGAN_HD float uniform_open01(uint32_t x) {
  return static_cast<float>(x >> 8) * 5.9604644775390625e-8f + 2.98023223876953125e-8f;
}

// Standard normal number `index` of stream (seed, stream). Pairs of indices share one
// Box-Muller draw.
AMPGAN_HD float philox_normal(uint64_t seed, uint64_t stream, uint64_t index) {
  const Philox4 r = philox4x32(index >> 1, stream, seed);
  const float u1 = uniform_open01(r.v[0]);
  const float u2 = uniform_open01(r.v[1]);
  const float radius = sqrtf(-2.0f * logf(u1));
  const float theta = 6.2831853071795864f * u2;
  return (index & 1) ? radius * sinf(theta) : radius * cosf(theta);
}

// Uniform integer in [0, n) for shuffles; n far below 2^32, so the modulo bias is negligible
// (below n / 2^64 with the 64-bit draw).
AMPGAN_HD uint64_t philox_below(uint64_t seed, uint64_t stream, uint64_t index, uint64_t n) {
  const Philox4 r = philox4x32(index, stream, seed);
  const uint64_t x = (static_cast<uint64_t>(r.v[0]) << 32) | r.v[1];
  return x % n;
}

// Streams: each consumer of randomness draws from its own stream so that adding one never
// shifts another.
namespace rng_stream {
constexpr uint64_t kInitG = 1;
constexpr uint64_t kInitD = 2;
constexpr uint64_t kShuffle = 3;
constexpr uint64_t kFixedLatents = 4;
constexpr uint64_t kSampleLatents = 5;
constexpr uint64_t kEval = 6;
constexpr uint64_t kBenchData = 7;
constexpr uint64_t kClassifier = 8;
constexpr uint64_t kExplorerLatents = 9;  // one seed per image (core/run/latent_explorer.h)
constexpr uint64_t kStandingStats = 10;   // batch norm's standing statistics (core/train/standing_stats.h)
constexpr uint64_t kFakeClasses = 11;     // a conditional GAN's generated classes, per training step
// Training latents for step t use stream kTrainLatentBase + t; with n_dis > 1 the extra D step
// k (1 .. n_dis - 1) of step t uses train_latent_stream(k) + t, apart for t < 2^32.
constexpr uint64_t kTrainLatentBase = 1ull << 32;
constexpr uint64_t train_latent_stream(int extra_d_step) {
  return kTrainLatentBase * (1 + static_cast<uint64_t>(extra_d_step));
}
}  // namespace rng_stream

}  // namespace ampgan
