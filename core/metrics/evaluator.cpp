#include "core/metrics/evaluator.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/common/error.h"
#include "core/common/rng.h"
#include "core/metrics/diversity.h"
#include "core/metrics/feature_classifier.h"
#include "core/metrics/frechet.h"
#include "core/metrics/swd.h"
#include "core/metrics/work_hook.h"
#include "core/nn/class_embedding.h"
#include "core/train/trainer.h"

namespace ampgan::metrics {

namespace {
// 4 x 128 random directions instead of the paper's 4 x 512: the value agrees within ~0.5%
// (far below the sampling noise of 1024 images) at a quarter of the cost, so evaluations do not
// slow training noticeably (measured: 2048 vs 2048 grey 32x32 images 1.1 s instead of 3.2 s on
// 2 cores).
SwdOptions swd_options(uint64_t seed) {
  SwdOptions o;
  o.projections = 128;
  o.repeats = 4;
  o.seed = seed;
  return o;
}
// Two epochs (Fashion-MNIST: ~840 steps, ~90% test accuracy), but at least min_steps on
// small datasets, where two epochs are too few updates to learn anything.
int classifier_epochs(size_t train_images, int min_steps) {
  const size_t per_epoch = std::max<size_t>(1, train_images / 128);
  return static_cast<int>(std::max<size_t>(2, (min_steps + per_epoch - 1) / per_epoch));
}
}  // namespace

namespace {

void class_accuracy(FeatureClassifier& c, const float* fake, int n, const std::vector<int32_t>& classes,
                    EvalResult& r) {
  const std::vector<int> predicted = c.predict(fake, n);
  std::vector<int> hits(static_cast<size_t>(c.classes())), count(static_cast<size_t>(c.classes()));
  for (int i = 0; i < n; ++i) {
    if (classes[i] < 0 || classes[i] >= c.classes()) return;  // a model of other classes than the data's
    ++count[classes[i]];
    hits[classes[i]] += predicted[i] == classes[i];
  }
  double sum = 0;
  int seen = 0;
  for (size_t k = 0; k < count.size(); ++k) {
    r.class_accuracy.push_back(count[k] ? double(hits[k]) / count[k] : NAN);
    if (count[k]) sum += r.class_accuracy.back(), ++seen;
  }
  r.conditional_accuracy = seen ? sum / seen : NAN;
}

}  // namespace

std::string describe(const EvalResult& r) {
  if (r.samples == 0) return "no scores (the evaluation was cancelled)";
  char buf[256];
  std::string levels;
  for (size_t i = 0; i < r.swd_levels.size(); ++i) {
    char l[48];
    std::snprintf(l, sizeof l, "%s%dpx %.2f", i ? ", " : "", r.swd_level_res[i], r.swd_levels[i]);
    levels += l;
  }
  if (std::isnan(r.fd))
    std::snprintf(buf, sizeof buf, "SWD %.2f (x1e3; %s) on %d samples", r.swd, levels.c_str(), r.samples);
  else
    std::snprintf(buf, sizeof buf, "SWD %.2f (x1e3; %s), FD %.3f (classifier accuracy %.1f%%) on %d samples", r.swd,
                  levels.c_str(), r.fd, 100 * r.classifier_accuracy, r.samples);
  std::string out = buf;
  if (!std::isnan(r.diversity)) {
    std::snprintf(buf, sizeof buf, ", diversity %.2f of the data's", r.diversity);
    out += buf;
  }
  if (!std::isnan(r.conditional_accuracy)) {
    std::snprintf(buf, sizeof buf, ", class accuracy %.1f%% (", 100 * r.conditional_accuracy);
    out += buf;
    for (size_t k = 0; k < r.class_accuracy.size(); ++k) {
      std::snprintf(buf, sizeof buf, "%s%zu: %.0f%%", k ? ", " : "", k, 100 * r.class_accuracy[k]);
      out += buf;
    }
    out += ")";
  }
  return out;
}

nlohmann::json to_json(const EvalResult& r) {
  nlohmann::json j;
  j["samples"] = r.samples;
  j["swd"] = r.swd;
  j["swd_levels"] = r.swd_levels;
  j["swd_level_res"] = r.swd_level_res;
  if (!std::isnan(r.diversity)) j["diversity"] = r.diversity;
  if (!std::isnan(r.fd)) {
    j["fd"] = r.fd;
    j["classifier_accuracy"] = r.classifier_accuracy;
  }
  if (!std::isnan(r.conditional_accuracy)) {
    j["conditional_accuracy"] = r.conditional_accuracy;
    j["class_accuracy"] = r.class_accuracy;
  }
  return j;
}

struct Evaluator::Impl {
  const data::ImageSet& real;
  int samples;
  uint64_t seed;
  Options opt;
  bool prepared = false;
  SwdDescriptors real_desc;
  double real_spread = 0;                       // the real sample's mean pairwise distance (diversity.h)
  std::unique_ptr<Backend> classifier_backend;  // declared first: outlives the classifier's tensors
  std::unique_ptr<FeatureClassifier> classifier;
  FeatureStats real_stats;
  double accuracy = NAN;
  std::vector<float> latents;
  int latent_dim = 0;

  Impl(const data::ImageSet& r, int n, uint64_t s, Options o) : real(r), samples(n), seed(s), opt(std::move(o)) {}

  struct Cancelled {};  // the work hook asked to stop (see work_hook.h)

  // A fixed, seeded choice of real images; the classifier holds out the last tenth of a second
  // permutation to measure its accuracy.
  std::vector<int> permutation(uint64_t stream) const {
    std::vector<int> p(real.count);
    for (int i = 0; i < real.count; ++i) p[i] = i;
    for (size_t i = p.size(); i > 1; --i) std::swap(p[i - 1], p[philox_below(seed, stream, i, i)]);
    return p;
  }

  void prepare() {
    if (prepared) return;
    if (real.count < 2) throw Error("evaluation needs at least 2 real images", real.name);
    const int n = std::min(samples, real.count);
    std::vector<int> idx = permutation(rng_stream::kEval);
    idx.resize(n);
    std::vector<float> imgs(static_cast<size_t>(n) * real.image_size());
    real.to_float(idx.data(), n, imgs.data());
    real_desc = swd_descriptors(imgs.data(), n, real.res, real.channels, swd_options(seed));
    real_spread = mean_pairwise_distance(imgs.data(), n, real.image_size());
    if (!real.labels.empty() && real.num_classes >= 2) {
      // The classifier is trained on the CPU: the metric must not depend on the run's backend
      // or precision, and a cached network then serves every run on this dataset.
      classifier_backend = create_backend("cpu");
      classifier = std::make_unique<FeatureClassifier>(*classifier_backend, real.res, real.channels, real.num_classes);
      const std::filesystem::path cache = classifier_cache_path(real);
      std::vector<int> order = permutation(rng_stream::kClassifier);
      const size_t held_out = std::max<size_t>(1, order.size() / 10);
      std::vector<int> test(order.end() - held_out, order.end());
      order.resize(order.size() - held_out);
      if (!classifier->load(cache, &accuracy)) {
        if (opt.notice)
          opt.notice("training the feature classifier for the Frechet distance on " + real.name +
                     " (once per dataset; cached in " + cache.parent_path().string() + ")");
        const char* what = "training the feature classifier";
        auto progress = [&](int done, int total) {
          if (opt.progress) opt.progress(done, total);
          if (!report_work(what, done, total)) throw Cancelled{};
        };
        if (!report_work(what, 0, 1)) throw Cancelled{};
        classifier->train(real, order, classifier_epochs(order.size(), opt.classifier_min_steps), seed, progress);
        accuracy = classifier->accuracy(real, test);
        try {
          classifier->save(cache, accuracy);
        } catch (const Error& e) {
          if (opt.notice) opt.notice(std::string("could not cache the feature classifier: ") + e.what());
        }
      }
      const std::vector<float> f = classifier->features(imgs.data(), n);
      real_stats = feature_stats(f.data(), n, FeatureClassifier::kFeatures);
    }
    prepared = true;
  }
};

Evaluator::Evaluator(const data::ImageSet& real, int samples, uint64_t seed, Options opt)
    : impl_(std::make_unique<Impl>(real, samples, seed, std::move(opt))) {
  if (samples < 2) throw Error("evaluation needs at least 2 samples", "--eval-samples");
}

Evaluator::~Evaluator() = default;

EvalResult Evaluator::evaluate(Trainer& trainer) {
  Impl& m = *impl_;
  const char* what = "evaluating sample quality";
  try {
    if (!report_work(what, 0, 1)) throw Impl::Cancelled{};
    m.prepare();
  } catch (const Impl::Cancelled&) {
    // Nothing half-trained is kept: the next evaluation prepares again.
    m.classifier.reset();
    m.classifier_backend.reset();
    if (m.opt.notice) m.opt.notice("evaluation cancelled: no sample-quality scores for this step");
    report_work(what, 1, 1);
    EvalResult r;
    r.step = trainer.iteration();
    return r;
  }
  const DcganSpec& spec = trainer.config().model;
  if (spec.res != m.real.res || spec.channels != m.real.channels)
    throw Error("the generator makes " + std::to_string(spec.res) + "px x" + std::to_string(spec.channels) +
                    " images but the dataset has " + std::to_string(m.real.res) + "px x" +
                    std::to_string(m.real.channels),
                m.real.name, "evaluate a checkpoint against the dataset it was trained on");
  const int n = std::min(m.samples, m.real.count);
  if (m.latent_dim != spec.latent) {
    m.latent_dim = spec.latent;
    m.latents.resize(static_cast<size_t>(n) * spec.latent);
    for (size_t i = 0; i < m.latents.size(); ++i) m.latents[i] = philox_normal(m.seed, rng_stream::kEval, i);
  }
  const int k = spec.classes;
  const std::vector<int32_t> classes = k > 0 ? sample_classes(0, n, k, {}) : std::vector<int32_t>{};
  const std::vector<float> fake = trainer.generate(m.latents, n, classes);
  EvalResult r = evaluate_images(fake.data(), n, classes);
  r.step = trainer.iteration();
  report_work(what, 1, 1);
  return r;
}

EvalResult Evaluator::evaluate_images(const float* fake, int n, const std::vector<int32_t>& classes) {
  Impl& m = *impl_;
  m.prepare();
  EvalResult r;
  r.samples = n;
  const SwdDescriptors d = swd_descriptors(fake, n, m.real.res, m.real.channels, swd_options(m.seed));
  const SwdResult s = sliced_wasserstein(m.real_desc, d, swd_options(m.seed));
  r.swd = s.mean;
  r.swd_levels = s.per_level;
  r.swd_level_res = s.level_res;
  if (m.real_spread > 0) r.diversity = mean_pairwise_distance(fake, n, m.real.image_size()) / m.real_spread;
  if (m.classifier) {
    const std::vector<float> f = m.classifier->features(fake, n);
    r.fd = frechet_distance(m.real_stats, feature_stats(f.data(), n, FeatureClassifier::kFeatures));
    r.classifier_accuracy = m.accuracy;
    if (!classes.empty()) class_accuracy(*m.classifier, fake, n, classes, r);
  }
  return r;
}

}  // namespace ampgan::metrics
