// ampgan sample / export-generator: what a trained generator makes, and its weights for PyTorch.
#include <cstdio>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/guard.h"
#include "cli/outputs.h"
#include "cli/train_options.h"
#include "core/common/rng.h"
#include "core/io/atomic_file.h"
#include "core/io/image_io.h"
#include "core/run/checkpoint.h"
#include "core/run/onnx_export.h"

namespace ampgan::cli {

namespace {

// NumPy's .npy (format 1.0): float32 little-endian, C order, header padded to 64 bytes.
std::string npy_f32(const std::vector<int64_t>& shape, const std::vector<float>& v) {
  std::string dims;
  for (int64_t d : shape) dims += std::to_string(d) + ", ";
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  header.append(63 - (10 + header.size()) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
  return out;
}

}  // namespace

int cmd_sample(int argc, char** argv) {
  Args a("sample", "ampgan sample CHECKPOINT (--grid FILE.png | --each DIR | --raw FILE.npy) [OPTIONS]",
         "Generates images with a checkpoint's generator. The same --seed gives the same images.");
  a.option("grid", "FILE.png", "write one grid of --n images")
      .option("each", "DIR", "write --n single PNG images into DIR")
      .option("raw", "FILE.npy",
              "write the images' values, float32 (n, res, res, channels) in [-1, 1]\n"
              "(NumPy's .npy; also with --grid or --each)")
      .option("bn-stats", "S",
              "batch norm on the batch's statistics (batch, default: as in training)\n"
              "or the running averages (running: what export-onnx's model computes)")
      .option("n", "N", "number of images (64)")
      .option("cols", "C", "grid columns (8)")
      .option("upscale", "K", "enlarge pixels K times (nearest neighbour) (1)")
      .option("seed", "S", "latent seed (0)")
      .option("backend", "B", "auto, cpu (default) or cuda")
      .flag("force", "replace existing output files (never the checkpoint itself)");
  return guarded("sample", [&] {
    if (!a.parse_or_help(argc, argv, 2)) return 0;
    if (a.positional().size() != 1) throw UsageError("sample takes one checkpoint file", "ampgan sample", "see --help");
    if (a.has("grid") && a.has("each"))
      throw UsageError("give one of --grid FILE.png and --each DIR, not both", "ampgan sample");
    if (!a.has("grid") && !a.has("each") && !a.has("raw"))
      throw UsageError("give --grid FILE.png, --each DIR or --raw FILE.npy", "ampgan sample");
    const std::string bn_name = a.str("bn-stats", "batch");
    if (bn_name != "batch" && bn_name != "running")
      throw UsageError("--bn-stats is batch or running, not '" + bn_name + "'", "ampgan sample");
    const BnStats bn = bn_name == "running" ? BnStats::Running : BnStats::Batch;
    const long long n = a.integer("n", 64, 1, 100000), cols = a.integer("cols", 8, 1, 100000),
                    up = a.integer("upscale", 1, 1, 16);
    const uint64_t seed = setting_value(a, "seed", "seed", 0).get<uint64_t>();
    const std::filesystem::path input = a.positional()[0];
    // Every output is checked before the generator runs, so a refusal writes nothing.
    if (a.has("raw")) check_output_file(a.str("raw"), {input}, a.has("force"), "--raw");
    if (a.has("grid")) {
      check_output_file(a.str("grid"), {input}, a.has("force"), "--grid");
      // The grid's size depends on the checkpoint's resolution: checked again once it is known.
      const io::GridSize g = io::grid_size(n, 1, cols, 2);
      io::check_png_size(g.width, g.height, "--grid", "use fewer images (--n), another --cols, or --each DIR");
    } else if (a.has("each")) {
      for (int i = 0; i < n; ++i) {
        char name[64];
        std::snprintf(name, sizeof name, "sample_%05d.png", i);
        check_output_file(std::filesystem::path(a.str("each")) / name, {input}, a.has("force"), "--each");
      }
    }
    auto backend = create_backend(a.str("backend", "cpu"));
    CheckpointInfo info;
    auto trainer = trainer_from_checkpoint(*backend, a.positional()[0], &info);
    const DcganSpec& m = trainer->config().model;
    std::vector<float> z(static_cast<size_t>(n) * m.latent);
    for (size_t i = 0; i < z.size(); ++i) z[i] = philox_normal(seed, rng_stream::kSampleLatents, i);
    if (a.has("grid")) {
      const io::GridSize g = io::grid_size(n, m.res, cols, 2);
      io::check_png_size(g.width * up, g.height * up, "--grid",
                         "use fewer images (--n), another --cols, a smaller --upscale, or --each DIR");
    }
    const std::vector<float> imgs = generate_images(*trainer, z, static_cast<int>(n), bn);
    if (a.has("raw")) {
      io::write_file_atomic(a.str("raw"), npy_f32({n, m.res, m.res, m.channels}, imgs));
      std::printf("wrote %s (%lld x %d x %d x %d float32, batch norm on %s statistics, step %lld)\n",
                  a.str("raw").c_str(), n, m.res, m.res, m.channels, bn_name.c_str(),
                  static_cast<long long>(info.step));
    }
    if (a.has("grid")) {
      io::Image8 g =
          io::make_grid(imgs.data(), static_cast<int>(n), m.res, m.channels, static_cast<int>(std::min(cols, n)));
      if (up > 1) g = io::upscale_nearest(g, static_cast<int>(up));
      io::write_png(a.str("grid"), g);
      std::printf("wrote %s (%d x %d, %lld images from step %lld)\n", a.str("grid").c_str(), g.width, g.height, n,
                  static_cast<long long>(info.step));
    } else if (a.has("each")) {
      const std::filesystem::path dir = a.str("each");
      io::ensure_writable_dir(dir);
      for (int i = 0; i < n; ++i) {
        char name[64];
        std::snprintf(name, sizeof name, "sample_%05d.png", i);
        io::Image8 img = io::to_image8(imgs.data(), i, m.res, m.channels);
        if (up > 1) img = io::upscale_nearest(img, static_cast<int>(up));
        io::write_png(dir / name, img);
      }
      std::printf("wrote %lld images to %s\n", n, dir.string().c_str());
    }
    return 0;
  });
}

int cmd_export_generator(int argc, char** argv) {
  Args a("export-generator", "ampgan export-generator CHECKPOINT OUT.safetensors",
         "Writes the generator's FP32 weights under the PyTorch peer's state_dict names and layouts\n"
         "(see docs/user-guide.md: a few lines of Python load them into bench/peers/pytorch_dcgan.py's\n"
         "or, for a resnet run, pytorch_resnet.py's generator).");
  a.flag("force", "replace an existing OUT.safetensors (never the checkpoint itself)");
  return guarded("export-generator", [&] {
    if (!a.parse_or_help(argc, argv, 2)) return 0;
    if (a.positional().size() != 2)
      throw UsageError("export-generator takes a checkpoint and an output file", "ampgan export-generator",
                       "usage: ampgan export-generator CHECKPOINT OUT.safetensors");
    check_output_file(a.positional()[1], {a.positional()[0]}, a.has("force"), "OUT.safetensors");
    auto backend = create_backend("cpu");
    auto trainer = trainer_from_checkpoint(*backend, a.positional()[0]);
    const io::StFile f = export_generator(*trainer);
    io::write_safetensors(a.positional()[1], f);
    const DcganSpec& m = trainer->config().model;
    std::printf("wrote %s: %zu tensors; PyTorch: bench/peers/pytorch_%s.py's generator(res=%d, nc=%d, width=%d)\n",
                a.positional()[1].c_str(), f.tensors.size(), model_family_name(trainer->config().family), m.res,
                m.channels, m.width);
    return 0;
  });
}

}  // namespace ampgan::cli
