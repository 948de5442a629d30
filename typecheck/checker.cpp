// check(): runs the Checker (checker_impl.h) over a program: globals
// first, then constants and type aliases in declaration order, every
// signature, then every body callees first. This file also holds the
// globals pass: declaring top-level names, `const` values and literals.

#include "typecheck/checker.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "typecheck/checker_impl.h"

namespace dccc {
namespace checker_internal {

void Checker::run() {
  out_.ast = &prog_;
  // Only length arrays are known to be non-negative: those read by
  // extents (inside an extent everything read is a length) and the
  // frozen arrays of the function being checked.
  prover_.set_length_predicate([this](const std::string& n) {
    auto ends = [&](const char* suf) {
      size_t k = std::strlen(suf);
      return n.size() >= k && n.compare(n.size() - k, k, suf) == 0;
    };
    return extent_depth_ > 0 || (frozen_ && frozen_->count(n)) || ends(".len") || ends(".sum");
  });
  // Size parameters are non-negative; an integer `let` is a size whose
  // value may be negative (only the fact of its value says).
  prover_.set_size_predicate([this](const std::string& n) { return !(let_sizes_ && let_sizes_->count(n)); });
  for (const auto& [name, v] : opts_.defines) out_.int_consts[name] = v;
  declare_globals();
  for (auto [kind, i] : prog_.order) {
    if (kind == 1) check_const(prog_.consts[i]);
    if (kind == 0) resolve_alias(prog_.types[i].name.name);
  }
  for (const auto& f : prog_.fns) checking(f, [&] { check_signature(f); });
  // Callees first: a call's result may share its arguments' storage
  // (`result_aliases`), which only the callee's body tells.
  for (size_t i : callees_first()) checking(*out_.functions[i].decl, [&] { check_body(out_.functions[i]); });
  out_.solver_calls = prover_.solver_calls();
}

void Checker::declare_globals() {
  std::map<std::string, SourceRange> seen;
  auto declare = [&](const ast::Ident& id) {
    if (scalar_from_name(id.name) || is_builtin(id.name)) {
      diags_.report(DiagKind::Redefinition, id.range, id.name);
      diags_.note(id.range, code(id.name) + " is a built-in name");
      return false;
    }
    auto [it, fresh] = seen.emplace(id.name, id.range);
    if (!fresh) {
      diags_.report(DiagKind::Redefinition, id.range, id.name);
      diags_.note(it->second, "previous definition is here");
      return false;
    }
    return true;
  };
  for (auto [kind, i] : prog_.order) {
    if (kind == 0 && declare(prog_.types[i].name)) alias_decls_[prog_.types[i].name.name] = &prog_.types[i];
    if (kind == 1) declare(prog_.consts[i].name);
    if (kind == 2 && declare(prog_.fns[i].name)) fn_decls_[prog_.fns[i].name.name] = &prog_.fns[i];
  }
  // Generic declarations (frontend/generics.h): their names are taken too.
  for (const auto& t : prog_.generic_types) declare(t.name);
  for (const auto& f : prog_.generic_fns)
    if (declare(f.name)) generic_fns_[f.name.name] = &f;
}

bool Checker::is_builtin(const std::string& n) {
  return is_math1(n) || n == "pow" || n == "max" || n == "min" || n == "select" || n == "len" ||
         n == "print" || n == "all" || n == "sum";
}

void Checker::check_const(const ast::ConstDecl& c) {
  const Expr& e = *c.value;
  std::optional<Scalar> want;
  if (c.type) {
    if (c.type->kind == ast::TypeExprKind::Named) want = scalar_from_name(c.type->name.name);
    if (!want) {
      diags_.report(DiagKind::NotAType, c.type->range, "a `const` must have a scalar type");
      return;
    }
  }
  bool negative = false;
  const Expr* lit = &e;
  if (e.kind == ExprKind::Unary && e.op == "-") {
    negative = true;
    lit = e.operands[0].get();
  }
  if (lit->kind == ExprKind::Int && (!want || is_int(*want))) {
    if (auto v = int_literal(*lit, negative)) out_.int_consts[c.name.name] = *v;
  } else if ((lit->kind == ExprKind::Float || lit->kind == ExprKind::Int) && (!want || is_float(*want))) {
    if (auto v = float_literal(*lit)) out_.float_consts[c.name.name] = negative ? -*v : *v;
  } else {
    diags_.report(DiagKind::TypeMismatch, e.range,
                  "a `const` must be a number literal" + (want ? " of type " + code(scalar_name(*want)) : ""));
  }
}

std::optional<int64_t> Checker::int_literal(const Expr& e, bool negative) {
  errno = 0;
  char* end = nullptr;
  unsigned long long v = std::strtoull(e.text.c_str(), &end, 10);
  uint64_t limit = negative ? (1ull << 63) : (1ull << 63) - 1;
  if (errno == ERANGE || v > limit) {
    diags_.report(DiagKind::LiteralOutOfRange, e.range, (negative ? "-" : "") + e.text.substr(0, 40) + (e.text.size() > 40 ? "..." : ""), "i64");
    return std::nullopt;
  }
  if (negative) return v == (1ull << 63) ? INT64_MIN : -static_cast<int64_t>(v);
  return static_cast<int64_t>(v);
}

std::optional<double> Checker::float_literal(const Expr& e) {
  double v = std::strtod(e.text.c_str(), nullptr);
  // `inf` and `nan` are literals of their own; a number too large for f64
  // (`1e999`) is out of range.
  if (e.text == "inf" || e.text == "nan") return v;
  if (!std::isfinite(v)) {
    diags_.report(DiagKind::LiteralOutOfRange, e.range, e.text.substr(0, 40) + (e.text.size() > 40 ? "..." : ""), "f64");
    return std::nullopt;
  }
  return v;
}

}  // namespace checker_internal

std::unique_ptr<CheckedProgram> check(const ast::Program& program, DiagnosticEngine& diags,
                                      const CheckOptions& options) {
  auto out = std::make_unique<CheckedProgram>();
  checker_internal::Checker(program, diags, options, *out).run();
  return out;
}

}  // namespace dccc
