// The run layer's summary of a run and the FP32-against-AMP table that the studio's Compare and
// `ampgan compare` both show.
#include <cmath>
#include <sstream>

#include <gtest/gtest.h>

#include "core/common/error.h"
#include "core/run/compare.h"
#include "core/run/run_summary.h"

using namespace ampgan;

namespace {

CompareRun run(const std::string& label, double ips, size_t peak_mib) {
  CompareRun r;
  r.label = label;
  r.ok = true;
  std::vector<StepMetrics> rows(40);
  for (int i = 0; i < 40; ++i) {
    rows[i].step = i + 1;
    rows[i].images_per_s = ips;
    rows[i].step_ms = 1000.0 / ips;
    rows[i].loss_d = 0.5;
    rows[i].loss_g = 2.0;
    rows[i].scale_d = rows[i].scale_g = 65536;
    rows[i].skipped_d = label != "FP32" && i == 3;
  }
  r.summary = summarize(rows);
  r.memory.peak_total = peak_mib << 20;
  r.memory.peak[static_cast<int>(MemCategory::Activation)] = (peak_mib / 2) << 20;
  r.dir = "/runs/x/" + label;
  return r;
}

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  for (std::string cell; std::getline(ss, cell, sep);) out.push_back(cell);
  return out;
}

}  // namespace

TEST(CompareTable, CellsFollowTheColumnsAndDivideByTheBaseline) {
  const CompareRun fp32 = run("FP32", 100, 40), fp16 = run("FP16 AMP", 250, 24);
  const auto& cols = compare_columns();
  const auto base = compare_cells(fp32, fp32, true), amp = compare_cells(fp16, fp32, false);
  ASSERT_EQ(base.size(), cols.size());
  ASSERT_EQ(amp.size(), cols.size());
  EXPECT_EQ(base[0], "FP32");
  EXPECT_EQ(base[2], "1.00× (baseline)");
  EXPECT_EQ(amp[1], "250.0");
  EXPECT_EQ(amp[2], "2.50×");
  EXPECT_EQ(amp[4], "24.00 MiB");
  EXPECT_EQ(cols[kCompareFirstMemColumn + static_cast<int>(MemCategory::Activation)], "Activations");
  EXPECT_EQ(amp[kCompareFirstMemColumn + static_cast<int>(MemCategory::Activation)], "12.00 MiB");
  EXPECT_EQ(amp[12], "–");            // the largest batch was not searched
  EXPECT_EQ(amp[15], "1 / 0");        // one overflow of D
  EXPECT_EQ(amp[16], "0 / 0");        // nan_to_num replaced nothing
  EXPECT_EQ(amp[17], "2^16 / 2^16");  // the final scales
  EXPECT_EQ(amp[18], "–");            // no evaluation ran
  EXPECT_EQ(amp.back(), "/runs/x/FP16 AMP");
  std::vector<StepMetrics> rows(3);
  rows[0].replaced_d = 5;
  rows[2].replaced_d = 2;
  rows[2].replaced_g = 1;
  CompareRun repaired = fp16;
  repaired.summary = summarize(rows);
  EXPECT_EQ(compare_cells(repaired, fp32, false)[16], "7 / 1");  // values replaced, summed over the run
  CompareRun stopped = fp16;
  stopped.ok = false;
  EXPECT_EQ(compare_cells(stopped, fp32, false)[0], "FP16 AMP (incomplete)");
  // The largest batch within the budget, and its ratio to FP32's (core/run/compare.h).
  ASSERT_EQ(cols[12], "Largest batch");
  MaxBatchResult mb;
  mb.budget = 16 * 1048576.0;
  mb.budget_from = "memory budget";
  mb.rows.resize(2);
  mb.rows[0].precision = Precision::FP32;
  mb.rows[0].fits = 14;
  mb.rows[1].precision = Precision::FP16;
  mb.rows[1].fits = 22;
  CompareRun f32 = fp32, f16 = fp16;
  set_max_batch(f32, Precision::FP32, mb);
  set_max_batch(f16, Precision::FP16, mb);
  EXPECT_EQ(compare_cells(f32, f32, true)[12], "14 (1.00×)");
  EXPECT_EQ(compare_cells(f16, f32, false)[12], "22 (1.57×)");
  EXPECT_EQ(compare_max_batch_verdict(mb, Precision::FP16),
            "FP16 AMP fits 1.6× the FP32 batch (22 against 14) within 16 MiB (memory budget)");
  mb.rows[0].fits = 0;
  mb.rows[0].problem = "not even a batch of 2 fits";
  set_max_batch(f32, Precision::FP32, mb);
  EXPECT_EQ(compare_cells(f32, f32, true)[12], "none");
  EXPECT_EQ(compare_max_batch_verdict(mb, Precision::FP16),
            "largest batch within 16 MiB (memory budget): FP32: not even a batch of 2 fits");
  CompareRun no_speed = fp32;
  no_speed.summary.median_images_per_s = 0;
  EXPECT_EQ(compare_cells(fp16, no_speed, false)[2], "–");
}

TEST(CompareTable, TextIsTheSameTableTransposedOrTabSeparated) {
  const std::vector<CompareRun> runs{run("FP32", 100, 40), run("BF16 AMP", 120, 30)};
  const std::string tsv = compare_table_text(runs, true);
  std::vector<std::string> lines = split(tsv, '\n');
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(split(lines[0], '\t'), compare_columns());
  EXPECT_EQ(split(lines[2], '\t'), compare_cells(runs[1], runs[0], false));
  // The terminal's form: a line per column, the header first, every run's value after it.
  lines = split(compare_table_text(runs, false), '\n');
  ASSERT_EQ(lines.size(), compare_columns().size());
  EXPECT_EQ(lines[2].rfind("Speed-up", 0), 0u);
  EXPECT_NE(lines[2].find("1.00× (baseline)  1.20×"), std::string::npos) << lines[2];
  // Values start in one column whatever the header's length.
  EXPECT_EQ(lines[0].find("FP32"), lines[1].find("100.0"));
}

TEST(CompareTable, VerdictNamesTheSpeedUpAndWhatTheCpuDoes) {
  const CompareRun fp32 = run("FP32", 100, 40), bf16 = run("BF16 AMP", 50, 30);
  EXPECT_EQ(compare_verdict(fp32, bf16, Precision::BF16, false), "BF16 AMP is 0.50× the speed of FP32 here");
  EXPECT_NE(compare_verdict(fp32, bf16, Precision::BF16, true).find("bf16 on this CPU: "), std::string::npos);
  CompareRun none = fp32;
  none.summary.median_images_per_s = NAN;
  EXPECT_EQ(compare_verdict(none, bf16, Precision::BF16, true), "");
}

TEST(CompareFolders, BothRunsLiveInOneFolderNamedByTheAmpMode) {
  RunConfig base;
  base.dataset = "synthetic";
  base.runs_root = "/tmp/runs";
  const std::string root = compare_root(base, Precision::FP16);
  EXPECT_EQ(root.rfind("/tmp/runs/", 0), 0u) << root;
  EXPECT_NE(root.find("-compare-"), std::string::npos) << root;
  EXPECT_NE(root.find("fp16"), std::string::npos) << root;
  base.out_dir = "/data/cmp";
  EXPECT_EQ(compare_root(base, Precision::BF16), "/data/cmp");
  const auto modes = compare_modes(Precision::BF16);
  EXPECT_EQ(modes[0], Precision::FP32);
  const RunConfig a = compare_run_config(base, modes[1], "/data/cmp");
  EXPECT_EQ(a.precision, Precision::BF16);
  EXPECT_EQ(a.out_dir, "/data/cmp/bf16");
  EXPECT_EQ(compare_run_config(base, modes[0], "/data/cmp").out_dir, "/data/cmp/fp32");
  EXPECT_THROW(check_compare_mode(Precision::FP32, "--amp"), Error);
  EXPECT_NO_THROW(check_compare_mode(Precision::TF32, "--amp"));
}
