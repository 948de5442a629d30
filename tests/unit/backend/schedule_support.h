// Shared by the schedule tests (schedule_test, split_op_test,
// simplify_test): a ragged function to schedule and the CPU driver's
// pipeline with a schedule appended to the program.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "ir/apply_schedule.h"
#include "ir/schedule.h"
#include "ir/simplify_indices.h"
#include "ir/verifier.h"
#include "tests/unit/backend/differential.h"

namespace dccc::backend::testing {

/// t a contraction (`reduce` inside the i loop), u and y element-wise.
inline const char* kSeqsProgram = R"(
type Seqs = coupling {
    data: [b: B][seqlen[b], H]f32,
    seqlen: [B]i32
}

fn f(x: Seqs, w: [H, H]f32) -> Seqs {
    let t = Seqs { data: [b: B][x.seqlen[b], H]f32, seqlen: x.seqlen };
    t.data[b][i, h] = reduce(+, x.data[b][i, k] * w[k, h]);
    let u = Seqs { data: [b: B][x.seqlen[b], H]f32, seqlen: x.seqlen };
    u.data[b][i, h] = t.data[b][i, h] * 0.5 + exp(t.data[b][i, h]);
    let y = Seqs { data: [b: B][x.seqlen[b], H]f32, seqlen: x.seqlen };
    y.data[b][i, h] = u.data[b][i, h] - x.data[b][i, h];
    return y;
}
)";

struct ScheduledOptions {
  ir::ScheduleDefaults defaults{};
  bool tile = false;                     // tile_contractions, as the driver does for the CPU
  bool simplify = false;                 // ir/simplify_indices after storage lowering
  ir::SimplifyReport* report = nullptr;  // what simplify did
};

/// `program` with `schedule` appended, compiled as the driver does for the
/// CPU: expand_prints, mark_parallel, reorder_loops, the schedule (with
/// `o.defaults`), then as `o` asks tile_contractions, storage lowering and
/// simplify_indices. No module after errors (in `diags`).
inline Program compile_with_schedule(const std::string& program, const std::string& schedule,
                                     const ScheduledOptions& o = {}, const std::string& name = "schedule.toy") {
  Program p;
  p.file = std::make_unique<SourceFile>(name, program + schedule);
  p.diags = std::make_unique<DiagnosticEngine>(p.file.get());
  p.ast = parse(*p.file, *p.diags);
  if (!p.ast) return p;
  p.checked = check(*p.ast, *p.diags);
  if (p.diags->has_errors()) return p;
  auto schedules = ir::schedules_from_ast(*p.ast, p.file.get(), *p.diags);
  p.module = ir::lower(*p.checked, *p.diags);
  if (!p.module) return p;
  for (auto& f : p.module->funcs) {
    ir::expand_prints(f);
    ir::mark_parallel(f);
    ir::reorder_loops(f);
    ir::Schedule none{f.name, {}, {}};
    const ir::Schedule* mine = &none;
    for (const auto& s : schedules)
      if (s.func == f.name) mine = &s;
    if (!ir::apply_schedule(f, mine, *p.diags, nullptr, o.defaults)) {
      p.module.reset();
      return p;
    }
    if (o.tile) ir::tile_contractions(f);
    if (!ir::lower_storage(f, *p.diags)) {
      p.module.reset();
      return p;
    }
    if (o.simplify) {
      auto r = ir::simplify_indices(f);
      if (o.report) *o.report = r;
      EXPECT_EQ(ir::verify(f, "simplify-indices"), std::vector<std::string>{});
    }
  }
  return p;
}

/// Every diagnostic of `d`, rendered.
inline std::string messages(const DiagnosticEngine& d) {
  std::string out;
  for (const auto& x : d.diagnostics()) out += d.render(x);
  return out;
}

}  // namespace dccc::backend::testing
