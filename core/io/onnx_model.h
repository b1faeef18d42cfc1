// An ONNX model written node by node: weights as initializers, one graph input and output with a
// symbolic batch dimension, and metadata_props. Serialised with Debian's libonnx_proto (the
// onnx-ml.proto that python3-onnx and onnxruntime read); the protobuf types stay in the .cpp, so
// a caller needs neither onnx's nor protobuf's headers. Knows nothing of networks: the generator
// export (core/run/onnx_export.h) says which nodes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ampgan::io {

// The opset every model here is written for (ONNX 1.12's newest; onnxruntime 1.13+ runs it).
constexpr int kOnnxOpset = 17;

enum class OnnxType : uint8_t { F32, F16, I64 };  // I64: a conditional generator's class input

// A node attribute: one whole number, a list of them, a float or a string.
struct OnnxAttr {
  enum class Kind : uint8_t { Int, Ints, Float, String } kind = Kind::Int;
  std::string name;
  std::vector<int64_t> ints;  // one value for Int
  float f = 0.0f;
  std::string s;
  static OnnxAttr i(std::string n, int64_t v) { return {Kind::Int, std::move(n), {v}, 0.0f, {}}; }
  static OnnxAttr list(std::string n, std::vector<int64_t> v) {
    return {Kind::Ints, std::move(n), std::move(v), 0.0f, {}};
  }
  static OnnxAttr real(std::string n, float v) { return {Kind::Float, std::move(n), {}, v, {}}; }
  static OnnxAttr str(std::string n, std::string v) { return {Kind::String, std::move(n), {}, 0.0f, std::move(v)}; }
};

class OnnxModel {
 public:
  OnnxModel(const std::string& graph_name, const std::string& producer_version);
  ~OnnxModel();
  OnnxModel(const OnnxModel&) = delete;
  OnnxModel& operator=(const OnnxModel&) = delete;

  // Weights: FP32 values, or half-precision bits (the caller rounds: core/tensor/half.h). Return the name.
  std::string weight(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& values);
  std::string weight_half(const std::string& name, const std::vector<int64_t>& dims, const std::vector<uint16_t>& bits);
  std::string int64s(const std::string& name, const std::vector<int64_t>& values);  // a 1-D INT64 constant

  // The graph's input and output; a dimension of -1 is the symbolic "batch".
  void input(const std::string& name, OnnxType type, const std::vector<int64_t>& dims);
  void output(const std::string& name, OnnxType type, const std::vector<int64_t>& dims);
  // A node; its one output is named `out` if given, else "<op>_<n>". Returns the output's name.
  // An empty input name is an omitted optional input (Resize's roi).
  std::string node(const std::string& op, const std::vector<std::string>& inputs,
                   const std::vector<OnnxAttr>& attrs = {}, const std::string& out = {});
  // A Cast of x to `to`, its output named `out` if given.
  std::string cast(const std::string& x, OnnxType to, const std::string& out = {});
  // Renames a node's output (the graph's last node, whose output becomes the graph's).
  void rename_output(const std::string& from, const std::string& to);
  void metadata(const std::string& key, const std::string& value);
  void doc(const std::string& text);

  size_t node_count() const;
  std::string serialize() const;  // the .onnx file's bytes; throws Error if protobuf cannot

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ampgan::io
