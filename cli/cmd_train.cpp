// ampgan train / ampgan resume: a Session driven from the terminal, with a progress line.
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <string>
#include <thread>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/guard.h"
#include "cli/stop_signals.h"
#include "cli/train_options.h"
#include "core/io/atomic_file.h"
#include "core/metrics/work_hook.h"
#include "core/run/compare.h"
#include "core/run/replica.h"
#include "core/run/run_folder.h"
#include "core/run/run_summary.h"
#include "core/run/session.h"
#include "core/settings/settings_table.h"

namespace ampgan::cli {

namespace {

std::string duration(double s) {
  char buf[32];
  if (!std::isfinite(s) || s < 0) return "?";
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%.0fs", s);
  else if (s < 3600)
    std::snprintf(buf, sizeof buf, "%dm%02ds", int(s) / 60, int(s) % 60);
  else
    std::snprintf(buf, sizeof buf, "%dh%02dm", int(s) / 3600, int(s) % 3600 / 60);
  return buf;
}

// Prints a live progress line on a terminal, plain lines otherwise, and notable events.
class Progress final : public SessionListener {
 public:
  Progress(int64_t total, bool quiet) : total_(total), quiet_(quiet), tty_(isatty(STDOUT_FILENO)) {}

  void on_metrics(const std::vector<StepMetrics>& rows) override {
    for (const StepMetrics& m : rows) {
      skips_d_ += m.skipped_d;
      skips_g_ += m.skipped_g;
      ips_ = ips_ == 0 ? m.images_per_s : 0.9 * ips_ + 0.1 * m.images_per_s;
      ms_ = ms_ == 0 ? m.step_ms : 0.9 * ms_ + 0.1 * m.step_ms;
      last_ = m;
    }
    if (quiet_ || rows.empty()) return;
    const auto now = std::chrono::steady_clock::now();
    const bool last_step = last_.step >= total_;
    const double since = std::chrono::duration<double>(now - printed_).count();
    if (tty_ ? (since < 0.1 && !last_step) : (last_.step % plain_every() != 0 && !last_step)) return;
    printed_ = now;
    print_line();
  }

  void on_event(const RunEvent& e) override {
    if (quiet_) return;
    if (e.type == EventType::Overflow || e.type == EventType::ScaleChange) return;  // in the line
    clear_line();
    std::printf("[step %lld] %s\n", static_cast<long long>(e.step), e.message.c_str());
    std::fflush(stdout);
  }

  void done() {
    if (tty_ && !quiet_) std::printf("\n");
  }
  void set_total(int64_t t) { total_ = t; }

 private:
  int64_t plain_every() const { return std::max<int64_t>(1, total_ / 20); }
  void clear_line() {
    if (tty_) std::printf("\r\033[K");
  }
  void print_line() {
    const double remaining = (total_ - last_.step) * ms_ / 1000.0;
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "[%6lld/%lld] %3.0f%% | %7.1f img/s | D %.3f G %.3f | D(x) %.2f D(G(z)) %.2f | S_D %s S_G %s | "
                  "skips %d/%d | %s | ETA %s",
                  static_cast<long long>(last_.step), static_cast<long long>(total_), 100.0 * last_.step / total_, ips_,
                  last_.loss_d, last_.loss_g, last_.d_real, last_.d_fake, scale_label(last_.scale_d).c_str(),
                  scale_label(last_.scale_g).c_str(), skips_d_, skips_g_, precision_name(last_.precision),
                  duration(remaining).c_str());
    if (tty_)
      std::printf("\r\033[K%s", buf);
    else
      std::printf("%s\n", buf);
    std::fflush(stdout);
  }

  int64_t total_;
  bool quiet_, tty_;
  int skips_d_ = 0, skips_g_ = 0;
  double ips_ = 0, ms_ = 0;  // smoothed images/s and step time
  StepMetrics last_;
  std::chrono::steady_clock::time_point printed_{};
};

// Rank 0 of a data-parallel run: when a stop was asked for but a collective stays blocked (the
// rank it waits for was killed or stopped, and mpirun is about to end this one too), the run's
// end is recorded from this thread: a "stop" event naming the newest checkpoint, and a line.
class BlockedStopReporter {
 public:
  BlockedStopReporter(Session& s, dist::Communicator* comm) : s_(s), comm_(comm) {
    if (comm_) thread_ = std::thread([this] { watch(); });
  }
  ~BlockedStopReporter() {
    done_ = true;
    if (thread_.joinable()) thread_.join();
  }

 private:
  void watch() {
    std::chrono::steady_clock::time_point asked{};
    while (!done_) {
      // mpirun, ending a job, gives its ranks 1 s between SIGTERM and SIGKILL: a collective
      // still waiting 0.3 s after the stop was asked is waiting for a rank that is gone.
      const auto now = std::chrono::steady_clock::now();
      if (g_stop.load() && asked == std::chrono::steady_clock::time_point{}) asked = now;
      const double since_asked =
          asked == std::chrono::steady_clock::time_point{} ? 0.0 : std::chrono::duration<double>(now - asked).count();
      if (std::min(since_asked, comm_->seconds_in_collective()) > 0.3) {
        const std::string m = s_.report_blocked_stop(
            "interrupted while a collective waited for another rank, which has "
            "ended or is stopped");
        std::fprintf(stderr, "ampgan: rank 0 of %d: %s\n", comm_->size(), m.c_str());
        std::fflush(stderr);
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  Session& s_;
  dist::Communicator* comm_;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

int drive(Session& s, Progress& progress, dist::Communicator* comm = nullptr) {
  std::printf("run folder: %s\n", s.dir().string().c_str());
  std::fflush(stdout);
  // Evaluation work (training the feature classifier takes minutes) stops at a signal too: the
  // evaluation ends without scores and the run stops at the end of its step.
  metrics::ScopedWorkHook stop_evaluation([](const std::string&, int, int) { return !g_stop.load(); });
  {
    BlockedStopReporter reporter(s, comm);
    try {
      s.run(&g_stop);
    } catch (const Error& e) {
      s.record_stop("error: " + e.what_failed());
      throw;
    }
  }
  progress.done();
  const bool interrupted = g_stop.load() || s.stopped_by_another_rank();
  s.finish(!interrupted ? "finished" : g_stop.load() ? "interrupted" : "interrupted: another rank was signalled");
  const auto rows = RunFolder(s.dir()).read_metrics();
  if (!rows.empty()) {
    const StepMetrics& m = rows.back();
    std::printf("step %lld: loss D %.4f, G %.4f; %.1f img/s; samples in %s\n", static_cast<long long>(m.step), m.loss_d,
                m.loss_g, m.images_per_s, s.folder().samples_dir().string().c_str());
  }
  return interrupted ? 130 : 0;
}

}  // namespace

// Under mpirun (world() is nullptr otherwise): rank 0 runs the Session, the others follow it. An
// error that only this rank saw ends every rank (the others would wait in a collective); one that
// every rank raised (dist::CollectiveError) lets each print it and stop normally.
template <typename F>
int guarded_ranks(const char* command, std::unique_ptr<dist::Communicator>& comm, F&& body) {
  bool collective = false;
  const int rc = guarded(command, [&] {
    try {
      return body();
    } catch (const dist::CollectiveError&) {
      collective = true;
      throw;
    }
  });
  if (comm && rc != 0 && rc != 130 && !collective) comm->abort(rc);
  return rc;
}

// A rank other than 0: follows rank 0's run and ends when it does, with status 0 even when the
// run was interrupted: a rank that exits non-zero makes mpirun end the others at once, rank 0
// before it has finished (rank 0's status is the run's).
int follow(dist::Communicator& comm, const RunConfig* own) {
  g_exit_on_second = false;
  dist::run_replica(comm, own, &g_stop);
  return 0;
}

void start_ranks(const Args& a, std::unique_ptr<dist::Communicator>& comm) {
  const double timeout = a.real("collective-timeout", dist::kDefaultTimeoutS);
  if (!(timeout > 0) || timeout > 1e6)
    throw UsageError("the collective timeout must lie in (0, 1e6] seconds", "--collective-timeout",
                     "the default is 120");
  comm = dist::world(timeout);
}

int cmd_train(int argc, char** argv) {
  Args a = train_args();
  a.section("Several ranks (mpirun -np N ampgan train ...)")
      .option("collective-timeout", "S",
              "seconds a rank waits for the others in a collective before it\n"
              "stops the run (120; docs/user-guide.md, 'Training on several devices')");
  std::unique_ptr<dist::Communicator> comm;
  return guarded_ranks("train", comm, [&] {
    if (!a.parse_or_help(argc, argv, 2)) return 0;
    install_signal_handlers();
    if (!a.positional().empty())
      throw UsageError("unexpected argument '" + a.positional()[0] + "'", "ampgan train", "options start with --");
    const RunConfig cfg = config_from(a);
    start_ranks(a, comm);
    if (comm && comm->rank() > 0) return follow(*comm, &cfg);
    Progress progress(cfg.steps, a.has("quiet"));
    SessionOptions opt;
    opt.listener = &progress;
    opt.comm = comm.get();
    opt.cancel = &g_stop;
    auto session = Session::create(cfg, opt);
    return drive(*session, progress, comm.get());
  });
}

int cmd_resume(int argc, char** argv) {
  Args a("resume", "ampgan resume RUN_DIR [--steps N] [--checkpoint FILE]",
         "Continues a run from its newest checkpoint, to step N (default: the run's target).\n"
         "On the CPU the result is bit-identical to a run that never stopped.");
  a.option("steps", "N", "train until step N")
      .option("checkpoint", "FILE",
              "continue from this checkpoint of the run instead of the newest; later\n"
              "checkpoints and the logs are moved to checkpoints/superseded-*")
      .flag("allow-changed-dataset",
            "continue although the dataset differs from the one the checkpoint was\n"
            "trained on (refused otherwise: the run would not be the one that never stopped)")
      .flag("quiet", "print only errors and the final line")
      .option("collective-timeout", "S", "under mpirun: seconds a rank waits for the others in a collective (120)");
  std::unique_ptr<dist::Communicator> comm;
  return guarded_ranks("resume", comm, [&] {
    if (!a.parse_or_help(argc, argv, 2)) return 0;
    install_signal_handlers();
    if (a.positional().size() != 1)
      throw UsageError("resume takes one run folder", "ampgan resume", "usage: ampgan resume RUN_DIR [--steps N]");
    start_ranks(a, comm);
    if (comm && comm->rank() > 0) return follow(*comm, nullptr);
    Progress progress(0, a.has("quiet"));
    SessionOptions opt;
    opt.listener = &progress;
    opt.comm = comm.get();
    opt.cancel = &g_stop;
    opt.allow_changed_dataset = a.has("allow-changed-dataset");
    const int64_t steps = setting_value(a, "steps", "steps", 0).get<int64_t>();  // 0: the run's target
    auto session = Session::resume(a.positional()[0], steps, opt, a.str("checkpoint"));
    progress.set_total(session->config().steps);
    return drive(*session, progress, comm.get());
  });
}

int cmd_compare(int argc, char** argv) {
  Args a = train_args("compare", "ampgan compare [OPTIONS] [--amp fp16|bf16|tf32]",
                      "Trains the same configuration twice, in FP32 and in an AMP mode (same seed, weights and\n"
                      "data order), and prints what the studio's Compare tab shows: speed, peak memory by\n"
                      "category, final losses, overflows, SWD/FD. Both runs are ordinary run folders, OUT/fp32\n"
                      "and OUT/<amp> (default OUT: runs/<date>-compare-<dataset>-<amp>), which the studio can\n"
                      "open; the table is also written to OUT/compare.tsv. Ctrl-C stops the current run.");
  a.section("Comparison")
      .option("amp", "P", "the precision compared with FP32: fp16 (default), bf16 or tf32")
      .flag("max-batch",
            "after the two runs, find the largest batch that fits the memory budget in FP32\n"
            "and the AMP mode (peak memory at --batch and twice it, a linear prediction,\n"
            "checked by running there): the table's Largest batch row")
      .option("memory-budget", "MiB",
              "the CPU memory --max-batch fills (1024; the setting memory_budget_mib);\n"
              "a GPU fills 90% of its free memory");
  return guarded("compare", [&] {
    if (!a.parse_or_help(argc, argv, 2)) return 0;
    install_signal_handlers();
    if (!a.positional().empty())
      throw UsageError("unexpected argument '" + a.positional()[0] + "'", "ampgan compare", "options start with --");
    if (a.has("precision"))
      throw UsageError("compare trains FP32 and the --amp precision; --precision does not apply", "ampgan compare",
                       "use --amp fp16, bf16 or tf32");
    Precision amp = Precision::FP16;
    if (a.has("amp")) {
      try {
        amp = parse_precision(a.str("amp"));
      } catch (const Error& e) {
        throw Error(e.what_failed(), "--amp", "use fp16, bf16 or tf32");
      }
    }
    check_compare_mode(amp, "--amp");
    RunConfig base = config_from(a);
    if (a.has("memory-budget") && !a.has("max-batch"))
      throw UsageError("--memory-budget only applies to --max-batch", "--memory-budget", "add --max-batch");
    if (a.has("memory-budget"))
      set_setting(base, *find_setting("memory_budget_mib"), a.number("memory-budget"), "--memory-budget");
    const std::string root = compare_root(base, amp);
    std::vector<CompareRun> runs;
    bool on_cpu = false;
    int status = 0, channels = 0;
    for (Precision mode : compare_modes(amp)) {
      const RunConfig cfg = compare_run_config(base, mode, root);
      std::printf("%s run (%zu of 2)\n", precision_label(mode), runs.size() + 1);
      Progress progress(cfg.steps, a.has("quiet"));
      SessionOptions opt;
      opt.listener = &progress;
      opt.cancel = &g_stop;  // Ctrl-C also stops loading the dataset
      auto session = Session::create(cfg, opt);
      on_cpu = session->backend().name().rfind("CPU", 0) == 0;
      channels = session->dataset().channels;
      status = drive(*session, progress);
      CompareRun r;
      r.label = precision_label(mode);
      r.ok = status == 0 && session->step_count() >= cfg.steps;
      r.summary = summarize(RunFolder(session->dir()).read_metrics());
      r.memory = session->backend().memory_stats();
      r.dir = session->dir().string();
      runs.push_back(r);
      if (status != 0) break;  // interrupted: the AMP run is not started
    }
    // The largest batch, after both runs (and only then: it trains at batches many times the run's).
    std::string max_batch_verdict;
    if (a.has("max-batch") && runs.size() == 2 && status == 0) {
      std::printf("\nThe largest batch of FP32 and %s within the budget\n", precision_label(amp));
      const bool quiet = a.has("quiet");
      const MaxBatchResult mb =
          compare_max_batch(base, amp, channels, &g_stop, [quiet](const std::string& what, int done, int total) {
            if (!quiet) std::printf("  %s (%d of %d)\n", what.c_str(), done, total);
            std::fflush(stdout);
          });
      set_max_batch(runs[0], Precision::FP32, mb);
      set_max_batch(runs[1], amp, mb);
      max_batch_verdict = compare_max_batch_verdict(mb, amp);
      if (mb.stopped) status = 130;
    }
    std::printf("\n%s", compare_table_text(runs, false).c_str());
    io::write_file_atomic(std::filesystem::path(root) / RunFolder::kCompareTable, compare_table_text(runs, true));
    if (runs.size() == 2) {
      const std::string verdict = compare_verdict(runs[0], runs[1], amp, on_cpu);
      if (!verdict.empty()) std::printf("\n%s\n", verdict.c_str());
      if (!max_batch_verdict.empty()) std::printf("%s\n", max_batch_verdict.c_str());
    } else {
      std::printf("\nstopped before both runs finished\n");
    }
    std::printf("table: %s\n", (std::filesystem::path(root) / RunFolder::kCompareTable).string().c_str());
    return status;
  });
}

}  // namespace ampgan::cli
