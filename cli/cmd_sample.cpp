// ampgan sample / export-generator: what a trained generator makes, and its weights for PyTorch.
#include <unistd.h>

#include <cstdio>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/guard.h"
#include "cli/outputs.h"
#include "cli/stop_signals.h"
#include "cli/train_options.h"
#include "core/common/rng.h"
#include "core/io/animation_writer.h"
#include "core/io/atomic_file.h"
#include "core/io/image_io.h"
#include "core/run/checkpoint.h"
#include "core/run/latent_explorer.h"
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

namespace {

// What `sample` generates: the latents, how many images, how they are named and described.
struct SampleRequest {
  std::vector<float> latents;
  int n = 0;
  BnStats bn = BnStats::Batch;
  bool each_alone = false;         // explorer images: one forward pass per image (latent_explorer.h)
  std::vector<std::string> names;  // --each file names
  std::string what;                // "64 images of --seed 0", "16 frames from seed 3 to seed 9 (slerp)"
  float truncation = 0;
  long long cols = 8;
  std::vector<int32_t> classes;  // a conditional run's class per image (empty: i % classes)
};

// --class C (a number or a name) or --class all (the images again for every class, a grid row
// per class for the grid's default columns).
void apply_class(const Args& a, const RunConfig& run, SampleRequest& r) {
  if (!a.has("class")) return;
  const std::string text = a.str("class");
  if (text != "all") {
    const int c = parse_class(text, run.classes, run.class_names, "--class");
    r.classes.assign(static_cast<size_t>(r.n), c);
    const std::string name = static_cast<size_t>(c) < run.class_names.size() ? " " + run.class_names[c] : "";
    r.what += ", class " + std::to_string(c) + name;
    return;
  }
  parse_class("0", run.classes, run.class_names, "--class");  // refuses an unconditional run
  const int k = run.classes, n = r.n;
  if (static_cast<int64_t>(n) * k > 100000)
    throw UsageError("--class all makes " + std::to_string(int64_t{n} * k) + " images, more than 100000", "--class",
                     "ask for fewer images or one class");
  std::vector<float> latents;
  std::vector<std::string> names;
  for (int c = 0; c < k; ++c) {
    latents.insert(latents.end(), r.latents.begin(), r.latents.end());
    r.classes.insert(r.classes.end(), static_cast<size_t>(n), c);
    for (const std::string& f : r.names) names.push_back("class" + std::to_string(c) + "_" + f);
  }
  r.latents = std::move(latents);
  r.names = std::move(names);
  if (!a.has("cols")) r.cols = n;
  r.n = n * k;
  r.what += ", each of the " + std::to_string(k) + " classes";
}

// "seed 3", "3 seeds (3, 7, 9)", "64 seeds (0, 1, 2, ..., 63)".
std::string seeds_text(const std::vector<uint64_t>& seeds) {
  if (seeds.size() == 1) return "seed " + std::to_string(seeds[0]);
  std::string list;
  for (size_t i = 0; i < seeds.size(); ++i) {
    if (seeds.size() > 6 && i == 3) {
      list += ", ...";
      i = seeds.size() - 1;
    }
    list += (i ? ", " : "") + std::to_string(seeds[i]);
  }
  return std::to_string(seeds.size()) + " seeds (" + list + ")";
}

// The request the options ask for, once the latent size is known. --seeds and --interpolate use
// the explorer's latents (one seed, one image); --seed/--n the sampling stream of earlier versions.
SampleRequest sample_request(const Args& a, int nz, BnStats bn, const std::string& bn_name) {
  SampleRequest r;
  const float trunc = static_cast<float>(a.real("truncation", 0));
  const std::string tr = trunc > 0 ? ", truncation " + a.str("truncation") : "";
  char name[64];
  if (a.has("interpolate")) {
    const std::vector<uint64_t> ends = parse_seed_list(a.str("interpolate"), "--interpolate");
    if (ends.size() != 2) throw UsageError("--interpolate takes two seeds, e.g. 3,9", "--interpolate");
    const int frames = static_cast<int>(a.integer("frames", 16, 2, 1000));
    const LatentPath path = parse_latent_path(a.str("path", "slerp"), "--path");
    r.latents = interpolate_latents(seed_latent(ends[0], nz, trunc), seed_latent(ends[1], nz, trunc), frames, path);
    r.n = frames;
    r.cols = a.integer("cols", frames, 1, 100000);
    for (int i = 0; i < frames; ++i) r.names.push_back((std::snprintf(name, sizeof name, "frame_%05d.png", i), name));
    r.what = std::to_string(frames) + " frames from seed " + std::to_string(ends[0]) + " to seed " +
             std::to_string(ends[1]) + " (" + latent_path_name(path) + tr + ")";
  } else if (a.has("seeds")) {
    const std::vector<uint64_t> seeds = parse_seed_list(a.str("seeds"), "--seeds");
    r.latents = seed_latents(seeds, nz, trunc);
    r.n = static_cast<int>(seeds.size());
    r.cols = a.integer("cols", 8, 1, 100000);
    for (uint64_t s : seeds)
      r.names.push_back((std::snprintf(name, sizeof name, "seed_%llu.png", static_cast<unsigned long long>(s)), name));
    r.what = seeds_text(seeds) + tr;
  } else {
    r.n = static_cast<int>(a.integer("n", 64, 1, 100000));
    r.cols = a.integer("cols", 8, 1, 100000);
    const uint64_t seed = setting_value(a, "seed", "seed", 0).get<uint64_t>();
    r.latents.resize(static_cast<size_t>(r.n) * nz);
    for (size_t i = 0; i < r.latents.size(); ++i) r.latents[i] = philox_normal(seed, rng_stream::kSampleLatents, i);
    for (int i = 0; i < r.n; ++i) r.names.push_back((std::snprintf(name, sizeof name, "sample_%05d.png", i), name));
    r.what = std::to_string(r.n) + " images of --seed " + std::to_string(seed) + ", batch norm on " + bn_name +
             " statistics";
    r.bn = bn;
    return r;
  }
  r.bn = BnStats::Standing;
  r.each_alone = true;
  r.truncation = trunc;
  return r;
}

// The refusals that need no checkpoint, so that a bad request writes and loads nothing.
void check_sample_options(const Args& a) {
  if (a.positional().size() != 1)
    throw UsageError("sample takes one run folder or checkpoint file", "ampgan sample", "see --help");
  if (a.has("grid") && a.has("each"))
    throw UsageError("give one of --grid FILE.png and --each DIR, not both", "ampgan sample");
  if (!a.has("grid") && !a.has("each") && !a.has("raw") && !a.has("video"))
    throw UsageError("give --grid FILE.png, --each DIR, --raw FILE.npy or --video FILE.mp4|.webp", "ampgan sample");
  const bool explorer = a.has("seeds") || a.has("interpolate");
  if (a.has("seeds") && a.has("interpolate"))
    throw UsageError("give --seeds or --interpolate, not both", "ampgan sample",
                     "--interpolate A,B makes the frames between seeds A and B");
  if (explorer && (a.has("n") || a.has("seed")))
    throw UsageError(std::string(a.has("seeds") ? "--seeds" : "--interpolate") + " names its images' seeds itself",
                     "ampgan sample", "leave out --n and --seed (they draw a batch from one seed)");
  if (explorer && a.has("bn-stats") && a.str("bn-stats") != "standing")
    throw UsageError("--seeds and --interpolate use batch norm's standing statistics", "--bn-stats",
                     "an image of a seed must not depend on which images share its batch; leave out --bn-stats");
  if (a.has("truncation")) {
    if (!explorer)
      throw UsageError("--truncation applies to the images of --seeds or --interpolate", "--truncation",
                       "e.g. ampgan sample RUN --seeds 0-63 --truncation 0.7 --grid g.png");
    check_truncation(a.real("truncation", 0), "--truncation");
    if (!(a.real("truncation", 0) > 0))
      throw UsageError("--truncation must be above 0", "--truncation", "leave it out for no truncation, or e.g. 0.7");
  }
  if ((a.has("frames") || a.has("path")) && !a.has("interpolate"))
    throw UsageError("--frames and --path belong to --interpolate A,B", "ampgan sample");
  if (a.has("step") && std::filesystem::is_regular_file(a.positional()[0]))
    throw UsageError("--step picks a checkpoint of a run folder; this is a checkpoint file", "--step",
                     "give the run folder, or leave out --step");
  const std::string bn_name = a.str("bn-stats", "batch");
  if (bn_name != "batch" && bn_name != "running" && bn_name != "standing")
    throw UsageError("--bn-stats is batch, running or standing, not '" + bn_name + "'", "ampgan sample");
  if (a.has("video")) io::animation_format(a.str("video"));
}

void write_video(const Args& a, const std::vector<float>& imgs, const SampleRequest& r, int res, int channels,
                 long long up) {
  // A frame at least 256 px wide unless --upscale says otherwise (32 px frames are stamps).
  const int scale = a.has("upscale") ? static_cast<int>(up) : std::max(1, 256 / res);
  const double fps = a.real("fps", 8);
  if (!(fps > 0 && fps <= 120)) throw UsageError("--fps must be above 0 and at most 120", "--fps");
  io::AnimationWriter w(a.str("video"), res * scale, res * scale, fps);
  const bool tty = ::isatty(2);
  for (int i = 0; i < r.n; ++i) {
    if (g_stop.load())
      throw Cancelled("stopped at frame " + std::to_string(i) + "; " + a.str("video") + " not written");
    io::Image8 img = io::to_image8(imgs.data(), i, res, channels);
    if (scale > 1) img = io::upscale_nearest(img, scale);
    w.add(img);
    if (tty) std::fprintf(stderr, "\r  encoding frame %d of %d", i + 1, r.n);
  }
  if (tty) std::fputc('\n', stderr);
  w.finish();
  std::printf("wrote %s (%d frames, %dx%d, %g fps, %s)\n", a.str("video").c_str(), r.n, res * scale, res * scale, fps,
              w.encoder().c_str());
}

}  // namespace

int cmd_sample(int argc, char** argv) {
  Args a("sample",
         "ampgan sample RUN|CHECKPOINT (--grid FILE.png | --each DIR | --raw FILE.npy | --video FILE.mp4|.webp) "
         "[OPTIONS]",
         "Generates images with a run's generator (a run folder: its newest checkpoint, or --step N;\n"
         "the EMA generator where the run keeps one). The same seeds give the same images.");
  a.option("grid", "FILE.png", "write one grid of the images")
      .option("each", "DIR", "write each image as a PNG into DIR")
      .option("raw", "FILE.npy",
              "write the images' values, float32 (n, res, res, channels) in [-1, 1]\n"
              "(NumPy's .npy; also with --grid or --each)")
      .option("video", "FILE", "write the images as frames of an .mp4 (H.264) or animated .webp")
      .option("step", "N", "with a run folder: the checkpoint of step N (default: the newest)")
      .section("Which images")
      .option("seeds", "LIST", "one image per seed, e.g. 0-63 or 3,7,9 (a seed's image is the same in any list)")
      .option("interpolate", "A,B", "frames from seed A's image to seed B's (the ends are those images)")
      .option("frames", "N", "frames of --interpolate, both ends included (16)")
      .option("path", "P", "slerp (along the sphere, default) or lerp (a straight line)")
      .option("truncation", "T",
              "truncation trick for --seeds/--interpolate: latent values beyond +-T\n"
              "are redrawn (0 < T <= 4; smaller: more typical, less varied images)")
      .option("class", "C",
              "a class-conditional run's class: a number, a name (e.g. Sneaker), or all\n"
              "(the images again for every class, a grid row each); default: classes in turn")
      .option("n", "N", "without --seeds: number of images (64) drawn from --seed")
      .option("seed", "S", "without --seeds: latent seed of the whole batch (0)")
      .option("bn-stats", "S",
              "batch norm on the batch's statistics (batch, default for --n: as in training),\n"
              "the running averages (running: what export-onnx's model computes), or standing\n"
              "statistics of 512 latents (standing: BigGAN's; --seeds and --interpolate always)")
      .section("Output")
      .option("cols", "C", "grid columns (8; --interpolate: one row)")
      .option("upscale", "K", "enlarge pixels K times (nearest neighbour) (1; --video: to >= 256 px)")
      .option("fps", "N", "--video frames a second (8)")
      .option("backend", "B", "auto, cpu (default) or cuda")
      .flag("force", "replace existing output files (never the checkpoint itself)");
  return guarded("sample", [&] {
    if (!a.parse_or_help(argc, argv, 2)) return 0;
    check_sample_options(a);
    const std::string bn_name = a.str("bn-stats", "batch");
    const BnStats bn = bn_name == "running"    ? BnStats::Running
                       : bn_name == "standing" ? BnStats::Standing
                                               : BnStats::Batch;
    const long long up = a.integer("upscale", 1, 1, 16);
    const std::filesystem::path input = a.positional()[0];
    const std::filesystem::path checkpoint = onnx_source_checkpoint(input, a.integer("step", -1, 0, kMaxSteps));
    auto backend = create_backend(a.str("backend", "cpu"));
    CheckpointInfo info;
    auto trainer = trainer_from_checkpoint(*backend, checkpoint, &info);
    const DcganSpec& m = trainer->config().model;
    SampleRequest r = sample_request(a, m.latent, bn, bn_name);
    apply_class(a, info.config, r);
    // Every output is checked before the generator runs, so a refusal writes nothing.
    const std::vector<std::filesystem::path> inputs{input, checkpoint};
    if (a.has("raw")) check_output_file(a.str("raw"), inputs, a.has("force"), "--raw");
    if (a.has("video")) check_output_file(a.str("video"), inputs, a.has("force"), "--video");
    if (a.has("grid")) {
      check_output_file(a.str("grid"), inputs, a.has("force"), "--grid");
      const io::GridSize g = io::grid_size(r.n, m.res, r.cols, 2);
      io::check_png_size(g.width * up, g.height * up, "--grid",
                         "use fewer images, another --cols, a smaller --upscale, or --each DIR");
    } else if (a.has("each")) {
      for (const std::string& name : r.names)
        check_output_file(std::filesystem::path(a.str("each")) / name, inputs, a.has("force"), "--each");
    }
    install_signal_handlers();  // Ctrl-C stops between images and writes nothing
    const bool tty = ::isatty(2);
    auto progress = [&](int done, int total) {
      if (tty && total > 16) std::fprintf(stderr, "\r  image %d of %d", done, total);
      if (tty && total > 16 && done == total) std::fputc('\n', stderr);
      return !g_stop.load();
    };
    const std::vector<float> imgs = r.each_alone
                                        ? explore_images(*trainer, r.latents, r.n, r.truncation, progress, r.classes)
                                        : generate_images(*trainer, r.latents, r.n, r.bn, 0, {}, 0, r.classes);
    const std::string from = "step " + std::to_string(info.step) + (trainer->has_ema() ? ", EMA generator" : "");
    if (a.has("raw")) {
      io::write_file_atomic(a.str("raw"), npy_f32({r.n, m.res, m.res, m.channels}, imgs));
      std::printf("wrote %s (%d x %d x %d x %d float32: %s, %s)\n", a.str("raw").c_str(), r.n, m.res, m.res, m.channels,
                  r.what.c_str(), from.c_str());
    }
    if (a.has("grid")) {
      io::Image8 g =
          io::make_grid(imgs.data(), r.n, m.res, m.channels, static_cast<int>(std::min<long long>(r.cols, r.n)));
      if (up > 1) g = io::upscale_nearest(g, static_cast<int>(up));
      io::write_png(a.str("grid"), g);
      std::printf("wrote %s (%d x %d: %s, %s)\n", a.str("grid").c_str(), g.width, g.height, r.what.c_str(),
                  from.c_str());
    } else if (a.has("each")) {
      const std::filesystem::path dir = a.str("each");
      io::ensure_writable_dir(dir);
      for (int i = 0; i < r.n; ++i) {
        io::Image8 img = io::to_image8(imgs.data(), i, m.res, m.channels);
        if (up > 1) img = io::upscale_nearest(img, static_cast<int>(up));
        io::write_png(dir / r.names[static_cast<size_t>(i)], img);
      }
      std::printf("wrote %d images to %s (%s, %s)\n", r.n, dir.string().c_str(), r.what.c_str(), from.c_str());
    }
    if (a.has("video")) write_video(a, imgs, r, m.res, m.channels, up);
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
    // A conditional generator's forward takes the classes too: g(z, y), y a LongTensor.
    const std::string classes = trainer->classes() > 0 ? ", classes=" + std::to_string(trainer->classes()) : "";
    std::printf("wrote %s: %zu tensors; PyTorch: bench/peers/pytorch_%s.py's generator(res=%d, nc=%d, width=%d%s)\n",
                a.positional()[1].c_str(), f.tensors.size(), model_family_name(trainer->config().family), m.res,
                m.channels, m.width, classes.c_str());
    return 0;
  });
}

}  // namespace ampgan::cli
