// written_first: which local tensors need no zero-fill. Each case is read
// here by hand (which statement first touches the tensor, and whether it
// stores every element); the backends' differential and language tests run
// with DCC_POISON_UNINIT=1, which fills the unfilled tensors with NaN, so a
// wrong "true" would also change results there.
#include "ir/written_first.h"

#include <gtest/gtest.h>

#include "ir/fuse_parallel_loops.h"
#include "ir/ir_parser.h"
#include "ir/mark_parallel.h"
#include "ir/mark_written_first.h"
#include "ir/reorder_loops.h"
#include "ir/storage_lowering.h"
#include "ir/tile_contractions.h"
#include "ir/transpose_operands.h"
#include "tests/unit/ir/test_support.h"
#include "tests/unit/test_paths.h"

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
  auto r = of_program(testing::read_file(test_paths::examples_dir() + "/mha.toy"), "mha");
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
      "func f() {\n  local lens: i32 [k: 2];\n  local x: f32 [b: 2, i: i64(lens[b]) pad 4];\n  scalar s: f32;\n"
      "  lens[0] = 3i32;\n  lens[1] = 5i32;\n  for b in 0 .. 2 {\n";
  // (A loop to the length counts only when nothing reads the padding:
  // here a padded loop sums x into a scalar, so its padding matters.)
  const std::string sum =
      "  s[] = 0.0f32;\n  for b2 in 0 .. 2 {\n    for i2 in 0 .. (((i64(lens[b2]) + 3) / 4) * 4) {\n"
      "      s[] = (s[] + x[b2, i2]);\n    }\n  }\n  print \"\" (s[]);\n}\n";
  EXPECT_FALSE(of_ir(head + "    for i in 0 .. i64(lens[b]) {\n      x[b, i] = 1.0f32;\n    }\n  }\n" + sum).at("x"));
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

TEST(WrittenFirst, DeadPaddingNeedsNoFill) {
  // x is stored up to each length; a padded loop copies it into y's padding
  // (y padded alike, same extent) and nothing reads y's padding: x's padding
  // is dead, so x needs no fill. It is not when y's padding is then summed,
  // when y's extent along i differs, or when x's padding lands in a scalar.
  const std::string head =
      "func f() {\n  local lens: i32 [k: 2];\n  local x: f32 [b: 2, i: i64(lens[b]) pad 4];\n"
      "  local y: f32 [b.1: 2, i.1: i64(lens[b.1]) pad 4];\n  local z: f32 [b.2: 2, i.2: (i64(lens[b.2]) + 1) pad 4];\n"
      "  scalar s: f32;\n  lens[0] = 3i32;\n  lens[1] = 5i32;\n"
      "  for b in 0 .. 2 {\n    for i in 0 .. i64(lens[b]) {\n      x[b, i] = 1.0f32;\n    }\n  }\n";
  const std::string padded = "(((i64(lens[c]) + 3) / 4) * 4)";
  auto copy = [&](const std::string& dst) {
    return "  for c in 0 .. 2 {\n    for j in 0 .. " + padded + " {\n      " + dst + "[c, j] = (x[c, j] * 2.0f32);\n    }\n  }\n";
  };
  const std::string read_y = "  for c in 0 .. 2 {\n    for j in 0 .. i64(lens[c]) {\n      print \"\" (y[c, j]);\n    }\n  }\n";
  auto dead = [&](const std::string& text) {
    SourceFile file("t.vloop", text);
    DiagnosticEngine diags(&file);
    auto m = parse_vloop(file, diags);
    EXPECT_TRUE(m.has_value()) << text;
    for (const auto& b : m->funcs[0].buffers)
      if (b->name == "x") return padding_dead(m->funcs[0], b.get());
    return false;
  };
  EXPECT_TRUE(of_ir(head + copy("y") + read_y + "}\n").at("x"));
  EXPECT_TRUE(dead(head + copy("y") + read_y + "}\n"));
  const std::string sum_y = "  s[] = 0.0f32;\n  for c in 0 .. 2 {\n    for j in 0 .. " + padded +
                            " {\n      s[] = (s[] + y[c, j]);\n    }\n  }\n  print \"\" (s[]);\n";
  EXPECT_FALSE(of_ir(head + copy("y") + sum_y + "}\n").at("x"));
  EXPECT_FALSE(of_ir(head + copy("z") + "}\n").at("x"));
  const std::string to_scalar =
      "  for c in 0 .. 2 {\n    for j in 0 .. " + padded + " {\n      s[] = x[c, j];\n    }\n  }\n  print \"\" (s[]);\n";
  EXPECT_FALSE(of_ir(head + to_scalar + "}\n").at("x"));
}

// mha through the CPU target's passes: `scores` is stored whole by its
// q k^T nest (up to each length; its padding only reaches p's padding), but
// tile_contractions then splits that nest into 4-row tiles and a
// remainder, which written_first does not follow. mark_written_first notes
// it before, and storage lowering keeps the note: no local of mha is
// zero-filled. Without the mark, `scores` would be.
TEST(WrittenFirst, MarkedBeforeTheCpuPassesSurvivesStorageLowering) {
  for (bool mark : {true, false}) {
    SCOPED_TRACE(mark ? "marked" : "not marked");
    Lowered l = lower_source("mha.toy", testing::mha_source());
    ASSERT_TRUE(l.module);
    Func& f = l.module->funcs[0];
    mark_parallel(f);
    reorder_loops(f);
    if (mark) mark_written_first(f);
    transpose_operands(f);
    tile_contractions(f);
    fuse_parallel_loops(f);
    ASSERT_TRUE(lower_storage(f, *l.diags));
    int locals = 0;
    for (const auto& b : f.buffers) {
      if (b->kind != BufferKind::Local || b->dims.empty()) continue;
      ++locals;
      EXPECT_EQ(b->zero_fill, !mark && b->name == "scores") << b->name;
    }
    EXPECT_EQ(locals, 5);  // scores, row_max, p, row_sum, kv.k.T
  }
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
