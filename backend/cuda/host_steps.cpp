// The host steps of a CUDA launcher (backend/cuda/host_steps.h).
#include "backend/cuda/host_steps.h"

#include <algorithm>

#include "backend/cuda/cuda_emitter.h"

namespace dccc::backend::cudagen {

namespace {

using Known = std::set<const BufferNode*>;

/// The buffers `e` loads.
void loads_of(const ir::Expr& e, Known& out) {
  if (!e) return;
  ir::each_expr(e, [&](const ir::ExprNode& x) {
    if (x.kind == ExprKind::Load) out.insert(x.buffer.get());
  });
}

/// The buffers `s` stores to, and those it loads (every expression in it).
void touched(const ir::Stmt& s, Known& stores, Known& loads) {
  ir::each_stmt(s, [&](const ir::StmtNode& x) {
    if (x.kind == StmtKind::Store) stores.insert(x.buffer.get());
    ir::own_exprs(x, [&](const ir::ExprNode& e) {
      if (e.kind == ExprKind::Load) loads.insert(e.buffer.get());
    });
  });
}

SourceRange where(const BufferNode* b, const ir::Func& f) { return b->at.valid() ? b->at : f.at; }

/// The members of `s` in Func::buffers order (the generated code's order
/// must not depend on addresses).
std::vector<const BufferNode*> in_order(const ir::Func& f, const Known& s) {
  std::vector<const BufferNode*> out;
  for (const auto& b : f.buffers)
    if (s.count(b.get())) out.push_back(b.get());
  return out;
}

}  // namespace

HostPlan plan_host_steps(const ir::Func& f, const std::function<LaunchReads(size_t)>& launch,
                         const std::function<bool(const BufferNode*)>& in_memory) {
  HostPlan plan;
  // What the host holds before the body: integer input arrays (the
  // wrapper's host copies) and the prelude's aux arrays.
  Known known;
  for (const auto& b : f.buffers)
    if (b->kind == BufferKind::Input && !b->dims.empty() && is_int(b->type)) known.insert(b.get());
  for (const auto& b : ir::prelude_aux(f)) known.insert(b.get());
  auto host_known = [&](const ir::Expr& e) {
    Known r;
    loads_of(e, r);
    return std::all_of(r.begin(), r.end(), [&](const BufferNode* b) { return known.count(b) > 0; });
  };
  // Arguments' and results' sizes (the C wrapper's) and the prelude read
  // the lengths the caller gives only.
  // (An aux array the prelude fills may be sized by another, `fuse`'s maps.)
  for (const auto& b : f.buffers) {
    bool own = b->kind == BufferKind::Local || b->kind == BufferKind::Scalar;
    bool prelude_aux = b->kind == BufferKind::Aux && known.count(b.get());
    if (b->total && !own && !prelude_aux && !host_known(b->total))
      unsupported(where(b.get(), f), "the size of `" + b->name + "`, which reads extents computed by the program itself");
  }
  if (f.prelude) {
    Known st, ld;
    touched(f.prelude, st, ld);
    for (const BufferNode* b : in_order(f, ld))
      if (!known.count(b) && !st.count(b))
        unsupported(where(b, f), "extents computed by the program itself (`" + b->name + "`) in the prelude");
  }
  // Locals and scalars whose sizes read what the body computes.
  for (const auto& b : f.buffers)
    if ((b->kind == BufferKind::Local || b->kind == BufferKind::Scalar) && b->total && !host_known(b->total))
      plan.deferred.insert(b.get());
  // Which fetched arrays shape a buffer.
  Known shaping;
  for (const auto& b : f.buffers)
    for (const auto& d : b->dims) loads_of(d.extent, shaping);

  std::vector<ir::Stmt> items = ir::items_of(f.body);
  Known allocated;
  plan.steps.resize(items.size());
  for (size_t k = 0; k < items.size(); ++k) {
    HostStep& step = plan.steps[k];
    Known stores, loads;
    touched(items[k], stores, loads);
    bool aux_only = !stores.empty() && std::all_of(stores.begin(), stores.end(), [](const BufferNode* b) {
      return b->kind == BufferKind::Aux;
    });
    // Computed lengths' checks (ir::build::assert_length) run on the host
    // too, after the lengths' fetch (which checks them already).
    bool checks = false, other = false;
    ir::each_stmt(items[k], [&](const ir::StmtNode& x) {
      if (x.kind == StmtKind::Assert && x.length_check) checks = true;
      else if (x.kind != StmtKind::For && x.kind != StmtKind::Seq) other = true;
    });
    if (checks && !other) aux_only = true;
    Known needs;  // what the host reads for this statement
    SourceRange at = ir::statement_location(items[k]).valid() ? ir::statement_location(items[k]) : f.at;
    if (aux_only) {
      step.on_host = true;
      for (const BufferNode* b : in_order(f, loads))
        if (!stores.count(b)) needs.insert(b);
    } else {
      // Its kernel reads offsets on the device: filled and uploaded by now.
      for (const BufferNode* b : in_order(f, loads))
        if (b->kind == BufferKind::Aux && !known.count(b))
          unsupported(at, "a kernel that reads offsets of extents computed by the program itself (`" + b->name +
                              "`) before they are computed");
      LaunchReads r = launch(k);
      for (const auto& e : r.exprs) loads_of(e, needs);
      if (r.tile_list)
        for (const BufferNode* b : in_order(f, needs))
          if (!known.count(b) || plan.fetched.count(b))
            unsupported(at, "a tensor-core kernel whose tiles depend on extents computed by the program itself (`" +
                                b->name + "`)");
    }
    for (const BufferNode* b : in_order(f, needs)) {
      if (known.count(b)) continue;
      if (b->kind == BufferKind::Aux)
        unsupported(where(b, f), "extents computed by the program itself (`" + b->name + "`), read before the statement "
                                 "that computes them");
      if (b->kind == BufferKind::Scalar && b->dims.empty() && !in_memory(b))
        unsupported(where(b, f), "extents computed by the program itself (`" + b->name + "`), a scalar the kernels "
                                 "keep in registers");
      step.fetch.push_back(b);
      plan.fetched.insert(b);
      if (shaping.count(b) && !b->dims.empty()) plan.lengths.insert(b);
      known.insert(b);
    }
    // Locals sized by values known only now, allocated before their first
    // statement (the fetches above come first).
    for (const BufferNode* b : in_order(f, plan.deferred)) {
      if (allocated.count(b) || !(stores.count(b) || loads.count(b))) continue;
      if (!host_known(b->total))
        unsupported(where(b, f), "the size of `" + b->name + "`, which reads extents computed by the program itself "
                                 "before they are computed");
      step.allocate.push_back(b);
      allocated.insert(b);
    }
    // A kernel that writes a fetched value makes the host copy stale: fetch
    // it again when the host reads it next. An on_host statement's arrays
    // are the host's, and uploaded after it.
    for (const BufferNode* b : in_order(f, stores)) {
      if (step.on_host) {
        step.upload.push_back(b);
        plan.body_aux.insert(b);
        known.insert(b);
      } else {
        known.erase(b);
      }
    }
  }
  // Consecutive statements on the host upload what they filled once, after
  // the last of them (`A@(0) = 0;` then the loop that fills the rest).
  for (size_t k = 0; k + 1 < plan.steps.size(); ++k)
    if (plan.steps[k].on_host && plan.steps[k + 1].on_host) {
      auto& next = plan.steps[k + 1].upload;
      for (const BufferNode* b : plan.steps[k].upload)
        if (std::find(next.begin(), next.end(), b) == next.end()) next.insert(next.begin(), b);
      plan.steps[k].upload.clear();
    }
  return plan;  // (a deferred local no statement touches is never allocated)
}

}  // namespace dccc::backend::cudagen
