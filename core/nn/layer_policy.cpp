#include "core/nn/layer_policy.h"

#include <cmath>
#include <set>

#include "core/common/error.h"

namespace ampgan {

std::vector<std::string> parse_layer_list(const std::string& csv) {
  std::vector<std::string> out;
  std::string cur;
  auto flush = [&] {
    const size_t a = cur.find_first_not_of(" \t"), b = cur.find_last_not_of(" \t");
    if (a != std::string::npos) out.push_back(cur.substr(a, b - a + 1));
    cur.clear();
  };
  for (char c : csv) {
    if (c == ',')
      flush();
    else
      cur += c;
  }
  flush();
  return out;
}

std::string join_layer_list(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ",") + n;
  return s;
}

namespace {

bool starts_block(Layer& l) {
  const std::string t = l.type();
  return t == "Conv2d" || t == "ConvTranspose2d" || t == "Linear" || t == "Residual";
}

// The block of each top-level layer: a new one at each convolution, linear layer or residual
// block; batch norms and parameter-free layers join the block before them.
std::vector<int> top_level_blocks(Sequential& net) {
  std::vector<int> out(net.size(), 0);
  int block = -1;
  for (size_t i = 0; i < net.size(); ++i) {
    if (starts_block(net.layer(i))) ++block;
    out[i] = block < 0 ? 0 : block;
  }
  return out;
}

std::string prefix_of(const std::string& param) {
  const size_t dot = param.rfind('.');
  return dot == std::string::npos ? param : param.substr(0, dot);
}

void walk(Sequential& net, const std::string& network, int block, bool inherited_fp32, bool top,
          const std::vector<int>& blocks, std::vector<LayerInfo>& out) {
  for (size_t i = 0; i < net.size(); ++i) {
    Layer& l = net.layer(i);
    const int b = top ? blocks[i] : block;
    const bool fp32 = inherited_fp32 || l.fp32();
    auto kids = l.children();
    if (!kids.empty()) {
      for (Sequential* k : kids) walk(*k, network, b, fp32, false, blocks, out);
      continue;
    }
    auto params = l.parameters();
    if (params.empty()) continue;
    LayerInfo info;
    info.name = network + "." + prefix_of(params.front()->name);
    info.type = l.type();
    info.block = b;
    for (Parameter* p : params) info.parameters += p->shape.numel();
    info.fp32 = fp32;
    info.layer = &l;
    out.push_back(std::move(info));
  }
}

void reset_layers(Sequential& net, float clamp) {
  for (size_t i = 0; i < net.size(); ++i) {
    net.layer(i).set_fp32(false);
    net.layer(i).set_conv_clamp(clamp);
    for (Sequential* k : net.layer(i).children()) reset_layers(*k, clamp);
  }
}

}  // namespace

std::vector<LayerInfo> named_layers(Sequential& net, const std::string& network) {
  std::vector<LayerInfo> out;
  walk(net, network, 0, false, true, top_level_blocks(net), out);
  return out;
}

int block_count(Sequential& net) {
  const std::vector<int> b = top_level_blocks(net);
  return b.empty() ? 0 : b.back() + 1;
}

void apply_layer_policy(Sequential& g, Sequential& d, const LayerPolicy& policy) {
  if (policy.half_blocks < -1)
    throw Error("half_blocks " + std::to_string(policy.half_blocks) + " is out of range", "--half-blocks",
                "use -1 (half precision in every block), 0 (none) or the number of highest-resolution blocks to "
                "keep in half precision (StyleGAN2-ADA uses 4)");
  if (!(policy.conv_clamp >= 0.0f) || !std::isfinite(policy.conv_clamp))
    throw Error("conv_clamp " + std::to_string(policy.conv_clamp) + " is not a finite number >= 0", "--conv-clamp",
                "use 0 (off) or a bound such as 256 (StyleGAN2-ADA's)");
  // Check every name before changing anything: a bad policy leaves the networks as they were.
  std::vector<LayerInfo> all = named_layers(d, "D");
  for (LayerInfo& l : named_layers(g, "G")) all.push_back(std::move(l));
  for (const std::string& name : policy.fp32_layers) {
    bool found = false;
    for (const LayerInfo& l : all) found |= l.name == name;
    if (!found) {
      std::string valid;
      for (const LayerInfo& l : all) valid += (valid.empty() ? "" : ", ") + l.name;
      throw Error("no layer named \"" + name + "\"", "--fp32-layers",
                  "use the layer names of layers.csv and the Model view: " + valid);
    }
  }
  const std::set<std::string> wanted(policy.fp32_layers.begin(), policy.fp32_layers.end());
  for (auto [net, is_g] : {std::pair<Sequential*, bool>{&g, true}, {&d, false}}) {
    reset_layers(*net, policy.conv_clamp);
    if (policy.half_blocks >= 0) {
      const std::vector<int> blocks = top_level_blocks(*net);
      const int n = block_count(*net);
      for (size_t i = 0; i < net->size(); ++i) {
        const bool half = is_g ? blocks[i] >= n - policy.half_blocks : blocks[i] < policy.half_blocks;
        net->layer(i).set_fp32(!half);
      }
    }
    for (const LayerInfo& l : named_layers(*net, is_g ? "G" : "D"))
      if (wanted.count(l.name)) l.layer->set_fp32(true);
  }
}

}  // namespace ampgan
