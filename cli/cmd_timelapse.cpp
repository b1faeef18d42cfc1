// ampgan timelapse: a run's sample grids as an MP4 video or an animated WebP (core/run/timelapse.h).
#include <unistd.h>

#include <cstdio>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/guard.h"
#include "cli/stop_signals.h"
#include "core/run/timelapse.h"

namespace ampgan::cli {

int cmd_timelapse(int argc, char** argv) {
  Args a("timelapse", "ampgan timelapse RUN_DIR --out FILE.mp4|FILE.webp [--fps N] [--every K]",
         "Makes a video (.mp4, H.264) or an animated image (.webp, lossless; browsers play it) of a\n"
         "run's sample grids, the same latents at every sample step, each frame captioned with its\n"
         "step and precision; a precision switch is marked in amber and held a second.");
  a.option("out", "FILE", "the .mp4 or .webp to write (replaced only when the new one is whole)")
      .option("fps", "N", "frames a second (8)")
      .option("every", "K", "every K-th grid only (1); the last grid is always in")
      .option("scale", "F", "enlarge each grid F times (default: to at least 512 px wide)");
  return guarded("timelapse", [&] {
    if (!a.parse_or_help(argc, argv, 2)) return 0;
    if (a.positional().size() != 1)
      throw UsageError("timelapse takes one run folder", "ampgan timelapse", "see --help");
    if (!a.has("out")) throw UsageError("--out FILE.mp4 or FILE.webp is required", "ampgan timelapse", "see --help");
    TimelapseOptions o;
    o.fps = a.real("fps", 8);
    o.every = static_cast<int>(a.integer("every", 1, 1, 1'000'000));
    o.scale = static_cast<int>(a.integer("scale", 0, 1, 64));
    // Ctrl-C stops between grids and leaves --out as it was (no half video behind).
    install_signal_handlers();
    const bool tty = ::isatty(2);
    const TimelapseResult r = write_timelapse(RunFolder(a.positional()[0]), a.str("out"), o, [&](int done, int total) {
      if (tty) std::fprintf(stderr, "\r  grid %d of %d", done, total);
      if (tty && done == total) std::fputc('\n', stderr);
      return !g_stop.load();
    });
    std::printf("wrote %s: %d grids, %d frames (%.1f s at %g fps), %dx%d, %s, %d precision switch%s marked\n",
                r.file.string().c_str(), r.grids, r.frames, r.seconds, o.fps, r.width, r.height, r.encoder.c_str(),
                r.switches, r.switches == 1 ? "" : "es");
    return 0;
  });
}

}  // namespace ampgan::cli
