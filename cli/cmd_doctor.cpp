// ampgan doctor: the precision doctor (core/run/precision_doctor.h) from the terminal. Takes the
// run's settings as `ampgan train` does, probes them against FP32 and searches the remedies; prints
// a line per probe and the table, and writes doctor.json, doctor.md and doctor-config.json into
// --out. Ctrl-C stops at the end of the probe's current step with the best answer so far. With
// --replay RUN --step N, the first-divergence replay of one step instead (precision_replay.h).
#include <unistd.h>
#include <cstdio>
#include <filesystem>
#include <string>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/guard.h"
#include "cli/stop_signals.h"
#include "cli/train_options.h"
#include "core/amp/loss_scaler.h"
#include "core/run/doctor_report.h"
#include "core/run/precision_doctor.h"
#include "core/run/precision_replay.h"

namespace ampgan::cli {

namespace {

const char* const kDoctorSummary =
    "Finds the cheapest way to train these settings cleanly in half precision. A short FP32\n"
    "reference and a short probe in --precision (same seed and data order); if the probe is not\n"
    "clean (skipped updates above --target-skips after the warm-up, gradients underflowing, the\n"
    "loss scale stuck at its floor or ceiling, or losses departing from FP32's), short probes of\n"
    "remedies from the same start, cheapest first: the loss scaler's settings, FP32 for the layers\n"
    "the overflow locator names (one at a time), --half-blocks, --conv-clamp, nan_to_num. Prints\n"
    "every candidate's figures and the answer as options; writes OUT/doctor.json, OUT/doctor.md\n"
    "and OUT/doctor-config.json (ampgan train --config OUT/doctor-config.json). Each probe is a\n"
    "run folder under OUT/probes. Ctrl-C stops with the best answer so far.";

void print_probe_line(const DoctorResult& r, bool quiet) {
  if (quiet || r.candidates.empty()) return;
  if (isatty(STDOUT_FILENO)) std::printf("\r\033[K");  // the step counter's line
  const DoctorCandidate& c = r.candidates.back();
  const ProbeFigures& f = c.figures;
  std::string verdict = c.stage == "reference" ? "reference" : c.clean() ? "clean" : "";
  for (const std::string& p : c.problems) verdict += (verdict.empty() ? "" : "; ") + p;
  if (!c.error.empty()) verdict = "error: " + c.error;
  std::printf("  %lld steps, skips %.1f%%, underflow %.3f%%, S_D %s S_G %s, %.1f img/s: %s\n",
              static_cast<long long>(f.steps), 100 * f.skip_rate, 100 * f.underflow,
              scale_label(f.final_scale_d).c_str(), scale_label(f.final_scale_g).c_str(), f.images_per_s,
              verdict.c_str());
  std::fflush(stdout);
}

}  // namespace

int cmd_doctor(int argc, char** argv) {
  Args a = train_args("doctor", "ampgan doctor [TRAIN OPTIONS] --precision fp16|bf16 --out DIR", kDoctorSummary);
  a.section("Doctor")
      .option("probe-steps", "N", "steps of each probe, the FP32 reference's too (40)")
      .option("warmup-steps", "N", "first steps of a probe not judged: the scaler finds its level (10)")
      .option("budget-steps", "N", "steps of all probes together; the search stops within it (12 probes)")
      .option("target-skips", "P", "the largest share of updates skipped after the warm-up, in % (5)")
      .option("max-underflow", "P", "the largest share of gradient values zero or subnormal, in % (1)")
      .option("max-loss-departure", "R", "the largest relative departure of the mean losses from FP32's (0.5)")
      .section("First-divergence replay (instead of the search)")
      .option("replay", "RUN",
              "recompute step --step of the run folder RUN from its newest checkpoint before it\n"
              "(or its initialisation), in the run's precision and in FP32, and name the first\n"
              "layer whose output or gradient departs beyond its dtype's expected error or goes\n"
              "non-finite")
      .option("step", "N", "the step --replay recomputes");
  return guarded("doctor", [&] {
    if (!a.parse_or_help(argc, argv, 2)) return 0;
    install_signal_handlers();
    if (!a.positional().empty())
      throw UsageError("unexpected argument '" + a.positional()[0] + "'", "ampgan doctor", "options start with --");
    if (a.has("replay")) {
      if (!a.has("step")) throw UsageError("--replay needs the step to recompute", "--replay", "add --step N");
      const ReplayResult r = replay_step(a.str("replay"), a.integer("step", 1, 1, kMaxSteps));
      std::printf("%s", replay_text(r).c_str());
      return 0;
    }
    if (a.has("step")) throw UsageError("--step only applies to --replay", "--step", "add --replay RUN");
    if (!a.has("precision"))
      throw UsageError("the doctor examines one half precision", "--precision", "add --precision fp16 or bf16");
    if (!a.has("out")) throw UsageError("the doctor needs a folder", "--out", "add --out DIR");
    const RunConfig cfg = config_from(a);
    DoctorOptions opt;
    opt.probe_steps = static_cast<int>(a.integer("probe-steps", 40, 2, 1000000));
    opt.limits.warmup_steps = static_cast<int>(a.integer("warmup-steps", 10, 0, 1000000));
    opt.budget_steps = a.integer("budget-steps", 0, 1, kMaxSteps);
    const double skips = a.real("target-skips", 5), under = a.real("max-underflow", 1);
    const double dep = a.real("max-loss-departure", 0.5);
    if (!(skips >= 0 && skips <= 100)) throw Error("must lie in [0, 100] (%)", "--target-skips", "e.g. 5");
    if (!(under >= 0 && under <= 100)) throw Error("must lie in [0, 100] (%)", "--max-underflow", "e.g. 1");
    if (!(dep > 0)) throw Error("must be positive", "--max-loss-departure", "e.g. 0.5");
    opt.limits.target_skips = skips / 100;
    opt.limits.max_underflow = under / 100;
    opt.limits.max_loss_departure = dep;
    opt.stop = &g_stop;
    const bool quiet = a.has("quiet");
    const std::filesystem::path out = cfg.out_dir;
    opt.on_start = [&](const std::string& label, int index) {
      if (quiet) return;
      std::printf("[probe %d] %s (%d steps)\n", index, label.c_str(), opt.probe_steps);
      std::fflush(stdout);
    };
    // On a terminal, the probe's step count in place (a probe of a large model takes minutes).
    if (!quiet && isatty(STDOUT_FILENO))
      opt.on_steps = [](int64_t step, int64_t steps) {
        std::printf("\r\033[K  step %lld/%lld", static_cast<long long>(step), static_cast<long long>(steps));
        std::fflush(stdout);
      };
    opt.on_probe = [&](const DoctorResult& so_far) {
      print_probe_line(so_far, quiet);
      write_doctor_report(so_far, out);  // a second Ctrl-C (exit at once) leaves this one
    };
    const DoctorResult r = run_precision_doctor(cfg, opt);
    write_doctor_report(r, out);
    std::printf("\n%s\n%s\n", doctor_table_text(r, false).c_str(), r.summary.c_str());
    const std::string flags = doctor_answer_flags(r);
    if (r.answer_candidate() && !flags.empty()) std::printf("flags: %s\n", flags.c_str());
    std::printf("preset: ampgan train --config %s\nreport: %s, %s\n", (out / kDoctorConfig).string().c_str(),
                (out / kDoctorJson).string().c_str(), (out / kDoctorMarkdown).string().c_str());
    return r.stopped ? 130 : 0;
  });
}

}  // namespace ampgan::cli
