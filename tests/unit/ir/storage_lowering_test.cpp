// Differential tests of storage-access lowering (CoRa Algorithm 1).
//
// Every function of every example is lowered, run by the layout-free
// interpreter (buffers as maps from index tuple to value) and again after
// storage lowering (flat offsets computed from the prelude's A_d arrays),
// on random length patterns including zero-length sequences, B = 1 and
// one very long sequence. The outputs must be identical bit for bit: both
// runs do the same arithmetic in the same order, so any difference is an
// offset computed wrongly.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

#include "ir/interpreter.h"
#include "ir/storage_lowering.h"
#include "tests/unit/ir/test_support.h"
#include "tests/unit/test_paths.h"

namespace dccc::ir {
namespace {

using testing::lower_source;
using testing::Lowered;

int ran_ = 0, skipped_ = 0;

TEST(StorageLowering, ExamplesAgreeWithLayoutFreeInterpreter) {
  int compared = testing::compare_programs_transformed(
      {test_paths::examples_dir()}, [](Func& f, DiagnosticEngine& d) { return lower_storage(f, d); }, ran_, skipped_);
  EXPECT_GE(compared, 6);
  // Only patterns that violate a `where` (empty sequences in where_layout.toy) may be skipped.
  EXPECT_GE(ran_, testing::min_runs(40)) << ran_ << " runs, " << skipped_ << " skipped";
  EXPECT_LE(skipped_, 12) << ran_ << " runs, " << skipped_ << " skipped";
}

TEST(StorageLowering, OffsetsOfAPackedCouplingAreCuSeqlensTimesRow) {
  // [b: B][seqlen[b], H, D] packed: element (b, i, h, d) must live at
  // (cu_seqlens[b] + i) * H * D + h * D + d — the FlashAttention layout.
  // The kernel writes a value encoding (b, i, h, d); the expected buffer is
  // built here by that formula, independently of the compiler.
  Lowered l = lower_source("t.toy", R"(
type S = coupling { data: [b: B][seqlen[b], H, D]f32, seqlen: [B]i32 }
fn tag(x: S) [b: B][x.seqlen[b], H, D]f32 {
  let y: [b: B][x.seqlen[b], H, D]f32;
  y[b][i, h, d] = f32(b * 1000 + i * 100 + h * 10 + d) + x.data[b][i, h, d] * 0.0;
  return y;
})");
  ASSERT_TRUE(l.module);
  Func& f = l.module->funcs[0];
  ASSERT_TRUE(lower_storage(f, *l.diags));
  const int64_t B = 3, H = 2, D = 4;
  std::map<std::string, int64_t> sizes{{"B", B}, {"H", H}, {"D", D}};
  std::vector<int64_t> lens{2, 0, 3};
  auto inputs = Interpreter::make_inputs(f, sizes, [&](const BufferNode* b, int64_t k) {
    return is_int(b->type) ? static_cast<double>(lens[k]) : 0.0;
  });
  std::ostringstream out;
  Interpreter in(out);
  in.run(f, sizes, inputs);
  const BufferNode* y = nullptr;
  for (const auto& b : f.buffers)
    if (b->kind == BufferKind::Output) y = b.get();
  ASSERT_NE(y, nullptr);
  std::vector<double> expected(5 * H * D, -1);
  int64_t cu = 0;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t i = 0; i < lens[b]; ++i)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t d = 0; d < D; ++d) expected[(cu + i) * H * D + h * D + d] = b * 1000 + i * 100 + h * 10 + d;
    cu += lens[b];
  }
  EXPECT_EQ(in.packed(y), expected);
}

/// Runs `f` (lowered) with the given length arrays by buffer name and
/// returns its output's flat storage.
std::vector<double> run_lowered(Func& f, const std::map<std::string, int64_t>& sizes,
                                const std::map<std::string, std::vector<int64_t>>& lengths) {
  auto inputs = Interpreter::make_inputs(f, sizes, [&](const BufferNode* b, int64_t k) {
    auto it = lengths.find(b->name);
    return it != lengths.end() ? static_cast<double>(it->second.at(k)) : 0.0;
  });
  std::ostringstream out;
  Interpreter in(out);
  in.run(f, sizes, inputs);
  for (const auto& b : f.buffers)
    if (b->kind == BufferKind::Output) return in.packed(b.get());
  ADD_FAILURE() << "no output";
  return {};
}

TEST(StorageLowering, TwoLevelCouplingIsPackedDocumentAfterDocument) {
  // [d: D][s: nsent[d]][ntok[d][s], H] with ntok packed document after
  // document (docs/abi.md, "Nested raggedness"): element (d, s, t, h) lives
  // at (R[N[d] + s] + t) * H + h, N the prefix sum of nsent, R that of the
  // packed ntok. Expected storage built here by counting.
  Lowered l = lower_source("t.toy", R"(
type Docs = coupling { tokens: [d: D][s: nsent[d]][ntok[d][s], H]f32, ntok: [d: D][nsent[d]]i32, nsent: [D]i32 }
type Out = coupling { tokens: [d: D][s: nsent[d]][ntok[d][s], H]f32, ntok: [d: D][nsent[d]]i32, nsent: [D]i32 }
fn tag(x: Docs) Out {
  let y = Out { tokens: [d: D][s: x.nsent[d]][x.ntok[d][s], H]f32, ntok: x.ntok, nsent: x.nsent };
  y.tokens[d][s][t, h] = f32(d * 1000 + s * 100 + t * 10 + h) + x.tokens[d][s][t, h] * 0.0;
  return y;
})");
  ASSERT_TRUE(l.module);
  Func& f = l.module->funcs[0];
  ASSERT_TRUE(lower_storage(f, *l.diags)) << "two levels lower";
  const int64_t H = 2;
  std::vector<int64_t> nsent{2, 0, 3, 1}, ntok{3, 0, 1, 4, 0, 2};
  std::vector<double> expected;
  for (int64_t d = 0, k = 0; d < 4; ++d)
    for (int64_t s = 0; s < nsent[d]; ++s, ++k)
      for (int64_t t = 0; t < ntok[k]; ++t)
        for (int64_t h = 0; h < H; ++h) expected.push_back(d * 1000 + s * 100 + t * 10 + h);
  EXPECT_EQ(run_lowered(f, {{"D", 4}, {"H", H}}, {{"x.nsent", nsent}, {"x.ntok", ntok}}), expected);
}

TEST(StorageLowering, TriangleInsideRaggedIsPackedRowAfterRow) {
  // [b: B][i: seqlen[b]][i + 1, H]: sequence after sequence, row i holding
  // i + 1 columns of H values; element (b, i, j, h) at
  // (T[b] + i (i + 1) / 2 + j) * H + h.
  Lowered l = lower_source("t.toy", R"(
type Causal = coupling { scores: [b: B][i: seqlen[b]][i + 1, H]f32, seqlen: [B]i32 }
fn tag(x: Causal) Causal {
  let y = Causal { scores: [b: B][i: x.seqlen[b]][i + 1, H]f32, seqlen: x.seqlen };
  y.scores[b][i][j, h] = f32(b * 1000 + i * 100 + j * 10 + h) + x.scores[b][i][j, h] * 0.0;
  return y;
})");
  ASSERT_TRUE(l.module);
  Func& f = l.module->funcs[0];
  ASSERT_TRUE(lower_storage(f, *l.diags)) << "a triangle inside a ragged range lowers";
  const int64_t H = 3;
  std::vector<int64_t> lens{3, 0, 1, 4};
  std::vector<double> expected;
  int64_t T = 0;
  for (int64_t b = 0; b < 4; ++b) {
    for (int64_t i = 0; i < lens[b]; ++i)
      for (int64_t j = 0; j <= i; ++j)
        for (int64_t h = 0; h < H; ++h) {
          size_t at = static_cast<size_t>((T + i * (i + 1) / 2 + j) * H + h);
          if (expected.size() <= at) expected.resize(at + 1, -1);
          expected[at] = b * 1000 + i * 100 + j * 10 + h;
        }
    T += lens[b] * (lens[b] + 1) / 2;
  }
  EXPECT_EQ(run_lowered(f, {{"B", 4}, {"H", H}}, {{"x.seqlen", lens}}), expected);
}

}  // namespace
}  // namespace dccc::ir

namespace dccc::ir {
namespace {

/// The computed lengths' checks (build::assert_length) of `f`, by array name.
std::vector<std::string> length_checks(const Func& f) {
  std::vector<std::string> out;
  each_stmt(f.body, [&](const StmtNode& s) {
    if (s.kind == StmtKind::Assert && s.length_check) out.push_back(s.text);
  });
  return out;
}

TEST(StorageLowering, ComputedLengthsAreCheckedUnlessPlainlyNonNegative) {
  // n = seqlen - s may be negative: checked before its offsets are summed;
  // m = max(min(seqlen, k), 0) (std/ragged.toy's take_rows) cannot be.
  Lowered l = lower_source("t.toy", R"(
type S = coupling { data: [b: B][seqlen[b], D]f32, seqlen: [B]i32 }
fn drop(x: S, k: i32) [B, D]f32 {
  let s: i32 = max(k, 0);
  let n: [B]i32;
  n[b] = x.seqlen[b] - s;
  let y: [b: B][n[b], D]f32;
  y[b][i, d] = x.data[b][i + s, d];
  let r: [B, D]f32;
  r[b, d] = reduce(+, select(j == 0, y[b][j, d], 0.0));
  return r;
}
fn take(x: S, k: i32) [B, D]f32 {
  let m: [B]i32;
  m[b] = max(min(x.seqlen[b], k), 0);
  let y: [b: B][m[b], D]f32;
  y[b][i, d] = x.data[b][i, d];
  let r: [B, D]f32;
  r[b, d] = reduce(+, select(j == 0, y[b][j, d], 0.0));
  return r;
})");
  ASSERT_TRUE(l.module);
  ASSERT_EQ(l.module->funcs.size(), 2u);
  Func& drop = l.module->funcs[0];
  Func& take = l.module->funcs[1];
  ASSERT_TRUE(lower_storage(drop, *l.diags));
  ASSERT_TRUE(lower_storage(take, *l.diags));
  EXPECT_EQ(length_checks(drop), std::vector<std::string>{"n"});
  EXPECT_TRUE(length_checks(take).empty());
  // The check runs before the statement that sums n's offsets.
  std::vector<Stmt> items = items_of(drop.body);
  size_t check = items.size(), fill = items.size();
  for (size_t k = 0; k < items.size(); ++k) {
    each_stmt(items[k], [&](const StmtNode& s) {
      if (s.kind == StmtKind::Assert && s.length_check && check == items.size()) check = k;
      if (s.kind == StmtKind::Store && s.buffer->kind == BufferKind::Aux && fill == items.size()) fill = k;
    });
  }
  EXPECT_LT(check, fill);
  // Lowered and interpreted: seqlen = [1, 3], k = 2 gives n = [-1, 1].
  auto inputs = Interpreter::make_inputs(drop, {{"B", 2}, {"D", 1}}, [](const BufferNode* b, int64_t k) {
    if (b->name == "x.seqlen") return k == 0 ? 1.0 : 3.0;
    if (b->name == "k") return 2.0;
    return 1.0;
  });
  std::ostringstream out;
  Interpreter in(out);
  try {
    in.run(drop, {{"B", 2}, {"D", 1}}, inputs);
    ADD_FAILURE() << "a negative computed length ran";
  } catch (const InterpError& e) {
    EXPECT_STREQ(e.what(), "drop: `n`[0] is -1, a length the function computes; lengths must be >= 0");
  }
}

}  // namespace
}  // namespace dccc::ir
