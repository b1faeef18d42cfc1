// The per-layer precision policy: which layers of G and D stay in FP32 while the rest run in
// the half precision of an fp16 / bf16 run (in fp32 / tf32 runs everything is FP32 anyway).
//
// Two rules, combined (a layer is FP32 if either says so):
//  - fp32_layers: layers by name, the names layers.csv and the studio's Layers and Model views
//    use ("D.2", "G.blocks.1.conv1": the network and the parameter name's prefix).
//  - half_blocks N (StyleGAN2-ADA's num_fp16_res): half precision only in each network's N
//    highest-resolution blocks, every other block in FP32; -1 (the default): every block half.
//    A block is one resolution stage:
//      dcgan:  each conv / transposed-conv stage: the convolution with the batch norm and
//              activation after it (G: "G.0"+"G.1" at 4x4, ... "G.<last>" at the image size;
//              D: "D.0" at the image size, "D.2"+"D.3", ..., the 4x4 -> 1 logit conv "D.<last>").
//      resnet: each residual block; G's input linear layer (4x4) and its output conv are blocks
//              of their own (the batch norm before the output conv belongs to the last residual
//              block); D's final linear layer is a block of its own.
//    The highest-resolution blocks are the ones nearest the image: G's last N, D's first N.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/nn/layer.h"
#include "core/tensor/dtype.h"

namespace ampgan {

//
// The activation clamp rides along (conv_clamp, StyleGAN2-ADA's 256): every convolution that
// computes in half precision clamps its output to [-C, C]; 0 = off. Clamped values' gradients
// are zero (as torch.clamp's).
struct LayerPolicy {
  std::vector<std::string> fp32_layers;
  int half_blocks = -1;     // -1: no limit
  float conv_clamp = 0.0f;  // 0: off
  bool empty() const { return fp32_layers.empty() && half_blocks < 0 && conv_clamp == 0.0f; }
  bool operator==(const LayerPolicy& o) const {
    return fp32_layers == o.fp32_layers && half_blocks == o.half_blocks && conv_clamp == o.conv_clamp;
  }
  bool operator!=(const LayerPolicy& o) const { return !(*this == o); }
};

// "D.2,D.3" <-> {"D.2", "D.3"} (spaces around names ignored, empty items dropped).
std::vector<std::string> parse_layer_list(const std::string& csv);
std::string join_layer_list(const std::vector<std::string>& names);

// One named layer (a layer with parameters; a residual block is not one, its convolutions are).
struct LayerInfo {
  std::string name;  // "D.2"
  std::string type;  // "Conv2d"
  int block = 0;     // its block (see above), counted from the network's input
  int64_t parameters = 0;
  bool fp32 = false;  // kept in FP32 by the policy
  Layer* layer = nullptr;
};

// Every named layer of a network ("G" or "D"), in parameter order, with its block and flags.
std::vector<LayerInfo> named_layers(Sequential& net, const std::string& network);
// How many blocks a network has.
int block_count(Sequential& net);

// Marks every layer of both networks FP32 or not by the policy and sets the clamp. Throws Error
// (naming --fp32-layers and listing the valid names) for an unknown name, for half_blocks < -1,
// or for a negative or non-finite clamp.
void apply_layer_policy(Sequential& g, Sequential& d, const LayerPolicy& policy);

// The dtype a named layer computes in under a network dtype.
inline DType layer_compute_dtype(const LayerInfo& l, DType net) { return l.fp32 ? DType::F32 : net; }

}  // namespace ampgan
