// The CUDA kernels' index arithmetic (gpu/index_math.h), checked on the CPU: the row and column a
// grid-stride loop keeps by additions must equal i / width and i % width at every element, for
// the launch shapes the kernels use and for awkward ones.
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "gpu/index_math.h"

using namespace ampgan::gpu;

TEST(KernelIndexMath, RowColFollowsDivisionAndRemainder) {
  const int widths[] = {1, 2, 3, 7, 8, 64, 100, 128, 1000, 4096};
  const int64_t strides[] = {1, 3, 256, 255 * 256, 8192 * 256, 65535};
  int64_t checked = 0;
  for (int w : widths)
    for (int64_t stride : strides)
      for (int64_t start : {int64_t{0}, int64_t{1}, stride - 1, int64_t{w} + 5}) {
        if (start < 0 || start >= stride) continue;  // a thread's first element is below the stride
        const int64_t n = stride * 6 + 17;
        RowCol rc(start, stride, w);
        for (int64_t i = start; i < n; i += stride, rc.advance()) {
          ASSERT_EQ(rc.r, i / w) << "i " << i << " width " << w << " stride " << stride;
          ASSERT_EQ(rc.j, i % w) << "i " << i << " width " << w << " stride " << stride;
          ++checked;
        }
      }
  EXPECT_GT(checked, 1000);
}

TEST(KernelIndexMath, RowColPastTwoToThe32) {
  // Tensors larger than 2^32 elements: the row is 64-bit, the column stays exact.
  const int64_t stride = int64_t{8192} * 256, w = 96;
  const int64_t start = (int64_t{1} << 33) + 12345;
  RowCol rc(start, stride, static_cast<int>(w));
  for (int64_t i = start, k = 0; k < 1000; i += stride, ++k, rc.advance()) {
    ASSERT_EQ(rc.r, i / w);
    ASSERT_EQ(rc.j, i % w);
  }
}

TEST(KernelIndexMath, Vec16NeedsWholeAlignedVectors) {
  alignas(16) static uint16_t buf[64];
  const void* a = buf;
  const void* off = buf + 1;                   // 2 bytes past a 16-byte boundary
  EXPECT_TRUE(vec16_ok(64, 8, 2, {a, a}));     // 8 halves per vector, rows of 8
  EXPECT_FALSE(vec16_ok(60, 4, 2, {a}));       // rows of 4 halves: a vector would straddle two rows
  EXPECT_FALSE(vec16_ok(62, 1, 2, {a}));       // a partial vector at the end
  EXPECT_FALSE(vec16_ok(64, 8, 2, {a, off}));  // one operand misaligned
  EXPECT_TRUE(vec16_ok(64, 4, 4, {a}));        // 4 floats per vector
  EXPECT_FALSE(vec16_ok(64, 6, 4, {a}));
  EXPECT_TRUE(vec16_ok(64, 64, 2, {a}));  // no rows (activations): the tensor is one row
  EXPECT_FALSE(vec16_ok(64, 1, 2, {a}));  // rows of one value cannot be vectors
}
