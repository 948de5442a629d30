// Differential tests of operation splitting and horizontal fusion
// (ir/split_op.h, ir/hfuse.h, the `split_op` and `hfuse` directives): on
// ragged functions and on examples/mha.toy, run on random length patterns
// (lengths 0 .. 12, mostly not multiples of the split factor, zero-length
// sequences, B = 1, one sequence of 70), the scheduled program through the
// LLVM backend must match the float64 reference and the unscheduled
// program's LLVM kernel, and through the reference interpreter it must
// give bit for bit what the unscheduled program gives (neither transform
// changes the order of any element's operations).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "backend/llvm/jit.h"
#include "ir/apply_schedule.h"
#include "ir/ir_parser.h"
#include "ir/printer.h"
#include "ir/schedule.h"
#include "tests/unit/backend/differential.h"
#include "tests/unit/backend/schedule_support.h"
#include "tests/unit/test_paths.h"

namespace dccc::backend {
namespace {

/// t (a contraction, `reduce` inside the i loop), u and y element-wise;
/// v and w independent of each other (both read x only).
const char* kProgram = R"(
type Seqs = coupling {
    data: [b: B][seqlen[b], H]f32,
    seqlen: [B]i32
}

fn f(x: Seqs, w: [H, H]f32) -> Seqs {
    let t = Seqs { data: [b: B][x.seqlen[b], H]f32, seqlen: x.seqlen };
    t.data[b][i, h] = reduce(+, x.data[b][i, k] * w[k, h]);
    let u = Seqs { data: [b: B][x.seqlen[b], H]f32, seqlen: x.seqlen };
    u.data[b][i, h] = t.data[b][i, h] * 0.5 + exp(t.data[b][i, h]);
    let v: [b: B][x.seqlen[b], H]f32;
    v[b][i, h] = x.data[b][i, h] * 3.0;
    let e: [b: B][x.seqlen[b], H]f32;
    e[b][i, h] = exp(x.data[b][i, h]);
    let y = Seqs { data: [b: B][x.seqlen[b], H]f32, seqlen: x.seqlen };
    y.data[b][i, h] = u.data[b][i, h] - v[b][i, h] + e[b][i, h];
    return y;
}
)";

std::string read_mha() {
  std::ifstream in(test_paths::examples_dir() + "/mha.toy");
  std::stringstream s;
  s << in.rdbuf();
  // The chain as written, its scores kept (split_op is compared with the
  // unscheduled program bit for bit; the online form rounds differently).
  return s.str() + "\nschedule mha { materialize(scores); }\n";
}

/// `program` with `schedule` appended, compiled as the driver does for the
/// CPU target (mark_parallel, reorder_loops, the schedule with no default
/// padding, tile_contractions, storage lowering).
testing::Program compile_scheduled(const std::string& schedule, const std::string& program) {
  testing::ScheduledOptions o;
  o.tile = true;
  return testing::compile_with_schedule(program, schedule, o, "split_op_test.toy");
}

using testing::messages;

struct Case {
  const char* name;
  const char* schedule;
  const char* shows;   // text the scheduled IR must contain (the schedule took effect)
  const char* lacks;   // text it must not contain ("" for none)
  bool mha = false;
};

class SplitOpDifferential : public ::testing::TestWithParam<Case> {};

TEST_P(SplitOpDifferential, MatchesUnscheduled) {
  const Case& c = GetParam();
  std::string program = c.mha ? read_mha() : kProgram;
  std::string fname = c.mha ? "mha" : "f";
  testing::Program plain = compile_scheduled("", program);
  ASSERT_TRUE(plain.module) << messages(*plain.diags);
  testing::Program sched = compile_scheduled(c.schedule, program);
  ASSERT_TRUE(sched.module) << messages(*sched.diags);
  std::string text = ir::print(*sched.module);
  EXPECT_NE(text.find(c.shows), std::string::npos) << text;
  if (*c.lacks) {
    EXPECT_EQ(text.find(c.lacks), std::string::npos) << text;
  }
  // The scheduled IR text parses back to the same text.
  {
    SourceFile file("scheduled.vloop", text);
    DiagnosticEngine diags(&file);
    auto back = ir::parse_vloop(file, diags);
    ASSERT_TRUE(back) << messages(diags);
    EXPECT_EQ(ir::print(*back), text);
  }
  std::string error;
  auto jit_plain = JitProgram::compile(*plain.module, error);
  ASSERT_TRUE(jit_plain) << error;
  auto jit_sched = JitProgram::compile(*sched.module, error);
  ASSERT_TRUE(jit_sched) << error;
  const ir::Func& pf = plain.module->funcs[0];
  const ir::Func& sf = sched.module->funcs[0];
  // LLVM, scheduled and not, against the float64 reference.
  int compared = 0;
  testing::run_differential(pf, {testing::Engine{"llvm scheduled", jit_sched->kernel(fname)},
                                 testing::Engine{"llvm", jit_plain->kernel(fname)}},
                            c.name, compared);
  EXPECT_GT(compared, 100);
  // The interpreter: scheduled against unscheduled, bit for bit.
  int runs = 0;
  for (int pattern = 0; pattern < 5; ++pattern) {
    std::map<std::string, int64_t> sizes;
    for (size_t i = 0; i < pf.sizes.size(); ++i) sizes[pf.sizes[i].name] = i == 0 ? (pattern == 2 ? 1 : 6) : 3;
    runs += testing::expect_same_outputs({&pf, &sf}, sizes, pattern, 11 + pattern, c.name);
  }
  EXPECT_EQ(runs, 5);
}

INSTANTIATE_TEST_SUITE_P(
    Directives, SplitOpDifferential,
    ::testing::Values(
        // (The driver's fuse_parallel_loops fuses the parts' `b` and `b_rest`
        // loops back into one, whose variable is the first's.)
        Case{"split_op_elementwise", "schedule f { split_op(u.data.i, 4); }",
             "for i_rest in 0 .. (i64(x.seqlen@(b.3)) % 4)", ""},
        Case{"split_op_contraction", "schedule f { split_op(t.data.i, 3); }", "acc0_rest[] = 0.0f32", ""},
        Case{"split_op_outer_loop", "schedule f { split_op(v.b, 4); }", "parallel b_rest in 0 .. (B % 4)", ""},
        Case{"split_op_then_split", "schedule f { split_op(u.data.i, 4); split(u.data.i, 4); }",
             "for i_o in 0 .. (i64(x.seqlen@(b.", "+ i_i) < "},
        Case{"split_op_then_tile", "schedule f { split_op(u.data.i, 4); tile(u.data.i, u.data.h, 2, 3); }",
             "for i_o in 0 .. ((i64(x.seqlen@(b.", "+ i_i) < "},
        Case{"split_op_hfuse_parts", "schedule f { split_op(u.data.i, 4); hfuse(u.data.b, u.data.b_rest); }",
             "parallel b_b_rest in 0 .. (B + B)", ""},
        Case{"split_op_tile_hfuse",
             "schedule f { split_op(u.data.i, 4); tile(u.data.i, u.data.h, 4, 3); hfuse(u.data.b, u.data.b_rest); "
             "split(u.data.h_rest, 2); }",
             "} else {", "+ i_i) < "},
        Case{"split_op_twice_hfuse_three",
             "schedule f { split_op(u.data.i, 4); split_op(u.data.h, 2); hfuse(u.data.b, u.data.b_rest2, "
             "u.data.b_rest); }",
             "(b_b_rest2_b_rest - (B + B))", ""},
        Case{"split_op_padded_remainder",
             "schedule f { split_op(u.data.i, 4); pad_loop(u.data.i_rest, 4); pad_loop(u.data.i, 8); }",
             "if (i_rest < (i64(x.seqlen@(b.3)) % 4))", ""},
        Case{"hfuse_independent", "schedule f { hfuse(v.b, e.b); }", "(b_b - B)", ""},
        Case{"hfuse_moves_maps", "schedule f { fuse(e.b, e.i); hfuse(v.b, e.b_i); }", "b_b_i", ""},
        Case{"mha_scores", "schedule mha { split_op(scores.i, 4); hfuse(scores.b, scores.b_rest); }",
             "parallel b_b_rest in 0 .. (B + B)", "", true},
        Case{"mha_scores_tiled",
             "schedule mha { split_op(scores.i, 4); tile(scores.i, scores.j, 4, 2); hfuse(scores.b, scores.b_rest); }",
             "for i_o in 0 .. (i64(q.seqlen@(b_b_rest)) / 4)", "((i_o * 4) + i_i) <", true},
        Case{"mha_pv", "schedule mha { split_op(out.data.i, 8); split(out.data.i, 4); hfuse(out.data.b, "
                       "out.data.b_rest); }",
             "((i64(q.seqlen@(b_b_rest)) / 8) * 2)", "((i_o * 4) + i_i) <", true}),
    [](const ::testing::TestParamInfo<Case>& p) { return std::string(p.param.name); });

/// Bad directives reach the user as [Schedule] errors, never a crash (the
/// lang tests check each message; here: no module, an error reported).
TEST(SplitOp, RefusalsAreScheduleErrors) {
  for (const char* s : {"schedule f { split_op(t.data.k, 2); }", "schedule f { hfuse(t.data.b, u.data.b); }",
                        "schedule f { hfuse(v.b, u.data.b); }", "schedule f { split_op(v.h, 3); hfuse(v.h, v.h_rest); }"}) {
    testing::Program p = compile_scheduled(s, kProgram);
    EXPECT_FALSE(p.module) << s;
    EXPECT_NE(messages(*p.diags).find("[Schedule]"), std::string::npos) << s << messages(*p.diags);
  }
}

}  // namespace
}  // namespace dccc::backend
