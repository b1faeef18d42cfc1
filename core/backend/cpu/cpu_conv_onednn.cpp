#include "core/backend/cpu/cpu_conv_onednn.h"

#include <map>
#include <mutex>
#include <shared_mutex>
#include <string>

#include "core/common/error.h"

#if defined(AMPGAN_HAVE_ONEDNN)
#include "core/backend/cpu/cpu_onednn.h"
#endif

namespace ampgan::cpu {

#if defined(AMPGAN_HAVE_ONEDNN)

using dnnl::memory;
using tag = dnnl::memory::format_tag;

struct DirectConv::Impl {
  ConvDirection dir;
  dnnl::primitive prim;
  memory::desc src, wei, dst;       // as the primitive reads and writes them
  memory::desc wei_plain, scratch;  // the weights (or their FP32 gradient) as the tensors hold them
  dnnl::reorder pack;               // plain -> wei (forward, data gradient); wei -> plain (filter)
};

namespace {

// x (n, h, w, c), weights (k, r, s, c), y (n, oh, ow, k), as oneDNN's logical (n, c, h, w)
// dimensions in NHWC and OHWI layouts.
struct Descs {
  memory::dims src, wei, dst, strides, pad;
};
Descs descs(const ConvGeometry& g) {
  return {{g.n, g.c, g.h, g.w},
          {g.k, g.c, g.r, g.s},
          {g.n, g.k, g.out_h(), g.out_w()},
          {g.stride, g.stride},
          {g.pad, g.pad}};
}

std::unique_ptr<DirectConv::Impl> make(ConvDirection dir, const ConvGeometry& g, DType dt) {
  const memory::data_type in = dt == DType::BF16 ? memory::data_type::bf16 : memory::data_type::f32;
  const memory::data_type f32 = memory::data_type::f32;
  const Descs d = descs(g);
  dnnl::engine& eng = onednn_engine();
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  auto impl = std::make_unique<DirectConv::Impl>();
  impl->dir = dir;
  impl->wei_plain = memory::desc(d.wei, in, tag::ohwi);
  // The forward descriptor every direction is made from (its hint).
  const memory::desc src_in(d.src, in, tag::nhwc), dst_in(d.dst, in, tag::nhwc);
  const dnnl::convolution_forward::desc fwd_d(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                              src_in, memory::desc(d.wei, in, tag::any), dst_in, d.strides, d.pad,
                                              d.pad);
  const dnnl::convolution_forward::primitive_desc fwd(fwd_d, attr, eng);
  std::string impl_name;
  switch (dir) {
    case ConvDirection::Forward:
      impl->src = src_in;
      impl->wei = fwd.weights_desc();
      impl->dst = fwd.dst_desc();
      impl->scratch = fwd.scratchpad_desc();
      impl->prim = dnnl::convolution_forward(fwd);
      impl_name = fwd.impl_info_str();
      break;
    case ConvDirection::BackwardData: {
      const dnnl::convolution_backward_data::desc bd(dnnl::algorithm::convolution_direct, src_in,
                                                     memory::desc(d.wei, in, tag::any), dst_in, d.strides, d.pad,
                                                     d.pad);
      const dnnl::convolution_backward_data::primitive_desc pd(bd, attr, eng, fwd);
      impl->src = pd.diff_src_desc();
      impl->wei = pd.weights_desc();
      impl->dst = pd.diff_dst_desc();
      impl->scratch = pd.scratchpad_desc();
      impl->prim = dnnl::convolution_backward_data(pd);
      impl_name = pd.impl_info_str();
      break;
    }
    case ConvDirection::BackwardFilter: {
      const dnnl::convolution_backward_weights::desc bw(dnnl::algorithm::convolution_direct, src_in,
                                                        memory::desc(d.wei, f32, tag::any), dst_in, d.strides, d.pad,
                                                        d.pad);
      const dnnl::convolution_backward_weights::primitive_desc pd(bw, attr, eng, fwd);
      impl->src = pd.src_desc();
      impl->wei = pd.diff_weights_desc();
      impl->dst = pd.diff_dst_desc();
      impl->scratch = pd.scratchpad_desc();
      impl->prim = dnnl::convolution_backward_weights(pd);
      impl_name = pd.impl_info_str();
      break;
    }
  }
  if (!is_jit(impl_name.c_str())) return nullptr;
  if (dir != ConvDirection::BackwardFilter) {
    impl->pack = dnnl::reorder(memory(impl->wei_plain, eng), memory(impl->wei, eng));
  } else {
    impl->wei_plain = memory::desc(d.wei, f32, tag::ohwi);  // the gradient as the caller holds it
    if (impl->wei != impl->wei_plain) impl->pack = dnnl::reorder(memory(impl->wei, eng), memory(impl->wei_plain, eng));
  }
  return impl;
}

std::string key_of(ConvDirection dir, const ConvGeometry& g, DType dt) {
  char b[160];
  std::snprintf(b, sizeof b, "%d %s n%d h%d w%d c%d k%d r%d s%d st%d p%d", static_cast<int>(dir), dtype_name(dt), g.n,
                g.h, g.w, g.c, g.k, g.r, g.s, g.stride, g.pad);
  return b;
}

}  // namespace

DirectConv::DirectConv(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DirectConv::~DirectConv() = default;

std::shared_ptr<const DirectConv> DirectConv::get(ConvDirection d, const ConvGeometry& g, DType dt) {
  static std::shared_mutex mu;
  static std::map<std::string, std::shared_ptr<const DirectConv>> cache;
  const std::string key = key_of(d, g, dt);
  {
    std::shared_lock lock(mu);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  std::shared_ptr<const DirectConv> made;
  try {
    if (auto impl = make(d, g, dt)) made = std::make_shared<DirectConv>(std::move(impl));
  } catch (const dnnl::error&) {
    // no implementation of this convolution here
  }
  std::unique_lock lock(mu);
  return cache.emplace(key, made).first->second;
}

size_t DirectConv::weights_bytes() const { return impl_->wei.get_size(); }
bool DirectConv::gradient_is_plain() const { return impl_->wei == impl_->wei_plain; }

void DirectConv::pack_weights(const void* w, void* packed) const {
  OnednnThread& t = onednn_thread();
  memory src(impl_->wei_plain, onednn_engine(), const_cast<void*>(w)), dst(impl_->wei, onednn_engine(), packed);
  impl_->pack.execute(t.stream, src, dst);
}

void DirectConv::forward(const void* x, const void* packed, void* y) const {
  OnednnThread& t = onednn_thread();
  dnnl::engine& e = onednn_engine();
  impl_->prim.execute(t.stream, {{DNNL_ARG_SRC, memory(impl_->src, e, const_cast<void*>(x))},
                                 {DNNL_ARG_WEIGHTS, memory(impl_->wei, e, const_cast<void*>(packed))},
                                 {DNNL_ARG_DST, memory(impl_->dst, e, y)},
                                 {DNNL_ARG_SCRATCHPAD, t.scratchpad(impl_->scratch)}});
}

void DirectConv::backward_data(const void* dy, const void* packed, void* dx) const {
  OnednnThread& t = onednn_thread();
  dnnl::engine& e = onednn_engine();
  impl_->prim.execute(t.stream, {{DNNL_ARG_DIFF_DST, memory(impl_->dst, e, const_cast<void*>(dy))},
                                 {DNNL_ARG_WEIGHTS, memory(impl_->wei, e, const_cast<void*>(packed))},
                                 {DNNL_ARG_DIFF_SRC, memory(impl_->src, e, dx)},
                                 {DNNL_ARG_SCRATCHPAD, t.scratchpad(impl_->scratch)}});
}

void DirectConv::backward_filter(const void* x, const void* dy, float* dw, void* blocked) const {
  OnednnThread& t = onednn_thread();
  dnnl::engine& e = onednn_engine();
  const bool plain = gradient_is_plain();
  memory out(impl_->wei, e, plain ? static_cast<void*>(dw) : blocked);
  impl_->prim.execute(t.stream, {{DNNL_ARG_SRC, memory(impl_->src, e, const_cast<void*>(x))},
                                 {DNNL_ARG_DIFF_DST, memory(impl_->dst, e, const_cast<void*>(dy))},
                                 {DNNL_ARG_DIFF_WEIGHTS, out},
                                 {DNNL_ARG_SCRATCHPAD, t.scratchpad(impl_->scratch)}});
  if (!plain) {
    memory to(impl_->wei_plain, e, dw);
    impl_->pack.execute(t.stream, out, to);
  }
}

#else  // no oneDNN in this build

struct DirectConv::Impl {};
DirectConv::DirectConv(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DirectConv::~DirectConv() = default;
std::shared_ptr<const DirectConv> DirectConv::get(ConvDirection, const ConvGeometry&, DType) { return nullptr; }
size_t DirectConv::weights_bytes() const { return 0; }
bool DirectConv::gradient_is_plain() const { return true; }
void DirectConv::pack_weights(const void*, void*) const {}
void DirectConv::forward(const void*, const void*, void*) const {}
void DirectConv::backward_data(const void*, const void*, void*) const {}
void DirectConv::backward_filter(const void*, const void*, float*, void*) const {}

#endif

}  // namespace ampgan::cpu
