// tests/graph_fixtures.h — small hand-written graphs (graph.json text) for the graph tests.
#pragma once
#include <nlohmann/json.hpp>

#include <string>

#include "graph/load.h"

namespace ka::test {

inline graph::Graph graph_from(const std::string& text) {
  return graph::parse_graph(nlohmann::json::parse(text), "test graph", {});
}

// y = softmax(x * 2 + b, -1) as bf16, plus z = sum(x, -1); x [rows, 8] f32, b [8] f32.
inline const char* kSoftmaxGraph = R"({
  "format": "kernelarc-graph", "version": 1, "problem": "softmax_test",
  "axes": {"rows": {"type": "var"}, "width": {"type": "const", "value": 8}},
  "values": [
    {"id": 0, "kind": "tensor", "dtype": "float32", "shape": ["rows", "width"]},
    {"id": 1, "kind": "tensor", "dtype": "float32", "shape": ["8"]},
    {"id": 2, "kind": "tensor", "dtype": "float32", "shape": ["rows", "8"]},
    {"id": 3, "kind": "tensor", "dtype": "float32", "shape": ["rows", "8"]},
    {"id": 4, "kind": "tensor", "dtype": "float32", "shape": ["rows", "8"]},
    {"id": 5, "kind": "tensor", "dtype": "bfloat16", "shape": ["rows", "8"]},
    {"id": 6, "kind": "tensor", "dtype": "float32", "shape": ["rows"]},
    {"id": 7, "kind": "tensor", "dtype": "float32", "shape": ["rows", "8"]},
    {"id": 8, "kind": "scalar", "dtype": "int64"}
  ],
  "inputs": [{"name": "x", "value": 0}, {"name": "b", "value": 1}],
  "outputs": [{"name": "y", "value": 5}, {"name": "z", "value": 6}],
  "nodes": [
    {"op": "aten.mul.Tensor", "args": [{"value": 0}, {"float": 2.0}], "outputs": [2]},
    {"op": "aten.add.Tensor", "args": [{"value": 2}, {"value": 1}], "outputs": [3]},
    {"op": "aten._assert_tensor_metadata.default", "args": [{"value": 3}], "outputs": [8]},
    {"op": "aten.clone.default", "args": [{"value": 3}], "outputs": [7]},
    {"op": "aten._softmax.default", "args": [{"value": 7}, {"int": -1}, {"bool": false}], "outputs": [4]},
    {"op": "aten._to_copy.default", "args": [{"value": 4}], "kwargs": {"dtype": {"dtype": "bfloat16"}}, "outputs": [5]},
    {"op": "aten.sum.dim_IntList", "args": [{"value": 0}, {"list": [{"int": -1}]}], "outputs": [6]}
  ]
})";

}  // namespace ka::test
