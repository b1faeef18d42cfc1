// A run's training as an animation (`ampgan timelapse`, File > Export timelapse): its sample grids
// (samples/step_NNNNNN.png: the same fixed latents at every sample step) in step order, each frame
// captioned with its step and the precision that step trained in; the first frame after a
// precision switch is marked ("FP32 -> FP16 AMP", amber) and held a second, the last held two.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/amp/precision.h"
#include "core/io/image_io.h"
#include "core/run/run_folder.h"

namespace ampgan {

struct TimelapseOptions {
  double fps = 8;
  int every = 1;  // every K-th grid (the last is always in)
  int scale = 0;  // whole-number enlargement; 0: the smallest that makes a frame >= 512 px wide
};

struct TimelapseFrame {
  int64_t step = 0;
  std::filesystem::path grid;
  Precision precision = Precision::FP32;
  bool switched = false;  // the precision changed since the previous frame
  Precision from = Precision::FP32;
};

// The frames of run `run`: its grids (every options.every-th, and the last), the precision of
// each from metrics.csv (config.json's for a step without a row), a switch from the precision
// switch events between two frames. Throws Error naming the folder when it holds no sample grid.
std::vector<TimelapseFrame> timelapse_frames(const RunFolder& run, int every);

// One frame as the animation shows it: the grid enlarged `scale` times under a caption band
// ("step 1200   FP16 AMP"), padded to even sizes.
io::Image8 timelapse_image(const io::Image8& grid, const TimelapseFrame& frame, int scale);

struct TimelapseResult {
  std::filesystem::path file;
  int grids = 0, frames = 0, switches = 0;
  int width = 0, height = 0;
  int scale = 1;       // the grids' enlargement
  double seconds = 0;  // playing time
  std::string encoder;
};

// Writes the animation to `out` (.mp4 or .webp; io::animation_format). progress(done, total)
// after each grid; returning false stops, and Cancelled is thrown with `out` left as it was.
TimelapseResult write_timelapse(const RunFolder& run, const std::filesystem::path& out, const TimelapseOptions& options,
                                const std::function<bool(int, int)>& progress = {});

}  // namespace ampgan
