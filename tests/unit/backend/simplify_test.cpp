// Differential tests of ir/simplify_indices after schedules: each scheduled
// function, simplified (index rewrites through the fusion maps, bound checks
// dropped, aux loads hoisted), through the LLVM backend against the float64
// reference of the unscheduled program, and through the interpreter bit for
// bit against the same scheduled program without the pass, on random length
// patterns (lengths 0 .. 12, mostly not multiples of the factors,
// zero-length sequences, B = 1, one sequence of 70).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "backend/llvm/jit.h"
#include "ir/apply_schedule.h"
#include "ir/printer.h"
#include "ir/schedule.h"
#include "ir/simplify_indices.h"
#include "ir/verifier.h"
#include "tests/unit/backend/differential.h"
#include "tests/unit/backend/schedule_support.h"

namespace dccc::backend {
namespace {

const char* kProgram = testing::kSeqsProgram;

/// kProgram with `schedule`, compiled as the driver does for the CPU; with
/// `simplify` also through ir/simplify_indices.
testing::Program compile(const std::string& schedule, bool simplify, ir::SimplifyReport* report = nullptr) {
  testing::ScheduledOptions o;
  o.simplify = simplify;
  o.report = report;
  return testing::compile_with_schedule(kProgram, schedule, o, "simplify_test.toy");
}

struct Case {
  const char* name;
  const char* schedule;
  const char* shows;  // text the simplified IR must contain
  const char* gone;   // text of the unsimplified IR it must no longer contain ("" for none)
  int checks;         // bound checks the pass must remove
};

class SimplifyDifferential : public ::testing::TestWithParam<Case> {};

TEST_P(SimplifyDifferential, MatchesUnscheduledAndUnsimplified) {
  const Case& c = GetParam();
  testing::Program plain = compile("", false);
  ASSERT_TRUE(plain.module);
  testing::Program sched = compile(c.schedule, false);
  ASSERT_TRUE(sched.module);
  ir::SimplifyReport report;
  testing::Program simp = compile(c.schedule, true, &report);
  ASSERT_TRUE(simp.module);
  std::string before = ir::print(*sched.module), after = ir::print(*simp.module);
  EXPECT_NE(after.find(c.shows), std::string::npos) << after;
  if (*c.gone) {
    EXPECT_NE(before.find(c.gone), std::string::npos) << before;
    EXPECT_EQ(after.find(c.gone), std::string::npos) << after;
  }
  EXPECT_EQ(report.checks, c.checks) << after;
  std::string error;
  auto jit_plain = JitProgram::compile(*plain.module, error);
  ASSERT_TRUE(jit_plain) << error;
  auto jit_simp = JitProgram::compile(*simp.module, error);
  ASSERT_TRUE(jit_simp) << error;
  int compared = 0;
  testing::run_differential(plain.module->funcs[0],
                            {testing::Engine{"llvm simplified", jit_simp->kernel("f")},
                             testing::Engine{"llvm unscheduled", jit_plain->kernel("f")}},
                            c.name, compared);
  EXPECT_GT(compared, 100);
  // The interpreter: the simplified program bit for bit as the scheduled one
  // and as the unscheduled one (the pass changes no float operation).
  int runs = 0;
  const ir::Func& pf = plain.module->funcs[0];
  const ir::Func& sf = sched.module->funcs[0];
  const ir::Func& xf = simp.module->funcs[0];
  for (int pattern = 0; pattern < 4; ++pattern) {
    std::map<std::string, int64_t> sizes{{"B", pattern == 2 ? 1 : 5}, {"H", 3}};
    runs += testing::expect_same_outputs({&pf, &sf, &xf}, sizes, pattern, 11 + pattern, c.name);
  }
  EXPECT_EQ(runs, 4);
}

INSTANTIATE_TEST_SUITE_P(
    Schedules, SimplifyDifferential,
    ::testing::Values(
        Case{"unscheduled", "", "hoist0[] = ", "", 0},
        Case{"fuse", "schedule f { fuse(y.data.b, y.data.i); }", "y.data@(((b_i * H) + h.2))", "A0@(F_fo0@(b_i))", 0},
        Case{"fuse_reduce", "schedule f { fuse(t.data.b, t.data.i); }", "((b_i * H) + k)", "A0@(F_fo0@(b_i))", 0},
        Case{"fuse_split", "schedule f { fuse(u.data.b, u.data.i); split(u.data.b_i, 4); }",
             "(((b_i_o * 4) + b_i_i) * H)", "A0@(F_fo0@(((b_i_o * 4) + b_i_i)))", 0},
        // The guard of bulk padding is needed (the padded iterations lie past
        // the fused extent) and stays.
        Case{"fuse_bulk_pad", "schedule f { fuse(y.data.b, y.data.i); pad_loop(y.data.b_i, 8); }",
             "if (b_i < hoist", "A0@(F_fo0@(b_i))", 0},
        Case{"fuse_twice", "schedule f { fuse(y.data.b, y.data.i); fuse(t.data.b, t.data.i); }", "F_fo1", "", 0},
        // The guard of pad_loop is needed; the split's, below the padded
        // extent, is not.
        // `split` emits no check for a loop padded to a multiple of the
        // factor (apply_schedule's is_multiple_of): nothing left to remove.
        Case{"pad_then_split", "schedule f { pad_loop(y.data.i, 4); split(y.data.i, 4); }",
             "if (((i_o * 4) + i_i) < i64(hoist", "", 0},
        Case{"pad_guarded", "schedule f { pad_loop(y.data.i, 4); }", "if (i.2 < i64(", "", 0},
        Case{"split_vloop", "schedule f { split(y.data.i, 3); }", "if (((i_o * 3) + i_i) < i64(hoist", "", 0},
        Case{"tile", "schedule f { tile(u.data.i, u.data.h, 4, 2); }", "h_i", "", 0}),
    [](const ::testing::TestParamInfo<Case>& p) { return std::string(p.param.name); });

}  // namespace
}  // namespace dccc::backend
