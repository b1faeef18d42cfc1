// Helpers shared by the tests: temporary folders, random tensors, error norms.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/backend/backend.h"
#include "core/common/error.h"
#include "core/settings/run_config.h"
#include "core/train/trainer.h"

namespace ampgan::testing {

// A fresh empty folder under the system temp dir, removed when the object dies.
class TempDir {
 public:
  explicit TempDir(const std::string& tag = "ampgan-test");
  ~TempDir();
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& s) const { return path_ / s; }

 private:
  std::filesystem::path path_;
};

// A run small enough for a test: 64 synthetic images of 32 px, width 8, batch 8, FP16 on the CPU,
// no sample grids or checkpoints until it stops.
inline RunConfig tiny_fp16_run(int steps, const std::filesystem::path& out) {
  RunConfig c;
  c.dataset = "synthetic";
  c.synthetic_count = 64;
  c.res = 32;
  c.width = 8;
  c.batch = 8;
  c.steps = steps;
  c.backend = "cpu";
  c.precision = Precision::FP16;
  c.sample_every = 0;
  c.checkpoint_every = 0;
  c.out_dir = out.string();
  return c;
}

// The DCGAN the trainer-level tests train: 32 px grey, width 8, batch 8, in precision p.
inline TrainerConfig tiny_dcgan(Precision p) {
  TrainerConfig c;
  c.model.res = 32;
  c.model.channels = 1;
  c.model.width = 8;
  c.batch = 8;
  c.precision = p;
  return c;
}

// Deterministic normal numbers (Philox), scaled.
std::vector<float> random_normal(size_t n, uint64_t seed, float stddev = 1.0f);

// A tensor on backend b with the given FP32 values rounded to dtype.
Tensor make_tensor(Backend& b, Shape shape, DType dtype, const std::vector<float>& values,
                   MemCategory cat = MemCategory::Data);
// A tensor's values as FP32 on the host.
std::vector<float> to_host(Backend& b, const Tensor& t);

// ||a - b|| / ||b|| (0 when both are zero).
double normalized_error(const std::vector<float>& a, const std::vector<float>& b);

// Runs fn, which should throw an ampgan::Error, and returns its what() ("(no error)" if it did not).
template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// Runs fn, expects an ampgan::Error whose message contains every one of `parts`.
template <typename Fn>
void expect_error(Fn&& fn, std::initializer_list<std::string> parts) {
  try {
    fn();
    ADD_FAILURE() << "no exception thrown";
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
  }
}

// Runs a command line, returns its exit status and fills output (stdout + stderr).
int run_command(const std::string& cmd, std::string* output = nullptr);

#ifdef AMPGAN_CLI_PATH  // the core tests' definitions (tests/CMakeLists.txt); the studio's have none
// The ampgan this build made.
inline const std::string kCli = AMPGAN_CLI_PATH;
#endif
// p in single quotes, for the shell run_command starts (the tests' temporary paths hold no quote).
inline std::string quote(const std::filesystem::path& p) { return "'" + p.string() + "'"; }

// Sets an environment variable for its lifetime (the old value, or none, comes back).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = std::make_unique<std::string>(old);
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }

 private:
  const char* name_;
  std::unique_ptr<std::string> old_;
};

}  // namespace ampgan::testing
