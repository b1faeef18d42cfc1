// A bounded, deterministic mutation harness for the fuzz targets, for builds without libFuzzer
// (GCC): runs every seed of a corpus folder, then `mutations` mutants of each (bytes flipped, set
// to 0x00/0xFF, boundary integers written, cut short, a chunk doubled), from a fixed seed, so a
// finding reproduces on every run. Usage: fuzz_replay_<target> CORPUS_DIR [mutations per seed].
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

uint64_t next(uint64_t& s) {  // splitmix64
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::string mutate(std::string s, uint64_t& rng) {
  const int edits = 1 + int(next(rng) % 4);
  for (int e = 0; e < edits; ++e) {
    const size_t at = s.empty() ? 0 : size_t(next(rng) % s.size());
    switch (next(rng) % 6) {
      case 0:
        if (!s.empty()) s[at] = char(s[at] ^ (1 << (next(rng) % 8)));
        break;
      case 1:
        if (!s.empty()) s[at] = char(next(rng) & 1 ? 0xFF : 0x00);
        break;
      case 2: {  // a boundary 32-bit value, big-endian (IDX) or little-endian (safetensors)
        static const uint32_t vals[] = {0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x10000};
        const uint32_t v = vals[next(rng) % 6];
        for (int i = 0; i < 4 && at + i < s.size(); ++i) s[at + i] = char(v >> (8 * (next(rng) & 1 ? i : 3 - i)));
        break;
      }
      case 3:
        s.resize(at);
        break;
      case 4: {
        const size_t len = std::min<size_t>(s.size() - at, 1 + next(rng) % 64);
        s.insert(at, s.substr(at, len));
        break;
      }
      default:
        if (!s.empty()) s[at] = char('0' + next(rng) % 10);
        break;  // digits: JSON numbers
    }
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR [mutations per seed]\n", argv[0]);
    return 2;
  }
  const int mutations = argc > 2 ? std::atoi(argv[2]) : 200;
  std::vector<std::filesystem::path> seeds;
  for (const auto& e : std::filesystem::directory_iterator(argv[1]))
    if (e.is_regular_file()) seeds.push_back(e.path());
  std::sort(seeds.begin(), seeds.end());
  if (seeds.empty()) {
    std::fprintf(stderr, "no seeds in %s\n", argv[1]);
    return 2;
  }
  uint64_t rng = 15, runs = 0;
  for (const auto& p : seeds) {
    std::ifstream f(p, std::ios::binary);
    const std::string seed((std::istreambuf_iterator<char>(f)), {});
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(seed.data()), seed.size());
    ++runs;
    for (int m = 0; m < mutations; ++m, ++runs) {
      const std::string x = mutate(seed, rng);
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(x.data()), x.size());
    }
  }
  std::printf("%llu inputs from %zu seeds, no finding\n", static_cast<unsigned long long>(runs), seeds.size());
  return 0;
}
