// What travels between the TrainingWorker (its own thread) and the GUI thread: batches of
// metrics, events, sample grids and histograms, plus start/end/error notices. Everything here is
// a value type (copied or shared immutably), so no engine object is ever touched by two threads.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include <QImage>
#include <QMetaType>
#include <QString>
#include <QStringList>
#include <QVector>

#include "core/amp/precision.h"
#include "core/backend/backend.h"
#include "core/common/error.h"
#include "core/io/image_io.h"
#include "core/run/histograms_log.h"
#include "core/run/latent_explorer.h"
#include "core/run/precision_doctor.h"
#include "core/run/precision_replay.h"
#include "core/run/run_event.h"
#include "core/settings/run_config.h"
#include "core/train/max_batch.h"
#include "core/train/step_metrics.h"

namespace ampgan::ui {

// A comparison's largest-batch search (core/train/max_batch.h), shared immutably.
using MaxBatchPtr = std::shared_ptr<const MaxBatchResult>;

// Which run a message belongs to: the ordinary run, or one of the two runs of a comparison.
enum class RunTag : int { Main = 0, CompareBaseline = 1, CompareAmp = 2 };

struct SampleShot {
  int64_t step = 0;
  QImage image;   // deep copy of the grid (RGB888 or Grayscale8)
  QString path;   // samples/step_NNNNNN.png when the engine wrote it, else empty ("sample now")
  QString label;  // which run (in a comparison), for the caption
};

// One delivery from the worker: everything that happened since the previous one. At most ~20
// of these reach the GUI per second, however fast the steps are.
struct UiBatch {
  RunTag tag = RunTag::Main;
  bool replace_history = false;  // rows are a run's whole history (resume): replace, not append
  std::vector<StepMetrics> rows;
  std::vector<HistogramRow> hist_history;  // with replace_history: the run's histograms.csv
  std::vector<RunEvent> events;
  std::vector<SampleShot> samples;
  bool has_histograms = false;  // latest histograms only; older ones in the interval are dropped
  int64_t hist_step = 0;
  std::vector<float> hist_g, hist_d;
  int64_t step = 0, total_steps = 0;  // where the run is now
  double elapsed_s = 0;
  MemoryStats memory;  // backend memory now (current and peak per category)
};
using UiBatchPtr = std::shared_ptr<const UiBatch>;

struct RunStartInfo {
  RunTag tag = RunTag::Main;
  QString dir;
  RunConfig config;
  QString backend;       // e.g. "CPU (2 threads, OpenBLAS, F16C)"
  QString backend_note;  // why auto fell back to the CPU, if it did
  QString dataset;       // "fashion-mnist (60000 images, 32x32x1)"
  int64_t start_step = 0;
  bool resumed = false;
};

struct RunEndInfo {
  RunTag tag = RunTag::Main;
  QString dir;
  QString reason;  // finished, stopped, error, diverged
  int64_t step = 0;
  MemoryStats memory;  // peak per category over the run
  bool ok = true;
};

// An ampgan::Error (or any other exception) as the GUI shows it.
struct UiError {
  QString what, subject, hint;
  QString during;  // "loading the dataset", "training", "exporting samples", ...
  bool out_of_memory = false;
  QString text() const;  // all of it, for the dialog and the log
  static UiError of(const Error& e, const QString& during);
};

// A run folder read back from disk (File > Open run).
struct OpenedRun {
  QString dir;
  RunConfig config;
  bool has_config = false;
  std::vector<StepMetrics> rows;
  std::vector<HistogramRow> histograms;  // histograms.csv (none: an older run, or unreadable)
  std::vector<RunEvent> events;
  std::vector<SampleShot> samples;  // path only (images load on demand)
  QStringList checkpoints;
};

// The layers of G and D as the Model view lists them (dtype under the current precision and
// policy); the worker sends one when a run starts and at each precision or policy switch.
struct ModelLayerRow {
  QString network;  // "G", "D"
  QString name;     // "D.2", as in layers.csv and --fp32-layers
  QString type;     // "Conv2d"
  int block = 0;
  qint64 parameters = 0;
  QString dtype;                // "f32", "f16", "bf16"
  bool fp32_by_policy = false;  // kept in FP32 while its network runs in half
};

struct ModelDescription {
  Precision precision = Precision::FP32;
  QVector<ModelLayerRow> layers;
  QString policy;  // the policy in words ("FP32 layers: D.2; half blocks: all; clamp: off")
};

// What the Explore tab asks the generator for (core/run/latent_explorer.h): one image per seed,
// or the frames between seeds a and b.
struct ExploreRequest {
  int id = 0;  // answered in ExploreResult::id (a newer request supersedes an older one)
  bool interpolate = false;
  std::vector<uint64_t> seeds;  // the grid's (interpolate: unused)
  uint64_t a = 0, b = 0;        // interpolate: from seed a's image to seed b's
  int frames = 16;
  LatentPath path = LatentPath::Slerp;
  float truncation = 0;  // 0: none
  // A class-conditional generator's class for every image, or one of these (ignored without classes).
  static constexpr int kClassesInTurn = -1;  // image i: class i % classes, as ampgan sample
  static constexpr int kEveryClass = -2;     // the images again for every class, a row each
  int class_choice = kClassesInTurn;
};

struct ExploreResult {
  ExploreRequest request;
  std::vector<float> images;  // n NHWC images in [-1, 1], as ampgan sample --raw writes them
  int n = 0, res = 0, channels = 0;
  int64_t step = 0;
  bool ema = false;              // made by the EMA generator
  QString run;                   // the run folder whose generator made them
  std::vector<int32_t> classes;  // a conditional generator's class of each image (empty otherwise)
  int per_row = 0;               // kEveryClass: the seeds of one class's row
  io::Image8 image8(int i) const { return io::to_image8(images.data(), i, res, channels); }
};
using ExploreResultPtr = std::shared_ptr<const ExploreResult>;

// The precision doctor's result so far (core/run/precision_doctor.h), shared immutably; dir: its
// report folder.
struct DoctorUpdate {
  DoctorResult result;
  QString dir;
  bool done = false;  // the search ended (finished, stopped or its budget spent)
};
using DoctorUpdatePtr = std::shared_ptr<const DoctorUpdate>;
// A first-divergence replay's result (core/run/precision_replay.h), shared immutably.
using ReplayResultPtr = std::shared_ptr<const ReplayResult>;

// Engine image -> QImage (deep copy) and back.
QImage to_qimage(const io::Image8& img);
io::Image8 from_qimage(const QImage& img);

QString format_scale(double s);           // 65536 -> "2^16"
QString format_duration(double seconds);  // 75 -> "1m15s"
QString format_bytes(double bytes);       // 1.5e6 -> "1.4 MiB"

void register_meta_types();

}  // namespace ampgan::ui

Q_DECLARE_METATYPE(ampgan::ui::UiBatchPtr)
Q_DECLARE_METATYPE(ampgan::ui::RunStartInfo)
Q_DECLARE_METATYPE(ampgan::ui::RunEndInfo)
Q_DECLARE_METATYPE(ampgan::ui::UiError)
Q_DECLARE_METATYPE(ampgan::ui::SampleShot)
Q_DECLARE_METATYPE(ampgan::ui::ModelDescription)
Q_DECLARE_METATYPE(std::shared_ptr<const ampgan::ui::OpenedRun>)
Q_DECLARE_METATYPE(ampgan::ui::MaxBatchPtr)
Q_DECLARE_METATYPE(ampgan::ui::ExploreResultPtr)
Q_DECLARE_METATYPE(ampgan::ui::DoctorUpdatePtr)
Q_DECLARE_METATYPE(ampgan::ui::ReplayResultPtr)
