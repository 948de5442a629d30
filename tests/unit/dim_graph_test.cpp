// Unit tests of the coupling dimension graph: cycle detection (including a
// field that reads itself) and the dependency order used to check and lay
// out fields.
#include "typecheck/dim_graph.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace dccc {
namespace {

/// Position of `node` in `order`, or order.size() when absent.
size_t position(const std::vector<size_t>& order, size_t node) {
  return static_cast<size_t>(std::find(order.begin(), order.end(), node) - order.begin());
}

TEST(DimGraph, EmptyGraphHasNoCycleAndEmptyOrder) {
  DimGraph g;
  EXPECT_EQ(g.size(), 0u);
  EXPECT_FALSE(g.find_cycle().has_value());
  EXPECT_TRUE(g.topo_order().empty());
}

TEST(DimGraph, NodesKeepTheirNamesAndEdgesAreDeduplicated) {
  DimGraph g;
  size_t data = g.add_node("data");
  size_t seqlen = g.add_node("seqlen");
  EXPECT_EQ(g.name(data), "data");
  EXPECT_EQ(g.name(seqlen), "seqlen");
  g.add_edge(data, seqlen);
  g.add_edge(data, seqlen);  // `data` may read `seqlen` in several extents
  ASSERT_EQ(g.deps(data).size(), 1u);
  EXPECT_EQ(g.deps(data)[0], seqlen);
  EXPECT_TRUE(g.deps(seqlen).empty());
}

TEST(DimGraph, LengthsComeBeforeTheDataThatReadsThem) {
  // The design document's AttentionData: every ragged field reads one or
  // both of the length arrays, which are declared after it.
  DimGraph g;
  size_t queries = g.add_node("queries");
  size_t keys = g.add_node("keys");
  size_t values = g.add_node("values");
  size_t q_seqlen = g.add_node("q_seqlen");
  size_t kv_seqlen = g.add_node("kv_seqlen");
  size_t mask = g.add_node("attention_mask");
  g.add_edge(queries, q_seqlen);
  g.add_edge(keys, kv_seqlen);
  g.add_edge(values, kv_seqlen);
  g.add_edge(mask, q_seqlen);
  g.add_edge(mask, kv_seqlen);

  EXPECT_FALSE(g.find_cycle().has_value());
  std::vector<size_t> order = g.topo_order();
  ASSERT_EQ(order.size(), g.size());
  for (size_t n = 0; n < g.size(); ++n) {
    ASSERT_LT(position(order, n), order.size()) << g.name(n) << " is missing from the order";
    for (size_t dep : g.deps(n))
      EXPECT_LT(position(order, dep), position(order, n)) << g.name(dep) << " must precede " << g.name(n);
  }
}

TEST(DimGraph, ChainIsOrderedFromTheLeaf) {
  // a reads b, b reads c: the order must be c, b, a.
  DimGraph g;
  size_t a = g.add_node("a");
  size_t b = g.add_node("b");
  size_t c = g.add_node("c");
  g.add_edge(a, b);
  g.add_edge(b, c);
  EXPECT_EQ(g.topo_order(), (std::vector<size_t>{c, b, a}));
}

TEST(DimGraph, IndependentNodesKeepDeclarationOrder) {
  DimGraph g;
  g.add_node("x");
  g.add_node("y");
  g.add_node("z");
  EXPECT_EQ(g.topo_order(), (std::vector<size_t>{0, 1, 2}));
}

TEST(DimGraph, SelfLoopIsACycle) {
  // `len: [len[0]]i32`: a field whose extent reads itself.
  DimGraph g;
  g.add_node("data");
  size_t len = g.add_node("len");
  g.add_edge(len, len);
  auto cycle = g.find_cycle();
  ASSERT_TRUE(cycle.has_value());
  EXPECT_EQ(*cycle, (std::vector<size_t>{len, len}));
  EXPECT_TRUE(g.topo_order().empty());
}

TEST(DimGraph, TwoNodeCycleIsReportedAsAClosedPath) {
  DimGraph g;
  size_t a = g.add_node("a");
  size_t b = g.add_node("b");
  g.add_edge(a, b);
  g.add_edge(b, a);
  auto cycle = g.find_cycle();
  ASSERT_TRUE(cycle.has_value());
  ASSERT_EQ(cycle->size(), 3u);
  EXPECT_EQ(cycle->front(), cycle->back());
  // Consecutive path elements must be edges of the graph.
  for (size_t i = 0; i + 1 < cycle->size(); ++i) {
    const auto& deps = g.deps((*cycle)[i]);
    EXPECT_NE(std::find(deps.begin(), deps.end(), (*cycle)[i + 1]), deps.end());
  }
  EXPECT_TRUE(g.topo_order().empty());
}

TEST(DimGraph, CycleBehindAnAcyclicPrefixIsFoundWithoutThePrefix) {
  // data -> x -> y -> z -> x: the cycle is x, y, z; `data` only leads to it.
  DimGraph g;
  size_t data = g.add_node("data");
  size_t x = g.add_node("x");
  size_t y = g.add_node("y");
  size_t z = g.add_node("z");
  g.add_edge(data, x);
  g.add_edge(x, y);
  g.add_edge(y, z);
  g.add_edge(z, x);
  auto cycle = g.find_cycle();
  ASSERT_TRUE(cycle.has_value());
  ASSERT_EQ(cycle->size(), 4u);
  EXPECT_EQ(cycle->front(), cycle->back());
  EXPECT_EQ(std::find(cycle->begin(), cycle->end(), data), cycle->end());
  EXPECT_TRUE(g.topo_order().empty());
}

TEST(DimGraph, PathStringNamesEveryNodeInOrder) {
  DimGraph g;
  size_t a = g.add_node("lens");
  size_t b = g.add_node("offsets");
  g.add_edge(a, b);
  g.add_edge(b, a);
  std::string s = g.path_str({a, b, a});
  size_t first = s.find("lens");
  size_t second = s.find("offsets");
  size_t third = s.rfind("lens");
  ASSERT_NE(first, std::string::npos);
  ASSERT_NE(second, std::string::npos);
  EXPECT_LT(first, second);
  EXPECT_LT(second, third);
  EXPECT_NE(s.find(" -> "), std::string::npos);
}

TEST(DimGraph, LargeAcyclicChainDoesNotRecurse) {
  // Fields are user-controlled: a long chain must not exhaust the stack.
  DimGraph g;
  const size_t n = 20000;
  for (size_t i = 0; i < n; ++i) g.add_node("f" + std::to_string(i));
  for (size_t i = 0; i + 1 < n; ++i) g.add_edge(i + 1, i);  // f(i+1) reads f(i)
  EXPECT_FALSE(g.find_cycle().has_value());
  std::vector<size_t> order = g.topo_order();
  ASSERT_EQ(order.size(), n);
  EXPECT_EQ(order.front(), 0u);
  EXPECT_EQ(order.back(), n - 1);
}

}  // namespace
}  // namespace dccc
