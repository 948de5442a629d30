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
    auto gen = [pattern](std::mt19937& r) {
      return [pattern, &r](const ir::BufferNode* b, int64_t k) -> double {
        if (is_int(b->type)) {
          switch (pattern) {
            case 0: return std::uniform_int_distribution<int>(1, 9)(r);
            case 1: return k % 2 ? 0 : std::uniform_int_distribution<int>(1, 9)(r);
            case 2: return std::uniform_int_distribution<int>(0, 12)(r);
            default: return k == 1 ? 70 : std::uniform_int_distribution<int>(0, 3)(r);
          }
        }
        return std::uniform_real_distribution<double>(-1.0, 1.0)(r);
      };
    };
    std::mt19937 r1(11 + pattern), r2(11 + pattern), r3(11 + pattern);
    auto in1 = ir::Interpreter::make_inputs(pf, sizes, gen(r1));
    auto in2 = ir::Interpreter::make_inputs(sf, sizes, gen(r2));
    auto in3 = ir::Interpreter::make_inputs(xf, sizes, gen(r3));
    std::ostringstream o1, o2, o3;
    ir::Interpreter a(o1), b(o2), x(o3);
    a.run(pf, sizes, in1);
    b.run(sf, sizes, in2);
    x.run(xf, sizes, in3);
    for (size_t k = 0; k < pf.buffers.size(); ++k) {
      if (pf.buffers[k]->kind != ir::BufferKind::Output) continue;
      auto want = a.packed(pf.buffers[k].get());
      auto mid = b.packed(sf.buffers[k].get());
      auto got = x.packed(xf.buffers[k].get());
      ASSERT_EQ(want.size(), got.size());
      ASSERT_EQ(mid.size(), got.size());
      for (size_t e = 0; e < want.size(); ++e) {
        EXPECT_EQ(want[e], got[e]) << c.name << " pattern " << pattern << " [" << e << "]";
        EXPECT_EQ(mid[e], got[e]) << c.name << " pattern " << pattern << " [" << e << "]";
      }
      ++runs;
    }
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
