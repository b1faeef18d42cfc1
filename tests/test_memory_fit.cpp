// The largest-batch prediction of `ampgan bench --max-batch` (core/train/memory_fit.h).
#include <gtest/gtest.h>

#include "core/train/memory_fit.h"
#include "core/train/trainer.h"

using namespace ampgan;

TEST(MemoryFit, TheLineThroughTwoPeaksPredictsTheBatch) {
  // 10 MiB fixed, 0.5 MiB per image.
  const double mib = 1048576.0;
  const LinearMemory m = fit_memory(8, (10 + 4) * mib, 16, (10 + 8) * mib);
  EXPECT_DOUBLE_EQ(m.fixed, 10 * mib);
  EXPECT_DOUBLE_EQ(m.per_image, 0.5 * mib);
  EXPECT_EQ(largest_batch(m, 100 * mib, kMinBatch, kMaxBatch), 180);      // 10 + 0.5 * 180 = 100 exactly
  EXPECT_EQ(largest_batch(m, 100 * mib - 1, kMinBatch, kMaxBatch), 179);  // one byte less: one image less
  EXPECT_EQ(largest_batch(m, 10.9 * mib, kMinBatch, kMaxBatch), 0) << "below a batch of 2";
  EXPECT_EQ(largest_batch(m, 1e12 * mib, kMinBatch, kMaxBatch), kMaxBatch) << "capped at the largest batch there is";
  EXPECT_EQ(largest_batch(fit_memory(8, mib, 16, mib), 2 * mib, kMinBatch, kMaxBatch), kMaxBatch)
      << "nothing grows with the batch";
  EXPECT_EQ(largest_batch(fit_memory(8, 3 * mib, 16, 3 * mib), 2 * mib, kMinBatch, kMaxBatch), 0);
}
