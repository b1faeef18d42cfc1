// Timelapses (core/run/timelapse.h, core/io/animation_writer.h): the frames follow the run's
// grids and precisions, and the files decode in real readers (OpenCV's VideoCapture for MP4,
// libwebpdemux for WebP), with nothing left behind when an export fails or is stopped.
#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <webp/demux.h>

#include "core/io/atomic_file.h"
#include "core/io/image_io.h"
#include "core/io/opencv.h"
#include "core/run/session.h"
#include "core/run/timelapse.h"
#include "test_support.h"

using namespace ampgan;
using namespace ampgan::testing;
namespace fs = std::filesystem;

namespace {

// 12 steps in FP16, a grid every 2, BF16 from step 7 on.
fs::path switched_run(const TempDir& tmp) {
  RunConfig c = tiny_fp16_run(12, tmp / "run");
  c.sample_every = 2;
  auto s = Session::create(c);
  for (int i = 0; i < 6; ++i) s->step();
  s->set_precision(Precision::BF16);
  s->run();
  s->finish("finished");
  return tmp / "run";
}

struct Decoded {
  int width = 0, height = 0, frames = 0, last_ms = 0;  // last_ms: the last frame's end
  std::vector<std::vector<uint8_t>> rgba;              // each frame's canvas
};

Decoded decode_webp(const fs::path& f) {
  const std::string bytes = io::read_file(f);
  WebPData data{reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()};
  WebPAnimDecoderOptions opt;
  WebPAnimDecoderOptionsInit(&opt);
  opt.color_mode = MODE_RGBA;
  WebPAnimDecoder* dec = WebPAnimDecoderNew(&data, &opt);
  Decoded d;
  if (!dec) return d;
  WebPAnimInfo info;
  WebPAnimDecoderGetInfo(dec, &info);
  d.width = static_cast<int>(info.canvas_width);
  d.height = static_cast<int>(info.canvas_height);
  while (WebPAnimDecoderHasMoreFrames(dec)) {
    uint8_t* buf = nullptr;
    if (!WebPAnimDecoderGetNext(dec, &buf, &d.last_ms)) break;
    d.rgba.emplace_back(buf, buf + size_t(4) * d.width * d.height);
    ++d.frames;
  }
  WebPAnimDecoderDelete(dec);
  return d;
}

}  // namespace

TEST(Timelapse, FramesFollowTheGridsAndMarkTheSwitch) {
  TempDir tmp;
  const RunFolder run(switched_run(tmp));
  const auto grids = run.sample_grids();
  const std::vector<TimelapseFrame> frames = timelapse_frames(run, 1);
  ASSERT_EQ(frames.size(), grids.size());
  ASSERT_GE(frames.size(), 6u);  // steps 2, 4, ..., 12
  int switches = 0;
  for (const TimelapseFrame& f : frames) {
    EXPECT_EQ(f.precision, f.step <= 6 ? Precision::FP16 : Precision::BF16) << "step " << f.step;
    EXPECT_EQ(f.switched, f.step == 8) << "step " << f.step;  // the first grid trained in BF16
    switches += f.switched;
  }
  EXPECT_EQ(switches, 1);
  // Every other grid, and the last one always.
  const std::vector<TimelapseFrame> every3 = timelapse_frames(run, 3);
  EXPECT_EQ(every3.front().step, frames.front().step);
  EXPECT_EQ(every3.back().step, frames.back().step);
  EXPECT_LT(every3.size(), frames.size());
}

TEST(Timelapse, WebPHoldsTheCaptionedGridsExactly) {
  TempDir tmp;
  const RunFolder run(switched_run(tmp));
  const fs::path out = tmp / "t.webp";
  TimelapseOptions o;
  o.fps = 4;
  const TimelapseResult r = write_timelapse(run, out, o);
  const std::vector<TimelapseFrame> frames = timelapse_frames(run, 1);
  EXPECT_EQ(r.grids, static_cast<int>(frames.size()));
  EXPECT_EQ(r.switches, 1);
  EXPECT_EQ(r.frames, r.grids - 2 + 4 + 8);  // the switch held 1 s (4 frames), the last 2 s
  const Decoded d = decode_webp(out);
  ASSERT_EQ(d.frames, r.grids) << "one WebP frame a grid, held by its duration";
  EXPECT_EQ(d.width, r.width);
  EXPECT_EQ(d.height, r.height);
  // libwebpdemux gives each frame's end time: the last one's is the whole playing time.
  EXPECT_EQ(d.last_ms, 1000 * r.frames / 4);
  EXPECT_DOUBLE_EQ(r.seconds, r.frames / 4.0);
  // Lossless: every frame is the captioned grid, pixel for pixel; the switch's band is amber.
  for (size_t i = 0; i < frames.size(); ++i) {
    const io::Image8 want = timelapse_image(io::read_image(frames[i].grid), frames[i], r.scale);
    ASSERT_EQ(want.width, d.width);
    size_t differ = 0;
    for (size_t p = 0; p < size_t(d.width) * d.height; ++p)
      for (int ch = 0; ch < 3; ++ch) differ += want.pixels[p * 3 + ch] != d.rgba[i][p * 4 + ch];
    EXPECT_EQ(differ, 0u) << "frame " << i;
    const uint8_t* band = &d.rgba[i][4 * 2];  // pixel (2, 0): the caption band, left of the text
    if (frames[i].switched)
      EXPECT_TRUE(band[0] == 230 && band[1] == 160 && band[2] == 20) << "frame " << i;
    else
      EXPECT_TRUE(band[0] == 40 && band[1] == 40 && band[2] == 40) << "frame " << i;
  }
}

TEST(Timelapse, Mp4DecodesWithEveryFrame) {
  TempDir tmp;
  const RunFolder run(switched_run(tmp));
  std::string out;
  ASSERT_EQ(run_command(kCli + " timelapse " + quote(run.dir()) + " --out " + quote(tmp / "t.mp4") + " 2>&1", &out), 0)
      << out;
  EXPECT_NE(out.find("1 precision switch marked"), std::string::npos) << out;
  cv::VideoCapture v((tmp / "t.mp4").string());
  ASSERT_TRUE(v.isOpened());
  const int grids = static_cast<int>(run.sample_grids().size());
  int n = 0;
  cv::Mat f;
  while (v.read(f)) {
    ASSERT_EQ(f.cols % 2, 0);
    ASSERT_GE(f.cols, 512) << "enlarged to be watched";
    ++n;
  }
  EXPECT_EQ(n, grids - 2 + 8 + 16);  // 8 fps: the switch held 8 frames, the last 16
  for (const auto& e : fs::directory_iterator(tmp.path()))
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
}

TEST(Timelapse, RefusalsNameTheInputAndLeaveTheOldFile) {
  TempDir tmp;
  const RunFolder run(switched_run(tmp));
  expect_error([&] { write_timelapse(run, tmp / "t.gif", {}); }, {"t.gif", ".mp4", ".webp"});
  RunConfig c = tiny_fp16_run(2, tmp / "no-grids");
  Session::create(c)->run();
  expect_error([&] { write_timelapse(RunFolder(tmp / "no-grids"), tmp / "t.mp4", {}); },
               {"no sample grids", "samples", "--sample-every"});
  // Stopped halfway: the file that was there is kept, and no temporary file is left.
  for (const char* name : {"old.mp4", "old.webp"}) {
    const fs::path old = tmp / name;
    io::write_file_atomic(old, "previous export");
    int calls = 0;
    EXPECT_THROW(write_timelapse(run, old, {}, [&](int, int) { return ++calls < 3; }), Cancelled);
    EXPECT_EQ(io::read_file(old), "previous export");
    for (const auto& e : fs::directory_iterator(tmp.path()))
      EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
  }
  std::string out;
  EXPECT_EQ(run_command(kCli + " timelapse " + quote(run.dir()) + " 2>&1", &out), 2) << out;
  EXPECT_NE(out.find("--out"), std::string::npos) << out;
}
