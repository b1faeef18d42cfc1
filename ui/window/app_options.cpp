#include "ui/window/app_options.h"

#include <climits>
#include <cmath>

#include <QCommandLineParser>

#include "core/common/error.h"
#include "core/run/config_file.h"
#include "core/settings/settings_table.h"

namespace ampgan::ui {

void AppOptions::applyTo(RunConfig& c) const {
  for (const Setting& s : ampgan::settings()) {
    const nlohmann::json* v = given(s.key);
    if (!v) continue;
    set_setting(c, s, *v, s.where());
    if (s.chosen) s.chosen(c);
  }
  if (init_scale_exp) c.scaler.init_scale = std::ldexp(1.0f, *init_scale_exp);
}

const nlohmann::json* AppOptions::given(const char* key) const {
  const auto it = settings.find(key);
  return it == settings.end() ? nullptr : &*it;
}

namespace {

// An integer option: a clear message naming the option when the value is not a number in range.
bool int_option(const QCommandLineParser& p, const QString& name, long long lo, long long hi,
                std::optional<long long>* out, QString* error) {
  if (!p.isSet(name)) return true;
  bool ok = false;
  const long long v = p.value(name).toLongLong(&ok);
  if (!ok || v < lo || v > hi) {
    *error = QObject::tr("--%1: '%2' is not a whole number from %3 to %4").arg(name, p.value(name)).arg(lo).arg(hi);
    return false;
  }
  *out = v;
  return true;
}

bool precision_option(const QCommandLineParser& p, const QString& name, std::optional<Precision>* out, QString* error) {
  if (!p.isSet(name)) return true;
  try {
    *out = parse_precision(p.value(name).toLower().toStdString());
  } catch (const Error&) {
    *error = QObject::tr("--%1: unknown precision '%2'; use fp32, tf32, fp16 or bf16").arg(name, p.value(name));
    return false;
  }
  return true;
}

// The settings table's options given: each value converted by the row's type, then set on a
// scratch config (in the table's order, with --model's recipe) and validated, so a bad value is
// refused here with the engine's own message naming the option.
bool setting_options(const QCommandLineParser& p, nlohmann::json* out, QString* error) {
  RunConfig scratch;
  try {
    for (const Setting& s : ampgan::settings()) {
      const QString name = QString::fromLatin1(s.flag ? s.flag : "");
      if (!s.flag || !p.isSet(name)) continue;
      const QString text = p.value(name);
      nlohmann::json v;
      bool ok = true;
      if (s.type == SettingType::Int || s.type == SettingType::Unsigned) {
        // Fields shown in the panel's spin boxes hold an int.
        const long long hi = s.panel != PanelGroup::None ? std::min<long long>(s.hi ? s.hi : LLONG_MAX, INT_MAX)
                                                         : static_cast<long long>(s.hi);
        const long long lo = s.type == SettingType::Unsigned ? 0 : s.lo;
        const long long x = text.toLongLong(&ok);
        if (!ok || x < lo || x > hi) {
          *error = QObject::tr("--%1: '%2' is not a whole number from %3 to %4").arg(name, text).arg(lo).arg(hi);
          return false;
        }
        v = x;
      } else if (s.type == SettingType::Real) {
        v = text.toDouble(&ok);
        if (!ok) {
          *error = QObject::tr("--%1: '%2' is not a number").arg(name, text);
          return false;
        }
      } else if (s.type == SettingType::Bool) {
        v = s.switch_sets;
      } else {
        v = (s.type == SettingType::Choice ? text.toLower() : text).toStdString();
      }
      set_setting(scratch, s, v, s.where());
      if (s.chosen) s.chosen(scratch);
      (*out)[s.key] = v;
    }
    scratch.validate();
  } catch (const Error& e) {
    *error = QString::fromStdString(e.what());
    return false;
  }
  return true;
}

// --size WxH and --tab T.
bool window_options(const QCommandLineParser& p, AppOptions* o, QString* error) {
  if (p.isSet(QStringLiteral("size"))) {
    const QStringList wh = p.value(QStringLiteral("size")).toLower().split(QLatin1Char('x'));
    bool ok1 = false, ok2 = false;
    const int w = wh.size() == 2 ? wh[0].toInt(&ok1) : 0, h = wh.size() == 2 ? wh[1].toInt(&ok2) : 0;
    if (!ok1 || !ok2 || w < 320 || h < 240 || w > 16384 || h > 16384) {
      *error = QObject::tr("--size: '%1' is not a window size like 1600x1000").arg(p.value(QStringLiteral("size")));
      return false;
    }
    o->size = QSize(w, h);
  }
  if (p.isSet(QStringLiteral("tab"))) {
    o->tab = p.value(QStringLiteral("tab")).toLower();
    static const QStringList kTabs = {QStringLiteral("live"),    QStringLiteral("compare"), QStringLiteral("runs"),
                                      QStringLiteral("explore"), QStringLiteral("layers"),  QStringLiteral("model"),
                                      QStringLiteral("doctor")};
    if (!kTabs.contains(o->tab)) {
      *error = QObject::tr("--tab: use %1, not '%2'").arg(kTabs.join(QStringLiteral(", ")), o->tab);
      return false;
    }
  }
  return true;
}

// --config FILE: read, parsed and its keys checked now, so that a bad file stops the start with
// a message naming it, as a bad option does.
bool config_option(const QCommandLineParser& p, AppOptions* o, QString* error) {
  if (!p.isSet(QStringLiteral("config"))) return true;
  o->config_file = p.value(QStringLiteral("config"));
  const std::string file = o->config_file.toStdString();
  try {
    o->config_json = read_config_file(file);
    RunConfig scratch;
    nlohmann::json j = o->config_json;
    j.erase("_description");
    scratch.apply_json(j, file);
  } catch (const Error& e) {
    *error = QObject::tr("--config: %1").arg(QString::fromUtf8(e.what()));
    return false;
  }
  return true;
}

// Every option but --help and --version: the studio's own, then the run settings from the table.
void add_options(QCommandLineParser& p) {
  auto opt = [&](const char* name, const char* value, const QString& desc) {
    p.addOption(QCommandLineOption(QString::fromLatin1(name), desc, QString::fromLatin1(value)));
  };
  auto flag = [&](const char* name, const QString& desc) {
    p.addOption(QCommandLineOption(QString::fromLatin1(name), desc));
  };
  flag("start", QObject::tr("Start training as soon as the window is open."));
  flag("compare", QObject::tr("Start a comparison (FP32 vs --compare-amp) as soon as the window is open."));
  flag("doctor",
       QObject::tr(
           "Run the precision doctor on the settings (--precision fp16 or bf16) as soon as the window is open."));
  opt("compare-amp", "P", QObject::tr("AMP mode of --compare: fp16 (default), bf16 or tf32."));
  // The run settings: every option of ampgan train, from the settings table.
  for (const Setting& s : ampgan::settings()) {
    if (!s.flag) continue;
    const QString help = QString::fromUtf8(s.help).replace(QLatin1Char('\n'), QLatin1Char(' '));
    if (s.meta)
      opt(s.flag, s.meta, help);
    else
      flag(s.flag, help);
  }
  opt("config", "FILE",
      QObject::tr("Fill the settings from FILE first (a run's config.json, the doctor's doctor-config.json, a "
                  "preset); settings given here override it."));
  opt("init-scale-exp", "K", QObject::tr("Initial loss scale 2^K."));
  opt("switch-at", "STEP", QObject::tr("Demo: switch precision once this step is reached (see --switch-to)."));
  opt("switch-to", "P", QObject::tr("Demo: the precision --switch-at switches to (default fp16)."));
  opt("screenshot", "PNG",
      QObject::tr("Demo: save a picture of the window once --screenshot-step is reached (without --start or --compare: "
                  "once the window has opened)."));
  opt("screenshot-step", "N", QObject::tr("Demo: the step of --screenshot (default: the end of the run)."));
  flag("quit-after-screenshot", QObject::tr("Demo: close the window (cleanly) after --screenshot."));
  opt("size", "WxH", QObject::tr("Window size, e.g. 1600x1000."));
  opt("tab", "T", QObject::tr("Tab shown first: live, compare, runs, explore, layers, model or doctor."));
  flag("fresh", QObject::tr("Ignore the saved settings and window layout."));
  opt("runs", "DIR", QObject::tr("Show the runs folder DIR in the Runs tab (default: the Settings' runs folder)."));
  opt("overlay", "RUNS",
      QObject::tr("Draw these runs of the runs folder (names, comma-separated) over the Live charts."));
  flag("group-seeds", QObject::tr("With --overlay: runs that differ only in the seed as their mean ± sd."));
  opt("open", "DIR",
      QObject::tr("Open the run folder DIR, as File > Open run does (its charts, samples and generator)."));
  opt("watch", "DIR",
      QObject::tr("Follow the run folder DIR live and read-only (a run that ampgan train, an MPI job or another "
                  "machine writes)."));
}

}  // namespace

std::optional<AppOptions> parse_app_options(const QStringList& args, QString* error, QString* exit_text) {
  QCommandLineParser p;
  p.setApplicationDescription(
      QObject::tr("AMP GAN Studio: train a DCGAN with mixed precision and watch what it does.\n"
                  "Without options the window opens with the last settings. Settings given here override\n"
                  "them; --start begins training at once (for demos and screenshots)."));
  p.setSingleDashWordOptionMode(QCommandLineParser::ParseAsLongOptions);
  const QCommandLineOption help({QStringLiteral("h"), QStringLiteral("help")}, QObject::tr("Show this help."));
  const QCommandLineOption version(QStringLiteral("version"), QObject::tr("Show the version."));
  p.addOption(help);
  p.addOption(version);
  add_options(p);

  if (!p.parse(args)) {
    *error = p.errorText() + QObject::tr("\nRun ampgan-studio --help for the options.");
    return std::nullopt;
  }
  if (p.isSet(help)) {
    *exit_text = p.helpText();
    // --help prints before QApplication exists (it needs no display), when Qt cannot know the name.
    exit_text->replace(QStringLiteral("<executable_name>"), QStringLiteral("ampgan-studio"));
    return std::nullopt;
  }
  if (p.isSet(version)) {
    *exit_text = QStringLiteral("ampgan-studio %1\n").arg(QStringLiteral(AMPGAN_VERSION));
    return std::nullopt;
  }
  if (!p.positionalArguments().isEmpty()) {
    *error = QObject::tr("unexpected argument '%1'; options start with --").arg(p.positionalArguments().first());
    return std::nullopt;
  }

  AppOptions o;
  o.start = p.isSet(QStringLiteral("start"));
  o.compare = p.isSet(QStringLiteral("compare"));
  o.doctor = p.isSet(QStringLiteral("doctor"));
  if (o.doctor && (o.start || o.compare)) {
    *error = QObject::tr("--doctor runs probes of its own: it cannot be combined with --start or --compare");
    return std::nullopt;
  }
  o.fresh_settings = p.isSet(QStringLiteral("fresh"));
  o.quit_after_screenshot = p.isSet(QStringLiteral("quit-after-screenshot"));
  o.watch = p.value(QStringLiteral("watch"));
  o.open = p.value(QStringLiteral("open"));
  if (!o.open.isEmpty() && (o.start || o.compare || o.doctor || !o.watch.isEmpty())) {
    *error = QObject::tr(
        "--open shows a run that is on disk: it cannot be combined with --start, --compare, --doctor or --watch");
    return std::nullopt;
  }
  o.runs = p.value(QStringLiteral("runs"));
  if (p.isSet(QStringLiteral("overlay")))
    o.overlay = p.value(QStringLiteral("overlay")).split(QLatin1Char(','), Qt::SkipEmptyParts);
  o.group_seeds = p.isSet(QStringLiteral("group-seeds"));
  if (!o.watch.isEmpty() && (o.start || o.compare)) {
    *error = QObject::tr("--watch follows another process's run: it cannot be combined with --start or --compare");
    return std::nullopt;
  }
  std::optional<Precision> cmp, sw;
  if (!precision_option(p, QStringLiteral("compare-amp"), &cmp, error)) return std::nullopt;
  if (!precision_option(p, QStringLiteral("switch-to"), &sw, error)) return std::nullopt;
  if (cmp) o.compare_amp = *cmp;
  if (!config_option(p, &o, error)) return std::nullopt;
  if (!setting_options(p, &o.settings, error)) return std::nullopt;
  std::optional<long long> v;
  if (!int_option(p, QStringLiteral("init-scale-exp"), -24, 30, &v, error)) return std::nullopt;
  if (v) o.init_scale_exp = static_cast<int>(*v);
  v.reset();
  if (!int_option(p, QStringLiteral("switch-at"), 1, INT_MAX, &v, error)) return std::nullopt;
  if (v) {
    o.switch_at = *v;
    o.switch_to = sw.value_or(Precision::FP16);
  }
  v.reset();
  if (!int_option(p, QStringLiteral("screenshot-step"), 1, INT_MAX, &v, error)) return std::nullopt;
  if (v) o.screenshot_step = *v;
  o.screenshot = p.value(QStringLiteral("screenshot"));
  if (!window_options(p, &o, error)) return std::nullopt;
  if (o.start && o.compare) {
    *error = QObject::tr("--start and --compare cannot be combined: choose one");
    return std::nullopt;
  }
  return o;
}

}  // namespace ampgan::ui
