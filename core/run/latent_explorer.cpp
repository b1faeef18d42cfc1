#include "core/run/latent_explorer.h"

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "core/common/error.h"
#include "core/common/rng.h"
#include "core/run/onnx_export.h"
#include "core/train/trainer.h"

namespace ampgan {

const char* latent_path_name(LatentPath p) { return p == LatentPath::Lerp ? "lerp" : "slerp"; }

LatentPath parse_latent_path(const std::string& text, const std::string& what) {
  if (text == "lerp") return LatentPath::Lerp;
  if (text == "slerp") return LatentPath::Slerp;
  throw Error(what + " is lerp or slerp, not '" + text + "'", what,
              "slerp (along the sphere, the default) or lerp (a straight line)");
}

void check_truncation(double t, const std::string& what) {
  if (!(t >= 0 && t <= kMaxTruncation))
    throw Error("truncation " + std::to_string(t) + " is out of range", what,
                "use a threshold above 0 and at most 4 (e.g. 0.7; 0 or none: no truncation)");
}

namespace {
// Redraws per value before a threshold is taken as unreachable; at the smallest thresholds a user
// asks for (0.05: 4% of draws land within) the chance of reaching it is below 1e-1700.
constexpr uint64_t kMaxRedraws = 100000;

std::vector<float> draw_latent(uint64_t seed, uint64_t stream, int nz, float truncation) {
  check_truncation(truncation, "truncation");
  std::vector<float> z(static_cast<size_t>(nz));
  for (int j = 0; j < nz; ++j) {
    // Draw k of value j is index k * nz + j: draw 0 is the untruncated latent, and the redraws
    // of one value never meet another value's.
    float v = philox_normal(seed, stream, static_cast<uint64_t>(j));
    for (uint64_t k = 1; truncation > 0 && std::fabs(v) > truncation; ++k) {
      if (k > kMaxRedraws) {
        v = std::copysign(truncation, v);
        break;
      }
      v = philox_normal(seed, stream, k * static_cast<uint64_t>(nz) + j);
    }
    z[static_cast<size_t>(j)] = v;
  }
  return z;
}

}  // namespace

std::vector<float> seed_latent(uint64_t seed, int nz, float truncation) {
  return draw_latent(seed, rng_stream::kExplorerLatents, nz, truncation);
}

std::vector<float> standing_latents(int count, int nz, float truncation) {
  std::vector<float> z;
  z.reserve(static_cast<size_t>(count) * nz);
  for (int i = 0; i < count; ++i) {
    const std::vector<float> one = draw_latent(static_cast<uint64_t>(i), rng_stream::kStandingStats, nz, truncation);
    z.insert(z.end(), one.begin(), one.end());
  }
  return z;
}

std::vector<float> seed_latents(const std::vector<uint64_t>& seeds, int nz, float truncation) {
  std::vector<float> z;
  z.reserve(seeds.size() * static_cast<size_t>(nz));
  for (uint64_t s : seeds) {
    const std::vector<float> one = seed_latent(s, nz, truncation);
    z.insert(z.end(), one.begin(), one.end());
  }
  return z;
}

std::vector<float> interpolate_latents(const std::vector<float>& a, const std::vector<float>& b, int frames,
                                       LatentPath path) {
  AMPGAN_CHECK(a.size() == b.size() && frames >= 2, "interpolation needs two latents of one size and two frames");
  const size_t nz = a.size();
  double dot = 0, na = 0, nb = 0;
  for (size_t j = 0; j < nz; ++j) {
    dot += double(a[j]) * b[j];
    na += double(a[j]) * a[j];
    nb += double(b[j]) * b[j];
  }
  const double cosine = na > 0 && nb > 0 ? std::max(-1.0, std::min(1.0, dot / std::sqrt(na * nb))) : 1.0;
  const double omega = std::acos(cosine), sine = std::sin(omega);
  // Nearly parallel latents: the great circle is a line there, and 1/sin would amplify rounding.
  const bool spherical = path == LatentPath::Slerp && sine > 1e-6;
  std::vector<float> out(nz * static_cast<size_t>(frames));
  for (int i = 0; i < frames; ++i) {
    float* z = out.data() + static_cast<size_t>(i) * nz;
    if (i == 0 || i == frames - 1) {  // the endpoints themselves, not the formula's rounding of them
      const std::vector<float>& e = i == 0 ? a : b;
      std::copy(e.begin(), e.end(), z);
      continue;
    }
    const double t = double(i) / (frames - 1);
    const double wa = spherical ? std::sin((1 - t) * omega) / sine : 1 - t;
    const double wb = spherical ? std::sin(t * omega) / sine : t;
    for (size_t j = 0; j < nz; ++j) z[j] = static_cast<float>(wa * a[j] + wb * b[j]);
  }
  return out;
}

std::vector<uint64_t> parse_seed_list(const std::string& text, const std::string& what) {
  auto bad = [&](const std::string& why) {
    return Error(what + " '" + text + "': " + why, what, "write seeds as 7, 3,7,9 or 0-15 (ranges inclusive)");
  };
  auto number = [&](const std::string& s) {
    if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos) throw bad("'" + s + "' is not a seed");
    errno = 0;
    const unsigned long long v = std::strtoull(s.c_str(), nullptr, 10);
    if (errno == ERANGE || v > (1ull << 63)) throw bad(s + " is beyond 2^63");
    return static_cast<uint64_t>(v);
  };
  std::vector<uint64_t> seeds;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const size_t dash = item.find('-');
    const uint64_t first = number(dash == std::string::npos ? item : item.substr(0, dash));
    const uint64_t last = dash == std::string::npos ? first : number(item.substr(dash + 1));
    if (last < first) throw bad("the range " + item + " runs backwards");
    if (last - first >= kMaxSeeds || seeds.size() + (last - first + 1) > kMaxSeeds)
      throw bad("more than " + std::to_string(kMaxSeeds) + " seeds");
    for (uint64_t s = first; s <= last; ++s) seeds.push_back(s);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return seeds;
}

std::vector<float> explore_images(Trainer& trainer, const std::vector<float>& latents, int n, float truncation,
                                  const std::function<bool(int, int)>& progress, const std::vector<int32_t>& classes) {
  return generate_images(trainer, latents, n, BnStats::Standing, 1, progress, truncation, classes);
}

int parse_class(const std::string& text, int classes, const std::vector<std::string>& names, const std::string& what) {
  if (classes <= 0)
    throw Error("this run is not class-conditional", what, "leave out " + what + ", or train with --conditional");
  auto lower = [](std::string s) {
    for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return s;
  };
  for (size_t i = 0; i < names.size() && i < static_cast<size_t>(classes); ++i)
    if (lower(names[i]) == lower(text)) return static_cast<int>(i);
  int c = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), c);
  if (ec == std::errc() && end == text.data() + text.size() && c >= 0 && c < classes) return c;
  std::string known = "0 to " + std::to_string(classes - 1);
  if (!names.empty()) {
    known += " (";
    for (size_t i = 0; i < names.size() && i < 12; ++i) known += (i ? ", " : "") + std::to_string(i) + " " + names[i];
    known += names.size() > 12 ? ", ...)" : ")";
  }
  throw Error("the run has no class '" + text + "'", what, "use a class " + known + ", or all");
}

}  // namespace ampgan
