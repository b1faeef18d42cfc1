// The table, assembled from the family files in the order of backend.h, and what they share.
#include "tests/op_cases.h"

#include <cmath>

#include "tests/test_support.h"

namespace ampgan::testing {

namespace {

struct Table {
  std::vector<OpCase> ops;
  std::vector<GradCase> grads;
  Table() {
    add_memory_cases(ops);
    add_linalg_cases(ops, grads);
    add_batchnorm_cases(ops, grads);
    add_elementwise_cases(ops, grads);
    add_resample_cases(ops, grads);
    add_conditioning_cases(ops, grads);
    add_loss_cases(ops, grads);
    add_amp_cases(ops, grads);
  }
};

const Table& table() {
  static const Table t;
  return t;
}

}  // namespace

const std::vector<OpCase>& op_cases() { return table().ops; }
const std::vector<GradCase>& grad_cases() { return table().grads; }

const std::vector<DType>& all_types() {
  static const std::vector<DType> v = {DType::F32, DType::F16, DType::BF16};
  return v;
}

const std::vector<DType>& f32_only() {
  static const std::vector<DType> v = {DType::F32};
  return v;
}

Tensor input(Backend& b, Shape s, DType t, const std::vector<float>& v, MemCategory cat) {
  return make_tensor(b, s, t, v, cat);
}

Tensor blank(Backend& b, Shape s, DType t) { return b.empty(s, t, MemCategory::Data); }

Tensor from_reference(Backend& b, const Tensor& ref, MemCategory cat) {
  return make_tensor(b, ref.shape(), ref.dtype(), to_host(reference(), ref), cat);
}

std::vector<float> scaled_normal(size_t n, uint64_t seed, float stddev, float mean) {
  std::vector<float> v = random_normal(n, seed, stddev);
  for (float& x : v) x += mean;
  return v;
}

std::vector<float> special_values(size_t n, uint64_t seed) {
  std::vector<float> v = random_normal(n, seed, 3.0f);
  const float specials[] = {0.0f,      -0.0f,     1.0f,   -1.0f,       65504.0f,     65519.0f,  65520.0f,
                            -70000.0f, 1e-8f,     3e-8f,  6e-8f,       2.9e-8f,      5.96e-8f,  6.1e-5f,
                            6.0e-5f,   -1e-7f,    1e-39f, -1e-40f,     1e-45f,       3.4e38f,   -3.4e38f,
                            INFINITY,  -INFINITY, NAN,    1.00390625f, 1.001953125f, 0.333333f, 1e30f};
  for (size_t i = 0; i < sizeof specials / sizeof specials[0] && i * 37 < n; ++i) v[i * 37] = specials[i];
  for (size_t i = 5; i < n; i += 11) v[i] *= 1e-6f;  // a spread of exponents
  for (size_t i = 7; i < n; i += 13) v[i] *= 1e4f;
  return v;
}

std::vector<float> away_from(std::vector<float> v, std::initializer_list<float> kinks, float margin) {
  for (float& x : v)
    for (float k : kinks)
      if (std::fabs(x - k) < margin) x = x >= k ? k + margin : k - margin;
  return v;
}

std::vector<float> objective_weights(size_t n, uint64_t seed) { return random_normal(n, 7000 + seed, 1.0f); }

std::string bool_name(bool b) { return b ? "true" : "false"; }

ConvGeometry ConvCase::geometry() const {
  ConvGeometry g;
  g.n = n, g.h = h, g.w = w, g.c = c, g.k = k, g.r = g.s = r, g.stride = stride, g.pad = pad;
  return g;
}

std::string ConvCase::name() const {
  return "k" + std::to_string(r) + "s" + std::to_string(stride) + "p" + std::to_string(pad) + "_n" + std::to_string(n) +
         "h" + std::to_string(h) + "w" + std::to_string(w) + "c" + std::to_string(c) + "k" + std::to_string(k) + "_" +
         role;
}

const std::vector<ConvCase>& conv_cases() {
  static const std::vector<ConvCase> v = {
      {"D_first_grey", 4, 16, 16, 1, 8, 4, 2, 1},
      {"D_first_rgb", 4, 16, 16, 3, 16, 4, 2, 1},
      {"D_mid", 4, 8, 8, 64, 128, 4, 2, 1},
      {"D_logit", 8, 4, 4, 128, 1, 4, 1, 0},
      {"G_first", 8, 4, 4, 128, 100, 4, 1, 0},
      {"G_last_rgb", 4, 16, 16, 3, 32, 4, 2, 1},
      {"c3", 2, 9, 9, 3, 8, 3, 1, 1},
      {"c64", 2, 6, 6, 64, 64, 3, 1, 0},
      {"odd", 3, 7, 5, 1, 16, 4, 2, 1},
      {"c5_k3", 2, 5, 5, 5, 3, 1, 1, 0},
      {"strided_1x1", 2, 8, 8, 64, 64, 1, 2, 0},
      {"resnet_3x3", 4, 16, 16, 16, 16, 3, 1, 1},  // several CPU tiles (cpu_linalg.cpp)
  };
  return v;
}

}  // namespace ampgan::testing
