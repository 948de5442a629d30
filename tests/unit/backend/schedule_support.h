// Shared by the schedule tests (schedule_test, split_op_test,
// simplify_test): a ragged function to schedule and the CPU driver's
// pipeline with a schedule appended to the program.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "ir/apply_schedule.h"
#include "ir/pipeline.h"
#include "ir/schedule.h"
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
  bool tile = false;                     // mark_written_first, transpose_operands, tile_contractions and fuse_parallel_loops, as the driver does for the CPU
  bool simplify = false;                 // ir/simplify_indices after storage lowering
  ir::SimplifyReport* report = nullptr;  // what simplify did
};

/// `program` with `schedule` appended, through the CPU target's pipeline
/// (ir/pipeline.h) with `o.defaults.pad` as the default padding; without
/// `o.tile` less mark-written-first, transpose-operands, tile-contractions and
/// fuse-parallel-loops, without `o.simplify` less simplify-indices. No module
/// after errors (in `diags`).
inline Program compile_with_schedule(const std::string& program, const std::string& schedule,
                                     const ScheduledOptions& o = {}, const std::string& name = "schedule.toy") {
  Program p;
  if (!front_end(p, name, program + schedule)) return p;
  ir::PipelineOptions po;
  po.schedules = ir::schedules_from_ast(*p.ast, p.file.get(), *p.diags);
  po.default_pad = o.defaults.pad;
  std::set<std::string> drop;
  if (!o.tile) drop = {"mark-written-first", "transpose-operands", "tile-contractions", "fuse-parallel-loops"};
  if (!o.simplify) drop.insert("simplify-indices");
  p.module = ir::lower(*p.checked, *p.diags);
  if (!p.module || p.diags->has_errors()) {
    p.module.reset();
    return p;
  }
  po = without_passes(po, drop);
  po.verify_each = true;
  auto result = ir::run_pipeline(*p.module, po, *p.diags);
  EXPECT_EQ(result.internal_error, "");
  if (!result.ok()) {
    p.module.reset();
    return p;
  }
  if (o.report && !result.simplified.empty()) *o.report = result.simplified.front().second;
  return p;
}

/// Input values for the interpreter: lengths (integer buffers) by
/// `pattern` — 0: 1 .. 9; 1: zero every other; 2: 0 .. 12; 3: one of 70,
/// the others 0 .. 3; 4: multiples of 8 (0, 8, 16: empty remainders of
/// every factor used) — and floats uniform in [-1, 1].
inline std::function<double(const ir::BufferNode*, int64_t)> pattern_inputs(int pattern, std::mt19937& r) {
  return [pattern, &r](const ir::BufferNode* b, int64_t k) -> double {
    if (is_int(b->type)) {
      switch (pattern) {
        case 0: return std::uniform_int_distribution<int>(1, 9)(r);
        case 1: return k % 2 ? 0 : std::uniform_int_distribution<int>(1, 9)(r);
        case 2: return std::uniform_int_distribution<int>(0, 12)(r);
        case 3: return k == 1 ? 70 : std::uniform_int_distribution<int>(0, 3)(r);
        default: return 8 * (k % 3);
      }
    }
    return std::uniform_real_distribution<double>(-1.0, 1.0)(r);
  };
}

/// Runs every function of `fs` in the interpreter on the same inputs
/// (pattern_inputs from `seed`) and expects each output, matched by name,
/// bit for bit as the first function's (NaN where it has NaN: mha over an
/// empty key sequence divides 0 by 0). Returns the outputs compared.
inline int expect_same_outputs(const std::vector<const ir::Func*>& fs, const std::map<std::string, int64_t>& sizes,
                               int pattern, unsigned seed, const std::string& label) {
  std::vector<std::ostringstream> prints(fs.size());
  std::vector<std::unique_ptr<ir::Interpreter>> runs;
  for (size_t n = 0; n < fs.size(); ++n) {
    std::mt19937 rng(seed);
    auto in = ir::Interpreter::make_inputs(*fs[n], sizes, pattern_inputs(pattern, rng));
    runs.push_back(std::make_unique<ir::Interpreter>(prints[n]));
    runs.back()->run(*fs[n], sizes, in);
  }
  int compared = 0;
  for (const auto& want_buf : fs[0]->buffers) {
    if (want_buf->kind != ir::BufferKind::Output) continue;
    auto want = runs[0]->packed(want_buf.get());
    for (size_t n = 1; n < fs.size(); ++n) {
      const ir::BufferNode* out = nullptr;  // by name: a directive may add or remove local buffers
      for (const auto& b : fs[n]->buffers)
        if (b->kind == ir::BufferKind::Output && b->name == want_buf->name) out = b.get();
      EXPECT_NE(out, nullptr) << label << ": " << want_buf->name;
      if (!out) continue;
      auto got = runs[n]->packed(out);
      EXPECT_EQ(want.size(), got.size()) << label;
      for (size_t e = 0; e < want.size() && e < got.size(); ++e) {
        if (std::isnan(want[e])) {
          EXPECT_TRUE(std::isnan(got[e])) << label << " pattern " << pattern << " [" << e << "]";
          continue;
        }
        EXPECT_EQ(want[e], got[e]) << label << " pattern " << pattern << " [" << e << "]";
      }
    }
    ++compared;
  }
  return compared;
}

/// Every diagnostic of `d`, rendered.
inline std::string messages(const DiagnosticEngine& d) {
  std::string out;
  for (const auto& x : d.diagnostics()) out += d.render(x);
  return out;
}

}  // namespace dccc::backend::testing
