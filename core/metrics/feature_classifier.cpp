#include "core/metrics/feature_classifier.h"

#include <cstdio>

#include <cstdlib>
#include <cstring>

#include "core/common/cache_dir.h"
#include "core/common/error.h"
#include "core/common/rng.h"
#include "core/io/atomic_file.h"
#include "core/io/safetensors.h"
#include "core/nn/activation.h"
#include "core/nn/batchnorm2d.h"
#include "core/nn/conv2d.h"
#include "core/nn/flatten.h"
#include "core/nn/linear.h"
#include "core/optim/adam.h"

namespace ampgan::metrics {

namespace fs = std::filesystem;

namespace {

constexpr int kBatch = 128;
constexpr uint64_t kInitStream = 0xC1A551F1E5ull;
constexpr const char* kFormat = "ampgan-feature-classifier-1";

std::string prefix(const Sequential& s, const char* part) { return std::string(part) + std::to_string(s.size()) + "."; }

// He-style initialisation from Philox, so every backend builds the same network.
void init(Backend& b, Sequential& net, uint64_t seed) {
  uint64_t index = 0;
  for (Parameter* p : net.parameters()) {
    std::vector<float> v(static_cast<size_t>(p->shape.numel()));
    const bool bias = p->name.size() >= 4 && p->name.compare(p->name.size() - 4, 4, "bias") == 0;
    const int64_t fan_in_count = p->shape.numel() / p->shape[0];  // exact: numel is a multiple of the outputs
    const auto fan_in = static_cast<float>(fan_in_count);
    for (float& x : v) {
      const float n = philox_normal(seed, kInitStream, index++);
      x = bias ? 0.0f : (p->fp32_only ? 1.0f : n * std::sqrt(2.0f / fan_in));
    }
    b.upload(p->master, v.data(), v.size() * 4);
    p->set_precision(b, DType::F32);
  }
}

}  // namespace

FeatureClassifier::FeatureClassifier(Backend& b, int res, int channels, int classes)
    : b_(b), res_(res), channels_(channels), classes_(classes) {
  if (classes < 2) throw Error("a feature classifier needs at least 2 classes", "dataset labels");
  body_ = std::make_unique<Sequential>();
  Sequential& s = *body_;
  int ch = 16, size = res;
  s.add(std::make_unique<Conv2d>(b, prefix(s, "body."), channels, ch, 3, 1, 1, false));
  s.add(std::make_unique<BatchNorm2d>(b, prefix(s, "body."), ch));
  s.add(std::make_unique<Activation>(ew::Act::ReLU));
  while (size > 4) {
    const int next = std::min(ch * 2, 128);
    s.add(std::make_unique<Conv2d>(b, prefix(s, "body."), ch, next, 4, 2, 1, false));
    s.add(std::make_unique<BatchNorm2d>(b, prefix(s, "body."), next));
    s.add(std::make_unique<Activation>(ew::Act::ReLU));
    ch = next;
    size /= 2;
  }
  s.add(std::make_unique<Flatten>(false));
  s.add(std::make_unique<Linear>(b, prefix(s, "body."), ch * 16, kFeatures, true));
  s.add(std::make_unique<Activation>(ew::Act::ReLU));
  head_ = std::make_unique<Sequential>();
  head_->add(std::make_unique<Linear>(b, "head.0.", kFeatures, classes, true));
  init(b, *body_, 1);
  init(b, *head_, 2);
}

FeatureClassifier::~FeatureClassifier() = default;

void FeatureClassifier::train(const data::ImageSet& set, const std::vector<int>& indices, int epochs, uint64_t seed,
                              const std::function<void(int, int)>& progress) {
  if (set.labels.empty()) throw Error("the dataset has no labels to train a classifier on", set.name);
  std::vector<Parameter*> params = body_->parameters();
  for (Parameter* p : head_->parameters()) params.push_back(p);
  AdamConfig cfg;
  cfg.lr = 1e-3f;
  cfg.beta1 = 0.9f;
  Adam adam(b_, params, cfg);
  Tensor unit = b_.empty(Shape{2}, DType::F32, MemCategory::Data);
  const float u[2] = {1.0f, 0.0f};
  b_.upload(unit, u, sizeof u);
  Tensor scalars = b_.empty(Shape{4}, DType::F32, MemCategory::Data);
  const int batch = std::min<int>(kBatch, static_cast<int>(indices.size()));
  const int per_epoch = static_cast<int>(indices.size()) / batch;
  Tensor x = b_.empty(Shape{batch, res_, res_, channels_}, DType::F32, MemCategory::Data);
  Tensor y = b_.empty(Shape{batch}, DType::F32, MemCategory::Data);
  Tensor dlogits = b_.empty(Shape{batch, classes_}, DType::F32, MemCategory::Activation);
  std::vector<float> host(static_cast<size_t>(batch) * set.image_size()), labels(batch);
  std::vector<int> order(indices), chosen(batch);
  Context ctx{b_, DType::F32, Mode::Train, true, false};
  for (int e = 0; e < epochs; ++e) {
    for (size_t i = order.size(); i > 1; --i)  // Fisher-Yates from Philox: the same order everywhere
      std::swap(order[i - 1], order[philox_below(seed, kInitStream + 1, (uint64_t(e) << 32) | i, i)]);
    for (int k = 0; k < per_epoch; ++k) {
      for (int j = 0; j < batch; ++j) {
        chosen[j] = order[static_cast<size_t>(k) * batch + j];
        labels[j] = static_cast<float>(set.labels[chosen[j]]);
      }
      set.to_float(chosen.data(), batch, host.data());
      b_.upload(x, host.data(), host.size() * 4);
      b_.upload(y, labels.data(), labels.size() * 4);
      b_.fill(scalars, 0.0f);
      const Tensor& logits = head_->forward(ctx, body_->forward(ctx, x));
      b_.softmax_cross_entropy(logits, y, dlogits, scalars, 1, 2);
      body_->backward(ctx, head_->backward(ctx, dlogits, InputGrad::Return), InputGrad::Skip);
      adam.step(b_, unit, scalars, 0);
      if (progress) progress(e * per_epoch + k + 1, epochs * per_epoch);
    }
  }
}

std::vector<float> FeatureClassifier::forward_features(const float* images, int n, bool logits, Mode mode) {
  const int width = logits ? classes_ : kFeatures;
  std::vector<float> out(static_cast<size_t>(n) * width);
  const size_t image = static_cast<size_t>(res_) * res_ * channels_;
  Tensor x = b_.empty(Shape{std::min(n, kBatch), res_, res_, channels_}, DType::F32, MemCategory::Data);
  Context ctx{b_, DType::F32, mode, false, false};
  for (int i0 = 0; i0 < n; i0 += kBatch) {
    const int m = std::min(kBatch, n - i0);
    Tensor xv = x.view(Shape{m, res_, res_, channels_});
    b_.upload(xv, images + i0 * image, m * image * 4);
    const Tensor* t = &body_->forward(ctx, xv);
    if (logits) t = &head_->forward(ctx, *t);
    b_.download(*t, out.data() + static_cast<size_t>(i0) * width, static_cast<size_t>(m) * width * 4);
  }
  return out;
}

std::vector<float> FeatureClassifier::features(const float* images, int n) {
  return forward_features(images, n, false, Mode::Eval);
}

double FeatureClassifier::accuracy(const data::ImageSet& set, const std::vector<int>& indices) {
  if (indices.empty()) return NAN;
  std::vector<float> imgs(indices.size() * set.image_size());
  set.to_float(indices.data(), static_cast<int>(indices.size()), imgs.data());
  const std::vector<int> predicted = predict(imgs.data(), static_cast<int>(indices.size()));
  int correct = 0;
  for (size_t i = 0; i < indices.size(); ++i) correct += predicted[i] == set.labels[indices[i]];
  return static_cast<double>(correct) / indices.size();
}

std::vector<int> FeatureClassifier::predict(const float* images, int n) {
  const std::vector<float> logits = forward_features(images, n, true, Mode::Eval);
  std::vector<int> out(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const float* row = logits.data() + static_cast<size_t>(i) * classes_;
    out[i] = static_cast<int>(std::max_element(row, row + classes_) - row);
  }
  return out;
}

void FeatureClassifier::save(const fs::path& file, double accuracy) const {
  io::StFile f;
  auto add = [&](Sequential& s) {
    for (Parameter* p : s.parameters()) {
      io::StTensor t{p->name, "F32", {}, std::vector<uint8_t>(p->master.nbytes())};
      t.shape.assign(p->shape.d.begin(), p->shape.d.begin() + p->shape.rank);
      b_.download(p->master, t.data.data(), t.data.size());
      f.tensors.push_back(std::move(t));
    }
    for (StateBuffer* s2 : s.buffers()) {
      io::StTensor t{s2->name, "F32", {s2->value.numel()}, std::vector<uint8_t>(s2->value.nbytes())};
      b_.download(s2->value, t.data.data(), t.data.size());
      f.tensors.push_back(std::move(t));
    }
  };
  add(*body_);
  add(*head_);
  f.metadata["format"] = kFormat;
  // All 17 digits: std::to_string keeps 6 decimals, so a classifier loaded from the cache
  // reported a different accuracy than the one just trained (0.853333 vs 0.85333...).
  char acc[32];
  std::snprintf(acc, sizeof acc, "%.17g", accuracy);
  f.metadata["accuracy"] = acc;
  io::ensure_writable_dir(file.parent_path());
  io::write_safetensors(file, f);
}

bool FeatureClassifier::load(const fs::path& file, double* accuracy) {
  std::error_code ec;
  if (!fs::exists(file, ec)) return false;
  io::StFile f;
  try {
    f = io::read_safetensors(file);
  } catch (const Error&) {
    return false;  // a damaged cache entry is retrained, not fatal
  }
  if (f.metadata["format"] != kFormat) return false;
  std::vector<std::pair<const io::StTensor*, Tensor*>> plan;
  for (Sequential* s : {body_.get(), head_.get()}) {
    for (Parameter* p : s->parameters()) {
      const io::StTensor* t = f.find(p->name);
      if (!t || t->data.size() != p->master.nbytes()) return false;
      plan.emplace_back(t, &p->master);
    }
    for (StateBuffer* s2 : s->buffers()) {
      const io::StTensor* t = f.find(s2->name);
      if (!t || t->data.size() != s2->value.nbytes()) return false;
      plan.emplace_back(t, &s2->value);
    }
  }
  for (auto& [t, dst] : plan) b_.upload(*dst, t->data.data(), t->data.size());
  if (accuracy) *accuracy = std::atof(f.metadata["accuracy"].c_str());
  return true;
}

fs::path classifier_cache_path(const data::ImageSet& set) {
  const fs::path dir = cache_dir();
  // FNV-1a over the identity and the pixels: another dataset, resolution or content is
  // another file.
  uint64_t hash = 1469598103934665603ull;
  auto mix = [&](const void* p, size_t n) {
    const auto* c = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) hash = (hash ^ c[i]) * 1099511628211ull;
  };
  const int dims[4] = {set.count, set.res, set.channels, set.num_classes};
  mix(dims, sizeof dims);
  mix(set.pixels.data(), set.pixels.size());
  mix(set.labels.data(), set.labels.size() * sizeof(int32_t));
  char name[96];
  std::snprintf(name, sizeof name, "classifier-%s-%dpx-%016llx.safetensors", set.name.c_str(), set.res,
                static_cast<unsigned long long>(hash));
  std::string safe = name;
  for (char& ch : safe)
    if (ch == '/' || ch == ' ') ch = '_';
  return dir / "classifiers" / safe;
}

}  // namespace ampgan::metrics
