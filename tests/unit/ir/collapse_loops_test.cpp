// ir/collapse_loops.h: which nests collapse to one loop (vloop text in,
// printed IR out). A nest collapses when its variables reach memory only
// through offsets e0 + ca * a + cb * b with ca = cb * B; a transposed
// layout, a variable used as a value, a parallel loop or a triangular nest
// keep it.
#include "ir/collapse_loops.h"

#include <gtest/gtest.h>

#include "ir/ir_parser.h"
#include "ir/printer.h"

namespace dccc::ir {
namespace {

/// The function of `text` with collapse_loops applied to its body, printed.
std::string collapsed(const std::string& text) {
  SourceFile file("t.vloop", text);
  DiagnosticEngine diags(&file);
  auto m = parse_vloop(file, diags);
  EXPECT_TRUE(m) << "unparsable test IR";
  if (!m) return "";
  for (auto& f : m->funcs) f.body = collapse_loops(f.body);
  return print(*m);
}

std::string func(const std::string& body) {
  return "func f() {\n  sizes M, H, D, C;\n  input x: f32 [i: M, h: H, d: D] total ((M * H) * D);\n"
         "  output o: f32 [i1: M, h1: H, d1: D] total ((M * H) * D);\n  scalar acc: f32;\n  prelude {\n  }\n" +
         body + "}\n";
}

TEST(CollapseLoops, ContiguousNestIsOneLoop) {
  std::string out = collapsed(func(
      "  for i in 0 .. M {\n"
      "    acc[] = 0.0f32;\n"
      "    for h in 0 .. H {\n      for d in 0 .. D {\n"
      "        acc[] = (acc[] + x@((((i * (H * D)) + (h * D)) + d)));\n      }\n    }\n"
      "    for h2 in 0 .. H {\n      for d2 in 0 .. D {\n"
      "        o@((((i * (H * D)) + (h2 * D)) + d2)) = (x@((((i * (H * D)) + (h2 * D)) + d2)) / acc[]);\n      }\n    }\n"
      "  }\n"));
  EXPECT_NE(out.find("for h_d in 0 .. (H * D) {"), std::string::npos) << out;
  EXPECT_NE(out.find("acc[] = (acc[] + x@(((i * (H * D)) + h_d)));"), std::string::npos) << out;
  EXPECT_NE(out.find("o@(((i * (H * D)) + h2_d2)) = (x@(((i * (H * D)) + h2_d2)) / acc[]);"), std::string::npos) << out;
  EXPECT_EQ(out.find("for d in"), std::string::npos) << out;
  // The outer loop over i is not a perfect nest (two statements): kept.
  EXPECT_NE(out.find("for i in 0 .. M {"), std::string::npos) << out;
}

TEST(CollapseLoops, ThreeLoopsCollapseFromTheInside) {
  std::string out = collapsed(func(
      "  for i in 0 .. M {\n    for h in 0 .. H {\n      for d in 0 .. D {\n"
      "        o@((((i * (H * D)) + (h * D)) + d)) = x@((((i * (H * D)) + (h * D)) + d));\n"
      "      }\n    }\n  }\n"));
  EXPECT_NE(out.find("for i_h_d in 0 .. (M * (H * D)) {"), std::string::npos) << out;
  EXPECT_NE(out.find("o@(i_h_d) = x@(i_h_d);"), std::string::npos) << out;
}

TEST(CollapseLoops, NestsThatStay) {
  // Transposed: h is the faster index in x's offset.
  std::string t = collapsed(func(
      "  for h in 0 .. H {\n    for d in 0 .. D {\n      acc[] = (acc[] + x@(((d * H) + h)));\n    }\n  }\n"));
  EXPECT_NE(t.find("for d in 0 .. D {"), std::string::npos) << t;
  // d as a value, not only in offsets.
  std::string v = collapsed(func(
      "  for h in 0 .. H {\n    for d in 0 .. D {\n      o@(((h * D) + d)) = f32(d);\n    }\n  }\n"));
  EXPECT_NE(v.find("for d in 0 .. D {"), std::string::npos) << v;
  // A stride that is not the inner extent (a padded row of C >= D elements).
  std::string c = collapsed(func(
      "  for h in 0 .. H {\n    for d in 0 .. D {\n      acc[] = (acc[] + x@(((h * C) + d)));\n    }\n  }\n"));
  EXPECT_NE(c.find("for d in 0 .. D {"), std::string::npos) << c;
  // Parallel loops are the backends' to map.
  std::string p = collapsed(func(
      "  parallel h in 0 .. H {\n    for d in 0 .. D {\n      o@(((h * D) + d)) = x@(((h * D) + d));\n    }\n  }\n"));
  EXPECT_NE(p.find("for d in 0 .. D {"), std::string::npos) << p;
  // Triangular: the inner extent depends on the outer variable.
  std::string r = collapsed(func(
      "  for h in 0 .. H {\n    for d in 0 .. (h + 1) {\n      acc[] = (acc[] + x@(((h * D) + d)));\n    }\n  }\n"));
  EXPECT_NE(r.find("for d in 0 .. (h + 1) {"), std::string::npos) << r;
}

}  // namespace
}  // namespace dccc::ir
