#include "ir/apply_schedule.h"

#include "ir/materialize.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "ir/hfuse.h"
#include "ir/split_op.h"
#include "ir/fuse_dims.h"
#include "ir/fuse_elementwise.h"
#include "ir/remap_loop.h"

namespace dccc::ir {
namespace {


/// `s` with the loop of `v` replaced by fn(loop).
Stmt replace_for(const Stmt& s, const VarNode* v, const std::function<Stmt(const Stmt&)>& fn) {
  if (!s) return s;
  if (s->kind == StmtKind::For && s->var.get() == v) return fn(s);
  if (s->body.empty()) return s;
  auto copy = std::make_shared<StmtNode>(*s);
  for (auto& c : copy->body) c = replace_for(c, v, fn);
  return copy;
}

Stmt make_for(const Var& v, Expr extent, Stmt body, LoopKind k) { return build::for_loop(v, std::move(extent), std::move(body), k); }

class Scheduler {
 public:
  Scheduler(Func& f, DiagnosticEngine& diags) : f_(f), diags_(diags) {
    for (const auto& n : f.nests) {
      std::map<std::string, Var> m;
      for (const auto& [name, v] : n.loops) m.emplace(name, v);
      names_.push_back(std::move(m));
    }
    notes_.resize(f.nests.size());
    split_.resize(f.nests.size());
    defaults_.resize(f.nests.size());
    fused_.resize(f.nests.size());
  }

  bool run(const Schedule* s) {
    if (!s) return true;
    // Storage padding is a property of buffers, read by the loop directives'
    // guard decisions: all of it first.
    for (const auto& d : s->directives)
      if (d.kind == DirectiveKind::PadStorage) pad_storage(d);
    // Kernel fusion next: the loop directives' checks (padding into storage
    // above all) must see the accesses the fused readers make.
    for (const auto& d : s->directives)
      if (d.kind == DirectiveKind::Inline) inline_tensor(d);
    for (const auto& d : s->directives) {
      switch (d.kind) {
        case DirectiveKind::PadStorage: break;
        case DirectiveKind::Inline: break;
        case DirectiveKind::Materialize: {
          MaterializeCheck m = check_materialize(f_, d.loops[0]);
          if (!m.error.empty()) error(d.loops[0].at, m.error);
          else notes_[m.nest].push_back(m.note);
          break;
        }
        case DirectiveKind::Remap: remap(d); break;
        case DirectiveKind::FuseDims: fuse_dims(d); break;
        case DirectiveKind::PadLoop: pad_loop(d); break;
        case DirectiveKind::Split: split(d, d.loops[0], d.factors[0]); break;
        case DirectiveKind::Reorder: reorder(d, d.loops); break;
        case DirectiveKind::Tile: tile(d); break;
        case DirectiveKind::Fuse: fuse(d); break;
        case DirectiveKind::SplitOp: split_op(d); break;
        case DirectiveKind::HFuse: hfuse(d); break;
        case DirectiveKind::GpuBlocks:
        case DirectiveKind::GpuThreads: break;
      }
    }
    // The GPU mapping names the loops as the other directives left them.
    gpu_map(s->directives);
    return ok_;
  }

  void set_gpu(bool gpu) { gpu_ = gpu; }

  std::string explain() const {
    std::string out = fmt::format("fn {}:\n", f_.name);
    if (f_.nests.empty()) out += "  no assignments to schedule\n";
    for (size_t n = 0; n < f_.nests.size(); ++n) {
      const NamedNest& nest = f_.nests[n];
      out += fmt::format("  `{}` (line {}): loops {}\n", nest.tensor, nest.at.line, loop_order(n));
      for (const auto& note : notes_[n]) out += "    " + note + "\n";
      if (!defaults_[n].empty()) out += "    " + defaults_[n] + "\n";
      out += "    default: " + order_note_ + "\n";
    }
    return out;
  }

  /// The default padding (CoRa §4.1, chosen by dccc when no directive
  /// names the assignment): the innermost loop of an assignment, when it is
  /// a vloop over a left-side index with a straight-line body, runs to a
  /// multiple of `k` and computes into storage padding of a multiple of `k`
  /// added to every tensor it indexes. Only where that needs no guard: every
  /// such tensor is local (inputs and results keep the packed C ABI), its
  /// dimension sizes no other, and the body cannot fail or accumulate
  /// across iterations. Anything else keeps the packed, unpadded default;
  /// --explain says which and why. k = 0: no default padding.
  void apply_defaults(int64_t k, const std::string& off_reason, const std::string& order_note) {
    order_note_ = order_note;
    for (size_t n = 0; n < f_.nests.size(); ++n) {
      if (directed_.count(n)) {
        defaults_[n] = "default: no default padding, since the schedule names this assignment";
        continue;
      }
      if (k <= 1) {
        defaults_[n] = "default: no padding (" + off_reason + ")";
        continue;
      }
      std::string why = default_pad(n, k);
      if (!why.empty()) defaults_[n] = "default: no padding (loops run to their extents, storage packed): " + why;
    }
  }

 private:
  /// Pads nest `n` by default (see apply_defaults); "" when done, else why not.
  std::string default_pad(size_t n, int64_t k) {
    const NamedNest& nest = f_.nests[n];
    std::set<const VarNode*> mine;
    for (const auto& [name, v] : names_[n]) mine.insert(v.get());
    const StmtNode* inner = nullptr;
    each_stmt(f_.body, [&](const StmtNode& x) {
      if (x.kind == StmtKind::For && mine.count(x.var.get())) inner = &x;
    });
    if (!inner) return "the assignment has no loops";
    bool nested = false;
    each_stmt(inner->body[0], [&](const StmtNode& x) { nested |= x.kind == StmtKind::For; });
    std::string name = name_of(n, inner->var.get());
    if (nested) return fmt::format("its innermost loop `{}` contains other loops", name);
    if (std::find(nest.lhs.begin(), nest.lhs.end(), inner->var) == nest.lhs.end())
      return fmt::format("its innermost loop `{}` is a `reduce` loop, which accumulates across iterations", name);
    bool vloop = false;
    for (const auto& [loop_name, v] : names_[n]) vloop |= mentions(inner->extent, v);
    if (!vloop)
      return fmt::format("its innermost loop `{}` is not a vloop (its extent depends on no outer loop)", name);
    if (build::round_up(inner->extent, k) == inner->extent)
      return fmt::format("its innermost loop `{}` already runs a multiple of {} iterations", name, k);
    // The tensors the body indexes with the loop, and the dimension of each.
    std::vector<std::pair<BufferNode*, size_t>> dims;
    std::string bad;
    auto access = [&](const Buffer& b, const std::vector<Expr>& args) {
      if (!bad.empty() || b->dims.empty()) return;
      for (size_t i = 0; i < args.size(); ++i) {
        if (!mentions(args[i], inner->var)) continue;
        if (args[i]->kind != ExprKind::VarRef) {
          bad = fmt::format("`{}` is indexed by an expression of `{}`", b->name, name);
          return;
        }
        if (b->kind != BufferKind::Local) {
          bad = fmt::format("`{}` is {} indexed by `{}`, whose storage stays packed (C ABI)", b->name,
                            b->kind == BufferKind::Input ? "an input" : "the result", name);
          return;
        }
        for (size_t j = i + 1; j < b->dims.size(); ++j)
          if (mentions(b->dims[j].extent, b->dims[i].var)) {
            bad = fmt::format("the dimension of `{}` that `{}` indexes sizes an inner dimension", b->name, name);
            return;
          }
        int64_t p = i < b->pad.size() ? b->pad[i] : 1;
        if (p > 1 && p % k != 0) {
          bad = fmt::format("`{}` is already padded to a multiple of {} there", b->name, p);
          return;
        }
        dims.emplace_back(b.get(), i);
      }
    };
    each_stmt(inner->body[0], [&](const StmtNode& x) {
      own_exprs(x, [&](const ExprNode& e) {
        if (e.kind == ExprKind::Load) access(e.buffer, e.args);
      });
      if (x.kind == StmtKind::Store) access(x.buffer, x.args);
    });
    if (!bad.empty()) return bad;
    // Pad the storage, then let pad_loop's analysis (which cannot report an
    // error now: every padding is a multiple of k) decide about guards.
    std::vector<std::vector<int64_t>> saved;
    for (auto& [b, i] : dims) saved.push_back(b->pad);
    for (auto& [b, i] : dims) {
      if (b->pad.size() < b->dims.size()) b->pad.resize(b->dims.size(), 1);
      if (b->pad[i] <= 1) b->pad[i] = k;
    }
    Stmt loop;
    f_.body = replace_for(f_.body, inner->var.get(), [&](const Stmt& s) {
      loop = s;
      return s;
    });
    Directive d{DirectiveKind::PadLoop, {LoopRef{nest.tensor, name, nest.at}}, {k}, nest.at};
    std::string why;
    bool was_ok = ok_;
    if (!into_padding(loop, k, d, why) || ok_ != was_ok) {
      ok_ = was_ok;
      for (size_t q = 0; q < dims.size(); ++q) dims[q].first->pad = saved[q];
      return why.empty() ? "the loop cannot run into storage padding" : why;
    }
    auto copy = std::make_shared<StmtNode>(*loop);
    copy->extent = build::round_up(loop->extent, k);
    f_.body = replace_for(f_.body, loop->var.get(), [&](const Stmt&) { return Stmt(copy); });
    std::string tensors;
    std::set<const BufferNode*> seen;
    for (auto& [b, i] : dims)
      if (seen.insert(b).second) tensors += (tensors.empty() ? "`" : ", `") + b->name + "`";
    defaults_[n] = fmt::format(
        "default: `{}` runs to a multiple of {} and the storage of {} along it holds a multiple of {} per row, so "
        "the innermost loop vectorises with no remainder; the extra iterations compute into that padding (all "
        "local tensors; the body cannot fail or accumulate)",
        name, k, tensors, k);
    return "";
  }

  struct Resolved {
    size_t nest;
    Var var;
  };

  void error(SourceRange at, const std::string& msg) {
    diags_.report(DiagKind::Schedule, at, msg);
    ok_ = false;
  }
  void note(SourceRange at, const std::string& msg) { diags_.note(at, msg); }

  std::string where(const Directive& d) const {
    return d.at.file && d.at.file != diags_.file() ? fmt::format("`{}` on the command line", directive_text(d))
                     : fmt::format("`{}` (line {})", directive_text(d), d.at.line);
  }

  std::optional<Resolved> resolve(const LoopRef& r) {
    std::vector<size_t> hits;
    for (size_t i = 0; i < f_.nests.size(); ++i)
      if (f_.nests[i].tensor == r.tensor) hits.push_back(i);
    if (hits.empty()) {
      std::string known;
      for (const auto& n : f_.nests)
        if (known.find("`" + n.tensor + "`") == std::string::npos) known += (known.empty() ? "" : ", ") + ("`" + n.tensor + "`");
      error(r.at, fmt::format("`{}` has no assignment to `{}`{}", f_.name, r.tensor,
                              known.empty() ? "" : "; it assigns " + known));
      return std::nullopt;
    }
    if (hits.size() > 1) {
      error(r.at, fmt::format("`{}` is assigned by {} statements of `{}`, so `{}.{}` does not name one loop", r.tensor,
                              hits.size(), f_.name, r.tensor, r.index));
      for (size_t h : hits) note(f_.nests[h].at, fmt::format("`{}` is assigned here", r.tensor));
      return std::nullopt;
    }
    size_t n = hits[0];
    directed_.insert(n);
    if (inlined_.count(n)) {
      error(r.at, fmt::format("`{}` was computed in its readers by `inline({})`; it has no loops left", r.tensor,
                              r.tensor));
      return std::nullopt;
    }
    auto it = names_[n].find(r.index);
    if (it == names_[n].end()) {
      if (fused_[n].count(r.index)) {
        error(r.at, fmt::format("loop `{}` of `{}` was fused into `{}` by an earlier directive", r.index, r.tensor,
                                fused_[n].at(r.index)));
      } else if (split_[n].count(r.index)) {
        error(r.at, fmt::format("loop `{}` of `{}` was split into `{}_o` and `{}_i` by an earlier directive", r.index,
                                r.tensor, r.index, r.index));
      } else {
        error(r.at, fmt::format("the assignment to `{}` has no loop `{}`; its loops are {}", r.tensor, r.index,
                                loop_order(n)));
        note(f_.nests[n].at, "the assignment is here");
      }
      return std::nullopt;
    }
    if (!find_for(f_.body, it->second.get())) {
      error(r.at, fmt::format("loop `{}` of `{}` is not in the lowered code", r.index, r.tensor));
      return std::nullopt;
    }
    return Resolved{n, it->second};
  }

  std::string name_of(size_t n, const VarNode* v) const {
    for (const auto& [name, var] : names_[n])
      if (var.get() == v) return name;
    return v->name;
  }

  /// The nest's loops as they now run, outermost first: `parallel b, i (to a multiple of 4), h`.
  std::string loop_order(size_t n) const {
    std::set<const VarNode*> mine;
    for (const auto& [name, v] : names_[n]) mine.insert(v.get());
    std::string out;
    each_stmt(f_.body, [&](const StmtNode& x) {
      if (x.kind != StmtKind::For || !mine.count(x.var.get())) return;
      out += (out.empty() ? "" : ", ") + std::string(x.loop == LoopKind::Parallel ? "parallel " : "") + name_of(n, x.var.get());
    });
    return out.empty() ? "(none)" : out;
  }

  // ------------------------------------------------------------ pad_storage
  void pad_storage(const Directive& d) {
    const LoopRef& r = d.loops[0];
    int64_t p = d.factors[0];
    auto res = resolve(r);
    if (!res) return;
    const NamedNest& nest = f_.nests[res->nest];
    auto pos = std::find(nest.lhs.begin(), nest.lhs.end(), res->var);
    if (pos == nest.lhs.end()) {
      error(r.at, fmt::format("`{}` is a `reduce` index of the assignment to `{}`; storage padding names a dimension of "
                              "`{}` by its left-side index",
                              r.index, r.tensor, r.tensor));
      return;
    }
    size_t dim = static_cast<size_t>(pos - nest.lhs.begin());
    BufferNode& b = *nest.target;
    if (b.dims.empty() || dim >= b.dims.size()) {
      error(r.at, fmt::format("`{}` is a scalar; only tensors have storage", r.tensor));
      return;
    }
    if (b.kind != BufferKind::Local) {
      error(r.at, fmt::format("`{}` is {} of `{}`: storage padding would change its layout in the C ABI, which "
                              "stays packed; only local tensors (`let`) can be padded",
                              r.tensor, b.kind == BufferKind::Input ? "an input" : "the result", f_.name));
      return;
    }
    for (size_t j = dim + 1; j < b.dims.size(); ++j)
      if (mentions(b.dims[j].extent, b.dims[dim].var)) {
        error(r.at, fmt::format("the dimension of `{}` that `{}` indexes sizes inner dimensions (a ragged extent "
                                "depends on it); only a dimension no extent depends on can be padded",
                                r.tensor, r.index));
        return;
      }
    if (b.pad.size() < b.dims.size()) b.pad.resize(b.dims.size(), 1);
    auto key = std::make_pair(nest.target.get(), dim);
    if (b.pad[dim] > 1 && b.pad[dim] != p) {
      error(r.at, fmt::format("the dimension of `{}` that `{}` indexes is already padded to a multiple of {}", r.tensor,
                              r.index, b.pad[dim]));
      note(storage_at_[key], "padded here");
      return;
    }
    b.pad[dim] = p;
    storage_at_[key] = d.at;
    notes_[res->nest].push_back(fmt::format("{}: storage of `{}` along `{}` holds a multiple of {} elements per row "
                                            "(directive)",
                                            where(d), r.tensor, r.index, p));
  }

  // ------------------------------------------------------------ pad_loop
  /// Whether the iterations of `loop` past its extent may run unguarded,
  /// computing into storage padding; `why` says why not. Reports storage
  /// padding that is below (or not a multiple of) the loop padding `k`.
  bool into_padding(const Stmt& loop, int64_t k, const Directive& d, std::string& why) {
    const Var& v = loop->var;
    const Stmt& body = loop->body[0];
    bool ok = true;
    auto refuse = [&](std::string reason) {
      if (ok) why = std::move(reason);
      ok = false;
    };
    auto access = [&](const BufferNode* b, const std::vector<Expr>& args, bool store) {
      if (b->dims.empty()) return;
      std::optional<size_t> at;
      for (size_t i = 0; i < args.size(); ++i) {
        if (!mentions(args[i], v)) continue;
        if (args[i]->kind != ExprKind::VarRef || at) {
          refuse(fmt::format("`{}` is indexed by an expression of `{}`", b->name, v->name));
          return;
        }
        at = i;
      }
      if (!at) {
        if (store) refuse(fmt::format("`{}` is stored at indices that do not name `{}`", b->name, v->name));
        return;
      }
      int64_t p = *at < b->pad.size() ? b->pad[*at] : 1;
      if (p <= 1) {
        refuse(fmt::format("`{}` has no storage padding in the dimension `{}` indexes", b->name, v->name));
        return;
      }
      if (p < k || p % k != 0) {
        auto it = storage_at_.find({b, *at});
        SourceRange at_range = it != storage_at_.end() ? it->second : d.at;
        error(at_range, fmt::format("storage padding {} of `{}` is {} the loop padding {} of `{}`, so padded "
                                    "iterations would access storage that does not exist",
                                    p, b->name, p < k ? "below" : "not a multiple of", k,
                                    d.loops[0].tensor + "." + d.loops[0].index));
        note(d.at, "the loop is padded here");
        refuse("");
      }
    };
    each_stmt(body, [&](const StmtNode& x) {
      if (x.kind == StmtKind::Print || x.kind == StmtKind::Assert) refuse("the body prints or checks a condition");
      if (x.kind == StmtKind::For && mentions(x.extent, v))
        refuse(fmt::format("an inner loop's extent depends on `{}`", v->name));
      own_exprs(x, [&](const ExprNode& e) {
        if (e.kind == ExprKind::Load) access(e.buffer.get(), e.args, false);
      });
      if (may_fail(x.extent) || may_fail(x.value)) refuse("the body divides integers, which may fail on padding values");
      for (const auto& a : x.args)
        if (may_fail(a)) refuse("the body divides integers, which may fail on padding values");
      if (x.kind != StmtKind::Store) return;
      if (x.buffer->dims.empty()) {
        if (x.buffer->kind != BufferKind::Scalar || !written_before_read(body, x.buffer.get()) ||
            touches_outside(f_.body, loop.get(), x.buffer.get()))
          refuse(fmt::format("`{}` accumulates across iterations", x.buffer->name));
        return;
      }
      access(x.buffer.get(), x.args, true);
    });
    return ok;
  }

  void pad_loop(const Directive& d) {
    const LoopRef& r = d.loops[0];
    int64_t k = d.factors[0];
    auto res = resolve(r);
    if (!res) return;
    bool was_ok = ok_;
    Stmt loop;
    f_.body = replace_for(f_.body, res->var.get(), [&](const Stmt& s) {
      loop = s;
      return s;
    });
    Expr padded = build::round_up(loop->extent, k);
    if (padded == loop->extent) {
      notes_[res->nest].push_back(fmt::format("{}: `{}` already runs a multiple of {} iterations; nothing to pad",
                                              where(d), r.index, k));
      return;
    }
    std::string why;
    bool unguarded = into_padding(loop, k, d, why);
    if (!ok_ && was_ok) return;
    auto copy = std::make_shared<StmtNode>(*loop);
    copy->extent = padded;
    if (!unguarded)
      copy->body = {build::if_then_else(build::binary(BinOp::LT, build::var(loop->var), loop->extent), loop->body[0])};
    f_.body = replace_for(f_.body, res->var.get(), [&](const Stmt&) { return Stmt(copy); });
    notes_[res->nest].push_back(
        unguarded ? fmt::format("{}: `{}` runs to a multiple of {}; the extra iterations compute into storage padding "
                                "(directive)",
                                where(d), r.index, k)
                  : fmt::format("{}: `{}` runs to a multiple of {}; the extra iterations are guarded by `{} < extent` "
                                "because {} (directive)",
                                where(d), r.index, k, r.index, why));
  }

  // ------------------------------------------------------------ split
  bool split(const Directive& d, const LoopRef& r, int64_t k) {
    auto res = resolve(r);
    if (!res) return false;
    size_t n = res->nest;
    std::string outer = r.index + "_o", inner = r.index + "_i";
    for (const auto& name : {outer, inner})
      if (names_[n].count(name)) {
        error(r.at, fmt::format("splitting `{}` would name a loop `{}`, which the assignment to `{}` already has",
                                r.index, name, r.tensor));
        return false;
      }
    Var vo = make_var(outer), vi = make_var(inner);
    f_.body = replace_for(f_.body, res->var.get(), [&](const Stmt& loop) {
      const Expr& e = loop->extent;
      Expr kk = build::int_imm(k);
      Expr idx = build::binary(BinOp::Add, build::binary(BinOp::Mul, build::var(vo), kk), build::var(vi));
      std::map<const VarNode*, Expr> m{{loop->var.get(), idx}};
      Stmt body = rewrite(loop->body[0], [&](const Expr& x) { return x ? substitute(x, m) : x; });
      // A multiple of k (a constant, the bulk of split_op): no bound check.
      bool exact = is_multiple_of(e, k);
      if (!exact) body = build::if_then_else(build::binary(BinOp::LT, idx, e), body);
      Expr outer_extent = exact                         ? exact_quotient(e, k)
                          : e->kind == ExprKind::IntImm ? build::int_imm((e->int_value + k - 1) / k)
                              : build::binary(BinOp::Div, build::binary(BinOp::Add, e, build::int_imm(k - 1)), kk);
      return make_for(vo, outer_extent, make_for(vi, kk, body, LoopKind::Serial), loop->loop);
    });
    names_[n].erase(r.index);
    names_[n][outer] = vo;
    names_[n][inner] = vi;
    split_[n].insert(r.index);
    inherit_part(res->var, {vo, vi});
    notes_[n].push_back(fmt::format("{}: `{}` becomes `{}` (outer) and `{}` ({} iterations){} (directive)", where(d),
                                    r.index, outer, inner, k,
                                    d.kind == DirectiveKind::Tile ? ", for the tile" : ""));
    return true;
  }

  // ------------------------------------------------------------ reorder
  bool reorder(const Directive& d, const std::vector<LoopRef>& refs) {
    std::vector<Resolved> loops;
    std::map<const VarNode*, const LoopRef*> ref_of;
    for (const auto& r : refs) {
      auto res = resolve(r);
      if (!res) return false;
      if (!loops.empty() && res->nest != loops[0].nest) {
        error(r.at, fmt::format("`reorder` names loops of different assignments (`{}` and `{}`)", refs[0].tensor,
                                r.tensor));
        return false;
      }
      if (ref_of.count(res->var.get())) {
        error(r.at, fmt::format("loop `{}` is named twice", r.index));
        return false;
      }
      ref_of[res->var.get()] = &r;
      loops.push_back(*res);
    }
    size_t n = loops[0].nest;
    // The outermost named loop, then down the chain of single nested loops
    // (through the bound checks of split loops) until every named loop is in it.
    const StmtNode* top = nullptr;
    each_stmt(f_.body, [&](const StmtNode& x) {
      if (!top && x.kind == StmtKind::For && ref_of.count(x.var.get())) top = &x;
    });
    std::vector<const StmtNode*> chain{top};
    std::vector<Expr> guards;
    std::set<const VarNode*> remaining;
    for (const auto& l : loops) remaining.insert(l.var.get());
    remaining.erase(top->var.get());
    Stmt inner = top->body[0];
    while (true) {
      while (inner && ((inner->kind == StmtKind::Seq && inner->body.size() == 1) ||
                       (inner->kind == StmtKind::IfThenElse && (inner->body.size() == 1 || !inner->body[1])))) {
        if (inner->kind == StmtKind::IfThenElse) guards.push_back(inner->value);
        inner = inner->body[0];
      }
      if (remaining.empty()) break;
      if (!inner || inner->kind != StmtKind::For) {
        const LoopRef* missing = nullptr;
        for (const auto& r : refs)
          if (!missing && remaining.count(names_[n].at(r.index).get())) missing = &r;
        error(missing->at, fmt::format("loop `{}` is not perfectly nested inside `{}`: other statements lie between "
                                       "them (a `reduce` initialises its accumulator there), so they cannot be "
                                       "reordered",
                                       missing->index, name_of(n, chain.back()->var.get())));
        return false;
      }
      chain.push_back(inner.get());
      remaining.erase(inner->var.get());
      inner = inner->body[0];
    }
    // New order: the named loops' positions in the chain, filled in the given order.
    std::vector<const StmtNode*> order = chain;
    {
      size_t j = 0;
      for (auto& slot : order)
        if (ref_of.count(slot->var.get())) slot = find_for(f_.body, loops[j++].var.get());
    }
    // A loop's extent may use only the loops outside it (a vloop stays
    // inside the loop its bound depends on).
    for (size_t q = 0; q < order.size(); ++q)
      for (size_t q2 = q + 1; q2 < order.size(); ++q2)
        if (mentions(order[q]->extent, order[q2]->var)) {
          const LoopRef* r = ref_of.count(order[q]->var.get()) ? ref_of[order[q]->var.get()] : &refs[0];
          error(r->at, fmt::format("`{}` cannot be placed outside `{}`: its extent depends on `{}` (a vloop stays inside "
                                   "the loop its bound depends on)",
                                   name_of(n, order[q]->var.get()), name_of(n, order[q2]->var.get()),
                                   name_of(n, order[q2]->var.get())));
          return false;
        }
    // Bound checks sink below the loops, which must not need them.
    for (const auto& g : guards)
      for (const StmtNode* l : chain)
        for (const StmtNode* l2 : chain)
          if (mentions(g, l2->var) && mentions(l->extent, l2->var)) {
            error(d.at, fmt::format("the bound check of a split loop guards the extent of `{}`; these loops cannot be "
                                    "reordered",
                                    name_of(n, l->var.get())));
            return false;
          }
    // Independent iterations: the order must not show.
    std::string bad;
    each_stmt(inner, [&](const StmtNode& x) {
      if (!bad.empty()) return;
      if (x.kind == StmtKind::Print || x.kind == StmtKind::Assert) bad = "the loop body prints or checks a condition";
      if (x.kind != StmtKind::Store) return;
      if (x.buffer->dims.empty()) {
        if (x.buffer->kind != BufferKind::Scalar || !written_before_read(inner, x.buffer.get()))
          bad = fmt::format("the loops carry the `reduce` accumulation into `{}`, whose order would change", x.buffer->name);
        return;
      }
      std::set<const VarNode*> named;
      for (const auto& a : x.args) plain_vars(a, named);
      for (const auto& l : loops) {
        if (!named.count(l.var.get())) bad = fmt::format("`{}` is not stored at an element of its own in each iteration", x.buffer->name);
      }
      bool read = false;
      each_stmt(inner, [&](const StmtNode& y) {
        own_exprs(y, [&](const ExprNode& e) { read |= e.kind == ExprKind::Load && e.buffer == x.buffer; });
      });
      if (read) bad = fmt::format("`{}` is read in the loops that write it", x.buffer->name);
    });
    if (!bad.empty()) {
      error(d.at, fmt::format("cannot reorder these loops: {}", bad));
      return false;
    }
    Stmt body = inner;
    if (!guards.empty()) {
      Expr cond = guards[0];
      for (size_t i = 1; i < guards.size(); ++i) cond = build::binary(BinOp::And, cond, guards[i]);
      body = build::if_then_else(cond, body);
    }
    // Each position keeps its `parallel` mark: the loop moved there has
    // independent iterations (checked above).
    for (size_t q = order.size(); q-- > 0;) body = make_for(order[q]->var, order[q]->extent, body, chain[q]->loop);
    f_.body = replace_for(f_.body, top->var.get(), [&](const Stmt&) { return body; });
    std::string names;
    for (const auto& r : refs) names += (names.empty() ? "" : ", ") + r.index;
    if (d.kind == DirectiveKind::Reorder)
      notes_[n].push_back(fmt::format("{}: loops {} run in this order, outermost first (directive)", where(d), names));
    return true;
  }

  /// The loop variables an index determines one-to-one (ir/split_op.h).
  void plain_vars(const Expr& e, std::set<const VarNode*>& out) const { plain_index_vars(f_.body, e, out); }


  void tile(const Directive& d) {
    const LoopRef &x = d.loops[0], &y = d.loops[1];
    if (x.tensor != y.tensor || x.index == y.index) {
      error(y.at, "`tile` takes two different loops of one assignment");
      return;
    }
    if (!split(d, x, d.factors[0]) || !split(d, y, d.factors[1])) return;
    auto with = [](LoopRef r, const char* suffix) {
      r.index += suffix;
      return r;
    };
    if (reorder(d, {with(x, "_o"), with(y, "_o"), with(x, "_i"), with(y, "_i")}))
      notes_[f_.nests.empty() ? 0 : resolve(with(x, "_o"))->nest].push_back(
          fmt::format("{}: tiles of {} x {} iterations: loops {}_o, {}_o, {}_i, {}_i (directive)", where(d),
                      d.factors[0], d.factors[1], x.index, y.index, x.index, y.index));
  }

  // ------------------------------------------------------------ fuse
  /// fuse(T.o, T.i): loop i directly inside loop o becomes one loop o_i over
  /// every (o, i) in order (CoRa appendix B, vloop fusion). Before the
  /// top-level statement holding the nest, the maps are computed into i64
  /// arrays (aux arrays that storage lowering moves into the cached prelude
  /// when the extents read only inputs): oif[o] (first fused iteration of o;
  /// oif[E_o] = the fused extent F), fo[f] and fi[f] (o and i of fused
  /// iteration f); the body
  /// reads o and i from them. Iterations run in the original order; the
  /// fused loop keeps o's `parallel` mark only when i's iterations are
  /// independent.
  void fuse(const Directive& d) {
    const LoopRef &ro = d.loops[0], &ri = d.loops[1];
    auto o = resolve(ro);
    if (!o) return;
    auto in = resolve(ri);
    if (!in) return;
    if (o->nest != in->nest) {
      error(ri.at, fmt::format("`fuse` names loops of different assignments (`{}` and `{}`)", ro.tensor, ri.tensor));
      return;
    }
    size_t n = o->nest;
    if (o->var == in->var) {
      error(ri.at, fmt::format("`fuse` takes two different loops; `{}` is named twice", ri.index));
      return;
    }
    const StmtNode* lo = find_for(f_.body, o->var.get());
    const StmtNode* li = find_for(f_.body, in->var.get());
    if (find_for(li->body[0], o->var.get())) {
      error(d.at, fmt::format("`{}` is inside `{}`: `fuse` takes the outer loop first", ro.index, ri.index));
      return;
    }
    Stmt inner = lo->body[0];
    while (inner && inner->kind == StmtKind::Seq && inner->body.size() == 1) inner = inner->body[0];
    if (!inner || inner.get() != li) {
      error(ri.at, fmt::format("loop `{}` is not directly inside `{}` (other loops or statements lie between them); "
                               "only directly nested loops can be fused",
                               ri.index, ro.index));
      return;
    }
    // The maps are computed once, before the nest: the extents may use no
    // loop but o.
    for (const auto* l : {lo, li})
      for (const auto& [loop_name, v] : names_[n])
        if (v != o->var && mentions(l->extent, v)) {
          error(l == lo ? ro.at : ri.at,
                fmt::format("the extent of `{}` depends on loop `{}`, which encloses the loops to fuse; the fusion "
                            "maps are computed once, before the loop nest, so only the extent of `{}` may depend on "
                            "`{}`",
                            name_of(n, l->var.get()), loop_name, ri.index, ro.index));
          return;
        }
    std::string name = ro.index + "_" + ri.index;
    if (names_[n].count(name)) {
      error(ri.at, fmt::format("fusing would name a loop `{}`, which the assignment to `{}` already has", name,
                               ri.tensor));
      return;
    }
    // The top-level statement that holds the nest.
    std::vector<Stmt> items = f_.body->kind == StmtKind::Seq ? f_.body->body : std::vector<Stmt>{f_.body};
    size_t at = items.size();
    for (size_t k = 0; k < items.size() && at == items.size(); ++k)
      if (find_for(items[k], o->var.get())) at = k;
    std::set<const BufferNode*> written;
    each_stmt(items[at], [&](const StmtNode& x) {
      if (x.kind == StmtKind::Store) written.insert(x.buffer.get());
    });
    bool reads_written = false;
    for (const auto* l : {lo, li})
      each_expr(l->extent, [&](const ExprNode& e) {
        reads_written |= e.kind == ExprKind::Load && written.count(e.buffer.get());
      });
    if (reads_written) {
      error(d.at, "the loop extents read a tensor that the same statement writes; the fusion maps need them final "
                  "before the loop nest");
      return;
    }
    // Aux arrays: oif [E_o + 1], fo and fi [F]. When the extents read only
    // the arguments' sizes and length arrays, the maps are the
    // prelude's: aux arrays, which storage lowering moves into the prelude
    // (computed once per length pattern and cached by the C wrapper, like
    // the offset arrays). Otherwise (lengths the body computes) they stay
    // locals filled in the body.
    bool from_inputs = reads_only_lengths(f_, {lo->extent, li->extent});
    int id = fusions_++;
    auto aux = [&](const std::string& nm, Expr extent) {
      auto b = std::make_shared<BufferNode>();
      b->name = fmt::format("{}{}", nm, id);
      b->type = Scalar::I64;
      b->kind = from_inputs ? BufferKind::Aux : BufferKind::Local;
      b->dims = {{make_var("x"), std::move(extent)}};
      b->pad = {1};
      f_.buffers.push_back(b);
      return Buffer(b);
    };
    Buffer oif = aux("F_oif", build::binary(BinOp::Add, lo->extent, build::int_imm(1)));
    Expr total = build::load(oif, {lo->extent});
    Buffer fo = aux("F_fo", total), fi = aux("F_fi", total);
    Var y = make_var("y"), z = make_var("z");
    Expr inner_extent_y = substitute(li->extent, {{o->var.get(), build::var(y)}});
    Stmt fill_oif = build::seq(
        {build::store(oif, {build::int_imm(0)}, build::int_imm(0)),
         build::for_loop(y, lo->extent,
                         build::store(oif, {build::binary(BinOp::Add, build::var(y), build::int_imm(1))},
                                      build::binary(BinOp::Add, build::load(oif, {build::var(y)}), inner_extent_y)),
                         LoopKind::Serial)});
    Expr slot = build::binary(BinOp::Add, build::load(oif, {build::var(y)}), build::var(z));
    Stmt fill_maps = build::for_loop(
        y, lo->extent,
        build::for_loop(z, inner_extent_y,
                        build::seq({build::store(fo, {slot}, build::var(y)), build::store(fi, {slot}, build::var(z))}),
                        LoopKind::Serial),
        LoopKind::Serial);
    // The fused loop.
    Var fv = make_var(name);
    std::map<const VarNode*, Expr> m{{o->var.get(), build::load(fo, {build::var(fv)})},
                                     {in->var.get(), build::load(fi, {build::var(fv)})}};
    Stmt body = rewrite(li->body[0], [&](const Expr& x) { return x ? substitute(x, m) : x; });
    std::string why;
    LoopKind kind = lo->loop == LoopKind::Parallel && independent(li->body[0], in->var, why) ? LoopKind::Parallel
                                                                                             : LoopKind::Serial;
    Stmt fused = make_for(fv, total, body, kind);
    // lo and li point into the statement replaced here; they are read below.
    Stmt keep_alive = items[at];
    items[at] = replace_for(items[at], o->var.get(), [&](const Stmt&) { return fused; });
    items.insert(items.begin() + static_cast<long>(at), {fill_oif, fill_maps});
    f_.body = build::seq(items);
    names_[n].erase(ro.index);
    names_[n].erase(ri.index);
    names_[n][name] = fv;
    inherit_part(o->var, {fv});
    fused_[n][ro.index] = name;
    fused_[n][ri.index] = name;
    fusion_maps_.push_back({n, ro.index, ri.index, name, FusedLoops{o->var, in->var, li->extent, oif, fo, fi}});
    if (gpu_ && f_.name != "main" && oif->kind != BufferKind::Aux) {  // `main` is not a CUDA kernel
      // The fused loop's extent is F_oif[E]: the CUDA host code sizes the
      // launch from it.
      diags_.report(DiagKind::Unsupported, d.at,
                    fmt::format("on the CUDA target, a `fuse` whose maps (`{}`) are computed in the body (the inner "
                                "extent reads lengths the function computes, not only argument lengths)",
                                oif->name));
      ok_ = false;
    }
    notes_[n].push_back(fmt::format(
        "{}: `{}` and `{}` run as one loop `{}` over every ({}, {}) in order; `{}`, `{}` and `{}`, computed {}, "
        "map its iterations back{} (directive)",
        where(d), ro.index, ri.index, name, ro.index, ri.index, oif->name, fo->name, fi->name,
        from_inputs ? "in the prelude (once per length pattern)" : "before the loop nest",
        kind == LoopKind::Parallel            ? "; it runs in parallel"
        : lo->loop == LoopKind::Parallel ? fmt::format("; it runs serially, since {}", why)
                                              : ""));
  }

  /// Whether the iterations of a loop over `v` with body `body` are
  /// independent (may run in any order): every tensor store names `v`
  /// plainly (with `plain` false: has an index that mentions `v`), no stored
  /// tensor is read, scalars are written before read, no prints. `why` says
  /// why not.
  bool independent(const Stmt& body, const Var& v, std::string& why, bool plain = true) const {
    each_stmt(body, [&](const StmtNode& x) {
      if (!why.empty()) return;
      if (x.kind == StmtKind::Print || x.kind == StmtKind::Assert) why = "the loop body prints or checks a condition";
      if (x.kind != StmtKind::Store) return;
      if (x.buffer->dims.empty()) {
        if (x.buffer->kind != BufferKind::Scalar || !written_before_read(body, x.buffer.get()))
          why = fmt::format("`{}` accumulates across iterations", x.buffer->name);
        return;
      }
      bool named = false;
      for (const auto& a : x.args) named |= plain ? a->kind == ExprKind::VarRef && a->var == v : mentions(a, v);
      if (!named) why = fmt::format("`{}` is not stored at an element of its own in each iteration", x.buffer->name);
      bool read = false;
      each_stmt(body, [&](const StmtNode& y) {
        own_exprs(y, [&](const ExprNode& e) { read |= e.kind == ExprKind::Load && e.buffer == x.buffer; });
      });
      if (read) why = fmt::format("`{}` is read in the loop that writes it", x.buffer->name);
    });
    return why.empty();
  }

  // ------------------------------------------------------------ split_op, hfuse
  /// split_op(T.i, k): ir/split_op.h. The remainder nest's loops are named
  /// after the originals with `_rest` (`T.b_rest`, `T.i_rest`).
  void split_op(const Directive& d) {
    const LoopRef& r = d.loops[0];
    int64_t k = d.factors[0];
    auto res = resolve(r);
    if (!res) return;
    size_t n = res->nest;
    const NamedNest& nest = f_.nests[n];
    bool lhs = std::find(nest.lhs.begin(), nest.lhs.end(), res->var) != nest.lhs.end();
    bool reduce = !lhs && std::any_of(nest.loops.begin(), nest.loops.end(),
                                      [&](const auto& l) { return l.second == res->var; });
    if (reduce) {
      error(r.at, fmt::format("`{}` is a `reduce` loop: splitting it would split the accumulation across two "
                              "statements; only loops over left-side indices can be split into operations",
                              r.index));
      return;
    }
    std::set<const VarNode*> mine;
    for (const auto& [name, v] : names_[n]) mine.insert(v.get());
    // `_rest`, or `_rest2`, `_rest3`, ... where an earlier split_op of the
    // assignment took it: the first suffix no loop name clashes with.
    std::string suffix = "_rest";
    for (int q = 2;; ++q) {
      bool clash = false;
      for (const auto& [name, v] : names_[n]) clash |= names_[n].count(name + suffix) > 0;
      if (!clash) break;
      suffix = fmt::format("_rest{}", q);
    }
    std::string why;
    auto out = ir::split_op(f_, res->var, k, [&](const VarNode* v) { return name_of(n, v) + suffix; }, why);
    if (!out) {
      error(r.at, fmt::format("cannot split the operation at `{}`: {}", r.index, why));
      return;
    }
    for (const auto& [old, v] : out->rest_loops)
      if (mine.count(old)) names_[n][v->name] = v;
    // The two statements are parts of one operation, storing disjoint elements.
    int whole = part_of_.count(res->var.get()) ? part_of_.at(res->var.get()) : -1;
    int bulk = static_cast<int>(part_parent_.size()), remainder = bulk + 1;
    part_parent_.push_back(whole);
    part_parent_.push_back(whole);
    for (const auto& [old, v] : out->rest_loops) {
      part_of_[old] = bulk;
      part_of_[v.get()] = remainder;
    }
    notes_[n].push_back(fmt::format("{}: `{}` runs its bulk, a multiple of {} iterations; a second statement runs the "
                                    "remaining `{}` % {} with loops {} (directive)",
                                    where(d), r.index, k, r.index, k, loop_order_of(n, out->rest_loops)));
  }

  /// The twins' names in nest order (split_op's note).
  std::string loop_order_of(size_t n, const std::map<const VarNode*, Var>& twins) const {
    std::set<const VarNode*> rest;
    for (const auto& [old, v] : twins) rest.insert(v.get());
    std::string out;
    each_stmt(f_.body, [&](const StmtNode& x) {
      if (x.kind == StmtKind::For && rest.count(x.var.get())) out += (out.empty() ? "" : ", ") + name_of(n, x.var.get());
    });
    return out;
  }

  /// hfuse(A.x, B.y, ...): ir/hfuse.h. The fused loop is named by the
  /// loops' names joined with `_`, in each assignment it holds.
  void hfuse(const Directive& d) {
    std::vector<Resolved> loops;
    std::vector<Var> vars;
    std::string name;
    for (const auto& r : d.loops) {
      auto res = resolve(r);
      if (!res) return;
      loops.push_back(*res);
      vars.push_back(res->var);
      name += (name.empty() ? "" : "_") + r.index;
    }
    for (size_t q = 0; q < loops.size(); ++q)
      if (names_[loops[q].nest].count(name)) {
        error(d.loops[q].at, fmt::format("fusing would name a loop `{}`, which the assignment to `{}` already has",
                                         name, d.loops[q].tensor));
        return;
      }
    // Parts of one split operation (neither part holding the other) store
    // disjoint elements.
    auto disjoint = [&](size_t p, size_t q) {
      auto a = part_of_.find(vars[p].get()), b = part_of_.find(vars[q].get());
      if (a == part_of_.end() || b == part_of_.end()) return false;
      auto holds = [&](int outer, int inner) {
        for (int x = inner; x >= 0; x = part_parent_[static_cast<size_t>(x)])
          if (x == outer) return true;
        return false;
      };
      return !holds(a->second, b->second) && !holds(b->second, a->second);
    };
    HFuseRefusal why;
    std::vector<std::string> shown;
    for (const auto& r : d.loops) shown.push_back(r.tensor + "." + r.index);
    Var fv = ir::hfuse(f_, vars, shown, name, disjoint, why);
    if (!fv) {
      error(why.arg < 0 ? d.at : d.loops[static_cast<size_t>(why.arg)].at, "cannot fuse horizontally: " + why.message);
      return;
    }
    const StmtNode* fused = find_for(f_.body, fv.get());
    std::set<size_t> done;
    for (size_t q = 0; q < loops.size(); ++q) {
      size_t n = loops[q].nest;
      names_[n].erase(d.loops[q].index);
      names_[n][name] = fv;
      fused_[n][d.loops[q].index] = name;
    }
    std::string refs;
    for (const auto& r : d.loops) refs += (refs.empty() ? "`" : ", `") + r.tensor + "." + r.index + "`";
    for (size_t q = 0; q < loops.size(); ++q)
      if (done.insert(loops[q].nest).second)
        notes_[loops[q].nest].push_back(fmt::format(
            "{}: loops {} run as one loop `{}` over the sum of their extents, each range of iterations running "
            "its own statement's body{} (directive)",
            where(d), refs, name,
            fused->loop == LoopKind::Parallel ? "; it runs in parallel, one dispatch for all"
                                              : "; it runs serially, since not every fused loop was `parallel`"));
  }

  /// New loops replacing `old` belong to its part of a split operation.
  void inherit_part(const Var& old, std::initializer_list<Var> fresh) {
    auto it = part_of_.find(old.get());
    if (it == part_of_.end()) return;
    for (const auto& v : fresh) part_of_[v.get()] = it->second;
  }

  // ------------------------------------------------------------ remap
  /// remap(T.v, longest_first | KEY): ir/remap_loop.h. The loop must be
  /// parallel with independent iterations, so that the order cannot show.
  void remap(const Directive& d) {
    const LoopRef& r = d.loops[0];
    auto res = resolve(r);
    if (!res) return;
    size_t n = res->nest;
    const StmtNode* loop = find_for(f_.body, res->var.get());
    if (remapped_.count(res->var.get())) {
      error(r.at, fmt::format("loop `{}` of `{}` is remapped already by an earlier `remap`", r.index, r.tensor));
      return;
    }
    if (loop->loop != LoopKind::Parallel) {
      error(r.at, fmt::format("loop `{}` of `{}` is not a `parallel` loop; remapping orders the iterations the "
                              "thread pool hands out, so only a parallel loop can be remapped",
                              r.index, r.tensor));
      return;
    }
    std::string why;
    if (!independent(loop->body[0], res->var, why)) {
      error(d.at, fmt::format("cannot remap loop `{}`: its iterations are not independent ({}), so their order "
                              "would show",
                              r.index, why));
      return;
    }
    auto has_loop = [](const Stmt& body) {
      bool found = false;
      each_stmt(body, [&](const StmtNode& x) { found |= x.kind == StmtKind::For; });
      return found;
    };
    bool inner_loops = has_loop(loop->body[0]);  // `loop` does not outlive remap_loop
    RemapResult out = remap_loop(f_, res->var, r.index, d.key.empty() ? nullptr : &d.key[0], remaps_++);
    if (!out.error.empty()) {
      error(out.at.file ? out.at : d.at, out.error);
      return;
    }
    names_[n][r.index] = out.loop;
    remapped_.insert(out.loop.get());
    if (gpu_ && f_.name != "main" && out.perm->kind != BufferKind::Aux) {  // `main` is not a CUDA kernel
      // The CUDA host code sizes each launch from the inner extents, which
      // now read the permutation: it must be the prelude's.
      bool read_by_extents = false;
      each_stmt(f_.body, [&](const StmtNode& x) {
        if (x.kind == StmtKind::For && x.var != out.loop) read_by_extents |= loads_from(x.extent, out.perm.get());
      });
      if (read_by_extents) {
        diags_.report(DiagKind::Unsupported, d.at,
                      fmt::format("on the CUDA target, a `remap` whose permutation `{}` is computed in the body (its "
                                  "key or extent reads what the function computes, not only argument lengths) while "
                                  "inner loop extents read it (the host sizes the launch from them)",
                                  out.perm->name));
        ok_ = false;
        return;
      }
    }
    notes_[n].push_back(fmt::format(
        "{}: iteration `{}` of the parallel loop runs `{}` = {}[{}], the order of descending {}, ties by index, "
        "ranked {}; {}{} (directive)",
        where(d), out.loop->name, r.index, out.perm->name, out.loop->name, out.key,
        out.perm->kind == BufferKind::Aux ? "in the prelude (once per length pattern)" : "before the statement",
        gpu_ ? "on the GPU, blocks (or threads) take iterations in this order, the grid's blocks being started in "
               "index order"
             : "the thread pool hands out iterations in this order",
        gpu_ ? "" : inner_loops ? ", one at a time (the body holds loops)" : ", in chunks (the body holds no loop)"));
  }

  // ------------------------------------------------------------ inline
  /// inline(P): kernel fusion of P into its readers (ir/fuse_elementwise.h).
  void inline_tensor(const Directive& d) {
    const LoopRef& r = d.loops[0];
    std::vector<size_t> hits;
    for (size_t i = 0; i < f_.nests.size(); ++i)
      if (f_.nests[i].tensor == r.tensor) hits.push_back(i);
    if (hits.empty()) {
      bool param = false;
      for (const auto& b : f_.buffers) param |= b->name == r.tensor && b->kind == BufferKind::Input;
      error(r.at, param ? fmt::format("`{}` is a parameter of `{}`; only a local tensor (`let`) can be computed in "
                                      "its readers",
                                      r.tensor, f_.name)
                        : fmt::format("`{}` has no assignment to `{}`", f_.name, r.tensor));
      return;
    }
    if (hits.size() > 1) {
      error(r.at, fmt::format("`{}` is written by {} statements of `{}`; only a tensor one statement computes can "
                              "be computed in its readers",
                              r.tensor, hits.size(), f_.name));
      for (size_t h : hits) note(f_.nests[h].at, fmt::format("`{}` is assigned here", r.tensor));
      return;
    }
    size_t n = hits[0];
    directed_.insert(n);
    std::string why = fuse_tensor(f_, f_.nests[n].target);
    if (!why.empty()) {
      error(r.at, fmt::format("cannot compute `{}` in its readers: {}", r.tensor, why));
      return;
    }
    inlined_.insert(n);
    notes_[n].push_back(fmt::format("{}: not stored; each read of `{}` computes its element instead (kernel "
                                    "fusion into its readers) (directive)",
                                    where(d), r.tensor));
  }

  // ------------------------------------------------------------ fuse_dims
  /// fuse_dims(T.o, T.i): after fuse(T.o, T.i), T's rows (o, i) are indexed
  /// by the fused loop directly (ir/fuse_dims.h).
  void fuse_dims(const Directive& d) {
    const LoopRef &ro = d.loops[0], &ri = d.loops[1];
    if (ro.tensor != ri.tensor) {
      error(ri.at, fmt::format("`fuse_dims` names loops of different assignments (`{}` and `{}`)", ro.tensor,
                               ri.tensor));
      return;
    }
    std::vector<size_t> hits;
    for (size_t i = 0; i < f_.nests.size(); ++i)
      if (f_.nests[i].tensor == ro.tensor) hits.push_back(i);
    if (hits.size() != 1) {
      resolve(ro);  // reports the unknown or ambiguous name
      return;
    }
    size_t n = hits[0];
    directed_.insert(n);
    const FusionMaps* m = nullptr;
    for (const auto& x : fusion_maps_)
      if (x.nest == n && x.outer == ro.index && x.inner == ri.index) m = &x;
    if (!m) {
      error(d.at, fmt::format("`fuse_dims` needs loops `{}` and `{}` of `{}` fused first, outer loop first, by "
                              "`fuse({}.{}, {}.{})` (the packed order of the rows)",
                              ro.index, ri.index, ro.tensor, ro.tensor, ro.index, ro.tensor, ri.index));
      return;
    }
    std::vector<std::string> rewritten, skipped;
    std::string why = ir::fuse_dims(f_, m->maps, f_.nests[n].target, rewritten, skipped);
    if (!why.empty()) {
      error(d.at, fmt::format("cannot fuse dimensions `{}` and `{}` of `{}`: {}", ro.index, ri.index, ro.tensor, why));
      return;
    }
    std::string names;
    for (const auto& x : rewritten) names += (names.empty() ? "`" : ", `") + x + "`";
    std::string skip;
    for (const auto& x : skipped) skip += "; not rewritten: " + x;
    notes_[n].push_back(fmt::format(
        "{}: accesses of {} at ({}, {}) index their packed rows by the fused loop `{}` directly ({} * row size, "
        "from storage lowering on), "
        "not through {}, {} and the offset array (packed order: A[{}] + {} * R = ({}[{}] + {}) * R){} (directive)",
        where(d), names, ro.index, ri.index, m->name, m->name, m->maps.fo->name, m->maps.fi->name, ro.index, ri.index,
        m->maps.oif->name, ro.index, ri.index, skip));
  }

  // ------------------------------------------------------------ gpu_blocks, gpu_threads
  /// The loop directly inside `loop` (through `if`s without `else` when
  /// `guards`), or null when anything else lies between.
  static const StmtNode* child_loop(const StmtNode* loop, bool guards) {
    Stmt s = unwrap(loop->body[0]);
    while (guards && s && s->kind == StmtKind::IfThenElse && (s->body.size() == 1 || !s->body[1])) s = unwrap(s->body[0]);
    return s && s->kind == StmtKind::For ? s.get() : nullptr;
  }

  /// Whether the iterations of `loop` may run on different GPU threads (an
  /// inner loop carries no `parallel` mark: mark_parallel marks outermost
  /// loops only): no prints or checks; every tensor store has an index that
  /// mentions the loop variable (lowering gives each left-side index its own
  /// dimension, and split, fuse and remap keep each iteration's element its
  /// own: `i_o * k + i_i`, `F_fo[f]`, `R_perm[b_r]`), no stored tensor is read
  /// in the loop, and every scalar it stores is a private accumulator,
  /// written before it is read in each iteration. A `reduce` loop fails the
  /// last (its accumulator carries across iterations).
  bool gpu_independent(const StmtNode* loop, std::string& why) const {
    return independent(loop->body[0], loop->var, why, /*plain=*/false);
  }

  /// gpu_blocks(T.a[, T.b]) and gpu_threads(T.x[, T.y[, T.z]]): which loops of
  /// a top-level statement run on the CUDA grid and which on the threads of
  /// a block (ir.h GpuMapping). Checked on every target; recorded on the
  /// CUDA target only (the CPU target ignores them, and --explain says so).
  void gpu_map(const std::vector<Directive>& all) {
    struct Mapping {
      const Directive* blocks = nullptr;
      const Directive* threads = nullptr;
      std::vector<Var> bv, tv;
      size_t nest = 0;
    };
    std::map<size_t, Mapping> per_item;  // top-level statement -> its mapping
    std::vector<Stmt> items = items_of(f_.body);
    std::set<size_t> directed = directed_;
    for (const auto& d : all) {
      if (d.kind != DirectiveKind::GpuBlocks && d.kind != DirectiveKind::GpuThreads) continue;
      const bool blocks = d.kind == DirectiveKind::GpuBlocks;
      const char* name = directive_name(d.kind);
      const size_t most = blocks ? 2 : 3;
      if (d.loops.size() > most) {
        error(d.loops[most].at, blocks ? "`gpu_blocks` takes one or two loops (the grid's y and x dimensions)"
                                       : "`gpu_threads` takes one to three loops (flattened over the threads of a block)");
        continue;
      }
      if (!gpu_) {
        // The CPU target ignores the mapping: only its names are checked
        // (the CPU's own loop order may differ from the CUDA target's).
        std::optional<size_t> nest;
        for (const auto& r : d.loops)
          if (auto res = resolve(r)) nest = res->nest;
        if (nest)
          notes_[*nest].push_back(fmt::format("{}: ignored on the CPU target (a GPU grid and block mapping; "
                                              "parallel loops run on the thread pool) (directive)",
                                              where(d)));
        continue;
      }
      std::vector<Var> vars;
      std::vector<const StmtNode*> loops;
      size_t nest = 0;
      bool bad = false;
      for (size_t k = 0; k < d.loops.size() && !bad; ++k) {
        const LoopRef& r = d.loops[k];
        if (k && r.tensor != d.loops[0].tensor) {
          error(r.at, fmt::format("`{}` names loops of different assignments (`{}` and `{}`)", name, d.loops[0].tensor,
                                  r.tensor));
          bad = true;
          break;
        }
        auto res = resolve(r);
        if (!res) {
          bad = true;
          break;
        }
        nest = res->nest;
        const StmtNode* loop = find_for(f_.body, res->var.get());
        std::string why;
        if (loop->loop != LoopKind::Parallel && !gpu_independent(loop, why)) {
          error(r.at, fmt::format("loop `{}` of `{}` is not a `parallel` loop ({}); only the iterations of a parallel "
                                  "loop can run on different GPU {}",
                                  r.index, r.tensor, why, blocks ? "blocks" : "threads"));
          bad = true;
        }
        if (k && !bad && child_loop(loops.back(), true) != loop) {
          error(r.at, fmt::format("loop `{}` is not directly inside `{}` (only an `if` without `else` may lie "
                                  "between); `{}` takes a perfectly nested chain of loops, outermost first",
                                  r.index, d.loops[k - 1].index, name));
          bad = true;
        }
        // Thread loops are flattened: an inner one's extent is computed
        // whether or not a condition between them holds (it reads no thread
        // loop's variable, checked below, so only the grid's).
        if (k && !bad && !blocks && child_loop(loops.back(), false) != loop && may_fail(loop->extent)) {
          error(r.at, fmt::format("loop `{}` lies below a condition inside `{}`, and its extent may fail (an integer "
                                  "division); the threads of a block compute it whether or not the condition holds",
                                  r.index, d.loops[k - 1].index));
          bad = true;
        }
        vars.push_back(res->var);
        loops.push_back(loop);
      }
      if (bad) continue;
      size_t item = 0;
      for (size_t k = 0; k < items.size(); ++k)
        if (find_for(items[k], vars[0].get())) item = k;
      Mapping& m = per_item[item];
      if ((blocks ? m.blocks : m.threads) != nullptr) {
        error(d.at, fmt::format("the statement of `{}.{}` is mapped by an earlier `{}` already", d.loops[0].tensor,
                                d.loops[0].index, name));
        note((blocks ? m.blocks : m.threads)->at, "the earlier directive is here");
        continue;
      }
      (blocks ? m.blocks : m.threads) = &d;
      (blocks ? m.bv : m.tv) = vars;
      m.nest = nest;
      if (!blocks)
        for (size_t k = 1; k < loops.size(); ++k)
          for (size_t j = 0; j < k; ++j)
            if (mentions(loops[k]->extent, vars[j])) {
              error(d.loops[k].at, fmt::format("the extent of loop `{}` depends on loop `{}`; thread loops are "
                                               "flattened into one thread index, so their extents must not depend on "
                                               "each other",
                                               d.loops[k].index, d.loops[j].index));
              m.threads = nullptr;
            }
    }
    for (auto& [item, m] : per_item) {
      if (!m.blocks && !m.threads) continue;
      const Stmt& top = items[item];
      const StmtNode* outer = top->kind == StmtKind::For ? top.get() : nullptr;
      if (m.blocks && (!outer || outer->var != m.bv[0])) {
        error(m.blocks->loops[0].at, fmt::format("loop `{}` is not the outermost loop of its statement; `gpu_blocks` "
                                                 "starts at the outermost loop (the grid runs whole iterations of it)",
                                                 m.blocks->loops[0].index));
        continue;
      }
      if (m.threads) {
        // The loops above the first thread loop: the grid's.
        std::vector<Var> above;
        std::vector<const StmtNode*> above_loops;
        const StmtNode* cur = outer;
        while (cur && cur->var != m.tv[0]) {
          above.push_back(cur->var);
          above_loops.push_back(cur);
          cur = child_loop(cur, true);
        }
        const LoopRef& first = m.threads->loops[0];
        if (!cur) {
          error(first.at, fmt::format("loop `{}` is not in the chain of loops that starts at its statement's outermost "
                                      "loop (another statement or loop lies between); `gpu_threads` names loops "
                                      "directly inside the grid's",
                                      first.index));
          continue;
        }
        if (m.blocks && above != m.bv) {
          error(first.at, fmt::format("loop `{}` is not directly inside the loops of `gpu_blocks` ({}); the threads of "
                                      "a block run the loops directly inside the grid's",
                                      first.index, m.blocks->loops.back().index));
          continue;
        }
        if (above.empty()) {
          error(first.at, fmt::format("loop `{}` is the outermost loop of its statement; the grid needs a loop above "
                                      "the thread loops: split it (`split({}.{}, 256)`, then `gpu_blocks({}.{}_o)` and "
                                      "`gpu_threads({}.{}_i)`) or name an inner loop",
                                      first.index, first.tensor, first.index, first.tensor, first.index, first.tensor,
                                      first.index));
          continue;
        }
        if (above.size() > 2) {
          error(first.at, fmt::format("{} loops lie above loop `{}`, and the grid takes at most two; fuse them or name "
                                      "a loop further out",
                                      above.size(), first.index));
          continue;
        }
        bool bad = false;
        for (const StmtNode* a : above_loops) {
          std::string why;
          if (a->loop != LoopKind::Parallel && !gpu_independent(a, why) && !bad) {
            error(first.at, fmt::format("loop `{}` above the thread loops would run on the grid, but it is not a "
                                        "`parallel` loop ({})",
                                        name_of(m.nest, a->var.get()), why));
            bad = true;
          }
        }
        if (bad) continue;
        m.bv = above;
      }
      // --explain, and the record the CUDA emitter reads.
      std::string bnames, tnames;
      for (const auto& v : m.bv) bnames += (bnames.empty() ? "`" : ", `") + name_of(m.nest, v.get()) + "`";
      for (const auto& v : m.tv) tnames += (tnames.empty() ? "`" : ", `") + name_of(m.nest, v.get()) + "`";
      const Directive* d = m.blocks ? m.blocks : m.threads;
      if (m.blocks)
        notes_[m.nest].push_back(fmt::format(
            "{}: {} on the CUDA grid, a block per iteration ({}; blocks stride when there are more){} (directive)",
            where(*m.blocks), bnames + (m.bv.size() > 1 ? " run" : " runs"),
            m.bv.size() > 1 ? "blockIdx.y, blockIdx.x" : "blockIdx.x",
            m.threads ? "" : "; the threads of a block take the parallel loops directly inside, as the CUDA backend chooses"));
      if (m.threads)
        notes_[m.nest].push_back(fmt::format(
            "{}: {} on the threads of a block, flattened into one index (threadIdx.x, striding; a block has their "
            "iteration count rounded up to a multiple of 32 threads when it is a constant, at most 1024, otherwise "
            "256){} (directive)",
            where(*m.threads), tnames + (m.tv.size() > 1 ? " run" : " runs"),
            m.blocks ? "" : "; the loops above, " + bnames + ", run on the grid, a block per iteration"));
      f_.gpu_mappings.push_back(GpuMapping{m.bv, m.tv, d->at});
    }
    // A mapping changes no loop: the CPU target's default padding still applies.
    if (!gpu_) directed_ = directed;
  }

  struct FusionMaps {
    size_t nest;
    std::string outer, inner, name;
    FusedLoops maps;
  };
  std::vector<FusionMaps> fusion_maps_;  // every fuse() so far
  std::set<size_t> inlined_;             // nests computed in their readers
  std::set<const VarNode*> remapped_;    // remapped loops
  bool gpu_ = false;                     // the CUDA target (gpu_blocks, gpu_threads apply)
  int remaps_ = 0;

  int fusions_ = 0;
  std::map<const VarNode*, int> part_of_;  // loop -> the part of a split operation it runs in
  std::vector<int> part_parent_;           // part -> the part it was split from (-1: a whole statement)
  Func& f_;
  DiagnosticEngine& diags_;
  std::vector<std::map<std::string, Var>> names_;  // per nest: loop name -> variable (after splits)
  std::vector<std::vector<std::string>> notes_;   // per nest: what --explain says
  std::vector<std::set<std::string>> split_;      // per nest: names split away
  std::vector<std::map<std::string, std::string>> fused_;  // per nest: names fused away -> the fused loop
  std::string order_note_ = "loop order and `parallel` from the CPU heuristics";
  std::set<size_t> directed_;                     // nests a directive names
  std::vector<std::string> defaults_;             // per nest: the default padding's note
  std::map<std::pair<const BufferNode*, size_t>, SourceRange> storage_at_;  // pad_storage directives
  bool ok_ = true;
};

}  // namespace

bool apply_schedule(Func& f, const Schedule* schedule, DiagnosticEngine& diags, std::string* explain,
                    const ScheduleDefaults& defaults) {
  Scheduler s(f, diags);
  s.set_gpu(defaults.gpu);
  bool ok = s.run(schedule);
  if (ok) s.apply_defaults(defaults.pad, defaults.off_reason, defaults.order_note);
  if (explain) *explain += s.explain();
  return ok;
}

}  // namespace dccc::ir
