#include "ir/pipeline.h"

#include <algorithm>
#include <iostream>
#include <set>

#include "ir/expand_prints.h"
#include "ir/fuse_elementwise.h"
#include "ir/fuse_parallel_loops.h"
#include "ir/jam_reductions.h"
#include "ir/mark_parallel.h"
#include "ir/mark_written_first.h"
#include "ir/online_reductions.h"
#include "ir/printer.h"
#include "ir/reorder_loops.h"
#include "ir/storage_lowering.h"
#include "ir/tile_contractions.h"
#include "ir/transpose_operands.h"
#include "ir/verifier.h"

namespace dccc::ir {

std::optional<Target> parse_target(std::string_view name) {
  if (name == "cpu") return Target::Cpu;
  if (name == "cuda") return Target::Cuda;
  return std::nullopt;
}

const char* target_name(Target t) { return t == Target::Cuda ? "cuda" : "cpu"; }

namespace {

/// State one run shares between passes.
struct RunState {
  const PipelineOptions& options;
  DiagnosticEngine& diags;
  PipelineResult& result;
  bool lowered_storage = false;       // storage-lowering ran in this run
  std::vector<bool> lowered_now;      // per function: lowered by this run
};

/// Which configurations include a pass in the default list.
enum class When { Always, Cpu, Cuda, StorageLowering, Simplify, CpuLowered, Online };

struct PassDef {
  const char* name;
  const char* summary;
  When when;
  bool (*run)(Module&, RunState&);  // false: errors reported to diags
};

/// A pass over each function not yet storage lowered.
template <auto F>
bool each_unlowered(Module& m, RunState&) {
  for (auto& f : m.funcs)
    if (!f.storage_lowered) F(f);
  return true;
}

bool apply_schedules(Module& m, RunState& s) {
  const PipelineOptions& o = s.options;
  int errors = s.diags.error_count();
  for (const auto& sched : o.schedules) {
    bool known = std::any_of(m.funcs.begin(), m.funcs.end(), [&](const Func& f) { return f.name == sched.func; });
    if (!known) s.diags.report(DiagKind::Schedule, sched.at, "no function `" + sched.func + "` to schedule");
  }
  // Default padding: CPU target only (on the CUDA target padding is what a
  // schedule asks for), and only for programs (IR text is taken as
  // scheduled already).
  ScheduleDefaults defaults;
  if (o.target == Target::Cuda) {
    defaults.gpu = true;
    defaults.off_reason = "the CUDA target pads only where a schedule asks";
    defaults.order_note =
        "`parallel` marks; the CUDA backend maps loops to threads itself unless `gpu_blocks` / `gpu_threads` say";
  } else if (o.from_ir_text) {
    defaults.off_reason = "IR text is taken as scheduled";
  } else {
    defaults.pad = o.default_pad;
    if (!o.default_pad_reason.empty()) defaults.off_reason = o.default_pad_reason;
  }
  for (auto& f : m.funcs) {
    if (f.storage_lowered) continue;
    Schedule merged{f.name, {}, {}};
    for (const auto& sched : o.schedules)
      if (sched.func == f.name) merged.directives.insert(merged.directives.end(), sched.directives.begin(), sched.directives.end());
    apply_schedule(f, &merged, s.diags, o.explain ? &s.result.explain : nullptr, defaults);
  }
  return s.diags.error_count() == errors;
}

/// Whether the perfect nest of serial loops `first` is one sum into `acc`
/// over one loop, or over several whose every tensor reads them as its last
/// indices, in order, over whole unpadded dimensions: after storage lowering
/// such a nest collapses to one loop (ir/collapse_loops.h), the contraction
/// index the fused attention kernel reads (`reduce(+, q[b][i, h, d] *
/// k[b][j, h, d])` over h and d).
bool contiguous_score(const Stmt& first, const BufferNode* acc) {
  std::vector<const StmtNode*> loops;
  Stmt cur = first;
  while (cur && cur->kind == StmtKind::For && cur->loop == LoopKind::Serial && cur->body.size() == 1) {
    loops.push_back(cur.get());
    cur = unwrap(cur->body[0]);
  }
  if (loops.empty() || !cur || cur->kind != StmtKind::Store || cur->buffer.get() != acc) return false;
  if (loops.size() == 1) return true;
  for (size_t t = 1; t < loops.size(); ++t)
    for (size_t u = 0; u < t; ++u)
      if (mentions(loops[t]->extent, loops[u]->var)) return false;
  bool ok = true;
  each_expr(cur->value, [&](const ExprNode& x) {
    if (x.kind != ExprKind::Load) return;
    bool any = false;
    for (const auto* l : loops)
      for (const auto& a : x.args) any |= mentions(a, l->var);
    if (!any) return;
    const size_t n = loops.size(), m = x.args.size();
    if (x.flat || m < n || x.buffer->dims.size() != m) {
      ok = false;
      return;
    }
    for (size_t t = 0; t < m; ++t) {
      const Expr& idx = x.args[t];
      if (t < m - n) {
        for (const auto* l : loops) ok = ok && !mentions(idx, l->var);
        continue;
      }
      const StmtNode* l = loops[t - (m - n)];
      ok = ok && idx->kind == ExprKind::VarRef && idx->var == l->var && same_expr(x.buffer->dims[t].extent, l->extent) &&
           (t >= x.buffer->pad.size() || x.buffer->pad[t] == 1);
    }
  });
  return ok;
}

/// Whether `after` (the online-reductions pass run on `before`) has a
/// derived key loop, and every key loop it derived -- a loop of `after`
/// whose body starts `acc = 0; for ...` and that `before` has not --
/// starts with a score contraction over one loop `acc = 0; for r { acc =
/// acc + x }`, or a nest that collapses to one (contiguous_score), the form
/// the fused attention kernel reads. Otherwise `why`.
bool derived_loops_fusable(const Func& before, const Func& after, std::string& why) {
  std::set<const StmtNode*> old;
  each_stmt(before.body, [&](const StmtNode& s) { old.insert(&s); });
  int derived = 0;
  bool ok = true;
  each_stmt(after.body, [&](const StmtNode& s) {
    if (s.kind != StmtKind::For || old.count(&s) || s.body.empty()) return;
    std::vector<Stmt> items = items_of(s.body[0]);
    if (items.size() < 2 || items[0]->kind != StmtKind::Store || !items[0]->buffer->dims.empty() ||
        items[0]->value->kind != ExprKind::FloatImm || items[0]->value->float_value != 0 || items[1]->kind != StmtKind::For)
      return;
    ++derived;
    if (!contiguous_score(items[1], items[0]->buffer.get())) {
      ok = false;
      why = "a derived key loop's score sums over several loops that are not the trailing dimensions of the "
            "tensors it reads, in order (the fused attention kernel takes one contraction index)";
    }
  });
  if (derived == 0 && why.empty()) why = "no derived loop starts with a score contraction (no fused attention kernel)";
  return derived > 0 && ok;
}

/// The names `materialize` keeps stored and the tensors whose assignments
/// other directives name, per function: online reductions leave them alone.
bool online_reductions_all(Module& m, RunState& s) {
  for (auto& f : m.funcs) {
    if (f.storage_lowered) continue;
    std::set<std::string> keep, scheduled;
    for (const auto& sched : s.options.schedules) {
      if (sched.func != f.name) continue;
      for (const auto& d : sched.directives)
        for (const auto& l : d.loops) (d.kind == DirectiveKind::Materialize ? keep : scheduled).insert(l.tensor);
    }
    // On the CUDA target the pass runs by default where the fused attention
    // kernel (backend/gpu/plan_attention.h) can take its result: the derived
    // one-pass key loops start with a score contraction over one loop (or a nest that collapses to one), and
    // f32 operands reach the tensor cores (not --fp32-math=ieee); or where
    // no value per key is a reduction (nothing for tensor cores either way).
    // Elsewhere the one-key-a-step CUDA loop would be slower than the stored
    // scores (bench/RESULTS.md), so the function keeps them.
    const bool cuda_default = !s.options.online_reductions && s.options.target == Target::Cuda;
    int64_t block = s.options.online_block > 0 ? s.options.online_block
                    : s.options.target == Target::Cpu ? kCpuOnlineBlock
                                                      : 1;
    if (!cuda_default) {
      online_reductions(f, keep, scheduled, block, s.options.explain ? &s.result.explain : nullptr);
      continue;
    }
    // The pass rebuilds the body and buffer lists (new nodes only), so a
    // copy of the function can try it and be kept or dropped.
    Func trial = f;
    std::string note;
    OnlineFused fused = online_reductions(trial, keep, scheduled, block, s.options.explain ? &note : nullptr);
    std::string why;
    if (trial.body == f.body) {  // nothing derived: the pass's reasons stand
      s.result.explain += note;
    } else if (fused.chains > 0 && fused.per_key_reduced == 0) {
      // Every derived key loop computes its per-key values element-wise
      // (causal_attention.toy's x[i, h] * x[j, h]): nothing for tensor cores
      // either way, and the one-pass loop does per key what the stored form's
      // passes do, in one kernel and without the O(s^2) tensors.
      f = std::move(trial);
      s.result.explain += note;
      if (s.options.explain)
        s.result.explain += "fn " + f.name + ": derived on the CUDA target: the key loops' values are element-wise "
                            "(no contraction for the fused attention kernel), one pass a row in backend/cuda's "
                            "kernels instead of the stored scores\n";
    } else if (!s.options.cuda_fp32_tensor_cores &&
               std::any_of(f.buffers.begin(), f.buffers.end(), [](const Buffer& b) {
                 return b->kind == BufferKind::Input && !b->dims.empty() &&
                        (b->type == Scalar::F32 || b->type == Scalar::F64);
               })) {
      if (s.options.explain)
        s.result.explain += "fn " + f.name + ": online reductions not derived by default on the CUDA target: an f32 "
                            "input with --fp32-math=ieee (the fused attention kernel runs on tensor cores; "
                            "--online-reductions forces it)\n";
    } else if (derived_loops_fusable(f, trial, why)) {
      f = std::move(trial);
      s.result.explain += note;
    } else if (s.options.explain) {
      s.result.explain += "fn " + f.name + ": online reductions not derived by default on the CUDA target: " + why +
                          " (--online-reductions forces it)\n";
    }
  }
  return true;
}

bool lower_all_storage(Module& m, RunState& s) {
  s.lowered_storage = true;
  s.lowered_now.assign(m.funcs.size(), false);
  for (size_t k = 0; k < m.funcs.size(); ++k) {
    Func& f = m.funcs[k];
    if (f.storage_lowered) continue;
    if (!lower_storage(f, s.diags)) return false;
    s.lowered_now[k] = true;
  }
  return true;
}

bool simplify_all(Module& m, RunState& s) {
  SimplifyOptions so;
  // The CUDA emitter hoists kernel-invariant loads itself.
  so.hoist = s.options.target != Target::Cuda;
  for (size_t k = 0; k < m.funcs.size(); ++k) {
    Func& f = m.funcs[k];
    // After storage lowering in this run: what it lowered (IR text lowered
    // already is taken as it is); run alone (--passes): every lowered function.
    bool take = s.lowered_storage ? s.lowered_now[k] : f.storage_lowered;
    if (take) s.result.simplified.emplace_back(f.name, simplify_indices(f, so));
  }
  return true;
}

bool jam_all(Module& m, RunState&) {
  for (auto& f : m.funcs)
    if (f.storage_lowered) jam_reductions(f);
  return true;
}

// The pipeline, in order. Schedules name the loops lowering made, so they
// come before the passes that restructure nests.
const PassDef kPasses[] = {
    {"expand-prints", "whole-tensor prints become loops of scalar prints", When::Always, each_unlowered<expand_prints>},
    {"online-reductions", "dependent reductions over one index (softmax's max, sum and weighted sum) in one pass that "
                          "rescales its sums (flash attention, derived); no tensor indexed by that index is stored",
     When::Online, online_reductions_all},
    {"mark-parallel", "outer loops whose iterations are independent become `parallel` (the runtime's thread pool)",
     When::Always, each_unlowered<mark_parallel>},
    {"reorder-loops", "CPU: swaps nested left-side loops so that a reused slice (k[b][j, h, d]) stays in cache",
     When::Cpu, each_unlowered<reorder_loops>},
    {"apply-schedule", "the `schedule` blocks and --schedule (padding, split, reorder, tile, fusion, gpu mapping) and "
                       "the target's default padding",
     When::Always, apply_schedules},
    {"mark-written-first", "CPU: local tensors the first nest stores whole need no zero fill, noted before later "
                           "passes reshape those nests",
     When::Cpu, each_unlowered<mark_written_first>},
    {"transpose-operands", "CPU: a contraction operand contiguous along the reduction is read from a transposed copy",
     When::Cpu, each_unlowered<transpose_operands>},
    {"tile-contractions", "CPU: a 4 x 4 tile of a contraction's outputs per pass of its reduction", When::Cpu,
     each_unlowered<tile_contractions>},
    {"fuse-parallel-loops", "CPU: consecutive parallel loops over the same extent touching their own slices become one",
     When::Cpu, each_unlowered<fuse_parallel_loops>},
    {"fuse-elementwise", "CUDA: element-wise producers computed in their readers", When::Cuda,
     each_unlowered<fuse_elementwise>},
    {"storage-lowering", "flat offsets into packed storage, aux (prefix-sum) arrays and the prelude that fills them",
     When::StorageLowering, lower_all_storage},
    {"simplify-indices", "Z3-proved index rewrites, redundant bound checks dropped, invariant aux loads hoisted (CPU)",
     When::Simplify, simplify_all},
    {"jam-reductions", "CPU: a dot-product loop sharing a load across its iterations runs 4 of them at once, one "
                       "accumulator each",
     When::CpuLowered, jam_all},
};

const PassDef* find_pass(std::string_view name) {
  for (const auto& p : kPasses)
    if (name == p.name) return &p;
  return nullptr;
}

bool included(const PassDef& p, const PipelineOptions& o) {
  switch (p.when) {
    case When::Always: return true;
    case When::Cpu: return o.target == Target::Cpu;
    case When::Cuda: return o.target == Target::Cuda;
    case When::StorageLowering: return o.storage_lowering;
    case When::Simplify: return o.storage_lowering && o.simplify;
    case When::CpuLowered: return o.target == Target::Cpu && o.storage_lowering;
    case When::Online: return o.online_reductions || !o.materialize;
  }
  return false;
}

std::vector<const PassDef*> selected(const PipelineOptions& o) {
  std::vector<const PassDef*> out;
  if (o.passes) {
    for (const auto& n : *o.passes)
      if (const PassDef* p = find_pass(n)) out.push_back(p);
    return out;
  }
  for (const auto& p : kPasses)
    if (included(p, o)) out.push_back(&p);
  return out;
}

}  // namespace

std::vector<PassInfo> passes_for(const PipelineOptions& options) {
  std::vector<PassInfo> out;
  for (const PassDef* p : selected(options)) out.push_back({p->name, p->summary});
  return out;
}

std::vector<PassInfo> all_passes() {
  std::vector<PassInfo> out;
  for (const auto& p : kPasses) out.push_back({p.name, p.summary});
  return out;
}

std::optional<std::string> unknown_pass_name(const PipelineOptions& options) {
  if (options.passes)
    for (const auto& n : *options.passes)
      if (!find_pass(n)) return n;
  for (const auto& n : options.print_after)
    if (!find_pass(n)) return n;
  return std::nullopt;
}

/// --explain: the calls lowering inlined into each function and, after the
/// passes, which of the tensors their bodies made are still stored and
/// which a pass fused into their readers (no buffer left).
static std::string explain_inlined(const Module& module) {
  std::string out;
  for (const auto& f : module.funcs) {
    if (f.inlined.empty()) continue;
    std::set<std::string> left;
    for (const auto& b : f.buffers) left.insert(b->name);
    out += "fn " + f.name + ": " + std::to_string(f.inlined.size()) + " call(s) inlined\n";
    for (const auto& c : f.inlined) {
      std::string kept, fused;
      for (const auto& t : c.tensors) {
        std::string& list = left.count(t) ? kept : fused;
        list += (list.empty() ? "`" : ", `") + t + "`";
      }
      out += "  `" + c.callee + "` (" +
             (c.caller.empty() ? "line " + std::to_string(c.at.line) : "called by `" + c.caller + "`") + "): inlined";
      if (c.tensors.empty()) out += ", element-wise (no tensor of its own)";
      if (!kept.empty()) out += "; stored: " + kept;
      if (!fused.empty()) out += "; fused into their readers (no buffer left): " + fused;
      out += "\n";
    }
  }
  return out;
}

PipelineResult run_pipeline(Module& module, const PipelineOptions& options, DiagnosticEngine& diags) {
  PipelineResult result;
  if (auto bad = unknown_pass_name(options)) {
    result.status = PipelineResult::Status::Internal;
    result.internal_error = "unknown pass `" + *bad + "`";
    return result;
  }
  RunState state{options, diags, result, false, {}};
  std::ostream& print_to = options.print_stream ? *options.print_stream : std::cerr;
  auto verified = [&](const std::string& after) {
    if (!options.verify_each) return true;
    for (const auto& f : module.funcs)
      for (const auto& problem : verify(f, after)) {
        result.status = PipelineResult::Status::Internal;
        result.internal_error = "IR verifier: " + problem;
        return false;
      }
    return true;
  };
  if (!verified("lowering")) return result;
  for (const PassDef* p : selected(options)) {
    if (!p->run(module, state)) {
      result.status = PipelineResult::Status::Errors;
      return result;
    }
    if (!verified(p->name)) return result;
    bool show = options.print_after_all ||
                std::find(options.print_after.begin(), options.print_after.end(), p->name) != options.print_after.end();
    if (show) print_to << "// -- IR after " << p->name << " --\n" << print(module);
  }
  if (options.explain) result.explain += explain_inlined(module);
  return result;
}

}  // namespace dccc::ir
