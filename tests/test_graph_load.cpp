// tests/test_graph_load.cpp — graph.json loading: values, arguments, SSA checks, faults.
#include <gtest/gtest.h>

#include "graph_fixtures.h"
#include "util/error.h"

using namespace ka;
using namespace ka::graph;

TEST(GraphLoad, ReadsValuesNodesAndArguments) {
  Graph g = test::graph_from(test::kSoftmaxGraph);
  ASSERT_EQ(g.values.size(), 9u);
  EXPECT_EQ(g.value(0).type.shape[0].expr, "rows");
  EXPECT_EQ(g.value(0).type.shape[1].constant(), std::nullopt);
  EXPECT_EQ(g.value(1).type.shape[0].constant(), 8);
  EXPECT_EQ(g.value(5).type.dtype, DType::bf16);
  EXPECT_EQ(g.value(8).kind, graph::Value::Scalar);
  ASSERT_EQ(g.nodes.size(), 7u);
  EXPECT_EQ(g.nodes[0].args[1].kind, Arg::Float);
  EXPECT_EQ(g.nodes[5].kwargs.at("dtype").dtype, DType::bf16);
  EXPECT_EQ(g.nodes[6].args[1].kind, Arg::List);
  EXPECT_EQ(g.value(4).producer, 4);
  EXPECT_EQ(g.inputs[1].name, "b");
  EXPECT_EQ(g.outputs[1].value, 6);
}

TEST(GraphLoad, ParsesEveryArgumentKind) {
  auto a = parse_arg(nlohmann::json::parse(R"({"list": [{"sym": "n * 2"}, {"float": "-inf"}, null, {"str": "tanh"}]})"), "t");
  ASSERT_EQ(a.list.size(), 4u);
  EXPECT_EQ(a.list[0].kind, Arg::Sym);
  EXPECT_EQ(a.list[0].s, "n * 2");
  EXPECT_TRUE(std::isinf(a.list[1].f) && a.list[1].f < 0);
  EXPECT_EQ(a.list[2].kind, Arg::None);
  EXPECT_EQ(a.list[3].s, "tanh");
  EXPECT_THROW(parse_arg(nlohmann::json::parse(R"({"blob": 1})"), "t"), UserError);
}

TEST(GraphLoad, RefusesBrokenGraphs) {
  auto j = nlohmann::json::parse(test::kSoftmaxGraph);
  auto use_before_def = j;
  std::swap(use_before_def["nodes"][0], use_before_def["nodes"][1]);
  EXPECT_THROW(parse_graph(use_before_def, "t", {}), UserError);
  auto twice = j;
  twice["nodes"][1]["outputs"] = {2};
  EXPECT_THROW(parse_graph(twice, "t", {}), UserError);
  auto version = j;
  version["version"] = 9;
  EXPECT_THROW(parse_graph(version, "t", {}), UserError);
  auto dtype = j;
  dtype["values"][0]["dtype"] = "float7";
  EXPECT_THROW(parse_graph(dtype, "t", {}), UserError);
}
