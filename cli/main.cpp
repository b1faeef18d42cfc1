#include <cstdio>
#include <vector>
#include "core/backend/backend.h"
#include "core/train/trainer.h"
#include "core/common/rng.h"
#include <chrono>
using namespace ampgan;
int main(int argc, char** argv) {
  std::string prec = argc > 1 ? argv[1] : "fp32";
  int steps = argc > 2 ? atoi(argv[2]) : 10;
  auto be = create_backend("cpu");
  TrainerConfig cfg; cfg.model.res = 32; cfg.model.channels = 1; cfg.model.width = 64; cfg.batch = 64;
  cfg.precision = parse_precision(prec);
  Trainer t(*be, cfg);
  std::vector<float> real(64*32*32);
  for (size_t i = 0; i < real.size(); ++i) real[i] = philox_normal(1, 7, i) * 0.5f;
  for (int i = 0; i < steps; ++i) {
    t.step(real.data());
    for (auto& m : t.collect(true)) printf("%s\n", m.csv_row().c_str());
  }
}
