#include <fmt/format.h>

#include "typecheck/checker.h"

namespace dccc {
namespace {

std::string fact_str(const Fact& f) {
  std::string out;
  if (!f.vars.empty()) {
    out += "for all ";
    for (size_t i = 0; i < f.vars.size(); ++i)
      out += (i ? ", " : "") + f.vars[i].first->name + " < " + sym::str(f.vars[i].second);
    out += ": ";
  }
  return out + sym::str(f.body);
}

std::string signature(const CheckedFunction& f) {
  std::string out = "fn " + f.decl->name.name + "(";
  for (size_t i = 0; i < f.params.size(); ++i)
    out += (i ? ", " : "") + f.params[i].first + ": " + types::str(f.params[i].second);
  out += ")";
  if (f.ret && f.ret->kind != TypeKind::Void) out += " -> " + types::str(f.ret);
  return out;
}

std::string stmt_head(const StmtInfo& s) {
  const ast::Stmt& st = *s.stmt;
  std::string loc = fmt::format("{}:{}", st.range.line, st.range.col);
  switch (st.kind) {
    case ast::StmtKind::Let: return loc + " let " + st.name.name + ": " + types::str(s.value_type);
    case ast::StmtKind::Assign: {
      std::string lhs;
      for (const auto& i : s.indices)
        if (!i.reduced) lhs += (lhs.empty() ? "" : ", ") + i.var->name;
      return loc + " assign " + types::str(s.value_type) + (lhs.empty() ? "" : " over " + lhs);
    }
    case ast::StmtKind::Return: return loc + " return " + types::str(s.value_type);
    case ast::StmtKind::Expr: return loc + " call";
  }
  return loc;
}

}  // namespace

std::string dump_typed(const CheckedProgram& p) {
  std::string out;
  for (const auto& def : p.couplings) {
    if (def->name == "coupling") continue;
    out += "coupling " + def->name;
    if (!def->size_params.empty()) {
      out += " sizes ";
      for (size_t i = 0; i < def->size_params.size(); ++i) out += (i ? ", " : "") + def->size_params[i];
    }
    out += "\n";
    for (size_t idx : def->order) out += "  field " + def->fields[idx].name + ": " + types::str(def->fields[idx].type) + "\n";
    for (const auto& w : def->where) out += "  where " + fact_str(w) + "\n";
  }
  for (const auto& f : p.functions) {
    out += signature(f) + "\n";
    if (!f.size_params.empty()) {
      out += "  sizes ";
      for (size_t i = 0; i < f.size_params.size(); ++i) out += (i ? ", " : "") + f.size_params[i];
      out += "\n";
    }
    for (const auto& fact : f.facts) out += "  assume " + fact_str(fact) + "\n";
    for (const auto& s : f.stmts) {
      out += "  " + stmt_head(s) + "\n";
      for (const auto& i : s.indices) {
        out += "    " + i.var->name + " in [0, " + sym::str(i.extent) + ")";
        if (i.reduced) out += " reduced by " + i.reduce_op;
        out += "\n";
      }
    }
  }
  return out;
}

std::string summarize(const CheckedProgram& p) {
  std::string out;
  for (const auto& f : p.functions) {
    int assigns = 0, reductions = 0;
    std::vector<std::string> ragged;
    for (const auto& s : f.stmts) {
      if (s.stmt->kind == ast::StmtKind::Assign) ++assigns;
      for (const auto& i : s.indices) {
        if (i.reduced) ++reductions;
        if (sym::is_ragged(i.extent)) {
          std::string r = sym::str(i.extent);
          if (std::find(ragged.begin(), ragged.end(), r) == ragged.end()) ragged.push_back(r);
        }
      }
    }
    out += "  " + signature(f) + "\n";
    std::string sizes;
    for (size_t i = 0; i < f.size_params.size(); ++i) sizes += (i ? ", " : "") + f.size_params[i];
    out += fmt::format("    sizes: {}; {} element-wise assignment(s), {} reduction index(es)\n",
                       sizes.empty() ? "none" : sizes, assigns, reductions);
    if (!ragged.empty()) {
      std::string r;
      for (size_t i = 0; i < ragged.size(); ++i) r += (i ? ", " : "") + ragged[i];
      out += "    ragged ranges: " + r + "\n";
    }
  }
  return out;
}

}  // namespace dccc
