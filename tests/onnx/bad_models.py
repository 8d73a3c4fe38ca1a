#!/usr/bin/python3
"""Writes the malformed and unsupported ONNX models of the bad-input table (tests/bad_inputs/
cases.json, readers "cli import" and "cli run-model") into DIR as NAME.onnx. Run with Debian's
python3-onnx: /usr/bin/python3 tests/onnx/bad_models.py DIR"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def model(nodes, inputs, outputs, inits=(), opset=13):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def vi(name, shape, t=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, t, shape)


def relu_model(**kw):
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu1")], [vi("x", [2, 3])], [vi("y", [2, 3])], **kw)


def all_models():
    m = {}
    good = relu_model().SerializeToString()
    m["ok_relu"] = good
    m["truncated"] = good[: len(good) // 2]
    m["garbage"] = bytes(range(7, 200, 3))
    m["empty"] = b""
    m["opset99"] = relu_model(opset=99).SerializeToString()
    m["missing_input"] = model([helper.make_node("Add", ["x", "nowhere"], ["y"], name="add1")],
                               [vi("x", [2, 3])], [vi("y", [2, 3])]).SerializeToString()
    m["cycle"] = model([helper.make_node("Relu", ["b"], ["a"], name="r1"), helper.make_node("Relu", ["a"], ["b"], name="r2")],
                       [vi("x", [2])], [vi("b", [2])]).SerializeToString()
    w = numpy_helper.from_array(np.ones((2, 3), np.float32), "w")
    w.raw_data = w.raw_data[:10]
    m["short_initializer"] = model([helper.make_node("Add", ["x", "w"], ["y"], name="add1")], [vi("x", [2, 3])],
                                   [vi("y", [2, 3])], inits=[w]).SerializeToString()
    huge = TensorProto(name="big", data_type=TensorProto.FLOAT, dims=[1000000, 1000000])
    m["huge_initializer"] = model([helper.make_node("Add", ["x", "big"], ["y"], name="add1")], [vi("x", [1])],
                                  [vi("y", [1000000, 1000000])], inits=[huge]).SerializeToString()
    m["huge_input"] = model([helper.make_node("Relu", ["x"], ["y"], name="relu1")], [vi("x", [1000000, 1000000])],
                            [vi("y", [1000000, 1000000])]).SerializeToString()
    m["unsupported_op"] = model([helper.make_node("Hardmax", ["x"], ["y"], name="hm1")], [vi("x", [2, 3])],
                                [vi("y", [2, 3])]).SerializeToString()
    m["unsupported_attribute"] = model(
        [helper.make_node("MaxPool", ["x"], ["y"], name="pool1", kernel_shape=[2, 2], storage_order=1)],
        [vi("x", [1, 1, 4, 4])], [vi("y", [1, 1, 3, 3])]).SerializeToString()
    m["symbolic_dim"] = model([helper.make_node("Relu", ["x"], ["y"], name="relu1")], [vi("x", ["batch", 3])],
                              [vi("y", ["batch", 3])]).SerializeToString()
    m["string_input"] = model([helper.make_node("Identity", ["x"], ["y"], name="id1")], [vi("x", [2], TensorProto.STRING)],
                              [vi("y", [2], TensorProto.STRING)]).SerializeToString()
    m["conv3d"] = model([helper.make_node("Conv", ["x", "w"], ["y"], name="conv3")],
                        [vi("x", [1, 1, 4, 4, 4]), vi("w", [1, 1, 2, 2, 2])], [vi("y", [1, 1, 3, 3, 3])]).SerializeToString()
    m["reshape_runtime_shape"] = model([helper.make_node("Reshape", ["x", "s"], ["y"], name="reshape1")],
                                       [vi("x", [2, 3]), vi("s", [2], TensorProto.INT64)], [vi("y", [3, 2])]).SerializeToString()
    m["custom_domain"] = onnx.helper.make_model(
        helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="r", domain="com.example")], "g", [vi("x", [2])], [vi("y", [2])]),
        opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.example", 1)]).SerializeToString()
    ext = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[2])
    ext.data_location = TensorProto.EXTERNAL
    e = ext.external_data.add()
    e.key, e.value = "location", "weights.bin"
    m["external_data"] = model([helper.make_node("Add", ["x", "w"], ["y"], name="add1")], [vi("x", [2])], [vi("y", [2])],
                               inits=[ext]).SerializeToString()
    m["training_batchnorm"] = model(
        [helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], name="bn1", training_mode=1)],
        [vi("x", [1, 2, 2, 2])], [vi("y", [1, 2, 2, 2])],
        inits=[numpy_helper.from_array(np.ones(2, np.float32), n) for n in "sbmv"], opset=15).SerializeToString()
    m["no_outputs"] = model([helper.make_node("Relu", ["x"], ["y"], name="relu1")], [vi("x", [2])], []).SerializeToString()
    m["zero_dim_input"] = model([helper.make_node("Relu", ["x"], ["y"], name="relu1")], [vi("x", [0, 3])],
                                [vi("y", [0, 3])]).SerializeToString()
    m["wrong_type_field"] = model([helper.make_node("Add", ["x", "w"], ["y"], name="add1")], [vi("x", [3])], [vi("y", [3])],
                                  inits=[TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[3], float_data=[1.0, 2.0])]).SerializeToString()
    m["tessera_gelu_approximation"] = onnx.helper.make_model(
        helper.make_graph([helper.make_node("Gelu", ["x"], ["y"], name="gelu1", domain="ai.tessera", approximation="sigmoid")], "g",
                          [vi("x", [2])], [vi("y", [2])]),
        opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("ai.tessera", 1)]).SerializeToString()
    # W of rank 1: indexed as [directions, 4*hidden, input] it read past its shape (found by fuzz_onnx_import).
    m["lstm_weight_rank_1"] = model(
        [helper.make_node("LSTM", ["x", "w", "r"], ["", "y"], name="lstm1", hidden_size=2)],
        [vi("x", [1, 1, 3])], [vi("y", [1, 1, 2])],
        inits=[numpy_helper.from_array(np.ones(8, np.float32), "w"), numpy_helper.from_array(np.ones((1, 8, 2), np.float32), "r")]).SerializeToString()
    return m


if __name__ == "__main__":
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, data in all_models().items():
        with open(os.path.join(out, name + ".onnx"), "wb") as f:
            f.write(data)
