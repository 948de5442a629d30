// Differential tests of schedules (ir/apply_schedule.h): each directive on a
// ragged function with a local intermediate, run on random length patterns
// (lengths 0 .. 12 that are mostly not multiples of the padding, zero-length
// sequences, B = 1, one sequence of 70): the scheduled program through the
// LLVM backend and through the reference interpreter must give what the
// unscheduled program gives.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "backend/llvm/jit.h"
#include "ir/apply_schedule.h"
#include "ir/printer.h"
#include "ir/schedule.h"
#include "tests/unit/backend/differential.h"
#include "tests/unit/backend/schedule_support.h"

namespace dccc::backend {
namespace {

const char* kProgram = testing::kSeqsProgram;

/// Attention-like: the innermost loops of `s` (a reduce over h) and of `y`
/// (a reduce over j) cannot be padded by default, that of `e` (j, over the
/// local tensors s and e only) can.
const char* kAttention = R"(
type Seqs = coupling {
    data: [b: B][seqlen[b], H]f32,
    seqlen: [B]i32
}

fn f(x: Seqs, w: [H, H]f32) -> Seqs {
    let s: [b: B][x.seqlen[b], x.seqlen[b]]f32;
    s[b][i, j] = reduce(+, x.data[b][i, h] * x.data[b][j, h]);
    let e: [b: B][x.seqlen[b], x.seqlen[b]]f32;
    e[b][i, j] = exp(s[b][i, j] * 0.25) + 1.0;
    let y = Seqs { data: [b: B][x.seqlen[b], H]f32, seqlen: x.seqlen };
    y.data[b][i, h] = reduce(+, e[b][i, j] * x.data[b][j, h]);
    return y;
}
)";

/// `program` with `schedule` appended, compiled as the driver does for the
/// CPU, with `defaults`.
testing::Program compile_scheduled(const std::string& schedule, const char* program = kProgram,
                                   const ir::ScheduleDefaults& defaults = {}) {
  return testing::compile_with_schedule(program, schedule, {defaults}, "schedule_test.toy");
}

using testing::messages;

struct Case {
  const char* name;
  const char* schedule;
  const char* shows;  // text the scheduled IR must contain (the schedule took effect)
};

class ScheduleDifferential : public ::testing::TestWithParam<Case> {};

/// `sched` (scheduled) against `plain` (not): LLVM against the float64
/// reference, and the interpreter bit for bit.
void expect_same_results(const testing::Program& plain, const testing::Program& sched, const Case& c);

TEST_P(ScheduleDifferential, MatchesUnscheduled) {
  const Case& c = GetParam();
  testing::Program plain = compile_scheduled("");
  ASSERT_TRUE(plain.module) << messages(*plain.diags);
  testing::Program sched = compile_scheduled(c.schedule);
  ASSERT_TRUE(sched.module) << messages(*sched.diags);
  expect_same_results(plain, sched, c);
}

void expect_same_results(const testing::Program& plain, const testing::Program& sched, const Case& c) {
  EXPECT_NE(ir::print(*sched.module).find(c.shows), std::string::npos) << ir::print(*sched.module);
  EXPECT_NE(ir::print(*sched.module), ir::print(*plain.module));
  std::string error;
  auto jit_plain = JitProgram::compile(*plain.module, error);
  ASSERT_TRUE(jit_plain) << error;
  auto jit_sched = JitProgram::compile(*sched.module, error);
  ASSERT_TRUE(jit_sched) << error;
  const ir::Func& pf = plain.module->funcs[0];
  const ir::Func& sf = sched.module->funcs[0];
  // LLVM, scheduled and not, against the float64 reference of the unscheduled program.
  int compared = 0;
  testing::run_differential(pf, {testing::Engine{"llvm scheduled", jit_sched->kernel("f")}, testing::Engine{"llvm", jit_plain->kernel("f")}},
                            c.name, compared);
  EXPECT_GT(compared, 100);
  // The interpreter on the scheduled IR: the same operations in the same
  // order as the unscheduled program, so bit for bit the same outputs.
  int runs = 0;
  for (int pattern = 0; pattern < 4; ++pattern) {
    std::map<std::string, int64_t> sizes{{"B", pattern == 2 ? 1 : 5}, {"H", 3}};
    runs += testing::expect_same_outputs({&pf, &sf}, sizes, pattern, 7 + pattern, c.name);
  }
  EXPECT_EQ(runs, 4);
}

INSTANTIATE_TEST_SUITE_P(
    Directives, ScheduleDifferential,
    ::testing::Values(
        Case{"pad_loop_guarded", "schedule f { pad_loop(y.data.i, 4); }", "if (i.2 < i64(x.seqlen@(b.3)))"},
        Case{"pad_loop_into_storage", "schedule f { pad_storage(u.data.i, 8); pad_loop(u.data.i, 4); }", "pad 8"},
        Case{"pad_storage_only", "schedule f { pad_storage(t.data.h, 2); pad_storage(u.data.i, 3); }", "pad 3"},
        Case{"pad_reduce_loop", "schedule f { pad_loop(t.data.k, 4); pad_loop(t.data.i, 2); }", "(k < H)"},
        Case{"pad_into_storage_both", "schedule f { pad_storage(t.data.i, 4); pad_loop(t.data.i, 4); "
                                      "pad_storage(u.data.i, 4); pad_loop(u.data.i, 2); }", "pad 4"},
        Case{"split_vloop", "schedule f { split(y.data.i, 3); }", "i_o"},
        Case{"split_reduce", "schedule f { split(t.data.k, 2); }", "k_i"},
        Case{"reorder_dense", "schedule f { split(u.data.h, 2); reorder(u.data.h_o, u.data.i); }", "h_o"},
        Case{"tile", "schedule f { tile(u.data.i, u.data.h, 4, 2); }", "h_i"},
        Case{"fuse", "schedule f { fuse(y.data.b, y.data.i); }", "parallel b_i in 0 .. F_oif0@(B)"},
        Case{"fuse_reduce", "schedule f { fuse(t.data.b, t.data.i); }", "F_fi0@(b_i)"},
        Case{"fuse_split", "schedule f { fuse(u.data.b, u.data.i); split(u.data.b_i, 4); }", "b_i_o"},
        Case{"fuse_bulk_pad", "schedule f { fuse(y.data.b, y.data.i); pad_loop(y.data.b_i, 8); }",
             "if (b_i < F_oif0@(B))"},
        Case{"fuse_twice", "schedule f { fuse(y.data.b, y.data.i); fuse(t.data.b, t.data.i); }", "F_fo1"},
        Case{"everything", "schedule f { pad_storage(u.data.i, 4); pad_loop(u.data.i, 4); tile(u.data.i, u.data.h, 2, 2); "
                           "split(t.data.k, 2); split(y.data.b, 2); }", "b_o"}),
    [](const ::testing::TestParamInfo<Case>& p) { return std::string(p.param.name); });

// The CPU default padding (ir::kCpuDefaultPad): on the attention-like
// function it pads `e`'s loop j and the storage of `s` and `e` along j, and
// nothing else; results are unchanged on every length pattern.
TEST(ScheduleDefaults, AttentionPaddedWhereUnguardedAndUnchanged) {
  testing::Program plain = compile_scheduled("", kAttention);
  ASSERT_TRUE(plain.module) << messages(*plain.diags);
  testing::Program sched = compile_scheduled("", kAttention, ir::ScheduleDefaults{ir::kCpuDefaultPad});
  ASSERT_TRUE(sched.module) << messages(*sched.diags);
  std::string text = ir::print(*sched.module);
  // s and e padded along j (4 when kCpuDefaultPad is 4), y (the result) not.
  std::string pad = fmt::format("pad {}]", ir::kCpuDefaultPad);
  size_t count = 0;
  for (size_t at = text.find(pad); at != std::string::npos; at = text.find(pad, at + 1)) ++count;
  EXPECT_EQ(count, 2u) << text;
  for (const char* name : {"local s:", "local e:"}) {
    size_t line = text.find(name);
    ASSERT_NE(line, std::string::npos) << text;
    EXPECT_NE(text.substr(line, text.find('\n', line) - line).find(pad), std::string::npos) << name;
  }
  // e's loop j runs to a rounded-up extent; s's and y's loops j do not
  // (s's, a dot product over h sharing x.data[b][i, h], comes unrolled and
  // jammed by the CPU pipeline's last pass, ir/jam_reductions.h: four j at
  // once up to the length, then the rest).
  EXPECT_NE(text.find(fmt::format("for j in 0 .. (((i64(x.seqlen@(b.4)) + {}) / {}) * {})", ir::kCpuDefaultPad - 1,
                                  ir::kCpuDefaultPad, ir::kCpuDefaultPad)),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("for j.o in 0 .. (i64(x.seqlen@(b.3)) / 4)"), std::string::npos) << text;
  EXPECT_NE(text.find("for j.r in 0 .. (i64(x.seqlen@(b.3)) % 4)"), std::string::npos) << text;
  EXPECT_NE(text.find("for j.1 in 0 .. i64(x.seqlen@(b.5))"), std::string::npos) << text;
  EXPECT_EQ(text.find("if ("), std::string::npos) << "default padding is never guarded:\n" << text;
  expect_same_results(plain, sched, Case{"defaults_attention", "", ""});
}

// Off (k = 0), or a directive naming the assignment: no default padding.
TEST(ScheduleDefaults, OffOrOverriddenByDirective) {
  testing::Program plain = compile_scheduled("", kAttention);
  ASSERT_TRUE(plain.module) << messages(*plain.diags);
  testing::Program off = compile_scheduled("", kAttention, ir::ScheduleDefaults{0});
  ASSERT_TRUE(off.module) << messages(*off.diags);
  EXPECT_EQ(ir::print(*off.module), ir::print(*plain.module));
  testing::Program named =
      compile_scheduled("schedule f { split(e.i, 2); }", kAttention, ir::ScheduleDefaults{ir::kCpuDefaultPad});
  ASSERT_TRUE(named.module) << messages(*named.diags);
  EXPECT_EQ(ir::print(*named.module).find(" pad "), std::string::npos) << ir::print(*named.module);
  expect_same_results(plain, named, Case{"defaults_overridden", "", "i_o"});
}

// fuse() over input lengths (x.seqlen): the maps are aux arrays the prelude
// fills (so the C wrapper caches them per length pattern, host/mha_fused),
// the body only reads them, and F_fo/F_fi are sized by F_oif[B]. Both
// fusions' maps; results as the unscheduled program's on every pattern
// (zero lengths included), the LLVM kernel computing the prelude itself.
TEST(ScheduleFuse, MapsAreFilledInThePrelude) {
  testing::Program plain = compile_scheduled("");
  ASSERT_TRUE(plain.module) << messages(*plain.diags);
  testing::Program sched = compile_scheduled("schedule f { fuse(y.data.b, y.data.i); fuse(t.data.b, t.data.i); }");
  ASSERT_TRUE(sched.module) << messages(*sched.diags);
  const ir::Func& f = sched.module->funcs[0];
  std::vector<std::string> filled;
  for (const auto& b : ir::prelude_aux(f)) filled.push_back(b->name);
  for (const char* m : {"F_oif0", "F_fo0", "F_fi0", "F_oif1", "F_fo1", "F_fi1"}) {
    EXPECT_NE(std::find(filled.begin(), filled.end(), m), filled.end()) << m << "\n" << ir::print(*sched.module);
    bool body_stores = false;
    ir::each_stmt(f.body, [&](const ir::StmtNode& x) {
      body_stores |= x.kind == ir::StmtKind::Store && x.buffer->name == m;
    });
    EXPECT_FALSE(body_stores) << m;
  }
  std::string text = ir::print(*sched.module);
  EXPECT_NE(text.find("aux F_fo0: i64 [x.1: F_oif0[B]] total F_oif0@(B);"), std::string::npos) << text;
  EXPECT_EQ(text.find("local F_"), std::string::npos) << text;
  expect_same_results(plain, sched, Case{"fuse_prelude", "", "parallel b_i in 0 .. F_oif1@(B)"});
}

// The first function's defaults on the program with no default-paddable
// loop (every innermost loop reads the input or is constant): unchanged IR.
TEST(ScheduleDefaults, NothingToPadLeavesIrUnchanged) {
  testing::Program plain = compile_scheduled("");
  testing::Program dflt = compile_scheduled("", kProgram, ir::ScheduleDefaults{ir::kCpuDefaultPad});
  ASSERT_TRUE(plain.module && dflt.module);
  EXPECT_EQ(ir::print(*dflt.module), ir::print(*plain.module));
}

}  // namespace
}  // namespace dccc::backend

namespace dccc::backend {
namespace {

// The CoRa directives of ir/remap_loop.h, ir/fuse_elementwise.h (`inline`)
// and ir/fuse_dims.h, against the unscheduled program on the same patterns.
INSTANTIATE_TEST_SUITE_P(
    Cora, ScheduleDifferential,
    ::testing::Values(
        Case{"remap_longest_first", "schedule f { remap(y.data.b, longest_first); }", "y.data@(((A0@(R_perm0@(b_r))"},
        Case{"remap_key_reduce", "schedule f { remap(t.data.b, x.seqlen[b]); }", "R_key0@(y.1) = i64(x.seqlen@(y.1))"},
        Case{"remap_reverse_ties", "schedule f { remap(u.data.b, 0 - b * 0); remap(y.data.b, B - b); }", "R_perm1"},
        Case{"remap_then_split", "schedule f { remap(u.data.b, longest_first); split(u.data.b, 2); }", "b_o"},
        Case{"inline", "schedule f { inline(u.data); }", "exp(t.data@("},
        Case{"inline_then_pad", "schedule f { inline(u.data); pad_loop(y.data.i, 4); }", "if (i.1 < i64(x.seqlen@(b.2)))"},
        Case{"fuse_dims", "schedule f { fuse(u.data.b, u.data.i); fuse_dims(u.data.b, u.data.i); }",
             "u.data@(((b_i * H) + h.1))"},
        Case{"fuse_dims_reduce", "schedule f { fuse(t.data.b, t.data.i); fuse_dims(t.data.b, t.data.i); }",
             "x.data@(((b_i * H) + k))"},
        Case{"fuse_dims_split", "schedule f { fuse(y.data.b, y.data.i); fuse_dims(y.data.b, y.data.i); "
                                "split(y.data.b_i, 4); }", "y.data@(((((b_i_o * 4) + b_i_i) * H) + h.2))"},
        Case{"split_fuse_dims", "schedule f { fuse(y.data.b, y.data.i); split(y.data.b_i, 3); "
                                "fuse_dims(y.data.b, y.data.i); }", "(((b_i_o * 3) + b_i_i) * H)"},
        Case{"fuse_dims_bulk_pad", "schedule f { fuse(y.data.b, y.data.i); pad_loop(y.data.b_i, 8); "
                                   "fuse_dims(y.data.b, y.data.i); }", "if (b_i < F_oif0@(B))"},
        Case{"fuse_dims_padded_rows", "schedule f { pad_storage(u.data.h, 4); fuse(u.data.b, u.data.i); "
                                      "fuse_dims(u.data.b, u.data.i); }", "u.data@(((b_i * (((H + 3) / 4) * 4))"}),
    [](const ::testing::TestParamInfo<Case>& p) { return std::string(p.param.name); });

// The permutation itself, on lengths 1, 0, 2, 2, 5 (H = 3), computed by
// hand: longest first (work = 3 * length) is 4, 2, 3, 0, 1 (2 and 3 tie:
// by index); the key `0 - x.seqlen[b]` (shortest first) gives 1, 0, 2, 3, 4.
TEST(ScheduleCora, RemapPermutationByHand) {
  for (auto [schedule, want] : std::vector<std::pair<const char*, std::vector<double>>>{
           {"schedule f { remap(y.data.b, longest_first); }", {4, 2, 3, 0, 1}},
           {"schedule f { remap(y.data.b, 0 - x.seqlen[b]); }", {1, 0, 2, 3, 4}}}) {
    testing::Program sched = compile_scheduled(schedule);
    ASSERT_TRUE(sched.module) << messages(*sched.diags);
    const ir::Func& f = sched.module->funcs[0];
    std::map<std::string, int64_t> sizes{{"B", 5}, {"H", 3}};
    const double lens[] = {1, 0, 2, 2, 5};
    auto in = ir::Interpreter::make_inputs(f, sizes, [&](const ir::BufferNode* b, int64_t k) -> double {
      return is_int(b->type) ? lens[k] : 0.25 * static_cast<double>(k % 7);
    });
    std::ostringstream o;
    ir::Interpreter run(o);
    run.run(f, sizes, in);
    const ir::BufferNode* perm = nullptr;
    for (const auto& b : f.buffers)
      if (b->name == "R_perm0") perm = b.get();
    ASSERT_NE(perm, nullptr) << ir::print(*sched.module);
    EXPECT_EQ(run.packed(perm), want) << schedule;
  }
}

/// A padding-change operator: `p` only copies `t` into storage padded by
/// the schedule; `inline` fuses it into its consumer, or its producer into it.
const char* kPadChange = R"(
type Seqs = coupling {
    data: [b: B][seqlen[b], H]f32,
    seqlen: [B]i32
}

fn f(x: Seqs, w: [H, H]f32) -> Seqs {
    let t = Seqs { data: [b: B][x.seqlen[b], H]f32, seqlen: x.seqlen };
    t.data[b][i, h] = x.data[b][i, h] * 0.5 + 1.0;
    let p = Seqs { data: [b: B][x.seqlen[b], H]f32, seqlen: x.seqlen };
    p.data[b][i, h] = t.data[b][i, h];
    let y = Seqs { data: [b: B][x.seqlen[b], H]f32, seqlen: x.seqlen };
    y.data[b][i, h] = reduce(+, p.data[b][i, k] * w[k, h]);
    return y;
}
)";

TEST(ScheduleCora, PaddingChangeFusedIntoNeighbours) {
  testing::Program plain = compile_scheduled("", kPadChange);
  ASSERT_TRUE(plain.module) << messages(*plain.diags);
  for (const char* s : {"schedule f { pad_storage(p.data.i, 4); inline(p.data); }",
                        "schedule f { pad_storage(p.data.i, 4); inline(t.data); }",
                        "schedule f { pad_storage(p.data.h, 2); inline(t.data); inline(p.data); }"}) {
    testing::Program sched = compile_scheduled(s, kPadChange);
    ASSERT_TRUE(sched.module) << s << "\n" << messages(*sched.diags);
    std::string text = ir::print(*sched.module);
    // One statement fewer: no store of the fused tensor is left.
    bool t_gone = std::string(s).find("inline(t.data)") != std::string::npos;
    bool p_gone = std::string(s).find("inline(p.data)") != std::string::npos;
    EXPECT_EQ(text.find("  t.data@"), t_gone ? std::string::npos : text.find("  t.data@")) << text;
    if (t_gone) {
      EXPECT_EQ(text.find("local t.data"), std::string::npos) << text;
    }
    if (p_gone) {
      EXPECT_EQ(text.find("local p.data"), std::string::npos) << text;
    }
    expect_same_results(plain, sched, Case{"pad_change", s, "y.data@("});
  }
}

}  // namespace
}  // namespace dccc::backend
