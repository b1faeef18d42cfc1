// ampgan train / ampgan resume: a Session driven from the terminal, with a progress line.
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <string>
#include <unistd.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/guard.h"
#include "core/io/atomic_file.h"
#include "core/metrics/work_hook.h"
#include "core/run/compare.h"
#include "core/run/replica.h"
#include "core/run/run_folder.h"
#include "core/run/run_summary.h"
#include "core/run/session.h"

namespace ampgan::cli {

namespace {

std::atomic<bool> g_stop{false};
// The first signal asks for a clean stop (end of the step, checkpoint). Long work checks the flag
// too (dataset loading, the feature classifier's training: see drive). A second signal means the
// user will not wait: exit at once. Every file on disk is whole then (write_file_atomic,
// AppendLog), the newest checkpoint is kept, and a temporary file left is swept on resume.
void on_signal(int) {
  if (g_stop.exchange(true)) {
    static const char msg[] = "\nampgan: second interrupt: exiting now; the newest checkpoint is kept\n";
    (void)!::write(2, msg, sizeof msg - 1);
    ::_exit(130);
  }
}

// Ctrl-C, kill, a closed terminal or a dropped SSH session (SIGHUP) all stop training the same
// way: at the end of the step, with a checkpoint and a "stop" event. SIGPIPE is ignored, so a
// vanished reader of stdout (`| head`, `| tee` killed by the same Ctrl-C) only makes the progress
// output fail, never the run.
void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
  struct sigaction ign {};
  ign.sa_handler = SIG_IGN;
  sigemptyset(&ign.sa_mask);
  sigaction(SIGPIPE, &ign, nullptr);
}

std::string duration(double s) {
  char buf[32];
  if (!std::isfinite(s) || s < 0) return "?";
  if (s < 60) std::snprintf(buf, sizeof buf, "%.0fs", s);
  else if (s < 3600) std::snprintf(buf, sizeof buf, "%dm%02ds", int(s) / 60, int(s) % 60);
  else std::snprintf(buf, sizeof buf, "%dh%02dm", int(s) / 3600, int(s) % 3600 / 60);
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
    if (tty_) std::printf("\r\033[K%s", buf);
    else std::printf("%s\n", buf);
    std::fflush(stdout);
  }

  int64_t total_;
  bool quiet_, tty_;
  int skips_d_ = 0, skips_g_ = 0;
  double ips_ = 0, ms_ = 0;  // smoothed images/s and step time
  StepMetrics last_;
  std::chrono::steady_clock::time_point printed_{};
};

const char* const kTrainSummary =
    "Trains a GAN and writes a run folder: config.json, metrics.csv (one row a step),\n"
    "events.jsonl, samples/step_NNNNNN.png and checkpoints/step_NNNNNN.safetensors.\n"
    "Ctrl-C stops cleanly: metrics are flushed and a checkpoint is written.";

// The settings of a run; `ampgan compare` takes the same ones.
Args train_args(const std::string& command = "train", const std::string& usage = "ampgan train [OPTIONS]",
                const std::string& summary = kTrainSummary) {
  Args a(command, usage, summary);
  a.section("Data")
      .option("dataset", "D", "synthetic (default), fashion-mnist, mnist, an IDX file, an image folder or a zip\n"
                                "of images (StyleGAN dataset_tool's layout, optional dataset.json labels)")
      .option("nc", "C", "image channels: 1 or 3 (default: the dataset's own)")
      .option("synthetic-count", "N", "images in the synthetic dataset (10000)")
      .section("Model and optimiser")
      .option("model", "M", "dcgan (default) or resnet (SNGAN/BigGAN-style, spectrally normalised D; also sets\n"
                            "hinge loss, lr-g 0.0001, lr-d 0.0004, beta1 0, n-dis 5 and an EMA unless given)")
      .option("res", "R", "resolution: 32 (default), 64 or 128")
      .option("width", "W", "network width, DCGAN's ngf/ndf (64)")
      .option("batch", "B", "batch size (64)")
      .option("steps", "N", "training steps, n-dis D updates and one G update each (2000)")
      .option("n-dis", "N", "D updates per G update, each on its own real batch (1; resnet: 5)")
      .option("loss", "L", "bce (BCE with logits, default) or hinge")
      .option("lr", "LR", "learning rate of both networks (0.0002)")
      .option("lr-g", "LR", "generator learning rate")
      .option("lr-d", "LR", "discriminator learning rate")
      .option("beta1", "B1", "Adam beta1 (0.5)")
      .option("beta2", "B2", "Adam beta2 (0.999)")
      .option("ema-decay", "D", "generator EMA decay: 0 off (default), e.g. 0.999; samples, evaluation and\n"
                                "export use the EMA generator; a skipped G step does not advance it")
      .option("ema-rampup", "R", "EMA ramp-up: the decay is min(D, (1 + t) / (R + t)) at G step t (0: none)")
      .option("seed", "S", "seed of weights, data order and latents (0)")
      .section("Precision")
      .option("precision", "P", "fp32 (default), tf32, fp16 (AMP with loss scaling) or bf16 (AMP)")
      .option("backend", "B", "auto (GPU if usable, default), cpu or cuda")
      .option("gpu", "N", "which GPU, as 'ampgan devices' numbers them (0)")
      .option("init-scale", "S", "initial loss scale (65536 = 2^16)")
      .option("growth", "F", "loss-scale growth factor (2)")
      .option("backoff", "F", "loss-scale backoff factor on overflow (0.5)")
      .option("growth-interval", "N", "clean steps before the scale grows (2000)")
      .option("min-scale", "S", "loss-scale floor (1)")
      .option("max-scale", "S", "loss-scale ceiling (16777216 = 2^24)")
      .option("scaler", "M", "per-network (default: one scaler for G, one for D) or shared")
      .flag("bf16-loss-scaling", "use dynamic loss scaling in bf16 too (off by default)")
      .option("amp-strategy", "S", "how half gradients are guarded: auto (default: fp16 scales, bf16 does not),\n" +
                                       std::string(28, ' ') + "scale (dynamic loss scaling), nan_to_num (StyleGAN2-ADA: no scaling,\n" +
                                       std::string(28, ' ') + "NaN -> 0, inf -> 1e5, never skip) or none")
      .option("conv-clamp", "C", "clamp half-precision convolution outputs to [-C, C] (0 = off, default;\n" +
                                     std::string(28, ' ') + "StyleGAN2-ADA: 256)")
      .option("fp32-layers", "NAMES", "layers kept in FP32 in fp16/bf16, comma-separated, named as in layers.csv\n" +
                                          std::string(28, ' ') + "and the studio's Model view (e.g. D.2,D.3)")
      .option("half-blocks", "N", "half precision only in each network's N highest-resolution blocks, the\n" +
                                      std::string(28, ' ') + "rest in FP32 (StyleGAN2-ADA: 4; -1 = every block, default)")
      .flag("no-cuda-graphs", "launch each op instead of replaying the step as a CUDA graph")
      .section("Output")
      .option("out", "DIR", "run folder (default: runs/<date>-<dataset>-<precision>)")
      .option("name", "NAME", "run name used in the default folder")
      .option("sample-every", "N", "write a sample grid every N steps (100; 0 = only at the end)")
      .option("checkpoint-every", "N", "write a checkpoint every N steps (1000; 0 = only at the end)")
      .option("keep-checkpoints", "N", "keep the newest N checkpoints plus every 10th interval's (5; 0 = all)")
      .option("eval-every", "N", "sample-quality metrics every N steps (0 = never)")
      .option("eval-samples", "N", "images per evaluation (1024)")
      .option("layers-every", "N", "per-layer gradient statistics to layers.csv every N steps\n" +
                                        std::string(28, ' ') + "(50; 0 = only on overflow steps, which always get them)")
      .option("config", "FILE", "read settings from a JSON file (keys as in a run's config.json);\n" +
                                    std::string(28, ' ') + "options given here override it")
      .flag("quiet", "print only errors and the final line");
  return a;
}

RunConfig config_from(const Args& a) {
  RunConfig c;
  if (a.has("config")) {
    const std::string path = a.str("config");
    try {
      c.apply_json(nlohmann::json::parse(io::read_file(path, io::kConfigFileMaxBytes)), path);
    } catch (const nlohmann::json::exception& e) {
      throw Error(std::string("the configuration file is not valid JSON: ") + e.what(), path, "fix the JSON syntax");
    }
  }
  if (a.has("dataset")) c.dataset = a.str("dataset");
  // Numbers go through RunConfig::set_number, which checks their range before narrowing them.
  auto whole = [&](const char* flag, const char* key) {
    if (a.has(flag)) c.set_number(key, a.integer(flag, 0), std::string("--") + flag);
  };
  auto real = [&](const char* flag, const char* key) {
    if (a.has(flag)) c.set_number(key, a.real(flag, 0), std::string("--") + flag);
  };
  if (a.has("model")) {
    c.model = parse_model_family(a.str("model"));
    if (c.model == ModelFamily::ResNet) {  // SNGAN's recipe: hinge loss, TTUR, Adam beta1 = 0; an EMA G
      c.loss = LossKind::Hinge;
      c.ema_decay = 0.999f;
      c.ema_rampup = 10.0f;
      c.lr_g = 1e-4f;
      c.lr_d = 4e-4f;
      c.beta1 = 0.0f;
      c.n_dis = 5;
    }
  }
  whole("nc", "channels");
  whole("synthetic-count", "synthetic_count");
  whole("res", "res");
  whole("width", "width");
  whole("batch", "batch");
  whole("steps", "steps");
  whole("n-dis", "n_dis");
  if (a.has("loss")) c.loss = parse_loss(a.str("loss"));
  real("lr", "lr");  // both networks, before --lr-g and --lr-d
  real("lr-g", "lr_g");
  real("lr-d", "lr_d");
  real("beta1", "beta1");
  real("beta2", "beta2");
  real("ema-decay", "ema_decay");
  real("ema-rampup", "ema_rampup");
  whole("seed", "seed");
  if (a.has("precision")) c.precision = parse_precision(a.str("precision"));
  if (a.has("backend")) c.backend = a.str("backend");
  whole("gpu", "gpu");
  real("init-scale", "init_scale");
  real("growth", "growth_factor");
  real("backoff", "backoff_factor");
  whole("growth-interval", "growth_interval");
  real("min-scale", "min_scale");
  real("max-scale", "max_scale");
  if (a.has("scaler")) {
    const std::string s = a.str("scaler");
    if (s != "per-network" && s != "shared")
      throw Error("unknown scaler mode '" + s + "'", "--scaler", "use per-network or shared");
    c.shared_scaler = s == "shared";
  }
  if (a.has("bf16-loss-scaling")) c.bf16_loss_scaling = true;
  if (a.has("fp32-layers")) c.fp32_layers = parse_layer_list(a.str("fp32-layers"));
  whole("half-blocks", "half_blocks");
  real("conv-clamp", "conv_clamp");
  if (a.has("amp-strategy")) c.amp_strategy = parse_amp_strategy(a.str("amp-strategy"));
  if (a.has("no-cuda-graphs")) c.use_graphs = false;
  if (a.has("out")) c.out_dir = a.str("out");
  if (a.has("name")) c.name = a.str("name");
  whole("sample-every", "sample_every");
  whole("checkpoint-every", "checkpoint_every");
  whole("keep-checkpoints", "keep_checkpoints");
  whole("eval-every", "eval_every");
  whole("eval-samples", "eval_samples");
  whole("layers-every", "layers_every");
  return c;
}

int drive(Session& s, Progress& progress) {
  std::printf("run folder: %s\n", s.dir().string().c_str());
  std::fflush(stdout);
  // Evaluation work (training the feature classifier takes minutes) stops at a signal too: the
  // evaluation ends without scores and the run stops at the end of its step.
  metrics::ScopedWorkHook stop_evaluation([](const std::string&, int, int) { return !g_stop.load(); });
  s.run(&g_stop);
  progress.done();
  const bool interrupted = g_stop.load();
  s.finish(interrupted ? "interrupted" : "finished");
  const auto rows = RunFolder(s.dir()).read_metrics();
  if (!rows.empty()) {
    const StepMetrics& m = rows.back();
    std::printf("step %lld: loss D %.4f, G %.4f; %.1f img/s; samples in %s\n", static_cast<long long>(m.step),
                m.loss_d, m.loss_g, m.images_per_s, s.folder().samples_dir().string().c_str());
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

void start_ranks(const Args& a, std::unique_ptr<dist::Communicator>& comm) {
  const double timeout = a.real("collective-timeout", dist::kDefaultTimeoutS);
  if (!(timeout > 0) || timeout > 1e6)
    throw UsageError("the collective timeout must lie in (0, 1e6] seconds", "--collective-timeout", "the default is 120");
  comm = dist::world(timeout);
}

int cmd_train(int argc, char** argv) {
  Args a = train_args();
  a.section("Several ranks (mpirun -np N ampgan train ...)")
      .option("collective-timeout", "S", "seconds a rank waits for the others in a collective before it\n" +
                                             std::string(28, ' ') + "stops the run (120; README.md, 'Training on several devices')");
  std::unique_ptr<dist::Communicator> comm;
  return guarded_ranks("train", comm, [&] {
    if (!a.parse_or_help(argc, argv, 2)) return 0;
    install_signal_handlers();
    if (!a.positional().empty())
      throw UsageError("unexpected argument '" + a.positional()[0] + "'", "ampgan train", "options start with --");
    const RunConfig cfg = config_from(a);
    start_ranks(a, comm);
    if (comm && comm->rank() > 0) return dist::run_replica(*comm, &cfg), 0;
    Progress progress(cfg.steps, a.has("quiet"));
    SessionOptions opt;
    opt.listener = &progress;
    opt.comm = comm.get();
    opt.cancel = &g_stop;
    auto session = Session::create(cfg, opt);
    return drive(*session, progress);
  });
}

int cmd_resume(int argc, char** argv) {
  Args a("resume", "ampgan resume RUN_DIR [--steps N] [--checkpoint FILE]",
         "Continues a run from its newest checkpoint, to step N (default: the run's target).\n"
         "On the CPU the result is bit-identical to a run that never stopped.");
  a.option("steps", "N", "train until step N")
      .option("checkpoint", "FILE", "continue from this checkpoint of the run instead of the newest; later\n" +
                                        std::string(28, ' ') + "checkpoints and the logs are moved to checkpoints/superseded-*")
      .flag("quiet", "print only errors and the final line")
      .option("collective-timeout", "S", "under mpirun: seconds a rank waits for the others in a collective (120)");
  std::unique_ptr<dist::Communicator> comm;
  return guarded_ranks("resume", comm, [&] {
    if (!a.parse_or_help(argc, argv, 2)) return 0;
    install_signal_handlers();
    if (a.positional().size() != 1)
      throw UsageError("resume takes one run folder", "ampgan resume", "usage: ampgan resume RUN_DIR [--steps N]");
    start_ranks(a, comm);
    if (comm && comm->rank() > 0) return dist::run_replica(*comm, nullptr), 0;
    Progress progress(0, a.has("quiet"));
    SessionOptions opt;
    opt.listener = &progress;
    opt.comm = comm.get();
    opt.cancel = &g_stop;
    auto session = Session::resume(a.positional()[0], a.integer("steps", 0), opt, a.str("checkpoint"));
    progress.set_total(session->config().steps);
    return drive(*session, progress);
  });
}

int cmd_compare(int argc, char** argv) {
  Args a = train_args(
      "compare", "ampgan compare [OPTIONS] [--amp fp16|bf16|tf32]",
      "Trains the same configuration twice, in FP32 and in an AMP mode (same seed, weights and\n"
      "data order), and prints what the studio's Compare tab shows: speed, peak memory by\n"
      "category, final losses, overflows, SWD/FD. Both runs are ordinary run folders, OUT/fp32\n"
      "and OUT/<amp> (default OUT: runs/<date>-compare-<dataset>-<amp>), which the studio can\n"
      "open; the table is also written to OUT/compare.tsv. Ctrl-C stops the current run.");
  a.section("Comparison").option("amp", "P", "the precision compared with FP32: fp16 (default), bf16 or tf32");
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
    const RunConfig base = config_from(a);
    const std::string root = compare_root(base, amp);
    std::vector<CompareRun> runs;
    bool on_cpu = false;
    int status = 0;
    for (Precision mode : compare_modes(amp)) {
      const RunConfig cfg = compare_run_config(base, mode, root);
      std::printf("%s run (%zu of 2)\n", precision_label(mode), runs.size() + 1);
      Progress progress(cfg.steps, a.has("quiet"));
      SessionOptions opt;
      opt.listener = &progress;
      opt.cancel = &g_stop;  // Ctrl-C also stops loading the dataset
      auto session = Session::create(cfg, opt);
      on_cpu = session->backend().name().rfind("CPU", 0) == 0;
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
    std::printf("\n%s", compare_table_text(runs, false).c_str());
    io::write_file_atomic(std::filesystem::path(root) / RunFolder::kCompareTable, compare_table_text(runs, true));
    if (runs.size() == 2) {
      const std::string verdict = compare_verdict(runs[0], runs[1], amp, on_cpu);
      if (!verdict.empty()) std::printf("\n%s\n", verdict.c_str());
    } else {
      std::printf("\nstopped before both runs finished\n");
    }
    std::printf("table: %s\n", (std::filesystem::path(root) / RunFolder::kCompareTable).string().c_str());
    return status;
  });
}

}  // namespace ampgan::cli
