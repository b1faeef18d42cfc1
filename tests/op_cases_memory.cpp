// Cases: filling and conversion, normal numbers, device scalars (backend.h "filling and conversion").
#include "core/backend/elementwise.h"
#include "tests/op_cases.h"

namespace ampgan::testing {

namespace {

void fill_case(Backend& b, DType t, Outputs& out) {
  for (float value : {0.0f, -0.0f, 1.5f, -3.25f, 70000.0f, 1e-6f, 1e-42f, INFINITY}) {
    Tensor x = blank(b, Shape{1001}, t);
    b.fill(x, value);
    out.tensor("fill(" + fmt(value) + ")", x, {bits_exact()});
  }
}

// Copy in the case's dtype, and casts from it into every dtype.
void copy_cast_case(Backend& b, DType from, Outputs& out) {
  const auto v = special_values(4099, 11);
  Tensor src = input(b, Shape{4099}, from, v);
  Tensor same = blank(b, Shape{4099}, from);
  b.copy(src, same);
  out.tensor("copy", same, {bits_exact()});
  for (DType to : all_types()) {
    Tensor dst = blank(b, Shape{4099}, to);
    b.cast(src, dst);
    out.tensor(std::string("cast ") + dtype_name(from) + " -> " + dtype_name(to), dst, {bits_exact()});
  }
}

// counter_value -1: no counter tensor; 2^24 + 1: a count one float could not hold.
CaseFn fill_normal_case(int64_t counter_value) {
  return [counter_value](Backend& b, DType t, Outputs& out) {
    Tensor x = blank(b, Shape{10001}, t), counter;
    if (counter_value >= 0) {
      float c[2];
      ew::count_store(c, static_cast<uint64_t>(counter_value));
      counter = input(b, Shape{2}, DType::F32, {c[0], c[1]});
    }
    b.fill_normal(x, 1234, 77, counter, 0.5f);
    out.tensor("fill_normal(counter " + std::to_string(counter_value) + ")", x,
               {ulps(kTranscendentalUlps), norm({1e-6, kReduceTol.f16, kReduceTol.bf16})});
  };
}

void scalar_ops_case(Backend& b, DType, Outputs& out) {
  Tensor a = input(b, Shape{5}, DType::F32, {1.5f, -2.0f, 0.125f, 7.0f, 0.0f});
  Tensor s = input(b, Shape{5}, DType::F32, {9, 9, 9, 9, 9});
  b.copy_scalar(a, 3, s, 1);
  b.add_scalar(s, 4, 0.1f);
  b.add_scalar(s, 4, 0.2f);
  out.tensor("copy_scalar + add_scalar", s, {bits_exact()});
  // A [lo, hi] count carries at 2^24: 2^24 - 1 + 2 = [1, 1].
  Tensor count = input(b, Shape{2}, DType::F32, {16777215.0f, 0.0f});
  for (int i = 0; i < 2; ++i) b.count_increment(count);
  out.tensor("count_increment across 2^24", count, {bits_exact()});
  EXPECT_EQ(to_host(b, count), (std::vector<float>{1.0f, 1.0f})) << "count_increment: 2^24 - 1 + 2 on " << b.name();
}

}  // namespace

void add_memory_cases(std::vector<OpCase>& ops) {
  ops.push_back({"fill_n1001", all_types(), fill_case});
  ops.push_back({"copy_cast_n4099_specials", all_types(), copy_cast_case});
  for (int64_t c : {int64_t{-1}, int64_t{0}, int64_t{3}, int64_t{16777217}})
    ops.push_back({"fill_normal_n10001_" + (c < 0 ? std::string("nocounter") : "counter" + std::to_string(c)),
                   all_types(), fill_normal_case(c)});
  ops.push_back({"copy_scalar_add_scalar_count_increment", f32_only(), scalar_ops_case});
}

}  // namespace ampgan::testing
