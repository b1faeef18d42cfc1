#include "core/run/timelapse.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/common/error.h"
#include "core/io/animation_writer.h"
#include "core/io/opencv.h"

namespace ampgan {

namespace fs = std::filesystem;

namespace {

constexpr int kCaptionHeight = 28;
constexpr int kMinWidth = 512;

}  // namespace

std::vector<TimelapseFrame> timelapse_frames(const RunFolder& run, int every) {
  AMPGAN_CHECK(every >= 1, "timelapse_frames: every < 1");
  const std::map<int64_t, fs::path> grids = run.sample_grids();
  if (grids.empty())
    throw Error("The run has no sample grids to make a timelapse of", run.samples_dir().string(),
                "Train with --sample-every N (a grid every N steps), or pick another run folder");
  const RunConfig config = run.read_config();
  std::map<int64_t, Precision> precision_at;
  for (const StepMetrics& m : run.read_metrics()) precision_at[m.step] = m.precision;  // a resumed row wins
  std::vector<int64_t> switch_steps;
  for (const RunEvent& e : run.read_events())
    if (e.type == EventType::PrecisionSwitch) switch_steps.push_back(e.step);
  auto precision_of = [&](int64_t step) {
    auto it = precision_at.upper_bound(step);  // the row of this step, else the last one before it
    return it == precision_at.begin() ? config.precision : std::prev(it)->second;
  };

  std::vector<TimelapseFrame> frames;
  int i = 0;
  const int last = static_cast<int>(grids.size()) - 1;
  for (const auto& [grid_step, path] : grids) {
    const int64_t step = grid_step;  // a lambda below captures it (clang 14 cannot capture a binding)
    if (i % every == 0 || i == last) {
      TimelapseFrame f;
      f.step = step;
      f.grid = path;
      f.precision = precision_of(step);
      if (!frames.empty()) {
        const TimelapseFrame& prev = frames.back();
        // A switch event's step is the last one trained before it, so steps after it train anew.
        const bool event = std::any_of(switch_steps.begin(), switch_steps.end(),
                                       [&](int64_t s) { return s >= prev.step && s < step; });
        f.switched = event || f.precision != prev.precision;
        f.from = prev.precision;
      }
      frames.push_back(f);
    }
    ++i;
  }
  return frames;
}

io::Image8 timelapse_image(const io::Image8& grid, const TimelapseFrame& frame, int scale) {
  AMPGAN_CHECK(scale >= 1 && (grid.channels == 1 || grid.channels == 3), "timelapse_image: bad grid or scale");
  cv::Mat big;
  cv::resize(io::rgb_mat(grid), big, cv::Size(), scale, scale, cv::INTER_NEAREST);  // pixels stay pixels
  const int width = big.cols + big.cols % 2;
  const int height = big.rows + kCaptionHeight + (big.rows + kCaptionHeight) % 2;
  cv::Mat out(height, width, CV_8UC3, cv::Scalar(0, 0, 0));
  big.copyTo(out(cv::Rect(0, kCaptionHeight, big.cols, big.rows)));
  // RGB in memory: a dark grey band, amber where the precision has just changed.
  const cv::Scalar band = frame.switched ? cv::Scalar(230, 160, 20) : cv::Scalar(40, 40, 40);
  const cv::Scalar ink = frame.switched ? cv::Scalar(0, 0, 0) : cv::Scalar(235, 235, 235);
  cv::rectangle(out, cv::Rect(0, 0, width, kCaptionHeight), band, cv::FILLED);
  std::string text = "step " + std::to_string(frame.step) + "   ";
  text += frame.switched ? std::string(precision_label(frame.from)) + " -> " + precision_label(frame.precision)
                         : std::string(precision_label(frame.precision));
  cv::putText(out, text, cv::Point(8, kCaptionHeight - 9), cv::FONT_HERSHEY_SIMPLEX, 0.55, ink, 1, cv::LINE_AA);
  io::Image8 img;
  img.width = width;
  img.height = height;
  img.channels = 3;
  img.pixels.assign(out.data, out.data + out.total() * out.elemSize());
  return img;
}

TimelapseResult write_timelapse(const RunFolder& run, const fs::path& out, const TimelapseOptions& options,
                                const std::function<bool(int, int)>& progress) {
  if (!(options.fps > 0 && options.fps <= 120))
    throw Error("A timelapse plays at more than 0 and at most 120 frames a second", "--fps", "Use e.g. --fps 8");
  if (options.every < 1) throw Error("--every must be 1 or more", "--every", "1 keeps every grid");
  io::animation_format(out);  // a wrong ending is refused before any work
  const std::vector<TimelapseFrame> frames = timelapse_frames(run, options.every);

  const io::Image8 first = io::read_image(frames.front().grid);
  const int scale = options.scale > 0 ? options.scale : std::max(1, (kMinWidth + first.width - 1) / first.width);
  const int hold_switch = std::max(1, static_cast<int>(std::lround(options.fps)));
  TimelapseResult r;
  r.file = out;
  r.scale = scale;
  std::unique_ptr<io::AnimationWriter> writer;
  for (size_t i = 0; i < frames.size(); ++i) {
    const io::Image8 grid = i == 0 ? first : io::read_image(frames[i].grid);
    if (grid.width != first.width || grid.height != first.height)
      throw Error("The sample grid is " + std::to_string(grid.width) + "x" + std::to_string(grid.height) +
                      " where the run's first is " + std::to_string(first.width) + "x" + std::to_string(first.height),
                  frames[i].grid.string(), "Move the odd file out of samples/ and export again");
    const io::Image8 img = timelapse_image(grid, frames[i], scale);
    if (!writer) {
      writer = std::make_unique<io::AnimationWriter>(out, img.width, img.height, options.fps);
      r.width = img.width;
      r.height = img.height;
      r.encoder = writer->encoder();
    }
    const bool last = i + 1 == frames.size();
    writer->add(img, last ? 2 * hold_switch : frames[i].switched ? hold_switch : 1);
    r.switches += frames[i].switched;
    ++r.grids;
    if (progress && !progress(static_cast<int>(i + 1), static_cast<int>(frames.size())))
      throw Cancelled("The timelapse was stopped; nothing was written", out.string());
  }
  writer->finish();
  r.frames = writer->frames();
  r.seconds = r.frames / options.fps;
  return r;
}

}  // namespace ampgan
