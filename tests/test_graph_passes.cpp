// tests/test_graph_passes.cpp — each pass on small graphs: simplification, view folding, fusion
// groups, library selection, memory planning, re-rolling.
#include <gtest/gtest.h>

#include "graph/ops.h"
#include "graph/passes.h"
#include "graph_fixtures.h"

using namespace ka;
using namespace ka::graph;

namespace {

int live(const Graph& g) {
  int n = 0;
  for (const auto& x : g.nodes) n += !x.dead;
  return n;
}

// x -> view -> view -> permute -> permute -> exp; also an unused mm.
const char* kChain = R"({
  "format": "kernelarc-graph", "version": 1, "problem": "chain", "axes": {},
  "values": [
    {"id": 0, "kind": "tensor", "dtype": "float32", "shape": ["2", "3", "4"]},
    {"id": 1, "kind": "tensor", "dtype": "float32", "shape": ["6", "4"]},
    {"id": 2, "kind": "tensor", "dtype": "float32", "shape": ["2", "12"]},
    {"id": 3, "kind": "tensor", "dtype": "float32", "shape": ["12", "2"]},
    {"id": 4, "kind": "tensor", "dtype": "float32", "shape": ["2", "12"]},
    {"id": 5, "kind": "tensor", "dtype": "float32", "shape": ["2", "12"]},
    {"id": 6, "kind": "tensor", "dtype": "float32", "shape": ["6", "6"]}
  ],
  "inputs": [{"name": "x", "value": 0}], "outputs": [{"name": "y", "value": 5}],
  "nodes": [
    {"op": "aten.view.default", "args": [{"value": 0}, {"list": [{"int": 6}, {"int": 4}]}], "outputs": [1]},
    {"op": "aten.view.default", "args": [{"value": 1}, {"list": [{"int": 2}, {"int": 12}]}], "outputs": [2]},
    {"op": "aten.permute.default", "args": [{"value": 2}, {"list": [{"int": 1}, {"int": 0}]}], "outputs": [3]},
    {"op": "aten.permute.default", "args": [{"value": 3}, {"list": [{"int": 1}, {"int": 0}]}], "outputs": [4]},
    {"op": "aten.exp.default", "args": [{"value": 4}], "outputs": [5]},
    {"op": "aten.mm.default", "args": [{"value": 1}, {"value": 3}], "outputs": [6]}
  ]
})";

}  // namespace

TEST(GraphPasses, SimplifyDropsAssertsIdentitiesAndDeadCode) {
  Graph g = test::graph_from(test::kSoftmaxGraph);
  EXPECT_GT(simplify(g), 0);
  EXPECT_TRUE(g.nodes[2].dead);  // _assert_tensor_metadata
  EXPECT_TRUE(g.nodes[3].dead);  // clone of the same dtype and shape
  EXPECT_EQ(g.nodes[4].args[0].value, 3);  // softmax reads the clone's input
  EXPECT_FALSE(g.nodes[5].dead);  // a real dtype conversion stays
  EXPECT_EQ(live(g), 5);
}

TEST(GraphPasses, FoldViewsComposesReshapesAndPermutes) {
  Graph g = test::graph_from(kChain);
  EXPECT_GT(fold_views(g), 0);
  EXPECT_EQ(g.nodes[1].args[0].value, 0);  // view(view(x)) reads x
  EXPECT_EQ(g.nodes[3].args[0].value, 2);  // permute(permute(v2)) reads v2 ...
  EXPECT_EQ(g.nodes[3].args[1].list[0].i, 0);  // ... with the identity permutation
  run_passes(g);
  // the identity permute is gone, the unused mm too; the exp reads the single view.
  EXPECT_TRUE(g.nodes[3].dead);
  EXPECT_TRUE(g.nodes[5].dead);
  EXPECT_EQ(live(g), 2);
}

TEST(GraphPasses, FusionMakesReductionsRootsAndPullsPointwiseIn) {
  Graph g = test::graph_from(test::kSoftmaxGraph);
  run_passes(g);
  auto groups = fuse_groups(g);
  // mul and add flow only into the softmax: one normalisation group; the bf16 conversion is a
  // separate pointwise group (an output); the sum reads x directly: a reduction group.
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(g.nodes[0].group, g.nodes[4].group);
  EXPECT_EQ(g.nodes[1].group, g.nodes[4].group);
  EXPECT_EQ(groups[static_cast<size_t>(g.nodes[4].group)].kind, "normalization");
  EXPECT_NE(g.nodes[5].group, g.nodes[4].group);
  EXPECT_EQ(groups[static_cast<size_t>(g.nodes[6].group)].kind, "reduction");
  auto single = fuse_groups(g, false);
  EXPECT_EQ(single.size(), 5u);
}

TEST(GraphPasses, LibrarySelectionNamesTheLibraryClass) {
  EXPECT_EQ(op_library("aten.bmm.default"), "gemm");
  EXPECT_EQ(op_library("aten.addmm.default"), "gemm");
  EXPECT_EQ(op_library("aten.convolution.default"), "conv");
  EXPECT_EQ(op_library("aten._fft_r2c.default"), "fft");
  EXPECT_EQ(op_library("aten.topk.default"), "sort");
  EXPECT_EQ(op_library("aten.cumsum.default"), "scan");
  EXPECT_EQ(op_library("aten.add.Tensor"), "");
  Graph g = test::graph_from(kChain);
  EXPECT_EQ(select_library(g), 1);
  EXPECT_EQ(g.nodes[5].library, "gemm");
}

TEST(GraphPasses, MemoryPlanFreesAfterLastUseAndReusesSlots) {
  Graph g = test::graph_from(test::kSoftmaxGraph);
  run_passes(g);
  MemoryPlan m = plan_memory(g);
  // v2 (mul) dies at the add, v3 (add) at the softmax, v4 at the conversion.
  EXPECT_EQ(m.free_after[1], std::vector<int>{2});
  EXPECT_EQ(m.free_after[4], std::vector<int>{3});
  EXPECT_EQ(m.free_after[5], std::vector<int>{4});
  // v2's slot (same size and dtype) is taken again by v4, the softmax result.
  EXPECT_EQ(m.slot.at(4), m.slot.at(2));
  EXPECT_FALSE(m.slot.count(5));  // outputs own their storage
}

TEST(GraphPasses, RerollFindsTheUnrolledLoop) {
  // x -> (mul 2, add 1) x 4 -> y
  std::string values, nodes;
  for (int i = 0; i <= 8; ++i)
    values += std::string(i ? "," : "") + R"({"id": )" + std::to_string(i) + R"(, "kind": "tensor", "dtype": "float32", "shape": ["4"]})";
  for (int i = 0; i < 8; ++i) {
    const char* op = i % 2 ? "aten.add.Tensor" : "aten.mul.Tensor";
    const char* c = i % 2 ? "1.0" : "2.0";
    nodes += std::string(i ? "," : "") + R"({"op": ")" + op + R"(", "args": [{"value": )" + std::to_string(i) +
             R"(}, {"float": )" + c + R"(}], "outputs": [)" + std::to_string(i + 1) + "]}";
  }
  Graph g = test::graph_from(R"({"format": "kernelarc-graph", "version": 1, "problem": "loop", "axes": {}, "values": [)" +
                             values + R"(], "inputs": [{"name": "x", "value": 0}], "outputs": [{"name": "y", "value": 8}], "nodes": [)" +
                             nodes + "]}");
  auto r = find_repeats(g);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].start, 0);
  EXPECT_EQ(r[0].period, 2);
  EXPECT_EQ(r[0].count, 4);
  EXPECT_TRUE(find_repeats(g, 5).empty());
}
