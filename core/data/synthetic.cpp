#include "core/data/synthetic.h"

#include <algorithm>
#include <cmath>

#include "core/common/error.h"
#include "core/common/parallel.h"
#include "core/common/rng.h"

namespace ampgan::data {

namespace {

// Private Philox stream (far from rng_stream's small numbers and from kTrainLatentBase = 2^32),
// so drawing a synthetic dataset never overlaps another consumer's numbers.
constexpr uint64_t kSyntheticStream = 0x53594E54;  // "SYNT"
constexpr uint64_t kDrawsPerImage = 64;            // counter space reserved per image

enum Kind { kCircle = 0, kSquare = 1, kTriangle = 2 };

// Random numbers of one image: draw k is word 0 of Philox block (image * 64 + k).
struct Draws {
  uint64_t seed, base;
  uint64_t k = 0;
  uint32_t next() { return philox4x32(base + k++, kSyntheticStream, seed).v[0]; }
  int below(int n) { return static_cast<int>(next() % static_cast<uint32_t>(n)); }
  float unit() { return static_cast<float>(next() >> 8) * (1.0f / 16777216.0f); }  // [0, 1)
};

struct Shape {
  int kind;
  float cx, cy, s;  // centre and half-size in pixels
  uint8_t rgb[3];
  float area() const {
    switch (kind) {
      case kCircle:
        return 3.14159265f * s * s;
      case kSquare:
        return (1.7f * s) * (1.7f * s);
      default:
        return 0.5f * (2.0f * s) * (1.8f * s);
    }
  }
  // Pixel centre (px, py) inside? Square's half-side is 0.85 s and the triangle's apex is at
  // cy - s, its base at cy + 0.8 s, so the three kinds have comparable areas.
  bool covers(float px, float py) const {
    const float dx = px - cx, dy = py - cy;
    switch (kind) {
      case kCircle:
        return dx * dx + dy * dy <= s * s;
      case kSquare:
        return std::fabs(dx) <= 0.85f * s && std::fabs(dy) <= 0.85f * s;
      default: {
        if (dy < -s || dy > 0.8f * s) return false;
        const float half_width = (dy + s) / 1.8f;  // grows from 0 at the apex to s at the base
        return std::fabs(dx) <= half_width;
      }
    }
  }
};

// Draws image i as RGB into rgb (res, res, 3); returns its label.
int draw_image(uint64_t seed, int64_t i, int res, uint8_t* rgb) {
  Draws d{seed, static_cast<uint64_t>(i) * kDrawsPerImage};
  uint8_t bg[3];
  for (auto& v : bg) v = static_cast<uint8_t>(d.below(48));  // dark background
  Shape shapes[3];
  const int n = 1 + d.below(3);
  for (int k = 0; k < n; ++k) {
    Shape& sh = shapes[k];
    sh.kind = d.below(3);
    sh.s = res * (0.12f + 0.20f * d.unit());
    // Centre range keeps most of the shape inside the image.
    sh.cx = 0.6f * sh.s + (res - 1.2f * sh.s) * d.unit();
    sh.cy = 0.6f * sh.s + (res - 1.2f * sh.s) * d.unit();
    for (auto& v : sh.rgb) v = static_cast<uint8_t>(64 + d.below(192));  // bright
  }
  for (int y = 0; y < res; ++y)
    for (int x = 0; x < res; ++x) {
      const uint8_t* c = bg;
      for (int k = 0; k < n; ++k)  // later shapes are drawn on top
        if (shapes[k].covers(x + 0.5f, y + 0.5f)) c = shapes[k].rgb;
      uint8_t* p = rgb + (size_t(y) * res + x) * 3;
      p[0] = c[0], p[1] = c[1], p[2] = c[2];
    }
  int largest = 0;
  for (int k = 1; k < n; ++k)
    if (shapes[k].area() > shapes[largest].area()) largest = k;
  return shapes[largest].kind;
}

}  // namespace

ImageSet make_synthetic(int count, int res, int channels, uint64_t seed) {
  if (count < 1)
    throw Error("synthetic dataset size must be at least 1, got " + std::to_string(count), "synthetic count",
                "ask for a positive number of images");
  if (res < 4) throw Error("invalid resolution " + std::to_string(res), "--res", "use 32, 64 or 128");
  if (channels != 0 && channels != 1 && channels != 3)
    throw Error("invalid channel count " + std::to_string(channels), "--channels", "use 1 or 3");
  const int c = channels == 0 ? 3 : channels;

  ImageSet set;
  set.count = count;
  set.res = res;
  set.channels = c;
  set.num_classes = 3;
  set.class_names = {"circle", "square", "triangle"};  // Kind, the largest shape of an image
  set.name = "synthetic";
  set.source = "built-in";
  set.pixels.resize(size_t(count) * set.image_size());
  set.labels.resize(count);
  const size_t res2 = size_t(res) * res;
  // Each image depends only on (seed, i), so any split across threads gives the same pixels.
  parallel_for(count, 64, [&](int64_t begin, int64_t end) {
    std::vector<uint8_t> rgb(res2 * 3);
    for (int64_t i = begin; i < end; ++i) {
      set.labels[i] = draw_image(seed, i, res, rgb.data());
      uint8_t* dst = set.pixels.data() + i * set.image_size();
      if (c == 3) {
        std::copy(rgb.begin(), rgb.end(), dst);
      } else {  // ITU-R BT.601 luma in integers: exact on every machine
        for (size_t p = 0; p < res2; ++p)
          dst[p] = static_cast<uint8_t>((299 * rgb[3 * p] + 587 * rgb[3 * p + 1] + 114 * rgb[3 * p + 2] + 500) / 1000);
      }
    }
  });
  return set;
}

}  // namespace ampgan::data
