// The ResNet GAN (core/models/resnet.h): SNGAN's sizes at 32 px, the shapes at every resolution,
// and a forward and backward pass that stays finite in every precision.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "core/amp/precision.h"
#include "core/backend/cpu/cpu_backend.h"
#include "core/common/error.h"
#include "core/models/resnet.h"
#include "tests/test_support.h"

using namespace ampgan;
using namespace ampgan::testing;

TEST(ResnetGan, HasSngansCifarSizesAtWidth64) {
  CpuBackend b;
  ResnetSpec s;  // 32 px, 3 channels, width 64, latent 128
  // Counted by hand from SNGAN's CIFAR-10 architecture (Miyato et al. 2018, table 4): G's linear
  // 528,384, three up-blocks of 1,246,976, the head 7,427; D's optimized block 151,680, a down
  // block 311,680, two plain blocks of 295,168, the linear 129.
  EXPECT_EQ(make_resnet_generator(b, s)->parameter_count(), 4276739);
  EXPECT_EQ(make_resnet_discriminator(b, s, 1, 2)->parameter_count(), 1053825);
}

TEST(ResnetGan, ShapesAtEveryResolution) {
  CpuBackend b;
  for (int res : {32, 64, 128}) {
    ResnetSpec s;
    s.res = res;
    s.channels = res == 64 ? 1 : 3;
    s.width = 2;
    auto g = make_resnet_generator(b, s);
    auto d = make_resnet_discriminator(b, s, 1, 2);
    EXPECT_EQ(g->output_shape(Shape{5, 1, 1, 128}), (Shape{5, res, res, s.channels})) << res;
    EXPECT_EQ(d->output_shape(Shape{5, res, res, s.channels}), (Shape{5, 1})) << res;
  }
  ResnetSpec bad;
  bad.res = 48;
  EXPECT_THROW(make_resnet_generator(b, bad), Error);
}

TEST(ResnetGan, ForwardAndBackwardStayFiniteInEveryPrecision) {
  CpuBackend b;
  ResnetSpec s;
  s.width = 4;
  auto g = make_resnet_generator(b, s);
  auto d = make_resnet_discriminator(b, s, 3, 4);
  init_resnet(b, *g, 7, 1);
  init_resnet(b, *d, 7, 2);
  for (Precision p : {Precision::FP32, Precision::FP16, Precision::BF16}) {
    const DType dt = compute_dtype(p);
    g->set_precision(b, dt);
    d->set_precision(b, dt);
    d->update_spectral_norm(b);
    Context ctx{b, dt, Mode::Train, true, false};
    Tensor z = make_tensor(b, Shape{4, 1, 1, 128}, dt, random_normal(4 * 128, 11));
    const Tensor& img = g->forward(ctx, z);
    const Tensor& logit = d->forward(ctx, img);
    ASSERT_EQ(logit.dtype(), DType::F32) << precision_name(p);
    for (float v : to_host(b, logit)) ASSERT_TRUE(std::isfinite(v)) << precision_name(p);
    Tensor dl = make_tensor(b, Shape{4, 1}, DType::F32, {1, -1, 1, -1});
    const Tensor& dimg = d->backward(ctx, dl, InputGrad::Return);
    g->backward(ctx, dimg, InputGrad::Skip);
    double gsum = 0;
    for (const Tensor& gr : g->gradients())
      for (float v : to_host(b, gr)) {
        ASSERT_TRUE(std::isfinite(v)) << precision_name(p);
        gsum += std::fabs(v);
      }
    EXPECT_GT(gsum, 0.0) << "the generator got a gradient through D (" << precision_name(p) << ")";
    for (const Tensor& gr : d->gradients())
      for (float v : to_host(b, gr)) ASSERT_TRUE(std::isfinite(v)) << precision_name(p);
  }
}
