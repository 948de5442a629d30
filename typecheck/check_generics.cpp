// Checker: instances of generic functions (frontend/generics.h). Every
// instance is an ordinary function to the checker; this file reports an
// error of a generic body once, and resolves a call of a generic function
// to the instance its arguments' element types select.

#include <algorithm>

#include "frontend/generics.h"
#include "typecheck/checker_impl.h"

namespace dccc {
namespace checker_internal {

void Checker::checking(const ast::FnDecl& f, const std::function<void()>& check) {
  if (!f.instance_of) {
    check();
    return;
  }
  const std::string& g = f.instance_of->generic;
  if (failed_generics_.count(g)) {
    bool was = diags_.muted();
    diags_.set_muted(true);
    check();
    diags_.set_muted(was);
    return;
  }
  size_t first = diags_.diagnostics().size();
  int errors = diags_.error_count();
  check();
  if (diags_.error_count() == errors) return;
  failed_generics_.insert(g);
  auto it = generic_fns_.find(g);
  std::string with;
  if (it != generic_fns_.end())
    for (size_t k = 0; k < it->second->type_params.size() && k < f.instance_of->args.size(); ++k)
      with += (with.empty() ? "" : ", ") + it->second->type_params[k].name.name + " = " + f.instance_of->args[k];
  diags_.note_from(first, it != generic_fns_.end() ? it->second->name.range : f.name.range,
                   "in generic function " + code(g) + " with " + with +
                       " (reported once for the generic; its other instances are not checked separately)");
}

const CheckedFunction* Checker::shape_of(const std::string& name) {
  if (fn_decls_.count(name))
    if (auto it = signatures_.find(name); it != signatures_.end()) return &out_.functions[it->second];
  if (auto it = generic_instances_.find(name); it != generic_instances_.end() && !it->second.empty())
    return &out_.functions[it->second.front()];
  return nullptr;
}

namespace {

/// The scalar type an actual argument gives the type parameter `tp` where the
/// formal (as written in the generic) names it; empty if it gives none.
std::string scalar_given(const ast::TypeExpr& formal, const TypePtr& actual, const std::string& tp,
                         const std::map<std::string, const ast::TypeAlias*>& aliases) {
  if (!actual) return {};
  switch (formal.kind) {
    case ast::TypeExprKind::Named:
      if (formal.type_args.empty()) {
        if (formal.name.name == tp && actual->kind == TypeKind::Scalar) return scalar_name(actual->scalar);
        return {};
      }
      // `Rows<T>`: the actual coupling is an instance `Rows__f32` of the alias.
      if (actual->kind == TypeKind::Coupling && actual->coupling) {
        auto it = aliases.find(actual->coupling->name);
        if (it == aliases.end() || !it->second->instance_of || it->second->instance_of->generic != formal.name.name)
          return {};
        const auto& args = it->second->instance_of->args;
        for (size_t k = 0; k < formal.type_args.size() && k < args.size(); ++k) {
          const ast::TypeExpr& a = *formal.type_args[k];
          if (a.kind == ast::TypeExprKind::Named && a.type_args.empty() && a.name.name == tp) return args[k];
        }
      }
      return {};
    case ast::TypeExprKind::Tensor:
      if (formal.name.name == tp && actual->kind == TypeKind::Tensor) return scalar_name(actual->scalar);
      return {};
    case ast::TypeExprKind::List:
      if (actual->kind == TypeKind::List && formal.element) return scalar_given(*formal.element, actual->element, tp, aliases);
      return {};
    default: return {};
  }
}

}  // namespace

std::optional<std::string> Checker::pick_instance(const Expr& call, const ast::FnDecl& g,
                                                  const std::vector<TypePtr>& actual) {
  std::vector<std::string> args;
  for (const auto& tp : g.type_params) {
    const std::string& t = tp.name.name;
    std::string found;
    size_t from = 0;
    std::string literal;  // the default type of an untyped literal passed as a `T`
    for (size_t i = 0; i < g.params.size() && i < actual.size(); ++i) {
      std::string s = scalar_given(*g.params[i].type, actual[i], t, alias_decls_);
      const ast::TypeExpr& ft = *g.params[i].type;
      if (s.empty() && ft.kind == ast::TypeExprKind::Named && ft.type_args.empty() && ft.name.name == t && literal.empty()) {
        if (actual[i]->kind == TypeKind::FloatValue) literal = "f32";
        if (actual[i]->kind == TypeKind::IntValue) literal = "i32";
      }
      if (s.empty()) continue;
      if (found.empty()) {
        found = s;
        from = i;
      } else if (s != found) {
        diags_.report(DiagKind::GenericInference, call.operands[i]->range,
                      fmt::format("`{}` of `{}` is `{}` from argument {} but `{}` from argument {}", t, g.name.name,
                                  found, from + 1, s, i + 1));
        diags_.note(call.operands[from]->range, fmt::format("argument {} gives `{}` = `{}`", from + 1, t, found));
        diags_.note(tp.range, "the type parameter is declared here");
        return std::nullopt;
      }
    }
    if (found.empty()) {
      // A coupling of another name with the same structure as an instance's.
      std::vector<std::string> matching;
      for (size_t fi : generic_instances_[g.name.name]) {
        const CheckedFunction& inst = out_.functions[fi];
        bool ok = inst.params.size() == actual.size();
        for (size_t i = 0; ok && i < actual.size(); ++i) {
          const TypePtr& f = inst.params[i].second;
          const TypePtr& a = actual[i];
          if (f->kind == TypeKind::Coupling && a->kind == TypeKind::Coupling) ok = same_coupling(f->coupling, a->coupling);
          else if (f->kind == TypeKind::Tensor && a->kind == TypeKind::Tensor) ok = f->scalar == a->scalar;
          else if (f->kind == TypeKind::Scalar && a->kind == TypeKind::Scalar) ok = f->scalar == a->scalar;
        }
        size_t k = &tp - g.type_params.data();
        if (ok && inst.decl->instance_of && k < inst.decl->instance_of->args.size() &&
            std::find(matching.begin(), matching.end(), inst.decl->instance_of->args[k]) == matching.end())
          matching.push_back(inst.decl->instance_of->args[k]);
      }
      if (matching.size() == 1) found = matching[0];
    }
    if (found.empty() && !literal.empty()) {
      // Only untyped literals give `T`: they take their default types, as
      // in `let x = 1.0;` (f32; an integer literal i32, or f32 where the
      // constraint allows no integer type).
      auto allowed = constraint_types(tp);
      auto ok = [&](const std::string& s) { return std::find(allowed.begin(), allowed.end(), s) != allowed.end(); };
      if (literal == "i32" && !ok("i32")) literal = "f32";
      found = literal;
    }
    if (found.empty()) {
      diags_.report(DiagKind::GenericInference, call.name_range,
                    fmt::format("cannot infer the type parameter `{}` of `{}` from the arguments", t, g.name.name));
      diags_.note(tp.range, fmt::format("`{}` must be the element type of an argument (`x: {}`, `x: [N]{}`, or a "
                                        "generic alias `x: A<{}>`)",
                                        t, t, t, t));
      return std::nullopt;
    }
    auto allowed = constraint_types(tp);
    if (std::find(allowed.begin(), allowed.end(), found) == allowed.end()) {
      diags_.report(DiagKind::GenericConstraint, call.operands[from < call.operands.size() ? from : 0]->range,
                    fmt::format("`{}` does not satisfy the constraint `{}` of `{}` in `{}`", found,
                                constraint_text(tp), t, g.name.name));
      diags_.note(tp.range, "the type parameter is declared here");
      return std::nullopt;
    }
    args.push_back(found);
  }
  std::string name = instance_name(g.name.name, args);
  if (!signatures_.count(name)) return std::nullopt;  // its signature failed: already reported
  out_.call_targets[&call] = name;
  return name;
}

}  // namespace checker_internal
}  // namespace dccc
