// The largest-batch search (core/train/max_batch.h) on the CPU with a small budget: what it
// verifies is within the budget, it is tight (a batch a quarter larger is over), AMP fits more
// than FP32, progress is reported and the stop flag ends it.
#include <gtest/gtest.h>

#include <atomic>

#include "core/common/error.h"
#include "core/train/max_batch.h"

using namespace ampgan;

namespace {

TrainerConfig tiny() {
  TrainerConfig tc;
  tc.model.res = 32;
  tc.model.channels = 1;
  tc.model.width = 4;
  tc.batch = 4;
  return tc;
}

MaxBatchOptions cpu_options(double budget_mib) {
  MaxBatchOptions o;
  o.budget = budget_mib * 1048576.0;
  o.budget_from = "test";
  o.probe = 4;
  o.new_backend = [] { return create_backend("cpu"); };
  return o;
}

// Peak of two steps at `batch`, measured as the search does.
MaxBatchProbe probe_at(const TrainerConfig& tc, Precision p, int batch) {
  return measure_peak([] { return create_backend("cpu"); }, tc, p, batch);
}

}  // namespace

TEST(MaxBatch, VerifiedBatchFitsAndIsTight) {
  const TrainerConfig tc = tiny();
  MaxBatchOptions o = cpu_options(24);
  int calls = 0, last_done = 0, last_total = 0;
  o.progress = [&](const std::string& what, int done, int total) {
    ++calls;
    EXPECT_GT(done, last_done);
    EXPECT_LE(done, total);
    EXPECT_NE(what.find("batch"), std::string::npos);
    last_done = done;
    last_total = total;
  };
  const MaxBatchResult r = find_max_batch(tc, {Precision::FP32, Precision::FP16}, o);
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_FALSE(r.stopped);
  EXPECT_EQ(calls, last_done);
  EXPECT_EQ(last_done, last_total);  // the last report is the end
  for (const MaxBatchRow& row : r.rows) {
    SCOPED_TRACE(precision_name(row.precision));
    EXPECT_TRUE(row.problem.empty()) << row.problem;
    ASSERT_GE(row.fits, 2);
    EXPECT_LE(row.fits, row.predicted);
    EXPECT_EQ(row.verified.batch, row.fits);
    EXPECT_LE(static_cast<double>(row.verified.mem.peak_total), r.budget);
    EXPECT_GT(row.fit.at(row.predicted + 1), r.budget);  // the line's largest
    // Tight: a quarter more does not fit (measured, not predicted).
    const int over = static_cast<int>(row.fits + row.fits / 4 + 1);
    EXPECT_GT(static_cast<double>(probe_at(tc, row.precision, over).mem.peak_total), r.budget) << "batch " << over;
  }
  // Half activations: FP16 fits more images than FP32 in the same budget.
  EXPECT_GT(r.fits(Precision::FP16), r.fits(Precision::FP32));
  EXPECT_DOUBLE_EQ(r.ratio(Precision::FP16),
                   static_cast<double>(r.fits(Precision::FP16)) / static_cast<double>(r.fits(Precision::FP32)));
  const std::string line = max_batch_ratio_line(r, Precision::FP16);
  EXPECT_EQ(line.rfind("FP16 AMP fits ", 0), 0u) << line;
  EXPECT_NE(line.find("× the FP32 batch (" + std::to_string(r.fits(Precision::FP16)) + " against " +
                      std::to_string(r.fits(Precision::FP32)) + ")"),
            std::string::npos)
      << line;
}

TEST(MaxBatch, StopFlagEndsTheSearch) {
  std::atomic<bool> stop{false};
  MaxBatchOptions o = cpu_options(24);
  o.stop = &stop;
  int calls = 0;
  o.progress = [&](const std::string&, int, int) {
    if (++calls == 1) stop.store(true);  // after the first measurement
  };
  const MaxBatchResult r = find_max_batch(tiny(), {Precision::FP32, Precision::FP16}, o);
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(r.fits(Precision::FP32), 0);
  EXPECT_EQ(r.fits(Precision::FP16), 0);
  EXPECT_EQ(r.ratio(Precision::FP16), 0.0);
  EXPECT_TRUE(max_batch_ratio_line(r, Precision::FP16).empty());
}

TEST(MaxBatch, TooSmallBudgetIsNamed) {
  const MaxBatchResult r = find_max_batch(tiny(), {Precision::FP32}, cpu_options(0.5));
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0].fits, 0);
  EXPECT_EQ(r.rows[0].problem, "not even a batch of 2 fits");
}

TEST(MaxBatch, BadInputIsRefused) {
  EXPECT_THROW(find_max_batch(tiny(), {Precision::FP32}, cpu_options(0)), Error);
  MaxBatchOptions o = cpu_options(24);
  o.probe = 1;
  EXPECT_THROW(find_max_batch(tiny(), {Precision::FP32}, o), Error);
  std::unique_ptr<Backend> cpu = create_backend("cpu");
  EXPECT_THROW(gpu_memory_budget(*cpu, 0, "--max-batch", "give --memory-budget MiB"), Error);
}
