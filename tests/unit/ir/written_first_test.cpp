// written_first: which local tensors need no zero-fill. Each case is read
// here by hand (which statement first touches the tensor, and whether it
// stores every element); the backends' differential and language tests run
// with DCC_POISON_UNINIT=1, which fills the unfilled tensors with NaN, so a
// wrong "true" would also change results there.
#include "ir/written_first.h"

#include <gtest/gtest.h>

#include "ir/ir_parser.h"
#include "tests/unit/ir/test_support.h"

namespace dccc::ir {
namespace {

using testing::lower_source;
using testing::Lowered;

/// written_first of every local tensor of `fn`, by name.
std::map<std::string, bool> of_program(const std::string& text, const std::string& fn = "f") {
  Lowered l = lower_source("t.toy", text);
  EXPECT_TRUE(l.module) << text;
  std::map<std::string, bool> out;
  if (!l.module) return out;
  for (const auto& f : l.module->funcs)
    if (f.name == fn)
      for (const auto& b : f.buffers)
        if (b->kind == BufferKind::Local && !b->dims.empty()) out[b->name] = written_first(f, b.get());
  return out;
}

std::map<std::string, bool> of_ir(const std::string& text) {
  SourceFile file("t.vloop", text);
  DiagnosticEngine diags(&file);
  auto m = parse_vloop(file, diags);
  EXPECT_TRUE(m.has_value()) << text;
  std::map<std::string, bool> out;
  if (!m) return out;
  for (const auto& b : m->funcs[0].buffers)
    if (b->kind == BufferKind::Local && !b->dims.empty()) out[b->name] = written_first(m->funcs[0], b.get());
  return out;
}

TEST(WrittenFirst, AttentionIntermediatesAreStoredWhole) {
  auto r = of_program(testing::read_file(std::string(DCCC_EXAMPLES_DIR) + "/mha.toy"), "mha");
  // scores and p: one assignment over [b][i, h, j] (scores with an inner
  // `reduce` over d); row_max and row_sum: one `reduce` per [b][i, h].
  EXPECT_EQ(r, (std::map<std::string, bool>{{"scores", true}, {"row_max", true}, {"p", true}, {"row_sum", true}}));
}

TEST(WrittenFirst, ReadBeforeWrittenOrReadingItself) {
  // Printed before it is assigned: it must read as zeros.
  EXPECT_EQ(of_program("fn f() { let x: [4]f32; print(x); x[i] = 1.0; print(x); }"),
            (std::map<std::string, bool>{{"x", false}}));
  // The first assignment reads the tensor it writes.
  EXPECT_EQ(of_program("fn f() { let x: [4]f32; x[i] = x[i] + 1.0; print(x); }"),
            (std::map<std::string, bool>{{"x", false}}));
  // Written whole by its first statement, then updated: fine.
  EXPECT_EQ(of_program("fn f() { let x: [4]f32; x[i] = 2.0; x[i] = x[i] + 1.0; print(x); }"),
            (std::map<std::string, bool>{{"x", true}}));
}

TEST(WrittenFirst, PartialOrConditionalStores) {
  const std::string head = "func f() {\n  local x: f32 [i: 4];\n";
  // Loop shorter than the dimension.
  EXPECT_EQ(of_ir(head + "  for i in 0 .. 3 {\n    x[i] = 1.0f32;\n  }\n}\n"), (std::map<std::string, bool>{{"x", false}}));
  // Store under a condition.
  EXPECT_EQ(of_ir(head + "  for i in 0 .. 4 {\n    if (i < 2) {\n      x[i] = 1.0f32;\n    }\n  }\n}\n"),
            (std::map<std::string, bool>{{"x", false}}));
  // A constant index.
  EXPECT_EQ(of_ir(head + "  for i in 0 .. 4 {\n    x[0] = 1.0f32;\n  }\n}\n"), (std::map<std::string, bool>{{"x", false}}));
  // An extra loop around the store (its extent may be zero).
  EXPECT_EQ(of_ir("func f() {\n  local x: f32 [i: 4];\n  for k in 0 .. 0 {\n    for i in 0 .. 4 {\n      x[i] = 1.0f32;\n"
                  "    }\n  }\n}\n"),
            (std::map<std::string, bool>{{"x", false}}));
  // The whole loop.
  EXPECT_EQ(of_ir(head + "  for i in 0 .. 4 {\n    x[i] = 1.0f32;\n  }\n}\n"), (std::map<std::string, bool>{{"x", true}}));
}

TEST(WrittenFirst, RaggedExtentsMustMatchTheDimensions) {
  const std::string head =
      "func f() {\n  local lens: i32 [k: 3];\n  local d: i64 [b: 3, i: i64(lens[b])];\n"
      "  lens[0] = 2i32;\n  lens[1] = 0i32;\n  lens[2] = 3i32;\n";
  EXPECT_EQ(of_ir(head + "  for b in 0 .. 3 {\n    for i in 0 .. i64(lens[b]) {\n      d[b, i] = (b + i);\n    }\n  }\n}\n"),
            (std::map<std::string, bool>{{"lens", false}, {"d", true}}));
  // The inner loop runs over another row's length.
  EXPECT_EQ(of_ir(head + "  for b in 0 .. 3 {\n    for i in 0 .. i64(lens[0]) {\n      d[b, i] = (b + i);\n    }\n  }\n}\n"),
            (std::map<std::string, bool>{{"lens", false}, {"d", false}}));
}

TEST(WrittenFirst, SliceFilledFirstInAnOuterLoopThenReadThere) {
  // for b { for i { x[b, i] = .. }; <reader> }: the reader runs after the
  // slice x[b, ..] is complete, so it may read that slice and nothing else.
  const std::string head = "func f() {\n  local x: f32 [b: 3, i: 4];\n  local y: f32 [c: 3];\n"
                           "  for b in 0 .. 3 {\n    for i in 0 .. 4 {\n      x[b, i] = 1.0f32;\n    }\n";
  auto with = [&](const std::string& reader) { return of_ir(head + reader + "  }\n}\n").at("x"); };
  EXPECT_TRUE(with("    y[b] = x[b, 2];\n"));
  EXPECT_TRUE(with("    for k in 0 .. 4 {\n      y[b] = (y[b] + x[b, k]);\n    }\n"));
  // Another slice: the next b's is not written yet (and a constant index is not b).
  EXPECT_FALSE(with("    y[b] = x[0, 2];\n"));
  EXPECT_FALSE(with("    for k in 0 .. 3 {\n      y[b] = x[k, 0];\n    }\n"));
  // Stored again after the fill: not a reader.
  EXPECT_FALSE(with("    x[b, 0] = 2.0f32;\n"));
  // A reader before the fill reads zeros.
  EXPECT_FALSE(of_ir("func f() {\n  local x: f32 [b: 3, i: 4];\n  local y: f32 [c: 3];\n  for b in 0 .. 3 {\n"
                  "    y[b] = x[b, 1];\n    for i in 0 .. 4 {\n      x[b, i] = 1.0f32;\n    }\n  }\n}\n").at("x"));
  // The fill's loops index the dimensions out of order: x[i, b] under `for b`.
  EXPECT_FALSE(of_ir("func f() {\n  local x: f32 [b: 4, i: 4];\n  local y: f32 [c: 4];\n  for b in 0 .. 4 {\n"
                  "    for i in 0 .. 4 {\n      x[i, b] = 1.0f32;\n    }\n    y[b] = x[b, 1];\n  }\n}\n").at("x"));
}

TEST(WrittenFirst, PaddedDimensionStoredWhenItsLoopCoversThePadding) {
  // x pads its ragged dimension to a multiple of 4: a loop to the length
  // leaves the padding unstored; a loop to the rounded-up length (a padded
  // loop, as the CPU default gives mha's p) stores it too.
  const std::string head =
      "func f() {\n  local lens: i32 [k: 2];\n  local x: f32 [b: 2, i: i64(lens[b]) pad 4];\n"
      "  lens[0] = 3i32;\n  lens[1] = 5i32;\n  for b in 0 .. 2 {\n";
  EXPECT_FALSE(of_ir(head + "    for i in 0 .. i64(lens[b]) {\n      x[b, i] = 1.0f32;\n    }\n  }\n}\n").at("x"));
  EXPECT_TRUE(of_ir(head + "    for i in 0 .. (((i64(lens[b]) + 3) / 4) * 4) {\n      x[b, i] = 1.0f32;\n    }\n  }\n}\n")
                  .at("x"));
  // Rounded to another multiple: not the storage.
  EXPECT_FALSE(of_ir(head + "    for i in 0 .. (((i64(lens[b]) + 7) / 8) * 8) {\n      x[b, i] = 1.0f32;\n    }\n  }\n}\n")
                   .at("x"));
}

TEST(WrittenFirst, BlockedIndexCoversThePaddedRow) {
  // x[b, o * 4 + i] with o over the padded length / 4 and i over 4 (the
  // blocked copy of ir/transpose_operands.h) stores the whole padded row;
  // the same index with a block that is not the padding, an o loop to the
  // unpadded length / 4, or an i loop that is not the block does not.
  const std::string head =
      "func f() {\n  local lens: i32 [k: 2];\n  local x: f32 [b: 2, i: i64(lens[b]) pad 4];\n"
      "  lens[0] = 3i32;\n  lens[1] = 5i32;\n  for b in 0 .. 2 {\n";
  auto nest = [&](const std::string& o_extent, const std::string& i_extent, const std::string& k) {
    return head + "    for o in 0 .. " + o_extent + " {\n      for i in 0 .. " + i_extent + " {\n        x[b, ((o * " +
           k + ") + i)] = 1.0f32;\n      }\n    }\n  }\n}\n";
  };
  const std::string padded = "((((i64(lens[b]) + 3) / 4) * 4) / 4)";
  EXPECT_TRUE(of_ir(nest(padded, "4", "4")).at("x"));
  EXPECT_FALSE(of_ir(nest("(i64(lens[b]) / 4)", "4", "4")).at("x"));
  EXPECT_FALSE(of_ir(nest(padded, "2", "2")).at("x"));
  EXPECT_FALSE(of_ir(nest(padded, "3", "4")).at("x"));
}

TEST(WrittenFirst, StoragePaddingIsFilledWhenTheLoopStopsShort) {
  Lowered l = lower_source("t.toy", "fn f() { let x: [4]f32; x[i] = 2.0; print(x); }");
  ASSERT_TRUE(l.module);
  Func& f = l.module->funcs[0];
  for (auto& b : f.buffers)
    if (b->name == "x") {
      EXPECT_TRUE(written_first(f, b.get()));
      b->pad = {8};
      EXPECT_FALSE(written_first(f, b.get()));
    }
}

}  // namespace
}  // namespace dccc::ir
