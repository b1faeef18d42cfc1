#include "core/io/onnx_model.h"

#include <onnx/onnx_pb.h>

#include <cstring>
#include <map>

#include "core/common/error.h"

namespace ampgan::io {

namespace {

int32_t elem_type(OnnxType t) {
  if (t == OnnxType::I64) return onnx::TensorProto::INT64;
  return t == OnnxType::F16 ? onnx::TensorProto::FLOAT16 : onnx::TensorProto::FLOAT;
}

void set_value_info(onnx::ValueInfoProto* v, const std::string& name, OnnxType type, const std::vector<int64_t>& dims) {
  v->set_name(name);
  onnx::TypeProto_Tensor* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(elem_type(type));
  for (int64_t d : dims) {
    onnx::TensorShapeProto_Dimension* dim = t->mutable_shape()->add_dim();
    if (d < 0)
      dim->set_dim_param("batch");
    else
      dim->set_dim_value(d);
  }
}

int64_t element_count(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

}  // namespace

struct OnnxModel::Impl {
  onnx::ModelProto model;
  onnx::GraphProto* graph = nullptr;
  std::map<std::string, int> op_counts;  // for the nodes' default output names
};

OnnxModel::OnnxModel(const std::string& graph_name, const std::string& producer_version) : impl_(new Impl) {
  onnx::ModelProto& m = impl_->model;
  // IR version 8 is ONNX 1.12's, the release that introduced opset 17.
  m.set_ir_version(8);
  m.set_producer_name("ampgan");
  m.set_producer_version(producer_version);
  onnx::OperatorSetIdProto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(kOnnxOpset);
  impl_->graph = m.mutable_graph();
  impl_->graph->set_name(graph_name);
}

OnnxModel::~OnnxModel() = default;

std::string OnnxModel::weight(const std::string& name, const std::vector<int64_t>& dims,
                              const std::vector<float>& values) {
  AMPGAN_CHECK(element_count(dims) == static_cast<int64_t>(values.size()), "ONNX weight '" + name + "' size");
  onnx::TensorProto* t = impl_->graph->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  // raw_data is little-endian by the format's definition, as this host's floats are.
  t->set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
  return name;
}

std::string OnnxModel::weight_half(const std::string& name, const std::vector<int64_t>& dims,
                                   const std::vector<uint16_t>& bits) {
  AMPGAN_CHECK(element_count(dims) == static_cast<int64_t>(bits.size()), "ONNX weight '" + name + "' size");
  onnx::TensorProto* t = impl_->graph->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT16);
  for (int64_t d : dims) t->add_dims(d);
  t->set_raw_data(std::string(reinterpret_cast<const char*>(bits.data()), bits.size() * sizeof(uint16_t)));
  return name;
}

std::string OnnxModel::int64s(const std::string& name, const std::vector<int64_t>& values) {
  onnx::TensorProto* t = impl_->graph->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(static_cast<int64_t>(values.size()));
  t->set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(int64_t)));
  return name;
}

void OnnxModel::input(const std::string& name, OnnxType type, const std::vector<int64_t>& dims) {
  set_value_info(impl_->graph->add_input(), name, type, dims);
}

void OnnxModel::output(const std::string& name, OnnxType type, const std::vector<int64_t>& dims) {
  set_value_info(impl_->graph->add_output(), name, type, dims);
}

std::string OnnxModel::node(const std::string& op, const std::vector<std::string>& inputs,
                            const std::vector<OnnxAttr>& attrs, const std::string& out) {
  onnx::NodeProto* n = impl_->graph->add_node();
  n->set_op_type(op);
  std::string output = out.empty() ? op + "_" + std::to_string(impl_->op_counts[op]++) : out;
  n->set_name(output);
  for (const std::string& in : inputs) n->add_input(in);
  n->add_output(output);
  for (const OnnxAttr& a : attrs) {
    onnx::AttributeProto* p = n->add_attribute();
    p->set_name(a.name);
    switch (a.kind) {
      case OnnxAttr::Kind::Int:
        p->set_type(onnx::AttributeProto::INT);
        p->set_i(a.ints.at(0));
        break;
      case OnnxAttr::Kind::Ints:
        p->set_type(onnx::AttributeProto::INTS);
        for (int64_t v : a.ints) p->add_ints(v);
        break;
      case OnnxAttr::Kind::Float:
        p->set_type(onnx::AttributeProto::FLOAT);
        p->set_f(a.f);
        break;
      case OnnxAttr::Kind::String:
        p->set_type(onnx::AttributeProto::STRING);
        p->set_s(a.s);
        break;
    }
  }
  return output;
}

std::string OnnxModel::cast(const std::string& x, OnnxType to, const std::string& out) {
  return node("Cast", {x}, {OnnxAttr::i("to", elem_type(to))}, out);
}

void OnnxModel::rename_output(const std::string& from, const std::string& to) {
  for (onnx::NodeProto& n : *impl_->graph->mutable_node()) {
    for (std::string& o : *n.mutable_output())
      if (o == from) o = to;
    for (std::string& i : *n.mutable_input())
      if (i == from) i = to;
  }
}

void OnnxModel::metadata(const std::string& key, const std::string& value) {
  onnx::StringStringEntryProto* e = impl_->model.add_metadata_props();
  e->set_key(key);
  e->set_value(value);
}

void OnnxModel::doc(const std::string& text) { impl_->model.set_doc_string(text); }

size_t OnnxModel::node_count() const { return static_cast<size_t>(impl_->graph->node_size()); }

std::string OnnxModel::serialize() const {
  // protobuf refuses messages of 2 GiB and more; a generator here is far smaller, but say so.
  const size_t bytes = impl_->model.ByteSizeLong();
  if (bytes >= (size_t{1} << 31))
    throw Error("the ONNX model would be " + std::to_string(bytes >> 20) + " MiB, beyond protobuf's 2 GiB",
                impl_->graph->name(), "export a smaller model (--width)");
  std::string s;
  if (!impl_->model.SerializeToString(&s))
    throw Error("protobuf could not serialise the ONNX model", impl_->graph->name());
  return s;
}

}  // namespace ampgan::io
