#!/usr/bin/env python3
"""Checks a model written by `ampgan export-onnx` with ONNX's own reader (Debian's python3-onnx):
onnx.checker.check_model with full_check (which also runs shape inference), then prints one line
"OK {json}" summing up what the test asserts on: opset, the input's and output's types and
dimensions, the metadata, the operators used and the initializers' element types.

  /usr/bin/python3 check_onnx.py MODEL.onnx
"""
import json
import sys

import onnx


def dims(value_info):
    t = value_info.type.tensor_type
    return [d.dim_param if d.dim_param else d.dim_value for d in t.shape.dim]


def main():
    model = onnx.load(sys.argv[1])
    onnx.checker.check_model(model, full_check=True)
    inferred = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    g = inferred.graph
    summary = {
        "ir_version": model.ir_version,
        "opset": {o.domain or "ai.onnx": o.version for o in model.opset_import},
        "producer": model.producer_name,
        "inputs": {i.name: {"type": onnx.TensorProto.DataType.Name(i.type.tensor_type.elem_type), "dims": dims(i)}
                   for i in g.input},
        "outputs": {o.name: {"type": onnx.TensorProto.DataType.Name(o.type.tensor_type.elem_type), "dims": dims(o)}
                    for o in g.output},
        "metadata": {p.key: p.value for p in model.metadata_props},
        "ops": sorted({n.op_type for n in g.node}),
        "nodes": len(g.node),
        "initializer_types": sorted({onnx.TensorProto.DataType.Name(t.data_type) for t in g.initializer}),
    }
    print("OK " + json.dumps(summary))


if __name__ == "__main__":
    main()
