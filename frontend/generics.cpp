// instantiate_generics() (frontend/generics.h): generic functions and type
// aliases -> their instances, uses of generic aliases -> instance names.
#include "frontend/generics.h"

#include <algorithm>
#include <map>
#include <set>

namespace dccc {
namespace {

const std::vector<std::string> kFloat = {"f16", "bf16", "f32", "f64"};
const std::vector<std::string> kInt = {"i32", "i64"};
const std::vector<std::string> kAny = {"f16", "bf16", "f32", "f64", "i32", "i64", "bool"};

bool is_scalar_name(const std::string& n) {
  for (const auto& s : kAny)
    if (s == n) return true;
  return false;
}

std::string code(const std::string& s) { return "`" + s + "`"; }

using Bindings = std::map<std::string, std::string>;  // parameter -> scalar type name

/// Replaces type parameters by their types wherever they name a type.
struct Substitute {
  const Bindings& b;

  void type(ast::TypeExpr& t) const {
    if ((t.kind == ast::TypeExprKind::Named && t.type_args.empty()) || t.kind == ast::TypeExprKind::Tensor)
      if (auto it = b.find(t.name.name); it != b.end()) t.name.name = it->second;
    for (auto& g : t.groups)
      for (auto& d : g.dims)
        if (d.extent) expr(*d.extent);
    for (auto& f : t.fields) type(*f.type);
    for (auto& w : t.where) expr(*w);
    if (t.element) type(*t.element);
    for (auto& a : t.type_args) type(*a);
  }

  void expr(ast::Expr& e) const {
    // A cast `T(x)` names a type.
    if (e.kind == ast::ExprKind::Call)
      if (auto it = b.find(e.name); it != b.end()) e.name = it->second;
    for (auto& o : e.operands) expr(*o);
    for (auto& f : e.fields) {
      if (f.type) type(*f.type);
      if (f.value) expr(*f.value);
    }
    for (auto& a : e.type_args) type(*a);
  }

  void fn(ast::FnDecl& f) const {
    for (auto& p : f.params) type(*p.type);
    if (f.ret) type(*f.ret);
    for (auto& w : f.where) expr(*w);
    for (auto& s : f.body) {
      if (s->type) type(*s->type);
      if (s->target) expr(*s->target);
      if (s->value) expr(*s->value);
    }
  }
};

class Instantiator {
 public:
  Instantiator(ast::Program& p, DiagnosticEngine& d) : p_(p), diags_(d) {}

  bool run() {
    int errors = diags_.error_count();
    for (auto [kind, i] : p_.order) {
      if (kind == 0 && !p_.types[i].type_params.empty() && check_params(p_.types[i].type_params))
        generic_types_[p_.types[i].name.name] = &p_.types[i];
      if (kind == 2 && !p_.fns[i].type_params.empty() && check_params(p_.fns[i].type_params))
        generic_fns_[p_.fns[i].name.name] = &p_.fns[i];
    }
    if (diags_.error_count() > errors) return false;
    // Instances of generic functions, every tuple of allowed types.
    for (auto [kind, i] : p_.order) {
      if (kind != 2 || p_.fns[i].type_params.empty()) continue;
      const ast::FnDecl& g = p_.fns[i];
      std::vector<std::vector<std::string>> tuples = {{}};
      for (const auto& tp : g.type_params) {
        std::vector<std::vector<std::string>> next;
        for (const auto& t : tuples)
          for (const auto& s : constraint_types(tp)) {
            next.push_back(t);
            next.back().push_back(s);
          }
        tuples = std::move(next);
      }
      for (const auto& args : tuples) {
        ast::FnDecl inst = ast::clone(g);
        inst.type_params.clear();
        inst.name.name = instance_name(g.name.name, args);
        inst.instance_of = ast::InstanceOf{g.name.name, args};
        Bindings b;
        for (size_t k = 0; k < args.size(); ++k) b[g.type_params[k].name.name] = args[k];
        Substitute{b}.fn(inst);
        fn_instances_[g.name.name].push_back(fns_.size());
        names_.push_back(inst.name.name);
        fns_.push_back(std::move(inst));
      }
    }
    // Uses of generic aliases, in every declaration that is not generic.
    for (auto& t : p_.types)
      if (t.type_params.empty()) uses(*t.type);
    for (auto& c : p_.consts)
      if (c.type) uses(*c.type);
    for (auto& f : p_.fns)
      if (f.type_params.empty()) uses(f);
    for (size_t k = 0; k < fns_.size(); ++k) uses(fns_[k]);
    if (diags_.error_count() > errors) return false;
    rebuild();
    return true;
  }

 private:
  ast::Program& p_;
  DiagnosticEngine& diags_;
  std::map<std::string, const ast::TypeAlias*> generic_types_;
  std::map<std::string, const ast::FnDecl*> generic_fns_;
  std::vector<ast::FnDecl> fns_;                           // instances of generic functions
  std::vector<std::string> names_;                         // their names (fns_ is moved from)
  std::map<std::string, std::vector<size_t>> fn_instances_;  // generic -> indices into fns_
  std::vector<ast::TypeAlias> types_;                      // instances of generic aliases
  std::map<std::string, std::vector<size_t>> type_instances_;
  std::set<std::string> made_types_;

  bool check_params(const std::vector<ast::TypeParam>& ps) {
    bool ok = true;
    std::map<std::string, SourceRange> seen;
    for (const auto& tp : ps) {
      const std::string& n = tp.name.name;
      if (is_scalar_name(n) || n == "float" || n == "int" || n == "any") {
        diags_.report(DiagKind::GenericParam, tp.name.range, code(n) + " is a type; a type parameter needs a new name");
        ok = false;
      } else if (auto [it, fresh] = seen.emplace(n, tp.name.range); !fresh) {
        diags_.report(DiagKind::GenericParam, tp.name.range, "type parameter " + code(n) + " is declared twice");
        diags_.note(it->second, "the first " + code(n) + " is here");
        ok = false;
      }
      if (constraint_types(tp).empty()) {
        SourceRange at = tp.constraint.empty() ? tp.range : tp.constraint[0].range;
        std::string bad;
        for (const auto& c : tp.constraint)
          if (!is_scalar_name(c.name) && c.name != "float" && c.name != "int" && c.name != "any") bad = c.name;
        diags_.report(DiagKind::GenericParam, at,
                      bad.empty() ? "the constraint " + code(constraint_text(tp)) + " lists a type twice"
                                  : "unknown constraint " + code(bad) +
                                        "; expected `float`, `int`, `any` or scalar types joined by `|`");
        ok = false;
      }
    }
    return ok;
  }

  void uses(ast::FnDecl& f) {
    for (auto& p : f.params) uses(*p.type);
    if (f.ret) uses(*f.ret);
    for (auto& w : f.where) uses(*w);
    for (auto& s : f.body) {
      if (s->type) uses(*s->type);
      if (s->target) uses(*s->target);
      if (s->value) uses(*s->value);
    }
  }

  void uses(ast::TypeExpr& t) {
    if (t.kind == ast::TypeExprKind::Named) name_use(t.name.name, t.name.range, t.type_args);
    for (auto& g : t.groups)
      for (auto& d : g.dims)
        if (d.extent) uses(*d.extent);
    for (auto& f : t.fields) uses(*f.type);
    for (auto& w : t.where) uses(*w);
    if (t.element) uses(*t.element);
  }

  void uses(ast::Expr& e) {
    if (e.kind == ast::ExprKind::Construct) name_use(e.name, e.name_range, e.type_args);
    for (auto& o : e.operands) uses(*o);
    for (auto& f : e.fields) {
      if (f.type) uses(*f.type);
      if (f.value) uses(*f.value);
    }
  }

  /// `name` written with `args`: a generic alias's instance, or an error.
  void name_use(std::string& name, SourceRange at, std::vector<ast::TypeExprPtr>& args) {
    auto g = generic_types_.find(name);
    if (g == generic_types_.end()) {
      if (!args.empty()) {
        diags_.report(DiagKind::GenericArguments, at,
                      code(name) + " is not a generic type; it takes no type arguments");
        args.clear();
      }
      return;
    }
    const ast::TypeAlias& alias = *g->second;
    size_t want = alias.type_params.size();
    if (args.size() != want) {
      std::string params;
      for (const auto& tp : alias.type_params) params += (params.empty() ? "" : ", ") + tp.name.name;
      diags_.report(DiagKind::GenericArguments, at,
                    code(name) + " takes " + std::to_string(want) + " type argument(s) but " +
                        std::to_string(args.size()) + " were given; write " + code(name + "<" + params + ">"));
      diags_.note(alias.name.range, code(name) + " is declared here");
      args.clear();
      return;
    }
    std::vector<std::string> scalars;
    for (size_t k = 0; k < want; ++k) {
      const ast::TypeExpr& a = *args[k];
      const ast::TypeParam& tp = alias.type_params[k];
      if (a.kind != ast::TypeExprKind::Named || !a.type_args.empty() || !is_scalar_name(a.name.name)) {
        diags_.report(DiagKind::GenericArguments, a.range,
                      "a type argument must be a scalar type (" + code("f32") + ", " + code("bf16") +
                          ", ...) or a type parameter of the enclosing generic function");
        args.clear();
        return;
      }
      auto allowed = constraint_types(tp);
      if (std::find(allowed.begin(), allowed.end(), a.name.name) == allowed.end()) {
        diags_.report(DiagKind::GenericConstraint, a.range,
                      code(a.name.name) + " does not satisfy the constraint " + code(constraint_text(tp)) + " of " +
                          code(tp.name.name) + " in " + code(name));
        diags_.note(tp.range, code(tp.name.name) + " is declared here");
        args.clear();
        return;
      }
      scalars.push_back(a.name.name);
    }
    args.clear();
    name = alias_instance(alias, scalars);
  }

  std::string alias_instance(const ast::TypeAlias& g, const std::vector<std::string>& args) {
    std::string n = instance_name(g.name.name, args);
    if (!made_types_.insert(n).second) return n;
    ast::TypeAlias inst;
    inst.name = {n, g.name.range};
    inst.type = ast::clone(*g.type);
    inst.range = g.range;
    inst.instance_of = ast::InstanceOf{g.name.name, args};
    Bindings b;
    for (size_t k = 0; k < args.size(); ++k) b[g.type_params[k].name.name] = args[k];
    Substitute{b}.type(*inst.type);
    uses(*inst.type);  // before it is moved: a generic alias may use another
    type_instances_[g.name.name].push_back(types_.size());
    types_.push_back(std::move(inst));
    return n;
  }

  /// New declaration lists: a generic's instances take its place in the
  /// source order; the generics move to generic_fns / generic_types.
  void rebuild() {
    std::vector<ast::TypeAlias> types;
    std::vector<ast::FnDecl> fns;
    std::vector<ast::ScheduleDecl> schedules;
    std::vector<std::pair<int, size_t>> order;
    for (auto [kind, i] : p_.order) {
      if (kind == 0) {
        ast::TypeAlias& t = p_.types[i];
        if (t.type_params.empty()) {
          types.push_back(std::move(t));
          order.emplace_back(0, types.size() - 1);
          continue;
        }
        for (size_t k : type_instances_[t.name.name]) {
          types.push_back(std::move(types_[k]));
          order.emplace_back(0, types.size() - 1);
        }
        p_.generic_types.push_back(std::move(t));
      } else if (kind == 1) {
        order.emplace_back(1, i);
      } else if (kind == 2) {
        ast::FnDecl& f = p_.fns[i];
        if (f.type_params.empty()) {
          fns.push_back(std::move(f));
          order.emplace_back(2, fns.size() - 1);
          continue;
        }
        for (size_t k : fn_instances_[f.name.name]) {
          fns.push_back(std::move(fns_[k]));
          order.emplace_back(2, fns.size() - 1);
        }
        p_.generic_fns.push_back(std::move(f));
      } else {
        ast::ScheduleDecl& s = p_.schedules[i];
        if (!fn_instances_.count(s.func.name)) {
          schedules.push_back(std::move(s));
          order.emplace_back(3, schedules.size() - 1);
          continue;
        }
        // A schedule of a generic function schedules each instance.
        for (size_t k : fn_instances_[s.func.name]) {
          ast::ScheduleDecl c;
          c.func = {names_[k], s.func.range};
          c.range = s.range;
          for (const auto& d : s.directives) {
            ast::Directive cd{d.name, {}, d.range};
            for (const auto& a : d.args) cd.args.push_back(ast::clone(*a));
            c.directives.push_back(std::move(cd));
          }
          schedules.push_back(std::move(c));
          order.emplace_back(3, schedules.size() - 1);
        }
      }
    }
    p_.types = std::move(types);
    p_.fns = std::move(fns);
    p_.schedules = std::move(schedules);
    p_.order = std::move(order);
  }

};

}  // namespace

std::string instance_name(const std::string& generic, const std::vector<std::string>& args) {
  std::string n = generic + "__";
  for (size_t k = 0; k < args.size(); ++k) n += (k ? "_" : "") + args[k];
  return n;
}

std::vector<std::string> constraint_types(const ast::TypeParam& p) {
  if (p.constraint.empty()) return kAny;
  // A union of classes and scalar types, in the written order, each type once.
  std::vector<std::string> out;
  for (const auto& c : p.constraint) {
    const std::vector<std::string>* cls = c.name == "float" ? &kFloat : c.name == "int" ? &kInt : c.name == "any" ? &kAny : nullptr;
    std::vector<std::string> one = cls ? *cls : std::vector<std::string>{c.name};
    if (!cls && !is_scalar_name(c.name)) return {};
    for (const auto& t : one) {
      if (std::find(out.begin(), out.end(), t) != out.end()) return {};
      out.push_back(t);
    }
  }
  return out;
}

std::string constraint_text(const ast::TypeParam& p) {
  if (p.constraint.empty()) return "any";
  std::string s;
  for (const auto& c : p.constraint) s += (s.empty() ? "" : " | ") + c.name;
  return s;
}

bool instantiate_generics(ast::Program& program, DiagnosticEngine& diags) {
  return Instantiator(program, diags).run();
}

}  // namespace dccc
