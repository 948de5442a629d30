// ir/simplify_indices: the prover must accept valid rewrites and refuse
// invalid ones (a guard that matters stays), and the pass must leave every
// program's results bit for bit unchanged (interpreter, four length
// patterns with zero-length sequences, on every example and run program).
// What the pass makes of given IR (fused offsets, bound checks that go or
// stay, hoisted loads) is tested as IR text in tests/passes/simplify-indices.
#include "ir/simplify_indices.h"

#include <gtest/gtest.h>

#include "ir/apply_schedule.h"
#include "ir/ir_parser.h"
#include "ir/printer.h"
#include "ir/schedule.h"
#include "ir/storage_lowering.h"
#include "ir/verifier.h"
#include "tests/unit/ir/test_support.h"
#include "tests/unit/test_paths.h"

namespace dccc::ir {
namespace {

using testing::compare_transformed;
using testing::lower_source;
using testing::Lowered;

/// A program with its `schedule` blocks applied and storage lowered.
struct Scheduled {
  Lowered l;
  Func* f = nullptr;
};

Scheduled schedule_and_lower(const std::string& text, const std::string& fn = "main") {
  Scheduled s;
  s.l = lower_source("t.toy", text);
  EXPECT_TRUE(s.l.module);
  if (!s.l.module) return s;
  auto schedules = schedules_from_ast(*s.l.program, s.l.file.get(), *s.l.diags);
  for (auto& f : s.l.module->funcs) {
    if (f.name != fn) continue;
    Schedule none{f.name, {}, {}};
    const Schedule* mine = &none;
    for (const auto& x : schedules)
      if (x.func == f.name) mine = &x;
    EXPECT_TRUE(apply_schedule(f, mine, *s.l.diags));
    EXPECT_TRUE(lower_storage(f, *s.l.diags));
    s.f = &f;
  }
  return s;
}

Buffer buffer_ptr(const Func& f, const std::string& name) {
  for (const auto& b : f.buffers)
    if (b->name == name) return b;
  ADD_FAILURE() << "no buffer " << name;
  return nullptr;
}

Expr ld(const Func& f, const std::string& name, Expr i) { return build::flat_load(buffer_ptr(f, name), std::move(i)); }
Expr bin(BinOp op, Expr a, Expr b) { return build::binary(op, std::move(a), std::move(b)); }
Expr imm(int64_t v) { return build::int_imm(v); }

// Lengths 2, 0, 3 in a local array; t is [b: 3][lens[b], 2].
const char* kFused = R"(
fn main() {
    let lens: [3]i32 = [2, 0, 3];
    let t: [b: 3][lens[b], 2]f32;
    t[b][i, h] = f32(b * 100 + i * 10 + h);
    print(t);
}
schedule main { fuse(t.b, t.i); }
)";

TEST(SimplifyProver, FusionAxiomsProveValidAndRefuseInvalidRewrites) {
  Scheduled s = schedule_and_lower(kFused);
  ASSERT_TRUE(s.f);
  const Func& f = *s.f;
  Var fv = make_var("f");
  Expr F = ld(f, "F_oif0", imm(3));
  std::vector<std::pair<Var, Expr>> loops{{fv, F}};
  Expr x = build::var(fv);
  Expr fo = ld(f, "F_fo0", x), fi = ld(f, "F_fi0", x);
  Expr a_fo = ld(f, "A0", fo);
  Expr lens_fo = build::cast(Scalar::I64, ld(f, "lens", fo));
  // A0[b] = 2 * F_oif0[b] (proportional prefix sums), F_oif0[F_fo0[f]] + F_fi0[f] = f.
  EXPECT_TRUE(prove_in_func(f, loops, bin(BinOp::EQ, bin(BinOp::Add, a_fo, bin(BinOp::Mul, fi, imm(2))),
                                        bin(BinOp::Mul, x, imm(2)))));
  EXPECT_TRUE(prove_in_func(f, loops, bin(BinOp::EQ, bin(BinOp::Add, ld(f, "F_oif0", fo), fi), x)));
  EXPECT_TRUE(prove_in_func(f, loops, bin(BinOp::LT, fi, lens_fo)));
  EXPECT_TRUE(prove_in_func(f, loops, bin(BinOp::LT, fo, imm(3))));
  EXPECT_TRUE(prove_in_func(f, loops, bin(BinOp::LE, imm(0), fi)));
  // Invalid: off by one, the wrong factor, a bound that needs a specific sequence.
  EXPECT_FALSE(prove_in_func(f, loops, bin(BinOp::EQ, bin(BinOp::Add, a_fo, bin(BinOp::Mul, fi, imm(2))),
                                         bin(BinOp::Add, bin(BinOp::Mul, x, imm(2)), imm(1)))));
  EXPECT_FALSE(prove_in_func(f, loops, bin(BinOp::EQ, bin(BinOp::Add, a_fo, fi), bin(BinOp::Mul, x, imm(2)))));
  EXPECT_FALSE(prove_in_func(f, loops, bin(BinOp::LT, fi, build::cast(Scalar::I64, ld(f, "lens", imm(0))))));
  EXPECT_FALSE(prove_in_func(f, loops, bin(BinOp::LT, fo, imm(2))));
  EXPECT_FALSE(prove_in_func(f, loops, bin(BinOp::LT, fi, imm(2))));
  // Bulk padding's guard: f may run past the fused extent, so f < F is not implied.
  Var g = make_var("g");
  Expr padded = build::round_up(F, 8);
  EXPECT_FALSE(prove_in_func(f, {{g, padded}}, bin(BinOp::LT, build::var(g), F)));
  EXPECT_TRUE(prove_in_func(f, {{g, F}}, bin(BinOp::LT, build::var(g), F)));
}

TEST(SimplifyProver, DivisionAndSplitBounds) {
  Scheduled s = schedule_and_lower(kFused);
  ASSERT_TRUE(s.f);
  const Func& f = *s.f;
  Var i = make_var("i"), j = make_var("j"), n = make_var("n");
  Expr iv = build::var(i), jv = build::var(j);
  Expr e = bin(BinOp::Div, bin(BinOp::Add, bin(BinOp::Mul, iv, imm(4)), jv), imm(4));
  EXPECT_TRUE(prove_in_func(f, {{i, build::size("N")}, {j, imm(4)}}, bin(BinOp::EQ, e, iv)));
  EXPECT_FALSE(prove_in_func(f, {{i, build::size("N")}, {j, imm(5)}}, bin(BinOp::EQ, e, iv)));
  // A split of a padded loop: i_o * 4 + i_i < round_up(E, 4) holds, i_o * 4 + i_i < E does not.
  Expr E = build::cast(Scalar::I64, ld(f, "lens", build::var(n)));
  Expr R = build::round_up(E, 4);
  Expr outer = bin(BinOp::Div, bin(BinOp::Add, R, imm(3)), imm(4));
  Expr idx = bin(BinOp::Add, bin(BinOp::Mul, iv, imm(4)), jv);
  std::vector<std::pair<Var, Expr>> loops{{n, imm(3)}, {i, outer}, {j, imm(4)}};
  EXPECT_TRUE(prove_in_func(f, loops, bin(BinOp::LT, idx, R)));
  EXPECT_FALSE(prove_in_func(f, loops, bin(BinOp::LT, idx, E)));
}

std::string lowered_text(const std::string& text, SimplifyReport* report = nullptr) {
  Scheduled s = schedule_and_lower(text);
  if (!s.f) return "";
  SimplifyReport r = simplify_indices(*s.f);
  EXPECT_EQ(verify(*s.f, "simplify-indices"), std::vector<std::string>{});
  if (report) *report = r;
  return print(*s.f);
}

TEST(SimplifyIndices, NeededBulkPaddingGuardStaysAndRedundantSplitGuardGoes) {
  // Bulk padding of the fused loop to 4: 5 iterations run to 8; the guard
  // f < F_oif0[3] matters for f = 5, 6, 7 and must stay.
  SimplifyReport r;
  std::string text = lowered_text(std::string(kFused).replace(std::string(kFused).find("fuse(t.b, t.i);"), 15,
                                                              "fuse(t.b, t.i); pad_loop(t.b_i, 4);"),
                                   &r);
  // F_oif0[3] itself is read once, before the loop.
  EXPECT_NE(text.find("if (b_i < hoist"), std::string::npos) << text;
  EXPECT_EQ(r.checks, 0);
  // pad_loop then split by the same factor: the split's check
  // i_o * 4 + i_i < round_up(E, 4) always holds; the padding's i < E does not.
  const char* padded_split = R"(
fn main() {
    let lens: [3]i32 = [2, 0, 5];
    let t: [b: 3][lens[b]]f32;
    t[b][i] = f32(b * 10 + i);
    print(t);
}
schedule main { pad_loop(t.i, 4); split(t.i, 4); }
)";
  std::string before;
  {
    Scheduled s = schedule_and_lower(padded_split);
    ASSERT_TRUE(s.f);
    before = print(*s.f);
  }
  text = lowered_text(padded_split, &r);
  // `split` itself now knows that a loop padded to a multiple of 4 splits by
  // 4 exactly (ir/schedule/split.cpp, is_multiple_of): the schedule emits
  // neither the redundant check nor ceil(round_up(E, 4) / 4), so the
  // simplifier finds nothing to remove here (removal is shown by
  // GuardInsideItsOwnRangeGoesAndDivisionFolds); the padding's check stays.
  EXPECT_EQ(r.checks, 0) << text;
  EXPECT_EQ(before.find("if (((i_o * 4) + i_i) < ((("), std::string::npos) << before;
  EXPECT_EQ(text.find("if (((i_o * 4) + i_i) < ((("), std::string::npos) << text;
  EXPECT_NE(text.find("if (((i_o * 4) + i_i) < i64(hoist0[]))"), std::string::npos) << text;
  EXPECT_NE(before.find("for i_o in 0 .. ((i64(lens@(b.1)) + 3) / 4)"), std::string::npos) << before;
  EXPECT_NE(text.find("for i_o in 0 .. ((i64(lens@(b.1)) + 3) / 4)"), std::string::npos) << text;
}

TEST(SimplifyIndices, ExamplesAndRunProgramsComputeTheSameBits) {
  int ran = 0, skipped = 0, programs = 0;
  for (const auto& p : test_files::toy_files({test_paths::examples_dir(), test_paths::lang_run_dir()})) {
    std::string text = testing::read_file(p);
    Lowered probe = lower_source(p.string(), text);
    if (!probe.module) continue;  // programs that must fail
    ++programs;
    compare_transformed(
        p.string(), text,
        [](Func& f, DiagnosticEngine& d) {
          if (!lower_storage(f, d)) return false;
          simplify_indices(f);
          return verify(f, "simplify-indices").empty();
        },
        ran, skipped);
  }
  EXPECT_GT(programs, test_files::at_least(10));
  EXPECT_GT(ran, test_files::at_least(40));
}

}  // namespace
}  // namespace dccc::ir
