// The generator as an ONNX model (core/run/onnx_export.h, `ampgan export-onnx`), checked by the
// readers people use: ONNX's own checker (Debian's python3-onnx, tests/python/check_onnx.py) on
// every model, and onnxruntime (npm's onnxruntime-node, tests/node/ort_run.js) running it on
// fixed latents, against `ampgan sample --bn-stats running --raw` of the same checkpoint; a
// class-conditional model on fixed latents and classes, against generate_images of those classes.
// Both readers are installed by scripts/setup.sh --dev; without them the tests that need them
// skip, saying which is missing.
#include <cmath>
#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <nlohmann/json.hpp>

#include "core/backend/backend.h"
#include "core/common/rng.h"
#include "core/io/atomic_file.h"
#include "core/run/checkpoint.h"
#include "core/run/onnx_export.h"
#include "test_support.h"

using namespace ampgan;
using namespace ampgan::testing;
namespace fs = std::filesystem;

namespace {

// `ampgan export-onnx RUN --out MODEL FLAGS [--half]`: its exit status, its output in *out.
int export_onnx_cli(const fs::path& run, const fs::path& model, const std::string& flags, bool half, std::string* out) {
  return run_command(
      kCli + " export-onnx " + quote(run) + " --out " + quote(model) + flags + (half ? " --half" : "") + " 2>&1", out);
}

const std::string kSrc = AMPGAN_SOURCE_DIR;
const std::string kTiny =
    " --dataset synthetic --synthetic-count 64 --res 32 --width 8 --batch 8 --backend cpu --precision fp32 --quiet ";

// Where scripts/setup.sh --dev installs onnxruntime-node (AMPGAN_ORT_NODE_MODULES overrides it).
fs::path ort_modules() {
  if (const char* d = std::getenv("AMPGAN_ORT_NODE_MODULES")) return d;
  const char* home = std::getenv("HOME");
  return fs::path(home ? home : "/root") / ".cache/ampgan-test/node_modules";
}

std::string checker_missing() {
  if (run_command("/usr/bin/python3 -c 'import onnx' 2>&1") != 0)
    return "/usr/bin/python3 lacks the onnx module (apt-get install python3-onnx, or scripts/setup.sh --dev)";
  return "";
}

std::string runtime_missing() {
  std::string v;
  if (run_command("node --version 2>&1", &v) != 0) return "node is not installed (onnxruntime-node needs node 20+)";
  if (v.size() < 2 || v[0] != 'v' || std::atoi(v.c_str() + 1) < 20)
    return "node " + v.substr(0, v.find('\n')) + " is older than 20, which onnxruntime-node 1.30 needs";
  if (!fs::exists(ort_modules() / "onnxruntime-node" / "package.json"))
    return "onnxruntime-node is not in " + ort_modules().string() + " (scripts/setup.sh --dev installs it)";
  return "";
}

// ONNX's checker's summary of a model (check_onnx.py), or a test failure.
nlohmann::json check_model(const fs::path& model) {
  std::string out;
  const int rc =
      run_command("/usr/bin/python3 " + kSrc + "/tests/python/check_onnx.py " + quote(model) + " 2>&1", &out);
  const size_t at = out.find("OK ");
  if (rc != 0 || at == std::string::npos) {
    ADD_FAILURE() << "onnx.checker refused " << model << ":\n" << out;
    return {};
  }
  return nlohmann::json::parse(out.substr(at + 3));
}

std::vector<float> read_floats(const fs::path& f, size_t skip = 0) {
  const std::string b = io::read_file(f);
  std::vector<float> v((b.size() - skip) / 4);
  std::memcpy(v.data(), b.data() + skip, v.size() * 4);
  return v;
}

// A .npy file's data (sample --raw writes float32, its header padded to a multiple of 64 bytes).
std::vector<float> read_npy(const fs::path& f) {
  const std::string b = io::read_file(f);
  EXPECT_EQ(b.substr(0, 6), "\x93NUMPY");
  const size_t header = 10 + static_cast<unsigned char>(b[8]) + 256 * static_cast<unsigned char>(b[9]);
  EXPECT_NE(b.find("'descr': '<f4'"), std::string::npos);
  return read_floats(f, header);
}

// The largest absolute difference of NCHW images from NHWC ones; *largest: the largest |want|.
double max_abs_error(const std::vector<float>& nchw, const std::vector<float>& nhwc, int n, int res, int nc,
                     double* largest) {
  EXPECT_EQ(nchw.size(), nhwc.size());
  if (nchw.size() != nhwc.size()) return INFINITY;
  double worst = 0.0;
  *largest = 0.0;
  for (int i = 0; i < n; ++i)
    for (int c = 0; c < nc; ++c)
      for (int p = 0; p < res * res; ++p) {
        const float a = nchw[(static_cast<size_t>(i) * nc + c) * res * res + p];
        const float b = nhwc[(static_cast<size_t>(i) * res * res + p) * nc + c];
        worst = std::max(worst, static_cast<double>(std::fabs(a - b)));
        *largest = std::max(*largest, static_cast<double>(std::fabs(b)));
      }
  return worst;
}

// onnxruntime's images (NCHW) for n latents z and, for a conditional model, their classes.
std::vector<float> ort_images(const fs::path& model, const std::vector<float>& z, int n, int nc, int res,
                              const std::vector<int32_t>& classes = {}) {
  const fs::path zf = model.string() + ".z.f32", of = model.string() + ".out.f32", cf = model.string() + ".class.i64";
  io::write_file_atomic(zf, std::string(reinterpret_cast<const char*>(z.data()), z.size() * 4));
  std::string cmd = "node " + kSrc + "/tests/node/ort_run.js " + quote(ort_modules()) + " " + quote(model) + " " +
                    quote(zf) + " " + std::to_string(n) + " " + quote(of);
  if (!classes.empty()) {
    const std::vector<int64_t> c(classes.begin(), classes.end());
    io::write_file_atomic(cf, std::string(reinterpret_cast<const char*>(c.data()), c.size() * 8));
    cmd += " " + quote(cf);
  }
  std::string out;
  EXPECT_EQ(run_command(cmd + " 2>&1", &out), 0) << out;
  const size_t at = out.find("OK ");
  if (at == std::string::npos) return {};
  const nlohmann::json r = nlohmann::json::parse(out.substr(at + 3));
  EXPECT_EQ(r["type"], "float32");
  EXPECT_EQ(r["dims"], nlohmann::json::array({n, nc, res, res}));
  return read_floats(of);
}

struct Errors {
  double model_stats = INFINITY;  // against sample --bn-stats of the model's (running or standing)
  double batch = INFINITY;        // against sample's default, batch statistics
};

// onnxruntime's images for the latents `ampgan sample --seed 3` draws, against sample's own.
// n is not the run's batch (8): the batch dimension is dynamic.
Errors errors_against_sample(const fs::path& ckpt, const fs::path& model, const std::string& stats, int latent, int res,
                             int nc) {
  const int n = 10;
  const uint64_t seed = 3;
  std::vector<float> z(static_cast<size_t>(n) * latent);
  for (size_t i = 0; i < z.size(); ++i) z[i] = philox_normal(seed, rng_stream::kSampleLatents, i);
  const std::vector<float> y = ort_images(model, z, n, nc, res);
  if (y.empty()) return {};
  std::string out;
  Errors e;
  for (const bool same : {true, false}) {
    const fs::path ref = model.string() + (same ? "." + stats + ".npy" : ".batch.npy");
    EXPECT_EQ(run_command(kCli + " sample " + quote(ckpt) + (same ? " --bn-stats " + stats : "") + " --n " +
                              std::to_string(n) + " --seed " + std::to_string(seed) + " --raw " + quote(ref) + " 2>&1",
                          &out),
              0)
        << out;
    double largest = 0.0;
    (same ? e.model_stats : e.batch) = max_abs_error(y, read_npy(ref), n, res, nc, &largest);
    // Images of a trained generator, not near-zeros that any model would match.
    EXPECT_GT(largest, 0.1) << model;
  }
  return e;
}

// A trained run with checkpoints at steps steps / 2 and steps. Its batch norms' running
// averages (momentum 0.1) need a few dozen forwards to near the batch statistics: before, the
// DCGAN's images are near 0 and any model would match them.
void train(const fs::path& run, const std::string& model, int steps) {
  std::string out;
  ASSERT_EQ(
      run_command(kCli + " train --model " + model + " --steps " + std::to_string(steps) + " --checkpoint-every " +
                      std::to_string(steps / 2) + " --sample-every 0 --out " + quote(run) + kTiny + " 2>&1",
                  &out),
      0)
      << out;
}

// Exports, checks with onnx.checker, runs with onnxruntime: FP32 and FP16. Returns both errors.
// steps: the ResNet (5 D steps per step) takes 0.5 s a step here, the DCGAN 20 ms; 200 DCGAN
// steps give images up to about 0.4 in magnitude.
void export_and_compare(const std::string& family, const std::string& flags, int latent, int nc, int steps) {
  const std::string stats = flags.find("--bn-stats running") != std::string::npos ? "running" : "standing";
  if (const std::string why = checker_missing(); !why.empty()) GTEST_SKIP() << why;
  if (const std::string why = runtime_missing(); !why.empty()) GTEST_SKIP() << why;
  TempDir tmp;
  const fs::path run = tmp / "run";
  train(run, family + " --nc " + std::to_string(nc), steps);
  if (::testing::Test::HasFatalFailure()) return;
  const fs::path ckpt = onnx_source_checkpoint(run, -1);
  for (const bool half : {false, true}) {
    const fs::path model = tmp / (half ? "g16.onnx" : "g32.onnx");
    std::string out;
    ASSERT_EQ(export_onnx_cli(run, model, flags, half, &out), 0) << out;
    EXPECT_NE(out.find("opset 17"), std::string::npos) << out;
    const nlohmann::json s = check_model(model);
    EXPECT_EQ(s["opset"]["ai.onnx"], 17);
    EXPECT_EQ(s["inputs"]["z"]["type"], "FLOAT");
    EXPECT_EQ(s["inputs"]["z"]["dims"], nlohmann::json::array({"batch", latent}));
    EXPECT_EQ(s["outputs"]["images"]["type"], "FLOAT");
    EXPECT_EQ(s["outputs"]["images"]["dims"], nlohmann::json::array({"batch", nc, 32, 32}));
    EXPECT_EQ(s["metadata"]["latent_size"], std::to_string(latent));
    EXPECT_EQ(s["metadata"]["output_range"], "[-1, 1]");
    EXPECT_EQ(s["metadata"]["model_family"], family);
    EXPECT_EQ(s["metadata"]["step"], std::to_string(steps));
    EXPECT_EQ(s["metadata"]["generator"], flags.find("--ema") != std::string::npos ? "ema" : "trained");
    const nlohmann::json ops = s["ops"];
    EXPECT_EQ(std::count(ops.begin(), ops.end(), "BatchNormalization"), 0) << ops;
    // The float16 model: every weight float16 (Resize's scales are float by definition, the
    // shapes int64), float32 at the edges through Cast nodes.
    const nlohmann::json want_types =
        half ? nlohmann::json::array({"FLOAT", "FLOAT16", "INT64"}) : nlohmann::json::array({"FLOAT", "INT64"});
    if (family == "dcgan")
      EXPECT_EQ(s["initializer_types"], half ? nlohmann::json::array({"FLOAT16", "INT64"}) : want_types);
    else
      EXPECT_EQ(s["initializer_types"], want_types);
    EXPECT_EQ(std::count(ops.begin(), ops.end(), "Cast"), half ? 1 : 0) << ops;

    EXPECT_EQ(s["metadata"]["batch_norm"].get<std::string>().rfind(stats == "running" ? "the running" : "standing", 0),
              0u)
        << s["metadata"]["batch_norm"];
    const Errors e = errors_against_sample(ckpt, model, stats, latent, 32, nc);
    const double err = e.model_stats;
    // FP32: the same products in another order (oneDNN/OpenBLAS against MLAS) and the folded
    // weights rounded once: measured 1e-6 to 4e-6 here. FP16: float16 weights and activations
    // (an 11-bit significand, 2^-11 = 4.9e-4 relative per rounding) through 5 to 9 layers:
    // measured 2e-3 to 6e-3.
    const double tol = half ? 2e-2 : 1e-4;
    EXPECT_LT(err, tol) << family << (half ? " fp16" : " fp32");
    // Batch statistics give other images, far beyond the FP32 tolerance: why export and sample
    // must agree on the statistics.
    EXPECT_GT(e.batch, 1e-2) << family;
    std::printf(
        "[ onnx ] %s %s%s: max abs error against ampgan sample --bn-stats %s: %.3g (tolerance %.0e); "
        "against batch statistics: %.3g\n",
        family.c_str(), half ? "fp16" : "fp32", flags.c_str(), stats.c_str(), err, tol, e.batch);
  }
}

// A class-conditional run (the synthetic set's 3 shape classes) exported in FP32 and FP16: the
// inputs z and class, the class metadata, and onnxruntime on fixed latents with several classes
// in one batch against generate_images of the same checkpoint, latents, classes and statistics.
void export_conditional_and_compare(const std::string& family, const std::string& flags, int latent, int steps) {
  const std::string stats = flags.find("--bn-stats running") != std::string::npos ? "running" : "standing";
  if (const std::string why = checker_missing(); !why.empty()) GTEST_SKIP() << why;
  if (const std::string why = runtime_missing(); !why.empty()) GTEST_SKIP() << why;
  TempDir tmp;
  const fs::path run = tmp / "run";
  const int nc = 3, n = 10;
  train(run, family + " --conditional --nc 3", steps);
  if (::testing::Test::HasFatalFailure()) return;
  const fs::path ckpt = onnx_source_checkpoint(run, -1);
  std::vector<float> z(static_cast<size_t>(n) * latent);
  for (size_t i = 0; i < z.size(); ++i) z[i] = philox_normal(7, rng_stream::kSampleLatents, i);
  const std::vector<int32_t> classes = {2, 0, 1, 1, 2, 0, 0, 2, 1, 2}, other = {0, 1, 2, 2, 0, 1, 1, 0, 2, 0};
  auto b = create_backend("cpu");
  auto trainer = trainer_from_checkpoint(*b, ckpt);
  ASSERT_EQ(trainer->classes(), 3);
  const BnStats bn = stats == "running" ? BnStats::Running : BnStats::Standing;
  const std::vector<float> want = generate_images(*trainer, z, n, bn, 0, {}, 0.0f, classes),
                           want_other = generate_images(*trainer, z, n, bn, 0, {}, 0.0f, other);
  for (const bool half : {false, true}) {
    const fs::path model = tmp / (half ? "g16.onnx" : "g32.onnx");
    std::string out;
    ASSERT_EQ(export_onnx_cli(run, model, flags, half, &out), 0) << out;
    EXPECT_NE(out.find("input 'class' int64 [batch], each image's class, 0 to 2"), std::string::npos) << out;
    const nlohmann::json s = check_model(model);
    EXPECT_EQ(s["inputs"].size(), 2u) << s["inputs"];
    EXPECT_EQ(s["inputs"]["z"]["type"], "FLOAT");
    EXPECT_EQ(s["inputs"]["z"]["dims"], nlohmann::json::array({"batch", latent}));
    EXPECT_EQ(s["inputs"]["class"]["type"], "INT64");
    EXPECT_EQ(s["inputs"]["class"]["dims"], nlohmann::json::array({"batch"}));
    EXPECT_EQ(s["outputs"]["images"]["dims"], nlohmann::json::array({"batch", nc, 32, 32}));
    EXPECT_EQ(s["metadata"]["classes"], "3");
    EXPECT_EQ(s["metadata"]["class_names"], R"(["circle","square","triangle"])");
    EXPECT_EQ(s["metadata"]["latent_size"], std::to_string(latent));
    const nlohmann::json ops = s["ops"];
    EXPECT_EQ(std::count(ops.begin(), ops.end(), "Gather"), 1) << ops;
    EXPECT_EQ(std::count(ops.begin(), ops.end(), "BatchNormalization"), 0) << ops;
    // Every weight float16 in the half model but the ResNet's Resize scales (float by definition).
    const bool scales = family == "resnet";
    EXPECT_EQ(s["initializer_types"], !half    ? nlohmann::json::array({"FLOAT", "INT64"})
                                      : scales ? nlohmann::json::array({"FLOAT", "FLOAT16", "INT64"})
                                               : nlohmann::json::array({"FLOAT16", "INT64"}));

    const std::vector<float> y = ort_images(model, z, n, nc, 32, classes);
    double largest = 0.0, unused = 0.0;
    const double err = max_abs_error(y, want, n, 32, nc, &largest);
    // The tolerances of export_and_compare (the same layers, and per-class tables rounded once).
    const double tol = half ? 2e-2 : 1e-4;
    EXPECT_LT(err, tol) << family << (half ? " fp16" : " fp32");
    EXPECT_GT(largest, 0.1) << model;
    // The class input matters: other classes for the same latents give other images, further
    // from these than the model's error (measured 0.05 to 0.08 after these few steps).
    const double moved = max_abs_error(y, want_other, n, 32, nc, &unused);
    EXPECT_GT(moved, 1e-2) << family;
    EXPECT_LT(err, moved / 4) << family << (half ? " fp16" : " fp32");
    std::printf(
        "[ onnx ] conditional %s %s%s: max abs error against generate_images (bn %s, classes 2 0 1 1 2 0 0 2 1 2): "
        "%.3g (tolerance %.0e); against other classes: %.3g\n",
        family.c_str(), half ? "fp16" : "fp32", flags.c_str(), stats.c_str(), err, tol, moved);
  }
}

}  // namespace

// On the running averages training kept (--bn-stats running).
TEST(OnnxExport, DcganMatchesSampleFp32AndFp16) { export_and_compare("dcgan", " --bn-stats running", 100, 1, 200); }

// The ResNet recipe keeps an EMA generator: --ema exports the one that sample shows, on standing
// statistics of the EMA's weights (the default).
TEST(OnnxExport, ResnetEmaMatchesSampleFp32AndFp16) { export_and_compare("resnet", " --ema", 128, 3, 16); }

TEST(OnnxExport, ConditionalDcganMatchesGenerateImagesFp32AndFp16) {
  export_conditional_and_compare("dcgan", " --bn-stats running", 100, 200);
}

TEST(OnnxExport, ConditionalResnetEmaMatchesGenerateImagesFp32AndFp16) {
  export_conditional_and_compare("resnet", " --ema", 128, 16);
}

// In process, no reader needed: every DCGAN batch norm follows a transposed convolution and is
// folded into it (no Mul, Add or BatchNormalization left); the ResNet keeps a Mul and Add for
// each batch norm after a sum (bn1 of each block, the last bn) and folds each block's bn2.
TEST(OnnxExport, BatchNormFoldedIntoThePrecedingConvolution) {
  auto b = create_backend("cpu");
  for (const ModelFamily f : {ModelFamily::DCGAN, ModelFamily::ResNet}) {
    TrainerConfig c = tiny_dcgan(Precision::FP32);
    c.family = f;
    if (f == ModelFamily::ResNet) c.model.latent = 128;
    Trainer t(*b, c);
    onnx::ModelProto m;
    ASSERT_TRUE(m.ParseFromString(onnx_generator_model(t, {})));
    std::map<std::string, int> ops;
    for (const auto& n : m.graph().node()) ++ops[n.op_type()];
    EXPECT_EQ(ops["BatchNormalization"], 0);
    if (f == ModelFamily::DCGAN) {
      EXPECT_EQ(ops["ConvTranspose"], 4);  // 32 px: 4 x 4 -> 8 -> 16 -> 32, each but the last with a BN
      EXPECT_EQ(ops["Mul"], 0);
      EXPECT_EQ(ops["Add"], 0);
    } else {
      EXPECT_EQ(ops["Mul"], 4);      // 3 blocks' bn1 and the last bn
      EXPECT_EQ(ops["Add"], 4 + 3);  // those, and the 3 residual sums
      EXPECT_EQ(ops["Resize"], 6);
    }
    // --ema without an EMA is refused, naming the remedy.
    expect_error([&] { onnx_generator_model(t, {.ema = true, .half = false}, "x.safetensors"); },
                 {"no EMA generator", "x.safetensors", "without --ema"});
  }
}

// In process: a conditional DCGAN adds its class map (Gather, Reshape, Transpose) to the first
// transposed convolution, and the batch norm after that sum stays a Mul and Add; a conditional
// ResNet's conditional batch norms are each a Gather of per-class scale and shift, a Reshape
// each, a Mul and an Add, bn2 no longer folded into conv1.
TEST(OnnxExport, ConditionalGraphGathersTheClassRows) {
  auto b = create_backend("cpu");
  for (const ModelFamily f : {ModelFamily::DCGAN, ModelFamily::ResNet}) {
    TrainerConfig c = tiny_dcgan(Precision::FP32);
    c.family = f;
    c.model.classes = 3;
    if (f == ModelFamily::ResNet) c.model.latent = 128;
    Trainer t(*b, c);
    onnx::ModelProto m;
    ASSERT_TRUE(m.ParseFromString(onnx_generator_model(t, {}, "", nullptr, {"a", "b", "c"})));
    ASSERT_EQ(m.graph().input_size(), 2);
    EXPECT_EQ(m.graph().input(1).name(), "class");
    EXPECT_EQ(m.graph().input(1).type().tensor_type().elem_type(), onnx::TensorProto::INT64);
    ASSERT_EQ(m.graph().input(1).type().tensor_type().shape().dim_size(), 1);
    EXPECT_EQ(m.graph().input(1).type().tensor_type().shape().dim(0).dim_param(), "batch");
    std::map<std::string, std::string> meta;
    for (const auto& p : m.metadata_props()) meta[p.key()] = p.value();
    EXPECT_EQ(meta["classes"], "3");
    EXPECT_EQ(meta["class_names"], R"(["a","b","c"])");
    std::map<std::string, int> ops;
    for (const auto& n : m.graph().node()) ++ops[n.op_type()];
    EXPECT_EQ(ops["BatchNormalization"], 0);
    if (f == ModelFamily::DCGAN) {
      EXPECT_EQ(ops["ConvTranspose"], 4);
      EXPECT_EQ(ops["Gather"], 1);
      EXPECT_EQ(ops["Transpose"], 1);
      EXPECT_EQ(ops["Mul"], 1);  // the first batch norm, after the sum
      EXPECT_EQ(ops["Add"], 2);  // the sum and that batch norm's shift
    } else {
      EXPECT_EQ(ops["Gather"], 12);  // 3 blocks' bn1 and bn2, a scale and a shift each
      EXPECT_EQ(ops["Conv"], 10);
      EXPECT_EQ(ops["Mul"], 6 + 1);      // those and the last (unconditional) bn
      EXPECT_EQ(ops["Add"], 6 + 1 + 3);  // theirs and the 3 residual sums
    }
  }
}

TEST(OnnxExport, RefusesBadInputAndLeavesNoPartialFile) {
  TempDir tmp;
  std::string out;
  // A folder that is no run, and a run without checkpoints.
  fs::create_directories(tmp / "empty" / "checkpoints");
  EXPECT_EQ(
      run_command(kCli + " export-onnx " + quote(tmp / "empty") + " --out " + quote(tmp / "g.onnx") + " 2>&1", &out),
      1);
  EXPECT_NE(out.find("holds no checkpoint"), std::string::npos) << out;
  EXPECT_NE(out.find((tmp / "empty").string()), std::string::npos) << out;
  EXPECT_EQ(
      run_command(kCli + " export-onnx " + quote(tmp / "nothing") + " --out " + quote(tmp / "g.onnx") + " 2>&1", &out),
      1);
  EXPECT_NE(out.find("no such run folder"), std::string::npos) << out;
  EXPECT_EQ(run_command(kCli + " export-onnx " + quote(tmp / "empty") + " 2>&1", &out), 2);
  EXPECT_NE(out.find("--out"), std::string::npos) << out;

  const fs::path run = tmp / "run";
  train(run, "dcgan", 40);
  ASSERT_FALSE(HasFatalFailure());
  // A step the run has no checkpoint of: the error lists those it has.
  EXPECT_EQ(
      run_command(kCli + " export-onnx " + quote(run) + " --step 30 --out " + quote(tmp / "g.onnx") + " 2>&1", &out),
      1);
  EXPECT_NE(out.find("no checkpoint of step 30"), std::string::npos) << out;
  EXPECT_NE(out.find("steps 20, 40"), std::string::npos) << out;
  // sample's new options refuse what they do not know, before writing anything.
  const std::string ckpt = quote(onnx_source_checkpoint(run, -1));
  EXPECT_EQ(run_command(kCli + " sample " + ckpt + " --raw " + quote(tmp / "r.npy") + " --bn-stats mean 2>&1", &out),
            2);
  EXPECT_NE(out.find("--bn-stats is batch, running or standing"), std::string::npos) << out;
  EXPECT_EQ(run_command(kCli + " sample " + ckpt + " 2>&1", &out), 2);
  EXPECT_NE(out.find("--raw FILE.npy"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(tmp / "r.npy"));
  // --ema on a run without one.
  EXPECT_EQ(run_command(kCli + " export-onnx " + quote(run) + " --ema --out " + quote(tmp / "g.onnx") + " 2>&1", &out),
            1);
  EXPECT_NE(out.find("no EMA generator"), std::string::npos) << out;
  // Outputs that cannot be written: a missing folder, a path through a file.
  io::write_file_atomic(tmp / "a-file", "x");
  for (const fs::path bad : {tmp / "missing" / "g.onnx", tmp / "a-file" / "g.onnx"}) {
    EXPECT_EQ(run_command(kCli + " export-onnx " + quote(run) + " --out " + quote(bad) + " 2>&1", &out), 1);
    EXPECT_NE(out.find(bad.string()), std::string::npos) << out;
  }
  EXPECT_FALSE(fs::exists(tmp / "g.onnx"));
  // --step 20 works; the file then exists and is not replaced without --force.
  ASSERT_EQ(
      run_command(kCli + " export-onnx " + quote(run) + " --step 20 --out " + quote(tmp / "g.onnx") + " 2>&1", &out), 0)
      << out;
  EXPECT_NE(out.find("step 20"), std::string::npos) << out;
  const std::string first = io::read_file(tmp / "g.onnx");
  EXPECT_EQ(run_command(kCli + " export-onnx " + quote(run) + " --out " + quote(tmp / "g.onnx") + " 2>&1", &out), 1);
  EXPECT_EQ(io::read_file(tmp / "g.onnx"), first);
  // Never a temporary or partial file left beside the output.
  for (const auto& e : fs::directory_iterator(tmp.path()))
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
}
