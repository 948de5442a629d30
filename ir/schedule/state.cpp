#include "ir/schedule/state.h"

#include <fmt/format.h>

#include "ir/split_op.h"

namespace dccc::ir {

Stmt replace_for(const Stmt& s, const VarNode* v, const std::function<Stmt(const Stmt&)>& fn) {
  if (!s) return s;
  if (s->kind == StmtKind::For && s->var.get() == v) return fn(s);
  if (s->body.empty()) return s;
  auto copy = std::make_shared<StmtNode>(*s);
  for (auto& c : copy->body) c = replace_for(c, v, fn);
  return copy;
}

Stmt make_for(const Var& v, Expr extent, Stmt body, LoopKind k) { return build::for_loop(v, std::move(extent), std::move(body), k); }

ScheduleState::ScheduleState(Func& f_in, DiagnosticEngine& diags_in) : f(f_in), diags(diags_in) {
  for (const auto& n : f.nests) {
    std::map<std::string, Var> m;
    for (const auto& [name, v] : n.loops) m.emplace(name, v);
    names.push_back(std::move(m));
  }
  notes.resize(f.nests.size());
  split_away.resize(f.nests.size());
  defaults.resize(f.nests.size());
  fused_into.resize(f.nests.size());
}

void ScheduleState::error(SourceRange at, const std::string& msg) {
  diags.report(DiagKind::Schedule, at, msg);
  ok = false;
}
void ScheduleState::note(SourceRange at, const std::string& msg) { diags.note(at, msg); }

std::string ScheduleState::where(const Directive& d) const {
  return d.at.file && d.at.file != diags.file() ? fmt::format("`{}` on the command line", directive_text(d))
                   : fmt::format("`{}` (line {})", directive_text(d), d.at.line);
}

std::optional<ResolvedLoop> ScheduleState::resolve(const LoopRef& r) {
  std::vector<size_t> hits;
  for (size_t i = 0; i < f.nests.size(); ++i)
    if (f.nests[i].tensor == r.tensor) hits.push_back(i);
  if (hits.empty()) {
    std::string known;
    for (const auto& n : f.nests)
      if (known.find("`" + n.tensor + "`") == std::string::npos) known += (known.empty() ? "" : ", ") + ("`" + n.tensor + "`");
    error(r.at, fmt::format("`{}` has no assignment to `{}`{}", f.name, r.tensor,
                            known.empty() ? "" : "; it assigns " + known));
    return std::nullopt;
  }
  if (hits.size() > 1) {
    error(r.at, fmt::format("`{}` is assigned by {} statements of `{}`, so `{}.{}` does not name one loop", r.tensor,
                            hits.size(), f.name, r.tensor, r.index));
    for (size_t h : hits) note(f.nests[h].at, fmt::format("`{}` is assigned here", r.tensor));
    return std::nullopt;
  }
  size_t n = hits[0];
  directed.insert(n);
  if (inlined.count(n)) {
    error(r.at, fmt::format("`{}` was computed in its readers by `inline({})`; it has no loops left", r.tensor,
                            r.tensor));
    return std::nullopt;
  }
  auto it = names[n].find(r.index);
  if (it == names[n].end()) {
    if (fused_into[n].count(r.index)) {
      error(r.at, fmt::format("loop `{}` of `{}` was fused into `{}` by an earlier directive", r.index, r.tensor,
                              fused_into[n].at(r.index)));
    } else if (split_away[n].count(r.index)) {
      error(r.at, fmt::format("loop `{}` of `{}` was split into `{}_o` and `{}_i` by an earlier directive", r.index,
                              r.tensor, r.index, r.index));
    } else {
      error(r.at, fmt::format("the assignment to `{}` has no loop `{}`; its loops are {}", r.tensor, r.index,
                              loop_order(n)));
      note(f.nests[n].at, "the assignment is here");
    }
    return std::nullopt;
  }
  if (!find_for(f.body, it->second.get())) {
    error(r.at, fmt::format("loop `{}` of `{}` is not in the lowered code", r.index, r.tensor));
    return std::nullopt;
  }
  return ResolvedLoop{n, it->second};
}

std::string ScheduleState::name_of(size_t n, const VarNode* v) const {
  for (const auto& [name, var] : names[n])
    if (var.get() == v) return name;
  return v->name;
}

std::string ScheduleState::loop_order(size_t n) const {
  std::set<const VarNode*> mine;
  for (const auto& [name, v] : names[n]) mine.insert(v.get());
  std::string out;
  each_stmt(f.body, [&](const StmtNode& x) {
    if (x.kind != StmtKind::For || !mine.count(x.var.get())) return;
    out += (out.empty() ? "" : ", ") + std::string(x.loop == LoopKind::Parallel ? "parallel " : "") + name_of(n, x.var.get());
  });
  return out.empty() ? "(none)" : out;
}

bool ScheduleState::independent(const Stmt& body, const Var& v, std::string& why, bool plain) const {
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

void ScheduleState::plain_vars(const Expr& e, std::set<const VarNode*>& out) const { plain_index_vars(f.body, e, out); }

void ScheduleState::inherit_part(const Var& old, std::initializer_list<Var> fresh) {
  auto it = part_of.find(old.get());
  if (it == part_of.end()) return;
  for (const auto& v : fresh) part_of[v.get()] = it->second;
}

std::string ScheduleState::explain() const {
  std::string out = fmt::format("fn {}:\n", f.name);
  if (f.nests.empty()) out += "  no assignments to schedule\n";
  for (size_t n = 0; n < f.nests.size(); ++n) {
    const NamedNest& nest = f.nests[n];
    out += fmt::format("  `{}` (line {}): loops {}\n", nest.tensor, nest.at.line, loop_order(n));
    for (const auto& note : notes[n]) out += "    " + note + "\n";
    if (!defaults[n].empty()) out += "    " + defaults[n] + "\n";
    out += "    default: " + order_note + "\n";
  }
  return out;
}

}  // namespace dccc::ir
