#include "typecheck/checker.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <set>

#include "typecheck/dim_graph.h"
#include "typecheck/prover.h"

namespace dccc {
namespace {

using ast::Expr;
using ast::ExprKind;

bool is_math1(const std::string& n) {
  return n == "exp" || n == "log" || n == "sqrt" || n == "rsqrt" || n == "tanh" || n == "erf" || n == "abs";
}

std::string code(const std::string& s) { return "`" + s + "`"; }

/// A named value visible in a function body.
struct Value {
  TypePtr type;
  SourceRange def;
  bool is_size = false;    // a size parameter or an integer `let`: usable in extents
  std::string path;        // array identity of this value ("q", "seqlen")
};

/// How bare names in an extent are resolved.
enum class ExtentMode { Coupling, Signature, Body };

struct CouplingScope {
  const ast::TypeExpr* ast = nullptr;
  std::map<std::string, const ast::TypeExpr*> field_asts;
  std::map<std::string, TypePtr> resolved;  // fields resolved so far
  std::vector<std::string>* size_params = nullptr;
  std::string current_field;  // the field whose type is being resolved
};

/// One occurrence of a free (reduction) index name on a right side.
struct FreeUse {
  const Expr* name_expr;
  std::vector<const Expr*> reduces;  // enclosing reduces, outermost first
  bool direct;                       // used as a whole index, so it gives a range
};

/// A resolved tensor access `path[g0][g1]...`.
struct Access {
  const Expr* expr = nullptr;  // the outermost Index node
  const Expr* base = nullptr;
  TypePtr type;                // the indexed value's type
  std::vector<std::vector<const Expr*>> groups;
};

class Checker {
 public:
  Checker(const ast::Program& p, DiagnosticEngine& d, const CheckOptions& o, CheckedProgram& out)
      : prog_(p), diags_(d), opts_(o), prover_(o.solver_budget), out_(out) {}

  void run() {
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
    for (const auto& [name, v] : opts_.defines) out_.int_consts[name] = v;
    declare_globals();
    for (auto [kind, i] : prog_.order) {
      if (kind == 1) check_const(prog_.consts[i]);
      if (kind == 0) resolve_alias(prog_.types[i].name.name);
    }
    for (const auto& f : prog_.fns) check_signature(f);
    // Callees first: a call's result may share its arguments' storage
    // (`result_aliases`), which only the callee's body tells.
    for (size_t i : callees_first()) check_body(out_.functions[i]);
    out_.solver_calls = prover_.solver_calls();
  }

 private:
  // ---------------------------------------------------------------- globals
  void declare_globals() {
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
  }

  static bool is_builtin(const std::string& n) {
    return is_math1(n) || n == "pow" || n == "max" || n == "min" || n == "select" || n == "len" ||
           n == "print" || n == "all" || n == "sum";
  }

  void check_const(const ast::ConstDecl& c) {
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

  std::optional<int64_t> int_literal(const Expr& e, bool negative = false) {
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

  std::optional<double> float_literal(const Expr& e) {
    double v = std::strtod(e.text.c_str(), nullptr);
    if (!std::isfinite(v)) {
      diags_.report(DiagKind::LiteralOutOfRange, e.range, e.text.substr(0, 40) + (e.text.size() > 40 ? "..." : ""), "f64");
      return std::nullopt;
    }
    return v;
  }

  // ---------------------------------------------------------------- types
  TypePtr resolve_alias(const std::string& name) {
    if (auto it = out_.type_aliases.find(name); it != out_.type_aliases.end()) return it->second;
    auto decl = alias_decls_.find(name);
    if (decl == alias_decls_.end()) return nullptr;
    if (resolving_.count(name)) {
      diags_.report(DiagKind::NotAType, decl->second->name.range, "type alias " + code(name) + " refers to itself");
      return out_.type_aliases[name] = types::error();
    }
    resolving_.insert(name);
    const ast::TypeExpr& t = *decl->second->type;
    TypePtr result;
    if (t.kind == ast::TypeExprKind::Coupling) {
      result = resolve_coupling(t, name);
    } else {
      std::vector<std::string> sizes;
      ExtentEnv env{ExtentMode::Signature, nullptr, nullptr, &sizes, {}};
      result = resolve_type(t, env);
    }
    resolving_.erase(name);
    return out_.type_aliases[name] = result;
  }

  struct ExtentEnv {
    ExtentMode mode;
    CouplingScope* coupling;
    const std::map<std::string, Value>* scope;
    std::vector<std::string>* size_params;
    std::vector<std::pair<std::string, std::pair<IndexVarPtr, SymPtr>>> named;  // outer named dims
    std::vector<Fact>* facts = nullptr;
    std::set<std::string>* reads = nullptr;  // arrays read by extents (for freezing)
    const std::set<std::string>* pending_sizes = nullptr;  // output sizes not yet defined
  };

  TypePtr resolve_type(const ast::TypeExpr& t, ExtentEnv& env) {
    switch (t.kind) {
      case ast::TypeExprKind::Named: {
        if (auto s = scalar_from_name(t.name.name)) return types::scalar(*s);
        if (auto a = resolve_alias(t.name.name)) {
          if (a->kind == TypeKind::Coupling) return instantiate_coupling(a, env);
          return instantiate_sizes(a, env);
        }
        if (out_.int_consts.count(t.name.name) || out_.float_consts.count(t.name.name) || fn_decls_.count(t.name.name)) {
          diags_.report(DiagKind::NotAType, t.name.range, code(t.name.name) + " is a value, not a type");
          return types::error();
        }
        diags_.report(DiagKind::UnknownType, t.name.range, t.name.name);
        return types::error();
      }
      case ast::TypeExprKind::AutoCoupling:
        diags_.report(DiagKind::NotAType, t.range, "`auto coupling` is not supported yet; name a coupling type");
        return types::error();
      case ast::TypeExprKind::Coupling:
        if (env.mode != ExtentMode::Coupling && env.mode != ExtentMode::Signature) {
          diags_.report(DiagKind::NotAType, t.range, "a `coupling` type must be declared with `type Name = coupling {...}`");
          return types::error();
        }
        return instantiate_coupling(resolve_coupling(t, "coupling"), env);
      case ast::TypeExprKind::List: {
        TypePtr elem = resolve_type(*t.element, env);
        if (elem->kind == TypeKind::Error) return elem;
        if (elem->kind != TypeKind::Tensor) {
          diags_.report(DiagKind::NotAType, t.element->range, "a `list` holds tensors, not " + types::str(elem));
          return types::error();
        }
        auto out = std::make_shared<Type>();
        out->kind = TypeKind::List;
        out->element = elem;
        return out;
      }
      case ast::TypeExprKind::Tensor: return resolve_tensor(t, env);
    }
    return types::error();
  }

  /// A tensor alias used in a signature: its size parameters join the function's.
  TypePtr instantiate_sizes(const TypePtr& t, ExtentEnv& env) {
    if (t->kind != TypeKind::Tensor) return t;
    std::vector<SymPtr> extents;
    for (const auto& g : t->groups)
      for (const auto& d : g.dims)
        if (d.extent) extents.push_back(d.extent);
    sym::Subst s;
    for (const auto& e : extents) {
      std::function<void(const SymPtr&)> walk = [&](const SymPtr& x) {
        if (x->kind == SymKind::Size) bind_size_name(x->name, env, s);
        for (const auto& a : x->args) walk(a);
      };
      walk(e);
    }
    return types::substitute(t, s);
  }

  void bind_size_name(const std::string& name, ExtentEnv& env, sym::Subst& s) {
    if (auto c = out_.int_consts.find(name); c != out_.int_consts.end()) {
      s.sizes[name] = sym::constant(c->second);
      return;
    }
    if (env.size_params && std::find(env.size_params->begin(), env.size_params->end(), name) == env.size_params->end())
      env.size_params->push_back(name);
  }

  TypePtr instantiate_coupling(const TypePtr& t, ExtentEnv& env) {
    if (t->kind != TypeKind::Coupling) return t;
    auto out = std::make_shared<Type>(*t);
    for (const auto& sp : t->coupling->size_params) {
      if (auto c = out_.int_consts.find(sp); c != out_.int_consts.end()) {
        out->instance.sizes[sp] = sym::constant(c->second);
        continue;
      }
      out->instance.sizes[sp] = sym::size(sp);
      if (env.size_params && std::find(env.size_params->begin(), env.size_params->end(), sp) == env.size_params->end())
        env.size_params->push_back(sp);
    }
    return out;
  }

  TypePtr resolve_tensor(const ast::TypeExpr& t, ExtentEnv& env) {
    auto elem = scalar_from_name(t.name.name);
    bool ok = true;
    if (!elem) {
      auto a = resolve_alias(t.name.name);
      if (a && a->kind == TypeKind::Scalar) {
        elem = a->scalar;
      } else if (a) {
        diags_.report(DiagKind::NotAType, t.name.range, "element type must be a scalar, not " + code(t.name.name));
        ok = false;
      } else {
        diags_.report(DiagKind::UnknownType, t.name.range, t.name.name);
        ok = false;
      }
    }
    auto out = std::make_shared<Type>();
    out->kind = TypeKind::Tensor;
    out->scalar = elem.value_or(Scalar::F32);
    size_t named_before = env.named.size();
    std::set<std::string> names_here;
    for (const auto& g : t.groups) {
      GroupT group;
      for (const auto& d : g.dims) {
        DimT dim;
        dim.range = d.range;
        if (d.extent) {
          dim.extent = resolve_extent(*d.extent, env);
          if (!dim.extent) {
            ok = false;
          } else {
            extent_depth_++;
            ProofResult r = prove(extent_facts(env), sym::le(sym::constant(0), dim.extent), d.extent->range);
            extent_depth_--;
            if (r == ProofResult::Refuted) {
              diags_.report(DiagKind::BadExtent, d.extent->range,
                            "extent " + code(sym::str(dim.extent)) + " may be negative");
              ok = false;
            } else if (r == ProofResult::Unknown) {
              ok = false;
            }
          }
        } else if (env.mode == ExtentMode::Body) {
          diags_.report(DiagKind::BadExtent, d.range, "`?` extents are only allowed in parameter types");
          ok = false;
        }
        if (d.index) {
          if (!names_here.insert(d.index->name).second) {
            diags_.report(DiagKind::Redefinition, d.index->range, d.index->name);
            ok = false;
          }
          dim.index = std::make_shared<IndexVar>(IndexVar{d.index->name, d.index->range});
          env.named.push_back({d.index->name, {dim.index, dim.extent ? dim.extent : sym::constant(0)}});
        }
        group.dims.push_back(std::move(dim));
      }
      out->groups.push_back(std::move(group));
    }
    env.named.resize(named_before);
    return ok ? TypePtr(out) : types::error();
  }

  /// Facts for proofs inside extents: the named dims in scope lie in range.
  std::vector<Fact> extent_facts(const ExtentEnv& env) {
    std::vector<Fact> facts = env.facts ? *env.facts : std::vector<Fact>{};
    for (const auto& [n, vr] : env.named) {
      facts.push_back({{}, sym::le(sym::constant(0), sym::var(vr.first))});
      facts.push_back({{}, sym::lt(sym::var(vr.first), vr.second)});
    }
    return facts;
  }

  /// Convert an extent expression to a Sym, checking every name and read.
  SymPtr resolve_extent(const Expr& e, ExtentEnv& env) {
    struct Depth {
      int& d;
      explicit Depth(int& x) : d(x) { ++d; }
      ~Depth() { --d; }
    } depth(extent_depth_);
    switch (e.kind) {
      case ExprKind::Int: {
        auto v = int_literal(e);
        return v ? sym::constant(*v) : nullptr;
      }
      case ExprKind::Name: return extent_name(e, env);
      case ExprKind::Binary: {
        static const std::map<std::string, SymKind> ops = {
            {"+", SymKind::Add}, {"-", SymKind::Sub}, {"*", SymKind::Mul}, {"/", SymKind::Div}, {"%", SymKind::Mod}};
        auto it = ops.find(e.op);
        if (it == ops.end()) break;
        auto a = resolve_extent(*e.operands[0], env);
        auto b = resolve_extent(*e.operands[1], env);
        if (!a || !b) return nullptr;
        return sym::op(it->second, {a, b});
      }
      case ExprKind::Call:
        if ((e.name == "max" || e.name == "min") && e.operands.size() == 2) {
          auto a = resolve_extent(*e.operands[0], env);
          auto b = resolve_extent(*e.operands[1], env);
          if (!a || !b) return nullptr;
          return sym::op(e.name == "max" ? SymKind::Max : SymKind::Min, {a, b});
        }
        break;
      case ExprKind::Index: return extent_read(e, env);
      case ExprKind::Field:
        if (env.mode != ExtentMode::Coupling) {
          // `q.n`: a scalar integer field of a coupling value.
          auto r = extent_read(e, env);
          return r;
        }
        break;
      default: break;
    }
    diags_.report(DiagKind::BadExtent, e.range,
                  "an extent must be an integer expression of sizes, named indices and length arrays");
    return nullptr;
  }

  SymPtr extent_name(const Expr& e, ExtentEnv& env) {
    const std::string& n = e.name;
    for (auto it = env.named.rbegin(); it != env.named.rend(); ++it)
      if (it->first == n) return sym::var(it->second.first);
    if (auto c = out_.int_consts.find(n); c != out_.int_consts.end()) return sym::constant(c->second);
    if (out_.float_consts.count(n)) {
      diags_.report(DiagKind::BadExtent, e.range, "extent " + code(n) + " is not an integer");
      return nullptr;
    }
    if (env.mode == ExtentMode::Coupling) {
      if (env.coupling->field_asts.count(n)) {
        auto r = env.coupling->resolved.find(n);
        if (r != env.coupling->resolved.end() && r->second->kind == TypeKind::Scalar) {
          if (!is_int(r->second->scalar)) {
            diags_.report(DiagKind::NonIntegerLength, e.range, n, scalar_name(r->second->scalar));
            return nullptr;
          }
          return sym::read(n, {});
        }
        if (r != env.coupling->resolved.end() && r->second->kind == TypeKind::Error) return nullptr;
        diags_.report(DiagKind::BadExtent, e.range, "length array " + code(n) + " must be indexed, as in " + code(n + "[b]"));
        return nullptr;
      }
    }
    if (env.scope) {
      auto v = env.scope->find(n);
      if (v != env.scope->end()) {
        if (v->second.is_size) return sym::size(n);
        diags_.report(DiagKind::BadExtent, e.range, code(n) + " is a value of type " + types::str(v->second.type) + ", not a size");
        return nullptr;
      }
    }
    if (env.mode == ExtentMode::Body) {
      if (env.pending_sizes && env.pending_sizes->count(n)) {
        diags_.report(DiagKind::UninitializedUse, e.range, n);
        diags_.note({}, "size " + code(n) + " appears only in the return type; define it with `let " + n + " = ...;` first");
        return nullptr;
      }
      diags_.report(DiagKind::UnknownName, e.range, n);
      return nullptr;
    }
    if (env.size_params && std::find(env.size_params->begin(), env.size_params->end(), n) == env.size_params->end())
      env.size_params->push_back(n);
    return sym::size(n);
  }

  /// `seqlen[b]`, `q.seqlen[b]`, `q.n`: a read of an integer array or field.
  SymPtr extent_read(const Expr& e, ExtentEnv& env) {
    auto [base, groups] = ast::index_chain(e);
    std::string array;
    TypePtr type;
    if (env.mode == ExtentMode::Coupling) {
      if (base->kind != ExprKind::Name || !env.coupling->field_asts.count(base->name)) {
        diags_.report(DiagKind::UnknownField, base->range, base->kind == ExprKind::Name ? base->name : std::string("?"),
                      env.coupling->current_field);
        if (env.coupling->ast) diags_.note(env.coupling->ast->range, "the coupling's fields are declared here");
        return nullptr;
      }
      array = base->name;
      auto r = env.coupling->resolved.find(array);
      if (r == env.coupling->resolved.end()) return nullptr;  // cyclic; reported elsewhere
      type = r->second;
    } else {
      if (!env.scope) {
        diags_.report(DiagKind::BadExtent, e.range, "a type alias outside a coupling cannot read arrays");
        return nullptr;
      }
      auto pv = path_value(*base, *env.scope, true);
      if (!pv) return nullptr;
      array = pv->first;
      type = pv->second;
    }
    if (type->kind == TypeKind::Error) return nullptr;
    std::string shown = array;
    if (type->kind == TypeKind::Scalar && groups.empty()) {
      if (!is_int(type->scalar)) {
        diags_.report(DiagKind::NonIntegerLength, base->range, shown, scalar_name(type->scalar));
        return nullptr;
      }
      if (env.reads) env.reads->insert(array);
      return sym::read(array, {});
    }
    if (type->kind != TypeKind::Tensor) {
      diags_.report(DiagKind::NonIntegerLength, base->range, shown, types::str(type));
      return nullptr;
    }
    if (!is_int(type->scalar)) {
      diags_.report(DiagKind::NonIntegerLength, base->range, shown, scalar_name(type->scalar));
      return nullptr;
    }
    if (!check_grouping(e, groups, type, shown)) return nullptr;
    // Each index must range over exactly the array's dimension (a plain
    // named index) or provably stay inside it (any other expression).
    std::vector<SymPtr> args;
    sym::Subst inner;
    size_t gi = 0;
    std::vector<Fact> facts = extent_facts(env);
    for (const auto& g : type->groups) {
      for (size_t di = 0; di < g.dims.size(); ++di) {
        const Expr* ix = groups[gi][di];
        SymPtr arg = resolve_extent(*ix, env);
        if (!arg) return nullptr;
        SymPtr extent = sym::substitute(g.dims[di].extent, inner);
        if (g.dims[di].index) inner.vars[g.dims[di].index.get()] = arg;
        if (arg->kind == SymKind::Var && extent) {
          SymPtr range;
          for (const auto& [n, vr] : env.named)
            if (vr.first == arg->var) range = vr.second;
          if (range && prove(facts, sym::eq(range, extent), ix->range) != ProofResult::Proved) {
            diags_.report(DiagKind::LengthDomainMismatch, ix->range, shown, arg->var->name, code(sym::str(range)),
                          code(sym::str(extent)));
            diags_.note(arg->var->where, code(arg->var->name) + " is bound here");
            return nullptr;
          }
        } else if (extent) {
          if (!prove_in_bounds(facts, arg, extent, ix->range, {})) return nullptr;
        }
        args.push_back(arg);
      }
      ++gi;
    }
    if (env.reads) env.reads->insert(array);
    return sym::read(array, std::move(args));
  }

  /// Reports IndexCount / IndexGrouping when `groups` do not fit `type`.
  bool check_grouping(const Expr& at, const std::vector<std::vector<const Expr*>>& groups, const TypePtr& type,
                      const std::string& shown) {
    size_t given = 0;
    for (const auto& g : groups) given += g.size();
    bool same = groups.size() == type->groups.size();
    for (size_t i = 0; same && i < groups.size(); ++i) same = groups[i].size() == type->groups[i].dims.size();
    if (same) return true;
    std::string want;
    for (const auto& g : type->groups) {
      want += "[";
      for (size_t i = 0; i < g.dims.size(); ++i) want += i ? ", _" : "_";
      want += "]";
    }
    if (given == type->rank()) {
      diags_.report(DiagKind::IndexGrouping, at.range,
                    fmt::format("{} is indexed as `{}`; group its indices like its type: `{}`", code(shown),
                                group_shape(groups), want));
    } else {
      diags_.report(DiagKind::IndexCount, at.range,
                    fmt::format("{} has {} dimension(s) but {} index(es) are given; expected `{}`", code(shown),
                                type->rank(), given, want));
    }
    return false;
  }

  static std::string group_shape(const std::vector<std::vector<const Expr*>>& groups) {
    std::string s;
    for (const auto& g : groups) {
      s += "[";
      for (size_t i = 0; i < g.size(); ++i) s += i ? ", _" : "_";
      s += "]";
    }
    return s;
  }

  ProofResult prove(const std::vector<Fact>& facts, const SymPtr& goal, SourceRange at) {
    ProofResult r = prover_.prove(facts, goal);
    if (r == ProofResult::Unknown) diags_.report(DiagKind::ProofUnknown, at, code(sym::str(goal)));
    return r;
  }

  /// Proves 0 <= idx < extent; reports OutOfBounds with a note on where a
  /// plain index variable's range came from.
  bool prove_in_bounds(const std::vector<Fact>& facts, const SymPtr& idx, const SymPtr& extent, SourceRange at,
                       const std::map<const IndexVar*, std::pair<SymPtr, SourceRange>>& ranges) {
    ProofResult lo = prove(facts, sym::le(sym::constant(0), idx), at);
    if (lo == ProofResult::Unknown) return false;
    ProofResult hi = lo == ProofResult::Proved ? prove(facts, sym::lt(idx, extent), at) : ProofResult::Refuted;
    if (hi == ProofResult::Unknown) return false;
    if (lo == ProofResult::Proved && hi == ProofResult::Proved) return true;
    std::string what = code(sym::str(idx));
    if (idx->kind == SymKind::Var) {
      auto it = ranges.find(idx->var.get());
      if (it != ranges.end()) what += " (ranging over " + code(sym::str(it->second.first)) + ")";
    }
    diags_.report(DiagKind::OutOfBounds, at, what, "[0, " + sym::str(extent) + ")");
    if (idx->kind == SymKind::Var) {
      auto it = ranges.find(idx->var.get());
      if (it != ranges.end() && it->second.second.valid())
        diags_.note(it->second.second, code(idx->var->name) + " gets its range " + code(sym::str(it->second.first)) + " here");
    }
    return false;
  }

  // ---------------------------------------------------------------- couplings
  TypePtr resolve_coupling(const ast::TypeExpr& t, const std::string& name) {
    auto def = std::make_unique<CouplingDef>();
    def->name = name;
    def->range = t.range;
    CouplingScope cs;
    cs.ast = &t;
    cs.size_params = &def->size_params;
    DimGraph graph;
    bool ok = true;
    for (const auto& f : t.fields) {
      if (cs.field_asts.count(f.name.name)) {
        diags_.report(DiagKind::Redefinition, f.name.range, f.name.name);
        ok = false;
        continue;
      }
      cs.field_asts[f.name.name] = f.type.get();
      graph.add_node(f.name.name);
    }
    // Edges: every sibling an extent mentions, found syntactically first so
    // that cycles are reported before anything depends on the order.
    std::map<std::string, size_t> ids;
    for (size_t i = 0; i < graph.size(); ++i) ids[graph.name(i)] = i;
    std::map<std::pair<size_t, size_t>, SourceRange> edge_at;
    for (size_t i = 0; i < graph.size(); ++i) {
      std::function<void(const Expr&)> walk = [&](const Expr& e) {
        if (e.kind == ExprKind::Name && ids.count(e.name)) {
          graph.add_edge(i, ids[e.name]);
          edge_at.emplace(std::make_pair(i, ids[e.name]), e.range);
        }
        for (const auto& o : e.operands) walk(*o);
      };
      std::function<void(const ast::TypeExpr&)> walk_type = [&](const ast::TypeExpr& ty) {
        for (const auto& g : ty.groups)
          for (const auto& d : g.dims)
            if (d.extent) walk(*d.extent);
        if (ty.element) walk_type(*ty.element);
      };
      walk_type(*cs.field_asts[graph.name(i)]);
    }
    auto cycle = graph.find_cycle();
    if (cycle) {
      size_t from = (*cycle)[0], to = (*cycle)[1];
      diags_.report(DiagKind::CyclicExtent, edge_at[{from, to}], graph.name(from), graph.path_str(*cycle));
      for (size_t k = 1; k + 1 < cycle->size(); ++k)
        diags_.note(edge_at[{(*cycle)[k], (*cycle)[k + 1]}],
                    code(graph.name((*cycle)[k])) + " depends on " + code(graph.name((*cycle)[k + 1])) + " here");
      ok = false;
    } else {
      for (size_t n : graph.topo_order()) {
        ExtentEnv env{ExtentMode::Coupling, &cs, nullptr, &def->size_params, {}};
        cs.current_field = graph.name(n);
        TypePtr ft = resolve_type(*cs.field_asts[graph.name(n)], env);
        cs.resolved[graph.name(n)] = ft;
        if (ft->kind == TypeKind::Error) ok = false;
        def->order.push_back(n);
      }
      for (const auto& f : t.fields)
        if (cs.resolved.count(f.name.name)) def->fields.push_back({f.name.name, cs.resolved[f.name.name], f.name.range});
    }
    for (const auto& l : t.layout) {
      if (l.name != "packed" && l.name != "padded" && l.name != "interleaved") {
        diags_.report(DiagKind::UnknownLayout, l.range, l.name);
        ok = false;
      }
      def->layout.push_back(l.name);
    }
    if (ok) {
      // `where` facts over bare field names.
      std::map<std::string, Value> scope;
      for (const auto& f : def->fields) scope[f.name] = Value{f.type, f.range, false, f.name};
      for (const auto& sp : def->size_params) scope[sp] = Value{types::int_value(), {}, true, sp};
      for (const auto& w : t.where)
        if (auto fact = where_fact(*w, scope, {})) def->where.push_back(*fact);
        else ok = false;
    }
    auto type = std::make_shared<Type>();
    type->kind = ok ? TypeKind::Coupling : TypeKind::Error;
    type->coupling = def.get();
    out_.couplings.push_back(std::move(def));
    return type;
  }

  // ---------------------------------------------------------------- where
  /// Converts one `where` item to a Fact: `all(e)` quantifies e's free
  /// indices over the dimensions they index.
  std::optional<Fact> where_fact(const Expr& w, const std::map<std::string, Value>& scope,
                                 const std::vector<Fact>& facts) {
    const Expr* body = &w;
    bool quantified = false;
    if (w.kind == ExprKind::Call && w.name == "all") {
      if (w.operands.size() != 1) {
        diags_.report(DiagKind::ArgumentCount, w.range, "all", 1, w.operands.size());
        return std::nullopt;
      }
      body = w.operands[0].get();
      quantified = true;
    }
    WhereCtx ctx{scope, {}, {}, quantified, {}};
    SymPtr s = where_sym(*body, ctx);
    if (!s) return std::nullopt;
    if (!is_bool_sym(s)) {
      diags_.report(DiagKind::BadWhere, w.range, "a `where` constraint must be a comparison");
      return std::nullopt;
    }
    Fact f;
    std::vector<Fact> range_facts = facts;
    for (const auto& [name, vr] : ctx.quantified) {
      if (vr.second) {
        range_facts.push_back({{}, sym::le(sym::constant(0), sym::var(vr.first))});
        range_facts.push_back({{}, sym::lt(sym::var(vr.first), vr.second)});
      }
    }
    for (const auto& c : ctx.checks) {
      extent_depth_++;
      bool ok = prove_in_bounds(range_facts, c.index, c.extent, c.at, {});
      extent_depth_--;
      if (!ok) return std::nullopt;
    }
    for (const auto& [name, vr] : ctx.quantified) {
      if (!vr.second) {
        diags_.report(DiagKind::BadWhere, w.range, "cannot infer the range of " + code(name) + ": it never indexes an array directly (as in `a[" + name + "]`)");
        return std::nullopt;
      }
      f.vars.push_back({vr.first, vr.second});
    }
    f.body = s;
    return f;
  }

  static bool is_bool_sym(const SymPtr& s) {
    switch (s->kind) {
      case SymKind::Eq: case SymKind::Ne: case SymKind::Lt: case SymKind::Le:
      case SymKind::And: case SymKind::Or: case SymKind::Not: case SymKind::True: return true;
      default: return false;
    }
  }

  struct WhereCtx {
    const std::map<std::string, Value>& scope;
    std::map<std::string, std::pair<IndexVarPtr, SymPtr>> quantified;
    std::vector<std::string> order;
    bool allow_free;
    struct Check {
      SymPtr index, extent;
      SourceRange at;
    };
    std::vector<Check> checks;  // indices to prove in bounds once ranges are known
  };

  /// Converts one operand of a `where` constraint, checked to have the kind
  /// its operator takes: `&&`, `||` and `!` take comparisons (truth values);
  /// arithmetic, comparisons and indices take integers. nullptr after
  /// reporting otherwise.
  SymPtr where_operand(const Expr& operand, WhereCtx& ctx, bool want_truth, const std::string& op) {
    auto s = where_sym(operand, ctx);
    if (!s || is_bool_sym(s) == want_truth) return s;
    diags_.report(DiagKind::BadWhere, operand.range,
                  want_truth ? op + " joins comparisons; this operand is an integer"
                             : op + " takes integers; this operand is a comparison");
    return nullptr;
  }

  SymPtr where_sym(const Expr& e, WhereCtx& ctx) {
    auto bin = [&](SymKind k, bool swap = false) -> SymPtr {
      bool truth = k == SymKind::And || k == SymKind::Or;
      std::string op = "`" + e.op + "`";
      auto a = where_operand(*e.operands[0], ctx, truth, op);
      if (!a) return nullptr;  // one error per constraint
      auto b = where_operand(*e.operands[1], ctx, truth, op);
      if (!b) return nullptr;
      return swap ? sym::op(k, {b, a}) : sym::op(k, {a, b});
    };
    switch (e.kind) {
      case ExprKind::Int: {
        auto v = int_literal(e);
        return v ? sym::constant(*v) : nullptr;
      }
      case ExprKind::Bool: return e.bool_value ? sym::truth() : sym::op(SymKind::Not, {sym::truth()});
      case ExprKind::Binary: {
        if (e.op == "+") return bin(SymKind::Add);
        if (e.op == "-") return bin(SymKind::Sub);
        if (e.op == "*") return bin(SymKind::Mul);
        if (e.op == "/") return bin(SymKind::Div);
        if (e.op == "%") return bin(SymKind::Mod);
        if (e.op == "==") return bin(SymKind::Eq);
        if (e.op == "!=") return bin(SymKind::Ne);
        if (e.op == "<") return bin(SymKind::Lt);
        if (e.op == "<=") return bin(SymKind::Le);
        if (e.op == ">") return bin(SymKind::Lt, true);
        if (e.op == ">=") return bin(SymKind::Le, true);
        if (e.op == "&&") return bin(SymKind::And);
        if (e.op == "||") return bin(SymKind::Or);
        break;
      }
      case ExprKind::Unary:
        if (e.op == "!") {
          auto a = where_operand(*e.operands[0], ctx, true, "`!`");
          return a ? sym::op(SymKind::Not, {a}) : nullptr;
        }
        if (e.op == "-") {
          auto a = where_operand(*e.operands[0], ctx, false, "unary `-`");
          return a ? sym::sub(sym::constant(0), a) : nullptr;
        }
        break;
      case ExprKind::Name: {
        if (auto q = ctx.quantified.find(e.name); q != ctx.quantified.end()) return sym::var(q->second.first);
        if (auto c = out_.int_consts.find(e.name); c != out_.int_consts.end()) return sym::constant(c->second);
        auto v = ctx.scope.find(e.name);
        if (v != ctx.scope.end()) {
          if (v->second.is_size) return sym::size(e.name);
          if (v->second.type->kind == TypeKind::Scalar && is_int(v->second.type->scalar))
            return sym::read(v->second.path, {});
          if (v->second.type->kind == TypeKind::Tensor)
            diags_.report(DiagKind::BadWhere, e.range, code(e.name) + " is an array; index it or use `sum(...)`");
          else
            diags_.report(DiagKind::BadWhere, e.range,
                          "`where` constraints are about integers; " + code(e.name) + " is `" + types::str(v->second.type) + "`");
          return nullptr;
        }
        if (ctx.allow_free) {
          auto var = std::make_shared<IndexVar>(IndexVar{e.name, e.range});
          ctx.quantified[e.name] = {var, nullptr};
          return sym::var(var);
        }
        diags_.report(DiagKind::UnknownName, e.range, e.name);
        return nullptr;
      }
      case ExprKind::Call:
        if (e.name == "sum" && e.operands.size() == 1) {
          auto pv = path_value(*e.operands[0], ctx.scope, true);
          if (!pv) return nullptr;
          if (pv->second->kind != TypeKind::Tensor || !is_int(pv->second->scalar)) {
            diags_.report(DiagKind::BadWhere, e.range, "`sum` takes an integer array");
            return nullptr;
          }
          return sym::read(pv->first + ".sum", {});
        }
        if (e.name == "all") {
          diags_.report(DiagKind::BadWhere, e.range, "`all(...)` must be a whole `where` item");
          return nullptr;
        }
        break;
      case ExprKind::Index: case ExprKind::Field: {
        auto [base, groups] = ast::index_chain(e);
        auto pv = path_value(*base, ctx.scope, true);
        if (!pv) return nullptr;
        const TypePtr& t = pv->second;
        if (groups.empty() && t->kind == TypeKind::Scalar && is_int(t->scalar)) return sym::read(pv->first, {});
        if (t->kind != TypeKind::Tensor || !is_int(t->scalar)) {
          diags_.report(DiagKind::BadWhere, e.range, "`where` may read only integer arrays, not `" + types::str(t) + "`");
          return nullptr;
        }
        if (!check_grouping(e, groups, t, pv->first)) return nullptr;
        std::vector<SymPtr> args;
        sym::Subst inner;
        size_t gi = 0;
        for (const auto& g : t->groups) {
          for (size_t di = 0; di < g.dims.size(); ++di) {
            const Expr* ix = groups[gi][di];
            SymPtr arg = where_operand(*ix, ctx, false, "an index");
            if (!arg) return nullptr;
            if (g.dims[di].index) inner.vars[g.dims[di].index.get()] = arg;
            SymPtr extent = sym::substitute(g.dims[di].extent, inner);
            bool defines = false;
            if (ix->kind == ExprKind::Name) {
              auto q = ctx.quantified.find(ix->name);
              if (q != ctx.quantified.end() && !q->second.second) {
                q->second.second = extent;
                defines = true;
              }
            }
            if (!defines && extent) ctx.checks.push_back({arg, extent, ix->range});
            args.push_back(arg);
          }
          ++gi;
        }
        return sym::read(pv->first, std::move(args));
      }
      default: break;
    }
    diags_.report(DiagKind::BadWhere, e.range, "unsupported expression in a `where` constraint");
    return nullptr;
  }

  /// Resolves `x`, `x.f`, `x.f.g` to (array identity, type). For coupling
  /// fields the identity follows the value's bindings ("output.seqlen" may be
  /// "q.seqlen").
  std::optional<std::pair<std::string, TypePtr>> path_value(const Expr& e, const std::map<std::string, Value>& scope,
                                                            bool report) {
    if (e.kind == ExprKind::Name) {
      auto v = scope.find(e.name);
      if (v == scope.end()) {
        if (report) diags_.report(DiagKind::UnknownName, e.range, e.name);
        return std::nullopt;
      }
      out_.paths[&e] = v->second.path;
      return std::make_pair(v->second.path, v->second.type);
    }
    if (e.kind == ExprKind::Field) {
      auto base = path_value(*e.operands[0], scope, report);
      if (!base) return std::nullopt;
      const TypePtr& t = base->second;
      if (t->kind == TypeKind::Error) return std::nullopt;
      if (t->kind != TypeKind::Coupling) {
        if (report) diags_.report(DiagKind::NoSuchField, e.name_range, types::str(t), e.name);
        return std::nullopt;
      }
      const CouplingField* f = t->coupling->field(e.name);
      if (!f) {
        if (report) {
          diags_.report(DiagKind::NoSuchField, e.name_range, code(t->coupling->name), e.name);
          diags_.note(t->coupling->range, code(t->coupling->name) + " is defined here");
        }
        return std::nullopt;
      }
      out_.paths[&e] = field_identity(base->first, t, e.name);
      return std::make_pair(out_.paths[&e], field_type(base->first, t, *f));
    }
    if (report) diags_.report(DiagKind::NotAssignable, e.range, "expected a variable or a field");
    return std::nullopt;
  }

  static std::string field_identity(const std::string& base, const TypePtr& t, const std::string& field) {
    auto it = t->instance.arrays.find(field);
    if (it != t->instance.arrays.end()) return it->second;
    return base + "." + field;
  }

  /// The type of field `f` of coupling value `base`: sibling reads renamed
  /// to the value's arrays, sizes to the instance's.
  TypePtr field_type(const std::string& base, const TypePtr& t, const CouplingField& f) {
    sym::Subst s;
    s.sizes = t->instance.sizes;
    for (const auto& other : t->coupling->fields) s.arrays[other.name] = field_identity(base, t, other.name);
    return types::substitute(f.type, s);
  }

  /// Indices into out_.functions, every function after the functions its body
  /// calls (declaration order otherwise; a recursive cycle keeps it, and
  /// lowering rejects the recursion).
  std::vector<size_t> callees_first() const {
    std::vector<size_t> order;
    std::vector<int> state(out_.functions.size(), 0);  // 0 new, 1 on the path, 2 done
    std::function<void(const Expr&, std::vector<size_t>&)> calls = [&](const Expr& e, std::vector<size_t>& out) {
      if (e.kind == ExprKind::Call)
        if (auto it = signatures_.find(e.name); it != signatures_.end()) out.push_back(it->second);
      for (const auto& o : e.operands) calls(*o, out);
      for (const auto& f : e.fields)
        if (f.value) calls(*f.value, out);
    };
    std::function<void(size_t)> visit = [&](size_t i) {
      if (state[i]) return;
      state[i] = 1;
      std::vector<size_t> callees;
      for (const auto& st : out_.functions[i].decl->body) {
        if (st->target) calls(*st->target, callees);
        if (st->value) calls(*st->value, callees);
      }
      for (size_t c : callees) visit(c);
      state[i] = 2;
      order.push_back(i);
    };
    for (size_t i = 0; i < out_.functions.size(); ++i) visit(i);
    return order;
  }

  // ---------------------------------------------------------------- functions
  void check_signature(const ast::FnDecl& f) {
    if (!fn_decls_.count(f.name.name) || fn_decls_[f.name.name] != &f) return;
    CheckedFunction cf;
    cf.decl = &f;
    std::map<std::string, Value> scope;
    std::set<std::string> pnames;
    for (const auto& p : f.params) {
      if (!pnames.insert(p.name.name).second) {
        diags_.report(DiagKind::Redefinition, p.name.range, p.name.name);
        continue;
      }
      ExtentEnv env{ExtentMode::Signature, nullptr, &scope, &cf.size_params, {}};
      TypePtr t = resolve_type(*p.type, env);
      cf.params.push_back({p.name.name, t});
      scope[p.name.name] = Value{t, p.name.range, false, p.name.name};
    }
    if (f.ret) {
      ExtentEnv env{ExtentMode::Signature, nullptr, &scope, &cf.size_params, {}};
      cf.ret = resolve_type(*f.ret, env);
    } else {
      cf.ret = types::void_type();
    }
    if (f.name.name == "main" && (!f.params.empty() || f.ret)) {
      diags_.report(DiagKind::TypeMismatch, f.name.range, "`main` takes no parameters and returns nothing");
    }
    out_.functions.push_back(std::move(cf));
    signatures_[f.name.name] = out_.functions.size() - 1;
  }

  struct FnCtx {
    CheckedFunction* fn;
    std::map<std::string, Value> scope;
    std::vector<Fact> facts;
    std::set<std::string> frozen;     // arrays that already determine extents
    std::set<std::string> assigned;   // int arrays given definitional facts
    std::set<std::string> output_sizes;  // sizes named only by the return type
    bool returned = false;
  };

  void check_body(CheckedFunction& cf) {
    const ast::FnDecl& f = *cf.decl;
    FnCtx ctx{&cf, {}, {}, {}, {}, {}};
    frozen_ = &ctx.frozen;
    struct Reset {
      const std::set<std::string>*& p;
      ~Reset() { p = nullptr; }
    } reset{frozen_};
    std::set<std::string> param_sizes;
    for (const auto& [name, t] : cf.params) {
      collect_sizes(t, param_sizes);
      add_value_facts(name, t, ctx);
    }
    bool param_error = std::any_of(cf.params.begin(), cf.params.end(),
                                   [](const auto& p) { return p.second->kind == TypeKind::Error; });
    for (const auto& s : cf.size_params) {
      if (param_sizes.count(s) || param_error) ctx.scope[s] = Value{types::int_value(), {}, true, s};
      else ctx.output_sizes.insert(s);
    }
    for (size_t i = 0; i < cf.params.size(); ++i)
      ctx.scope[cf.params[i].first] = Value{cf.params[i].second, f.params[i].name.range, false, cf.params[i].first};
    for (const auto& w : f.where)
      if (auto fact = where_fact(*w, ctx.scope, ctx.facts)) ctx.facts.push_back(*fact);
    cf.entry_facts = ctx.facts;
    for (const auto& s : f.body) check_stmt(*s, ctx);
    if (cf.ret->kind != TypeKind::Void && cf.ret->kind != TypeKind::Error && !ctx.returned)
      diags_.report(DiagKind::ReturnMismatch, f.name.range,
                    "function " + code(f.name.name) + " must return a value of type " + code(types::str(cf.ret)));
    cf.facts = ctx.facts;
    for (const auto& [n, v] : ctx.scope) cf.locals[n] = v.type;
  }

  void collect_sizes(const TypePtr& t, std::set<std::string>& out) {
    if (!t) return;
    std::function<void(const SymPtr&)> walk = [&](const SymPtr& s) {
      if (!s) return;
      if (s->kind == SymKind::Size) out.insert(s->name);
      for (const auto& a : s->args) walk(a);
    };
    if (t->kind == TypeKind::Tensor)
      for (const auto& g : t->groups)
        for (const auto& d : g.dims) walk(d.extent);
    if (t->kind == TypeKind::List) collect_sizes(t->element, out);
    if (t->kind == TypeKind::Coupling)
      for (const auto& [n, s] : t->instance.sizes) walk(s);
  }

  /// Fields whose values determine other fields' extents (length arrays).
  static std::set<std::string> length_fields(const CouplingDef& def) {
    std::set<std::string> out;
    for (const auto& f : def.fields) {
      if (f.type->kind != TypeKind::Tensor) continue;
      for (const auto& g : f.type->groups)
        for (const auto& d : g.dims) {
          std::vector<SymPtr> rs;
          sym::reads(d.extent, rs);
          for (const auto& r : rs) out.insert(r->name.substr(0, r->name.find('.')));
        }
    }
    return out;
  }

  /// Facts a parameter or constructed value brings: its coupling's `where`,
  /// and its length arrays become frozen.
  void add_value_facts(const std::string& path, const TypePtr& t, FnCtx& ctx) {
    if (t->kind != TypeKind::Coupling) return;
    sym::Subst s;
    s.sizes = t->instance.sizes;
    for (const auto& f : t->coupling->fields) {
      s.arrays[f.name] = field_identity(path, t, f.name);
      s.arrays[f.name + ".sum"] = field_identity(path, t, f.name) + ".sum";
      if (length_fields(*t->coupling).count(f.name)) ctx.frozen.insert(field_identity(path, t, f.name));
    }
    for (const auto& w : t->coupling->where) {
      Fact f;
      for (const auto& [v, r] : w.vars) f.vars.push_back({v, sym::substitute(r, s)});
      f.body = sym::substitute(w.body, s);
      ctx.facts.push_back(f);
    }
  }

  // ================================================================ statements
  // (This part of the Checker class is kept in its own file for size; it is
  // included inside the class body of checker.cpp.)

  /// Per-statement index state.
  struct RhsCtx {
    std::map<std::string, IndexVarPtr> lhs;  // left-side indices by name
    std::map<const IndexVar*, std::pair<SymPtr, SourceRange>> ranges;
    std::map<const Expr*, IndexVarPtr> free_var;  // Name node -> its reduction var
    std::map<const Expr*, std::vector<IndexVarPtr>> binds;  // reduce -> vars it binds
    std::vector<Access> accesses;
    std::vector<IndexInfo> infos;
    std::set<std::string> reported;  // names already diagnosed
  };

  void check_stmt(const ast::Stmt& s, FnCtx& ctx) {
    switch (s.kind) {
      case ast::StmtKind::Let: check_let(s, ctx); break;
      case ast::StmtKind::Assign: check_assign(s, ctx); break;
      case ast::StmtKind::Return: check_return(s, ctx); break;
      case ast::StmtKind::Expr: check_expr_stmt(s, ctx); break;
    }
  }

  bool name_taken(const std::string& n, const FnCtx& ctx) {
    return ctx.scope.count(n) || out_.int_consts.count(n) || out_.float_consts.count(n);
  }

  void check_let(const ast::Stmt& s, FnCtx& ctx) {
    const std::string& name = s.name.name;
    bool defines_output_size = ctx.output_sizes.count(name) > 0;
    if (!defines_output_size && (name_taken(name, ctx) || scalar_from_name(name) || is_builtin(name))) {
      diags_.report(DiagKind::Redefinition, s.name.range, name);
      auto v = ctx.scope.find(name);
      if (v != ctx.scope.end() && v->second.def.valid()) diags_.note(v->second.def, "previous definition is here");
      return;
    }
    TypePtr annot;
    if (s.type) {
      std::set<std::string> reads;
      ExtentEnv env{ExtentMode::Body, nullptr, &ctx.scope, nullptr, {}, &ctx.facts, &reads, &ctx.output_sizes};
      annot = resolve_type(*s.type, env);
      ctx.frozen.insert(reads.begin(), reads.end());
    }
    if (!s.type && !s.value) {
      diags_.report(DiagKind::NotAType, s.range, "`let " + name + ";` needs a type or a value");
      ctx.scope[name] = Value{types::error(), s.name.range, false, name};
      return;
    }
    TypePtr vt;
    StmtInfo info;
    info.stmt = &s;
    std::optional<std::string> source_path;
    if (s.value) {
      vt = value_type(*s.value, ctx, name, &info, &source_path);
      if (annot && s.value->kind == ExprKind::TensorLit && vt->kind == TypeKind::Tensor && annot->kind == TypeKind::Tensor) {
        // A literal's untyped numbers take the annotated element type.
        TypePtr elem = literal_elem_[s.value.get()];
        int errors = diags_.error_count();
        assign_compatible(types::scalar(annot->scalar), elem, s.value->range, name);
        std::function<void(const Expr&)> each = [&](const Expr& x) {
          if (x.kind == ExprKind::TensorLit) for (const auto& o : x.operands) each(*o);
          else check_literal_fits(x, annot->scalar);
        };
        each(*s.value);
        if (diags_.error_count() > errors) vt = types::error();
        else {
          auto copy = std::make_shared<Type>(*vt);
          copy->scalar = annot->scalar;
          vt = copy;
        }
      }
      if (annot && vt->kind != TypeKind::Error && annot->kind != TypeKind::Error) {
        DiagKind k = s.value->kind == ExprKind::TensorLit ? DiagKind::ShapeMismatch : DiagKind::TypeMismatch;
        if (!conforms(annot, vt, s.value->range, k, ctx)) vt = types::error();
        else if (annot->kind == TypeKind::Scalar) check_literal_fits(*s.value, annot->scalar);
      }
    }
    TypePtr t = annot ? annot : vt;
    if (vt && annot && annot->kind == TypeKind::Coupling && vt->kind == TypeKind::Coupling) t = vt;
    if (annot && vt && annot->kind == TypeKind::Scalar) t = annot;
    if (!annot && vt) {
      if (vt->kind == TypeKind::FloatValue) t = types::scalar(Scalar::F32);
      if (vt->kind == TypeKind::Void) {
        diags_.report(DiagKind::TypeMismatch, s.value->range, "the expression gives no value");
        t = types::error();
      }
    }
    if (annot && annot->kind == TypeKind::Coupling && !s.value) {
      diags_.report(DiagKind::NotAType, s.range,
                    "a coupling value must be constructed: `" + name + " = " + types::str(annot) + " { ... }`");
      t = types::error();
    }
    Value v{t, s.name.range, false, name};
    bool is_int_value = t->kind == TypeKind::IntValue || (t->kind == TypeKind::Scalar && is_int(t->scalar));
    if (is_int_value && s.value) {
      // An integer `let` is a size: usable in extents, with its value as a fact.
      v.is_size = true;
      if (t->kind == TypeKind::IntValue && annot == nullptr) v.type = types::int_value();
      RhsCtx empty;
      if (SymPtr val = to_sym(*s.value, empty, ctx)) ctx.facts.push_back({{}, sym::eq(sym::size(name), val)});
    }
    if (defines_output_size) {
      if (!is_int_value) {
        diags_.report(DiagKind::TypeMismatch, s.name.range, "size " + code(name) + " must be given an integer value");
      }
      ctx.output_sizes.erase(name);
      v.is_size = true;
    }
    // `let a = e;` of a tensor (or a call that returns one of its arguments)
    // names e's storage: writes through `a`, the facts about it and its
    // being frozen or read-only all follow that storage.
    if (t->kind == TypeKind::Tensor && source_path) v.path = *source_path;
    if (t->kind == TypeKind::Coupling && source_path) {
      // A copy of another coupling value shares its arrays.
      auto copy = std::make_shared<Type>(*t);
      for (const auto& f : t->coupling->fields) copy->instance.arrays[f.name] = field_identity(*source_path, t, f.name);
      v.type = copy;
    }
    if (t->kind == TypeKind::Coupling) add_value_facts(name, v.type, ctx);
    if (t->kind == TypeKind::Scalar && !s.value) uninitialized_.insert(name);
    ctx.scope[name] = v;
    info.value_type = v.type;
    ctx.fn->stmts.push_back(std::move(info));
  }

  /// Type of a whole value (let initialiser, return value, argument).
  TypePtr value_type(const Expr& e, FnCtx& ctx, const std::string& binding, StmtInfo* info,
                     std::optional<std::string>* source_path = nullptr) {
    switch (e.kind) {
      case ExprKind::Name: {
        auto v = ctx.scope.find(e.name);
        if (v != ctx.scope.end() && !v->second.is_size && v->second.type->kind != TypeKind::Scalar) {
          out_.paths[&e] = v->second.path;
          if (source_path) *source_path = v->second.path;
          return v->second.type;
        }
        break;
      }
      case ExprKind::Field: {
        auto pv = path_value(e, ctx.scope, false);
        if (pv && pv->second->kind != TypeKind::Scalar) {
          if (source_path) *source_path = pv->first;
          return pv->second;
        }
        if (!pv) {
          path_value(e, ctx.scope, true);
          return types::error();
        }
        break;
      }
      case ExprKind::Construct: return check_construct(e, ctx, binding);
      case ExprKind::TensorLit: return literal_type(e, ctx);
      case ExprKind::Call:
        if (fn_decls_.count(e.name) && signatures_.count(e.name)) {
          const CheckedFunction& callee = out_.functions[signatures_[e.name]];
          bool whole = callee.ret->kind != TypeKind::Scalar ||
                       std::any_of(callee.params.begin(), callee.params.end(),
                                   [](const auto& p) { return p.second->kind != TypeKind::Scalar; });
          if (whole) return check_call(e, ctx, source_path);
        }
        break;
      case ExprKind::Index: {
        // A list element is a whole tensor.
        const Expr* base = &e;
        while (base->kind == ExprKind::Index) base = base->operands[0].get();
        auto pv = path_value(*base, ctx.scope, false);
        if (pv && pv->second->kind == TypeKind::List && e.operands[0].get() == base) {
          RhsCtx rc;
          element_check(e, ctx, rc, info);
          return pv->second->element;
        }
        break;
      }
      default: break;
    }
    RhsCtx rc;
    return element_check(e, ctx, rc, info);
  }

  /// Runs index inference and typing over an element-wise expression whose
  /// left-side indices are already in `rc`; returns its element type.
  TypePtr element_check(const Expr& e, FnCtx& ctx, RhsCtx& rc, StmtInfo* info) {
    std::vector<const Expr*> stack;
    std::vector<FreeUse> uses;
    collect(e, ctx, rc, stack, uses, false);
    if (!bind_free(uses, ctx, rc)) return types::error();
    if (!infer_ranges(ctx, rc)) return types::error();
    std::vector<Fact> facts = stmt_facts(ctx, rc);
    bool ok = true;
    for (const Access& a : rc.accesses) ok &= check_access_bounds(a, facts, ctx, rc);
    if (!ok) return types::error();
    TypePtr t = elem_type(e, ctx, rc);
    if (info) {
      info->indices.insert(info->indices.end(), rc.infos.begin(), rc.infos.end());
    }
    return t;
  }

  std::vector<Fact> stmt_facts(const FnCtx& ctx, const RhsCtx& rc) {
    std::vector<Fact> facts = ctx.facts;
    for (const auto& [v, r] : rc.ranges) {
      SymPtr var = sym::var(lookup_var(rc, v));
      facts.push_back({{}, sym::le(sym::constant(0), var)});
      facts.push_back({{}, sym::lt(var, r.first)});
    }
    return facts;
  }

  static IndexVarPtr lookup_var(const RhsCtx& rc, const IndexVar* v) {
    for (const auto& [n, p] : rc.lhs)
      if (p.get() == v) return p;
    for (const auto& [e, p] : rc.free_var)
      if (p.get() == v) return p;
    return nullptr;
  }

  bool resolvable(const std::string& n, const FnCtx& ctx, const RhsCtx& rc) {
    return rc.lhs.count(n) || ctx.scope.count(n) || out_.int_consts.count(n) || out_.float_consts.count(n);
  }

  /// Pass 1: find tensor accesses and the free names used as indices.
  void collect(const Expr& e, FnCtx& ctx, RhsCtx& rc, std::vector<const Expr*>& stack, std::vector<FreeUse>& uses,
               bool in_len) {
    switch (e.kind) {
      case ExprKind::Name:
        if (!resolvable(e.name, ctx, rc)) uses.push_back({&e, stack, false});
        return;
      case ExprKind::Reduce: {
        static const std::set<std::string> ok_ops = {"+", "*", "max", "min"};
        if (!ok_ops.count(e.op)) diags_.report(DiagKind::BadReduceOp, e.op_range, e.op);
        stack.push_back(&e);
        collect(*e.operands[0], ctx, rc, stack, uses, false);
        stack.pop_back();
        return;
      }
      case ExprKind::Index: {
        Access a;
        a.expr = &e;
        const Expr* base = &e;
        while (base->kind == ExprKind::Index) {
          std::vector<const Expr*> g;
          for (size_t i = 1; i < base->operands.size(); ++i) g.push_back(base->operands[i].get());
          a.groups.insert(a.groups.begin(), std::move(g));
          base = base->operands[0].get();
        }
        a.base = base;
        for (const auto& g : a.groups)
          for (const Expr* ix : g) {
            if (ix->kind == ExprKind::Name && !resolvable(ix->name, ctx, rc)) uses.push_back({ix, stack, true});
            else collect(*ix, ctx, rc, stack, uses, false);
          }
        auto pv = path_value(*base, ctx.scope, false);
        if (!pv) {
          if (base->kind == ExprKind::Name && !resolvable(base->name, ctx, rc)) {
            if (rc.reported.insert(base->name).second) diags_.report(DiagKind::UnknownName, base->range, base->name);
          } else if (base->kind == ExprKind::Name || base->kind == ExprKind::Field) {
            path_value(*base, ctx.scope, true);
          } else {
            diags_.report(DiagKind::NotIndexable, base->range, "expression", "value");
          }
          rc.reported.insert("#access");
          return;
        }
        a.type = pv->second;
        if (a.type->kind == TypeKind::List && !in_len && a.groups.size() >= 1) {
          // list[b][i, ...]: the list index, then the element tensor's groups.
        }
        rc.accesses.push_back(std::move(a));
        return;
      }
      case ExprKind::Call: {
        bool len = e.name == "len";
        for (const auto& o : e.operands) collect(*o, ctx, rc, stack, uses, len);
        return;
      }
      case ExprKind::Construct:
      case ExprKind::TensorLit:
        return;  // reported by elem_type
      default:
        for (const auto& o : e.operands) collect(*o, ctx, rc, stack, uses, false);
        return;
    }
  }

  /// Assigns each free name a reduction variable: the innermost reduce that
  /// contains all its uses within one top-level reduce.
  bool bind_free(const std::vector<FreeUse>& uses, FnCtx& ctx, RhsCtx& rc) {
    bool ok = true;
    std::map<std::pair<std::string, const Expr*>, std::vector<const FreeUse*>> groups;
    std::vector<std::pair<std::string, const Expr*>> order;
    for (const auto& u : uses) {
      auto key = std::make_pair(u.name_expr->name, u.reduces.empty() ? nullptr : u.reduces.front());
      if (!groups.count(key)) order.push_back(key);
      groups[key].push_back(&u);
    }
    for (const auto& key : order) {
      const auto& g = groups[key];
      const std::string& name = key.first;
      if (!key.second) {
        bool direct = std::any_of(g.begin(), g.end(), [](const FreeUse* u) { return u->direct; });
        bool elsewhere = std::any_of(uses.begin(), uses.end(), [&](const FreeUse& u) {
          return u.name_expr->name == name && !u.reduces.empty();
        });
        if (rc.reported.insert(name).second) {
          if (direct || elsewhere) diags_.report(DiagKind::UnboundIndex, g.front()->name_expr->range, name);
          else diags_.report(DiagKind::UnknownName, g.front()->name_expr->range, name);
        }
        ok = false;
        continue;
      }
      if (!std::any_of(g.begin(), g.end(), [](const FreeUse* u) { return u->direct; })) {
        if (rc.reported.insert(name).second) diags_.report(DiagKind::UnknownName, g.front()->name_expr->range, name);
        ok = false;
        continue;
      }
      // Longest common prefix of the reduce stacks.
      size_t common = g.front()->reduces.size();
      for (const FreeUse* u : g) {
        size_t k = 0;
        while (k < common && k < u->reduces.size() && u->reduces[k] == g.front()->reduces[k]) ++k;
        common = k;
      }
      const Expr* binder = g.front()->reduces[common - 1];
      const FreeUse* first_direct = *std::find_if(g.begin(), g.end(), [](const FreeUse* u) { return u->direct; });
      auto var = std::make_shared<IndexVar>(IndexVar{name, first_direct->name_expr->range});
      for (const FreeUse* u : g) rc.free_var[u->name_expr] = var;
      rc.binds[binder].push_back(var);
    }
    (void)ctx;
    // A reduce that binds nothing reduces nothing.
    std::set<const Expr*> reduces;
    for (const auto& u : uses)
      for (const Expr* r : u.reduces) reduces.insert(r);
    return ok;
  }

  /// The index expressions of an access with the extent each must respect,
  /// outer named dims substituted by the actual indices.
  struct IndexSlot {
    const Expr* index;
    SymPtr extent;  // null: unknown (`?`) — checked through list lengths
    SymPtr sym;     // the index as a Sym (null if not an integer expression)
  };

  std::optional<std::vector<IndexSlot>> access_slots(const Access& a, FnCtx& ctx, RhsCtx& rc, bool report) {
    TypePtr t = a.type;
    std::vector<IndexSlot> slots;
    std::vector<std::vector<const Expr*>> groups = a.groups;
    std::string shown = a.base->kind == ExprKind::Name ? a.base->name : expr_path_text(*a.base);
    if (t->kind == TypeKind::List) {
      // First group: the list index, ranging over len(list).
      if (groups.empty() || groups[0].size() != 1) {
        if (report)
          diags_.report(DiagKind::IndexCount, a.expr->range,
                        fmt::format("list {} takes one index first, as in `{}[b]`", code(shown), shown));
        return std::nullopt;
      }
      std::string list_path = path_value(*a.base, ctx.scope, false)->first;
      SymPtr b = to_sym(*groups[0][0], rc, ctx);
      slots.push_back({groups[0][0], sym::size("len(" + list_path + ")"), b});
      groups.erase(groups.begin());
      if (groups.empty()) return slots;  // len(list[b])
      TypePtr elem = t->element;
      auto copy = std::make_shared<Type>(*elem);
      if (!copy->groups.empty() && !copy->groups[0].dims.empty() && !copy->groups[0].dims[0].extent && b)
        copy->groups[0].dims[0].extent = sym::read(list_path + ".len", {b});
      t = copy;
    }
    if (t->kind == TypeKind::Coupling) {
      if (report)
        diags_.report(DiagKind::NotIndexable, a.expr->range, shown, code(types::str(t)) + "; index one of its fields");
      return std::nullopt;
    }
    if (t->kind != TypeKind::Tensor) {
      if (report && t->kind != TypeKind::Error) diags_.report(DiagKind::NotIndexable, a.expr->range, shown, code(types::str(t)));
      return std::nullopt;
    }
    if (!check_grouping(*a.expr, groups, t, shown)) return std::nullopt;
    sym::Subst inner;
    size_t gi = 0;
    for (const auto& g : t->groups) {
      for (size_t di = 0; di < g.dims.size(); ++di) {
        const Expr* ix = groups[gi][di];
        SymPtr s = to_sym(*ix, rc, ctx);
        SymPtr extent = sym::substitute(g.dims[di].extent, inner);
        if (g.dims[di].index && s) inner.vars[g.dims[di].index.get()] = s;
        slots.push_back({ix, extent, s});
      }
      ++gi;
    }
    return slots;
  }

  static std::string expr_path_text(const Expr& e) {
    if (e.kind == ExprKind::Name) return e.name;
    if (e.kind == ExprKind::Field) return expr_path_text(*e.operands[0]) + "." + e.name;
    return "expression";
  }

  /// Pass 2: every reduction variable's range, from the dimensions it indexes.
  bool infer_ranges(FnCtx& ctx, RhsCtx& rc) {
    struct Candidate {
      SymPtr extent;
      SourceRange at;
    };
    std::map<const IndexVar*, std::vector<Candidate>> cands;
    std::vector<IndexVarPtr> order;
    bool ok = true;
    for (const Access& a : rc.accesses) {
      auto slots = access_slots(a, ctx, rc, true);
      if (!slots) {
        ok = false;
        continue;
      }
      for (const auto& s : *slots) {
        if (s.index->kind != ExprKind::Name) continue;
        auto fv = rc.free_var.find(s.index);
        if (fv == rc.free_var.end() || !s.extent) continue;
        if (!cands.count(fv->second.get())) order.push_back(fv->second);
        cands[fv->second.get()].push_back({s.extent, s.index->range});
      }
    }
    if (!ok) return false;
    // Canonical range: the first ragged use, else the first use.
    std::map<const IndexVar*, Candidate> canon;
    for (const auto& v : order) {
      auto& cs = cands[v.get()];
      auto it = std::find_if(cs.begin(), cs.end(), [](const Candidate& c) { return sym::is_ragged(c.extent); });
      canon[v.get()] = it != cs.end() ? *it : cs.front();
      rc.ranges[v.get()] = {canon[v.get()].extent, canon[v.get()].at};
    }
    std::vector<Fact> facts = stmt_facts(ctx, rc);
    for (const auto& v : order) {
      const Candidate& c0 = canon[v.get()];
      bool ragged = sym::is_ragged(c0.extent);
      for (const auto& c : cands[v.get()]) {
        if (&c == &c0 || (c.at.line == c0.at.line && c.at.col == c0.at.col)) continue;
        SymPtr goal = (ragged && !sym::is_ragged(c.extent)) ? sym::le(c0.extent, c.extent) : sym::eq(c.extent, c0.extent);
        ProofResult r = prove(facts, goal, c.at);
        if (r == ProofResult::Unknown) return false;
        if (r != ProofResult::Proved) {
          diags_.report(DiagKind::RangeMismatch, c.at, v->name, code(sym::str(c.extent)), code(sym::str(c0.extent)));
          diags_.note(c0.at, code(v->name) + " ranges over " + code(sym::str(c0.extent)) + " here");
          ok = false;
        }
      }
    }
    // Record reduction indices in binding order.
    for (const auto& v : order) {
      IndexInfo info;
      info.var = v;
      info.extent = canon[v.get()].extent;
      info.reduced = true;
      info.range_from = canon[v.get()].at;
      for (const auto& [r, vs] : rc.binds)
        if (std::find(vs.begin(), vs.end(), v) != vs.end()) {
          info.reduce_expr = r;
          info.reduce_op = r->op;
        }
      rc.infos.push_back(info);
    }
    for (const auto& [r, vs] : rc.binds) (void)vs;
    return ok;
  }

  /// Pass 3: every index that is not a reduction variable's defining use is
  /// proven inside its dimension.
  bool check_access_bounds(const Access& a, const std::vector<Fact>& facts, FnCtx& ctx, RhsCtx& rc) {
    auto slots = access_slots(a, ctx, rc, false);
    if (!slots) return false;
    for (const auto& s : *slots) {
      if (!s.sym) {
        TypePtr it = elem_type(*s.index, ctx, rc);
        if (it->kind == TypeKind::Error) return false;
        if (it->kind == TypeKind::IntValue || (it->kind == TypeKind::Scalar && is_int(it->scalar)))
          diags_.report(DiagKind::OutOfBounds, s.index->range, "this index",
                        "[0, " + (s.extent ? sym::str(s.extent) : std::string("?")) + ")");
        else
          diags_.report(DiagKind::NonIntegerIndex, s.index->range, code(types::str(it)));
        return false;
      }
      if (s.index->kind == ExprKind::Name && rc.free_var.count(s.index)) continue;  // checked by infer_ranges
      if (!s.extent) continue;
      if (!prove_in_bounds(facts, s.sym, s.extent, s.index->range, rc.ranges)) return false;
    }
    return true;
  }

  /// An integer expression as a Sym, or null when it is not one.
  SymPtr to_sym(const Expr& e, const RhsCtx& rc, FnCtx& ctx) {
    switch (e.kind) {
      case ExprKind::Int: {
        errno = 0;
        unsigned long long v = std::strtoull(e.text.c_str(), nullptr, 10);
        if (errno == ERANGE || v > static_cast<unsigned long long>(INT64_MAX)) return nullptr;
        return sym::constant(static_cast<int64_t>(v));
      }
      case ExprKind::Name: {
          if (auto it = rc.lhs.find(e.name); it != rc.lhs.end()) {
          out_.index_refs[&e] = it->second;
          return sym::var(it->second);
        }
        if (auto it = rc.free_var.find(&e); it != rc.free_var.end()) {
          out_.index_refs[&e] = it->second;
          return sym::var(it->second);
        }
        if (auto c = out_.int_consts.find(e.name); c != out_.int_consts.end()) return sym::constant(c->second);
        auto v = ctx.scope.find(e.name);
        if (v != ctx.scope.end() && v->second.is_size) return sym::size(e.name);
        // Another integer scalar: an unknown but fixed value for the proof.
        if (v != ctx.scope.end() && v->second.type->kind == TypeKind::Scalar && is_int(v->second.type->scalar))
          return sym::read(v->second.path, {});
        return nullptr;
      }
      case ExprKind::Unary:
        if (e.op == "-") {
          auto a = to_sym(*e.operands[0], rc, ctx);
          return a ? sym::sub(sym::constant(0), a) : nullptr;
        }
        if (e.op == "+") return to_sym(*e.operands[0], rc, ctx);
        return nullptr;
      case ExprKind::Binary: {
        static const std::map<std::string, SymKind> ops = {
            {"+", SymKind::Add}, {"-", SymKind::Sub}, {"*", SymKind::Mul}, {"/", SymKind::Div}, {"%", SymKind::Mod}};
        auto it = ops.find(e.op);
        if (it == ops.end()) return nullptr;
        auto a = to_sym(*e.operands[0], rc, ctx);
        auto b = to_sym(*e.operands[1], rc, ctx);
        if (!a || !b) return nullptr;
        return sym::op(it->second, {a, b});
      }
      case ExprKind::Call:
        if (e.name == "len" && e.operands.size() == 1) {
          const Expr& arg = *e.operands[0];
          if (auto pv = path_value(arg, ctx.scope, false); pv && pv->second->kind == TypeKind::List)
            return sym::size("len(" + pv->first + ")");
          if (arg.kind == ExprKind::Index && arg.operands.size() == 2) {
            auto pv = path_value(*arg.operands[0], ctx.scope, false);
            auto b = to_sym(*arg.operands[1], rc, ctx);
            if (pv && pv->second->kind == TypeKind::List && b) return sym::read(pv->first + ".len", {b});
          }
        }
        if ((e.name == "max" || e.name == "min") && e.operands.size() == 2) {
          auto a = to_sym(*e.operands[0], rc, ctx);
          auto b = to_sym(*e.operands[1], rc, ctx);
          if (!a || !b) return nullptr;
          return sym::op(e.name == "max" ? SymKind::Max : SymKind::Min, {a, b});
        }
        if ((e.name == "i32" || e.name == "i64") && e.operands.size() == 1) return to_sym(*e.operands[0], rc, ctx);
        return nullptr;
      case ExprKind::Index:
      case ExprKind::Field: {
        // A read of an integer array whose contents are fixed (a length array).
        auto [base, groups] = ast::index_chain(e);
        auto pv = path_value(*base, ctx.scope, false);
        if (!pv) return nullptr;
        const TypePtr& t = pv->second;
        if (groups.empty()) {
          if (t->kind == TypeKind::Scalar && is_int(t->scalar)) return sym::read(pv->first, {});
          return nullptr;
        }
        if (t->kind != TypeKind::Tensor || !is_int(t->scalar)) return nullptr;
        std::vector<SymPtr> args;
        for (const auto& g : groups)
          for (const Expr* ix : g) {
            auto s = to_sym(*ix, rc, ctx);
            if (!s) return nullptr;
            args.push_back(s);
          }
        if (args.size() != t->rank()) return nullptr;
        return sym::read(pv->first, std::move(args));
      }
      default: return nullptr;
    }
  }

  // ---------------------------------------------------------------- element types
  TypePtr unify(const TypePtr& a, const TypePtr& b, SourceRange at, const std::string& what) {
    if (a->kind == TypeKind::Error || b->kind == TypeKind::Error) return types::error();
    auto numeric_value = [](TypeKind k) { return k == TypeKind::IntValue || k == TypeKind::FloatValue; };
    if (a->kind == TypeKind::Scalar && b->kind == TypeKind::Scalar) {
      if (a->scalar == b->scalar) return a;
      diags_.report(DiagKind::TypeMismatch, at,
                    fmt::format("{} has operands of types `{}` and `{}`; convert one, e.g. `{}(...)`", what,
                                scalar_name(a->scalar), scalar_name(b->scalar), scalar_name(a->scalar)));
      return types::error();
    }
    if (a->kind == TypeKind::Scalar && numeric_value(b->kind)) return adapt(a, b, at, what);
    if (b->kind == TypeKind::Scalar && numeric_value(a->kind)) return adapt(b, a, at, what);
    if (numeric_value(a->kind) && numeric_value(b->kind))
      return (a->kind == TypeKind::FloatValue || b->kind == TypeKind::FloatValue) ? types::float_value() : types::int_value();
    diags_.report(DiagKind::TypeMismatch, at,
                  fmt::format("{} needs scalar operands, found `{}` and `{}`", what, types::str(a), types::str(b)));
    return types::error();
  }

  /// An untyped value next to a concrete scalar takes the scalar's type when it fits.
  TypePtr adapt(const TypePtr& concrete, const TypePtr& untyped, SourceRange at, const std::string& what) {
    Scalar s = concrete->scalar;
    if (s == Scalar::Bool || (untyped->kind == TypeKind::FloatValue && !is_float(s))) {
      diags_.report(DiagKind::TypeMismatch, at,
                    fmt::format("{} mixes `{}` with {}", what, scalar_name(s),
                                untyped->kind == TypeKind::FloatValue ? "a float" : "an integer"));
      return types::error();
    }
    return concrete;
  }

  bool is_numeric(const TypePtr& t) {
    return t->kind == TypeKind::IntValue || t->kind == TypeKind::FloatValue ||
           (t->kind == TypeKind::Scalar && t->scalar != Scalar::Bool);
  }
  bool is_boolean(const TypePtr& t) { return t->kind == TypeKind::Scalar && t->scalar == Scalar::Bool; }

  TypePtr elem_type(const Expr& e, FnCtx& ctx, RhsCtx& rc) {
    TypePtr t = elem_type_of(e, ctx, rc);
    out_.expr_types[&e] = t;
    return t;
  }

  TypePtr elem_type_of(const Expr& e, FnCtx& ctx, RhsCtx& rc) {
    switch (e.kind) {
      case ExprKind::Int: {
        if (!int_literal(e)) return types::error();
        return types::int_value();
      }
      case ExprKind::Float: return float_literal(e) ? types::float_value() : types::error();
      case ExprKind::Bool: return types::scalar(Scalar::Bool);
      case ExprKind::Name: {
        if (auto it = rc.lhs.find(e.name); it != rc.lhs.end()) {
          out_.index_refs[&e] = it->second;
          return types::int_value();
        }
        if (auto it = rc.free_var.find(&e); it != rc.free_var.end()) {
          out_.index_refs[&e] = it->second;
          return types::int_value();
        }
        if (out_.int_consts.count(e.name)) return types::int_value();
        if (out_.float_consts.count(e.name)) return types::float_value();
        auto v = ctx.scope.find(e.name);
        if (v == ctx.scope.end()) return types::error();  // reported by collect
        if (v->second.is_size) return types::int_value();
        const TypePtr& t = v->second.type;
        if (t->kind == TypeKind::Scalar) {
          if (uninitialized_.count(e.name)) {
            diags_.report(DiagKind::UninitializedUse, e.range, e.name);
            uninitialized_.erase(e.name);
            return types::error();
          }
          return t;
        }
        if (t->kind == TypeKind::Error) return t;
        diags_.report(DiagKind::IndexCount, e.range,
                      fmt::format("{} is a `{}`; index it to get an element", code(e.name), types::str(t)));
        return types::error();
      }
      case ExprKind::Field: {
        auto pv = path_value(e, ctx.scope, true);
        if (!pv) return types::error();
        if (pv->second->kind == TypeKind::Scalar) return pv->second;
        diags_.report(DiagKind::IndexCount, e.range,
                      fmt::format("{} is a `{}`; index it to get an element", code(expr_path_text(e)), types::str(pv->second)));
        return types::error();
      }
      case ExprKind::Index: {
        const Expr* base = &e;
        while (base->kind == ExprKind::Index) base = base->operands[0].get();
        auto pv = path_value(*base, ctx.scope, false);
        if (!pv) return types::error();
        if (pv->second->kind == TypeKind::List) return pv->second->element->kind == TypeKind::Tensor ? types::scalar(pv->second->element->scalar) : types::error();
        if (pv->second->kind != TypeKind::Tensor) return types::error();
        return types::scalar(pv->second->scalar);
      }
      case ExprKind::Unary: {
        if (e.op == "-" && e.operands[0]->kind == ExprKind::Int) {
          out_.expr_types[e.operands[0].get()] = types::int_value();
          return int_literal(*e.operands[0], true) ? types::int_value() : types::error();
        }
        TypePtr t = elem_type(*e.operands[0], ctx, rc);
        if (t->kind == TypeKind::Error) return t;
        if (e.op == "!") {
          if (is_boolean(t)) return t;
          diags_.report(DiagKind::TypeMismatch, e.range, "`!` needs a `bool`, found `" + types::str(t) + "`");
          return types::error();
        }
        if (is_numeric(t)) return t;
        diags_.report(DiagKind::TypeMismatch, e.range, "`" + e.op + "` needs a number, found `" + types::str(t) + "`");
        return types::error();
      }
      case ExprKind::Binary: {
        TypePtr a = elem_type(*e.operands[0], ctx, rc);
        TypePtr b = elem_type(*e.operands[1], ctx, rc);
        if (a->kind == TypeKind::Error || b->kind == TypeKind::Error) return types::error();
        const std::string& op = e.op;
        if (op == "&&" || op == "||") {
          if (is_boolean(a) && is_boolean(b)) return a;
          diags_.report(DiagKind::TypeMismatch, e.op_range, "`" + op + "` needs `bool` operands");
          return types::error();
        }
        if (op == "==" || op == "!=") {
          if (is_boolean(a) && is_boolean(b)) return a;
        }
        if (!is_numeric(a) || !is_numeric(b)) {
          diags_.report(DiagKind::TypeMismatch, e.op_range,
                        fmt::format("`{}` needs numbers, found `{}` and `{}`", op, types::str(a), types::str(b)));
          return types::error();
        }
        TypePtr t = unify(a, b, e.op_range, "`" + op + "`");
        if (t->kind == TypeKind::Error) return t;
        if (t->kind == TypeKind::Scalar) {
          if (!check_literal_fits(*e.operands[0], t->scalar) || !check_literal_fits(*e.operands[1], t->scalar))
            return types::error();
        }
        if (op == "<" || op == "<=" || op == ">" || op == ">=" || op == "==" || op == "!=")
          return types::scalar(Scalar::Bool);
        return t;
      }
      case ExprKind::Reduce: {
        TypePtr t = elem_type(*e.operands[0], ctx, rc);
        auto it = rc.binds.find(&e);
        if (it == rc.binds.end() || it->second.empty()) {
          diags_.report(DiagKind::EmptyReduce, e.range);
          return types::error();
        }
        if (t->kind == TypeKind::Error) return t;
        if (!is_numeric(t)) {
          diags_.report(DiagKind::TypeMismatch, e.range, "`reduce` needs a number, found `" + types::str(t) + "`");
          return types::error();
        }
        return t;
      }
      case ExprKind::Call: return call_type(e, ctx, rc);
      case ExprKind::Construct:
        diags_.report(DiagKind::TypeMismatch, e.range, "a construction is a whole value; bind it with `let`");
        return types::error();
      case ExprKind::TensorLit:
        diags_.report(DiagKind::TypeMismatch, e.range, "a tensor literal is a whole value; bind it with `let`");
        return types::error();
    }
    return types::error();
  }

  TypePtr call_type(const Expr& e, FnCtx& ctx, RhsCtx& rc) {
    const std::string& n = e.name;
    auto arity = [&](size_t want) {
      if (e.operands.size() == want) return true;
      diags_.report(DiagKind::ArgumentCount, e.range, n, want, e.operands.size());
      return false;
    };
    std::vector<TypePtr> args;
    auto eval_args = [&]() {
      bool ok = true;
      for (const auto& o : e.operands) {
        args.push_back(elem_type(*o, ctx, rc));
        ok &= args.back()->kind != TypeKind::Error;
      }
      return ok;
    };
    if (auto s = scalar_from_name(n)) {
      if (!arity(1) || !eval_args()) return types::error();
      if (!is_numeric(args[0]) && !is_boolean(args[0])) {
        diags_.report(DiagKind::TypeMismatch, e.range, "cannot convert `" + types::str(args[0]) + "` to `" + n + "`");
        return types::error();
      }
      return types::scalar(*s);
    }
    if (is_math1(n)) {
      if (!arity(1) || !eval_args()) return types::error();
      const TypePtr& a = args[0];
      if (a->kind == TypeKind::IntValue || a->kind == TypeKind::FloatValue) return n == "abs" ? a : types::float_value();
      if (a->kind == TypeKind::Scalar && is_float(a->scalar)) return a;
      if (n == "abs" && a->kind == TypeKind::Scalar && is_int(a->scalar)) return a;
      diags_.report(DiagKind::TypeMismatch, e.range,
                    fmt::format("`{}` needs a float, found `{}`; convert it, e.g. `f32(...)`", n, types::str(a)));
      return types::error();
    }
    if (n == "pow" || n == "max" || n == "min") {
      if (!arity(2) || !eval_args()) return types::error();
      if (!is_numeric(args[0]) || !is_numeric(args[1])) {
        diags_.report(DiagKind::TypeMismatch, e.range, "`" + n + "` needs numbers");
        return types::error();
      }
      return unify(args[0], args[1], e.range, "`" + n + "`");
    }
    if (n == "select") {
      if (!arity(3) || !eval_args()) return types::error();
      if (!is_boolean(args[0])) {
        diags_.report(DiagKind::TypeMismatch, e.operands[0]->range,
                      "the condition of `select` must be a `bool`, found `" + types::str(args[0]) + "`");
        return types::error();
      }
      if (is_boolean(args[1]) && is_boolean(args[2])) return args[1];
      return unify(args[1], args[2], e.range, "`select`");
    }
    if (n == "len") {
      if (!arity(1)) return types::error();
      if (!to_sym(e, rc, ctx)) {
        diags_.report(DiagKind::TypeMismatch, e.range, "`len` takes a list or one element of a list");
        return types::error();
      }
      return types::int_value();
    }
    if (n == "print" || n == "all" || n == "sum") {
      diags_.report(DiagKind::TypeMismatch, e.range, code(n) + " cannot be used inside an expression");
      return types::error();
    }
    auto sig = signatures_.find(n);
    if (sig == signatures_.end()) {
      diags_.report(DiagKind::UnknownFunction, e.name_range, n);
      return types::error();
    }
    const CheckedFunction& callee = out_.functions[sig->second];
    if (!arity(callee.params.size()) || !eval_args()) return types::error();
    for (size_t i = 0; i < args.size(); ++i) {
      const TypePtr& p = callee.params[i].second;
      if (p->kind != TypeKind::Scalar) {
        diags_.report(DiagKind::TypeMismatch, e.operands[i]->range,
                      fmt::format("{} takes a `{}` here; call it with `let` outside the element-wise expression", code(n),
                                  types::str(p)));
        return types::error();
      }
      if (unify(p, args[i], e.operands[i]->range, "argument " + std::to_string(i + 1))->kind == TypeKind::Error)
        return types::error();
      if (args[i]->kind == TypeKind::Scalar && args[i]->scalar != p->scalar) return types::error();
    }
    if (callee.ret->kind != TypeKind::Scalar) {
      diags_.report(DiagKind::TypeMismatch, e.range, code(n) + " returns `" + types::str(callee.ret) + "`, not a scalar");
      return types::error();
    }
    return callee.ret;
  }

  // ---------------------------------------------------------------- assignment
  void check_assign(const ast::Stmt& s, FnCtx& ctx) {
    const Expr& target = *s.target;
    auto [base, groups] = ast::index_chain(target);
    if (base->kind != ExprKind::Name && base->kind != ExprKind::Field) {
      diags_.report(DiagKind::NotAssignable, target.range, "the left side must be a variable, a field or an element of one");
      return;
    }
    if (base->kind == ExprKind::Name && !ctx.scope.count(base->name) &&
        (out_.int_consts.count(base->name) || out_.float_consts.count(base->name))) {
      diags_.report(DiagKind::NotAssignable, base->range, "constant " + code(base->name) + " cannot be assigned");
      return;
    }
    auto pv = path_value(*base, ctx.scope, true);
    if (!pv) return;
    const std::string root = base->kind == ExprKind::Name ? base->name : root_name(*base);
    bool is_param = std::any_of(ctx.fn->params.begin(), ctx.fn->params.end(), [&](const auto& p) { return p.first == root; });
    if (is_param) {
      diags_.report(DiagKind::NotAssignable, base->range, "parameter " + code(root) + " is read-only; write into a `let`");
      return;
    }
    auto v = ctx.scope.find(root);
    if (v != ctx.scope.end() && v->second.is_size) {
      diags_.report(DiagKind::NotAssignable, base->range, "size " + code(root) + " cannot be assigned");
      return;
    }
    TypePtr t = pv->second;
    if (t->kind == TypeKind::Error) return;
    StmtInfo info;
    info.stmt = &s;
    RhsCtx rc;
    if (t->kind == TypeKind::Scalar && groups.empty()) {
      TypePtr rt = element_check(*s.value, ctx, rc, &info);
      uninitialized_.erase(root);
      if (rt->kind != TypeKind::Error) assign_compatible(t, rt, s.value->range, expr_path_text(*base), s.value.get());
      info.value_type = t;
      ctx.fn->stmts.push_back(std::move(info));
      return;
    }
    if (t->kind != TypeKind::Tensor) {
      diags_.report(DiagKind::NotAssignable, target.range,
                    fmt::format("cannot assign to {} of type `{}`; assign to its fields element-wise",
                                code(expr_path_text(*base)), types::str(t)));
      return;
    }
    // Another name for a parameter's storage is as read-only as the
    // parameter; a length array is frozen under every name.
    const std::string storage_root = pv->first.substr(0, pv->first.find('.'));
    auto note_alias = [&](const std::string& what) {
      if (storage_root == root) return;
      auto alias = ctx.scope.find(root);
      if (alias != ctx.scope.end() && alias->second.def.valid())
        diags_.note(alias->second.def, code(expr_path_text(*base)) + " names the storage of " + what);
    };
    if (ctx.frozen.count(pv->first)) {
      diags_.report(DiagKind::LengthReassigned, target.range, pv->first);
      note_alias(code(pv->first));
      return;
    }
    if (std::any_of(ctx.fn->params.begin(), ctx.fn->params.end(), [&](const auto& p) { return p.first == storage_root; })) {
      diags_.report(DiagKind::NotAssignable, base->range,
                    "parameter " + code(storage_root) + " is read-only; write into a `let`");
      note_alias("parameter " + code(storage_root));
      return;
    }
    if (!check_grouping(target, groups, t, expr_path_text(*base))) return;
    // Left-side indices: fresh names, each over its dimension.
    sym::Subst inner;
    size_t gi = 0;
    bool ok = true;
    for (const auto& g : t->groups) {
      for (size_t di = 0; di < g.dims.size(); ++di) {
        const Expr* ix = groups[gi][di];
        if (ix->kind != ExprKind::Name) {
          diags_.report(DiagKind::NotAssignable, ix->range,
                        "left-side indices must be fresh names, one per dimension (found an expression)");
          ok = false;
          continue;
        }
        if (resolvable(ix->name, ctx, rc)) {
          diags_.report(DiagKind::NotAssignable, ix->range,
                        rc.lhs.count(ix->name) ? "index " + code(ix->name) + " appears twice on the left side"
                                               : "left-side index " + code(ix->name) + " must be a fresh name, but it names a value");
          ok = false;
          continue;
        }
        auto var = std::make_shared<IndexVar>(IndexVar{ix->name, ix->range});
        out_.index_refs[ix] = var;
        SymPtr extent = sym::substitute(g.dims[di].extent, inner);
        if (g.dims[di].index) inner.vars[g.dims[di].index.get()] = sym::var(var);
        rc.lhs[ix->name] = var;
        rc.ranges[var.get()] = {extent, g.dims[di].range};
        IndexInfo ii;
        ii.var = var;
        ii.extent = extent;
        ii.range_from = g.dims[di].range;
        info.indices.push_back(ii);
      }
      ++gi;
    }
    if (!ok) return;
    TypePtr rt = element_check(*s.value, ctx, rc, &info);
    if (rt->kind != TypeKind::Error)
      assign_compatible(types::scalar(t->scalar), rt, s.value->range, expr_path_text(*base), s.value.get());
    // Assigning an array invalidates every fact that mentions it (a stale
    // `seqlen[b] == len(xs[b])` would prove reads that are now out of
    // bounds). An integer array defined by an integer expression that does
    // not read the array itself gives the new fact, so later extents can be
    // proven from it.
    drop_facts_mentioning(pv->first, ctx);
    if (is_int(t->scalar)) {
      SymPtr val = to_sym(*s.value, rc, ctx);
      std::vector<SymPtr> rs;
      if (val) sym::reads(val, rs);
      bool self = std::any_of(rs.begin(), rs.end(), [&](const SymPtr& r) { return r->name == pv->first; });
      if (val && !self) {
        Fact f;
        std::vector<SymPtr> args;
        for (const auto& ii : info.indices)
          if (!ii.reduced) {
            f.vars.push_back({ii.var, ii.extent});
            args.push_back(sym::var(ii.var));
          }
        f.body = sym::eq(sym::read(pv->first, args), val);
        ctx.facts.push_back(f);
        ctx.assigned.insert(pv->first);
      }
    }
    info.value_type = types::scalar(t->scalar);
    ctx.fn->stmts.push_back(std::move(info));
  }

  static void drop_facts_mentioning(const std::string& array, FnCtx& ctx) {
    auto mentions = [&](const Fact& f) {
      std::vector<SymPtr> rs;
      sym::reads(f.body, rs);
      for (const auto& [v, r] : f.vars) sym::reads(r, rs);
      return std::any_of(rs.begin(), rs.end(), [&](const SymPtr& r) { return r->name == array; });
    };
    ctx.facts.erase(std::remove_if(ctx.facts.begin(), ctx.facts.end(), mentions), ctx.facts.end());
  }

  static std::string root_name(const Expr& e) {
    const Expr* b = &e;
    while (b->kind == ExprKind::Field || b->kind == ExprKind::Index) b = b->operands[0].get();
    return b->kind == ExprKind::Name ? b->name : std::string();
  }

  /// A literal (possibly negated) that takes type `t` must fit in it.
  bool check_literal_fits(const Expr& e, Scalar t) {
    const Expr* lit = &e;
    bool neg = false;
    if (e.kind == ExprKind::Unary && e.op == "-") {
      lit = e.operands[0].get();
      neg = true;
    }
    if (lit->kind == ExprKind::Int && (t == Scalar::I32 || is_float(t))) {
      errno = 0;
      unsigned long long v = std::strtoull(lit->text.c_str(), nullptr, 10);
      bool bad = t == Scalar::I32 && v > (neg ? 2147483648ull : 2147483647ull);
      if (bad) {
        diags_.report(DiagKind::LiteralOutOfRange, e.range, (neg ? "-" : "") + lit->text, scalar_name(t));
        return false;
      }
    }
    if (lit->kind == ExprKind::Float && is_float(t) && t != Scalar::F64) {
      double limit = t == Scalar::F16 ? 65504.0 : 3.4028234663852886e38;
      if (std::fabs(lit->float_value) > limit) {
        diags_.report(DiagKind::LiteralOutOfRange, e.range, (neg ? "-" : "") + lit->text, scalar_name(t));
        return false;
      }
    }
    return true;
  }

  void assign_compatible(const TypePtr& target, const TypePtr& value, SourceRange at, const std::string& what,
                         const Expr* value_expr = nullptr) {
    if (value->kind == TypeKind::Scalar && value->scalar == target->scalar) return;
    if (value_expr && (value->kind == TypeKind::IntValue || value->kind == TypeKind::FloatValue) &&
        target->kind == TypeKind::Scalar && !check_literal_fits(*value_expr, target->scalar))
      return;
    if (value->kind == TypeKind::IntValue && target->scalar != Scalar::Bool) return;
    if (value->kind == TypeKind::FloatValue && is_float(target->scalar)) return;
    diags_.report(DiagKind::TypeMismatch, at,
                  fmt::format("cannot assign a value of type `{}` to {} of element type `{}`", types::str(value), code(what),
                              scalar_name(target->scalar)));
  }

  // ---------------------------------------------------------------- return, expression statements
  void check_return(const ast::Stmt& s, FnCtx& ctx) {
    const TypePtr& ret = ctx.fn->ret;
    ctx.returned = true;
    if (!s.value) {
      if (ret->kind != TypeKind::Void && ret->kind != TypeKind::Error)
        diags_.report(DiagKind::ReturnMismatch, s.range, "`return` needs a value of type " + code(types::str(ret)));
      return;
    }
    if (ret->kind == TypeKind::Void) {
      diags_.report(DiagKind::ReturnMismatch, s.value->range,
                    "function " + code(ctx.fn->decl->name.name) + " returns nothing, but a value is returned");
      return;
    }
    StmtInfo info;
    info.stmt = &s;
    std::optional<std::string> source;
    TypePtr vt = value_type(*s.value, ctx, "", &info, &source);
    if (vt->kind == TypeKind::Error || ret->kind == TypeKind::Error) return;
    conforms(ret, vt, s.value->range, DiagKind::ReturnMismatch, ctx);
    note_result_aliases(vt, source, *ctx.fn);
    info.value_type = vt;
    ctx.fn->stmts.push_back(std::move(info));
  }

  /// Records which parts of a returned value are a parameter's storage.
  static void note_result_aliases(const TypePtr& vt, const std::optional<std::string>& source, CheckedFunction& fn) {
    auto param_of = [&](const std::string& storage) -> std::optional<std::pair<size_t, std::string>> {
      auto dot = storage.find('.');
      std::string root = storage.substr(0, dot);
      for (size_t i = 0; i < fn.params.size(); ++i)
        if (fn.params[i].first == root) return std::make_pair(i, dot == std::string::npos ? "" : storage.substr(dot + 1));
      return std::nullopt;
    };
    if (vt->kind == TypeKind::Tensor && source) {
      if (auto p = param_of(*source)) fn.result_aliases.emplace("", *p);
    } else if (vt->kind == TypeKind::Coupling) {
      for (const auto& f : vt->coupling->fields)
        if (auto p = param_of(field_identity(source ? *source : std::string(), vt, f.name)))
          fn.result_aliases.emplace(f.name, *p);
    }
  }

  void check_expr_stmt(const ast::Stmt& s, FnCtx& ctx) {
    const Expr& e = *s.value;
    StmtInfo info;
    info.stmt = &s;
    if (e.kind == ExprKind::Call && e.name == "print") {
      for (const auto& a : e.operands) {
        TypePtr t = value_type(*a, ctx, "", &info);
        if (t->kind == TypeKind::Void)
          diags_.report(DiagKind::TypeMismatch, a->range, "the expression gives no value to print");
      }
      info.value_type = types::void_type();
      ctx.fn->stmts.push_back(std::move(info));
      return;
    }
    if (e.kind == ExprKind::Call && signatures_.count(e.name)) {
      info.value_type = value_type(e, ctx, "", &info);
      ctx.fn->stmts.push_back(std::move(info));
      return;
    }
    diags_.report(DiagKind::NotAssignable, e.range, "this expression has no effect; assign it, `let` it or `print` it");
  }

  // ---------------------------------------------------------------- conformance, calls, construction
  struct Bindings {
    std::set<std::string> bindable;  // callee size names that calls may bind
    std::map<std::string, std::pair<SymPtr, SourceRange>> sizes;
  };

  /// Does `actual` fit where `formal` is expected? Sizes named in
  /// `b.bindable` are bound on first sight; every other extent must be
  /// provably equal. Reports with `kind` (or SizeConflict for bindings).
  bool unify_type(const TypePtr& formal, const TypePtr& actual, Bindings& b, SourceRange at, DiagKind kind, FnCtx& ctx,
                  sym::Subst vars = {}) {
    if (formal->kind == TypeKind::Error || actual->kind == TypeKind::Error) return false;
    auto mismatch = [&]() {
      diags_.report(kind, at,
                    fmt::format("expected a value of type `{}`, found `{}`", types::str(formal), types::str(actual)));
      return false;
    };
    switch (formal->kind) {
      case TypeKind::Scalar:
        if (actual->kind == TypeKind::Scalar) return actual->scalar == formal->scalar ? true : mismatch();
        if (actual->kind == TypeKind::IntValue && formal->scalar != Scalar::Bool) return true;
        if (actual->kind == TypeKind::FloatValue && is_float(formal->scalar)) return true;
        return mismatch();
      case TypeKind::IntValue:
        if (actual->kind == TypeKind::IntValue || (actual->kind == TypeKind::Scalar && is_int(actual->scalar))) return true;
        return mismatch();
      case TypeKind::Coupling: {
        if (actual->kind != TypeKind::Coupling || !same_coupling(formal->coupling, actual->coupling)) return mismatch();
        for (const auto& sp : formal->coupling->size_params) {
          auto f = formal->instance.sizes.find(sp);
          auto a = actual->instance.sizes.find(sp);
          if (f == formal->instance.sizes.end() || a == actual->instance.sizes.end()) continue;
          if (!unify_sym(f->second, a->second, b, at, kind, ctx)) return false;
        }
        return true;
      }
      case TypeKind::List:
        if (actual->kind != TypeKind::List) return mismatch();
        return unify_type(formal->element, actual->element, b, at, kind, ctx, vars);
      case TypeKind::Tensor: {
        if (actual->kind != TypeKind::Tensor || actual->scalar != formal->scalar ||
            actual->groups.size() != formal->groups.size())
          return mismatch();
        for (size_t g = 0; g < formal->groups.size(); ++g)
          if (formal->groups[g].dims.size() != actual->groups[g].dims.size()) return mismatch();
        for (size_t g = 0; g < formal->groups.size(); ++g) {
          for (size_t d = 0; d < formal->groups[g].dims.size(); ++d) {
            const DimT& fd = formal->groups[g].dims[d];
            const DimT& ad = actual->groups[g].dims[d];
            if (fd.index && ad.index) vars.vars[fd.index.get()] = sym::var(ad.index);
            if (!fd.extent || !ad.extent) continue;
            SymPtr fe = sym::substitute(fd.extent, vars);
            if (!unify_sym(fe, ad.extent, b, at, kind, ctx, actual)) return false;
          }
        }
        return true;
      }
      default:
        if (formal->kind == actual->kind) return true;
        return mismatch();
    }
  }

  bool same_coupling(const CouplingDef* a, const CouplingDef* b) {
    if (a == b) return true;
    if (a->fields.size() != b->fields.size()) return false;
    for (size_t i = 0; i < a->fields.size(); ++i) {
      if (a->fields[i].name != b->fields[i].name) return false;
      if (types::str(a->fields[i].type) != types::str(b->fields[i].type)) return false;
    }
    return true;
  }

  bool unify_sym(const SymPtr& formal, const SymPtr& actual, Bindings& b, SourceRange at, DiagKind kind, FnCtx& ctx,
                 const TypePtr& actual_type = nullptr) {
    if (formal->kind == SymKind::Size && b.bindable.count(formal->name)) {
      auto it = b.sizes.find(formal->name);
      if (it == b.sizes.end()) {
        b.sizes[formal->name] = {actual, at};
        return true;
      }
      ProofResult r = prove(ctx.facts, sym::eq(it->second.first, actual), at);
      if (r == ProofResult::Proved) return true;
      if (r == ProofResult::Unknown) return false;
      diags_.report(DiagKind::SizeConflict, at, formal->name, code(sym::str(actual)), code(sym::str(it->second.first)));
      diags_.note(it->second.second, code(formal->name) + " is " + code(sym::str(it->second.first)) + " from here");
      return false;
    }
    sym::Subst s;
    for (const auto& [n, v] : b.sizes) s.sizes[n] = v.first;
    SymPtr f = sym::substitute(formal, s);
    // Extents under the dimension's named indices: quantify over them.
    std::vector<IndexVarPtr> vs;
    sym::vars(f, vs);
    sym::vars(actual, vs);
    std::vector<Fact> facts = ctx.facts;
    if (actual_type) {
      for (const auto& g : actual_type->groups)
        for (const auto& d : g.dims)
          if (d.index && d.extent) facts.push_back({{}, sym::lt(sym::var(d.index), d.extent)});
    }
    ProofResult r = prove(facts, sym::eq(f, actual), at);
    if (r == ProofResult::Proved) return true;
    if (r == ProofResult::Unknown) return false;
    diags_.report(kind, at, fmt::format("extent `{}` does not match the expected `{}`", sym::str(actual), sym::str(f)));
    return false;
  }

  bool conforms(const TypePtr& formal, const TypePtr& actual, SourceRange at, DiagKind kind, FnCtx& ctx) {
    Bindings b;
    return unify_type(formal, actual, b, at, kind, ctx);
  }

  /// Type of a call's result. Where the callee returns (a field bound to) one
  /// of its parameters, the result is the argument's storage: a coupling
  /// result's instance names those arrays and a tensor result's path goes to
  /// `source_path`.
  TypePtr check_call(const Expr& e, FnCtx& ctx, std::optional<std::string>* source_path = nullptr) {
    auto sig = signatures_.find(e.name);
    const CheckedFunction& callee = out_.functions[sig->second];
    if (callee.params.size() != e.operands.size()) {
      diags_.report(DiagKind::ArgumentCount, e.range, e.name, callee.params.size(), e.operands.size());
      return types::error();
    }
    Bindings b;
    b.bindable.insert(callee.size_params.begin(), callee.size_params.end());
    bool ok = true;
    std::vector<std::pair<TypePtr, std::optional<std::string>>> args(e.operands.size());
    for (size_t i = 0; i < e.operands.size(); ++i) {
      TypePtr at = value_type(*e.operands[i], ctx, "", nullptr, &args[i].second);
      args[i].first = at;
      if (at->kind == TypeKind::Error) {
        ok = false;
        continue;
      }
      ok &= unify_type(callee.params[i].second, at, b, e.operands[i]->range, DiagKind::TypeMismatch, ctx);
    }
    if (!ok) return types::error();
    sym::Subst s;
    for (const auto& [n, v] : b.sizes) s.sizes[n] = v.first;
    for (const auto& n : callee.size_params)
      if (!s.sizes.count(n)) s.sizes[n] = sym::size(fmt::format("{}#{}.{}", e.name, ++fresh_counter_, n));
    out_.call_sizes[&e] = s.sizes;
    TypePtr ret = types::substitute(callee.ret, s);
    if (ret->kind == TypeKind::Coupling) {
      auto copy = std::make_shared<Type>(*ret);
      for (auto& [n, v] : copy->instance.sizes) v = sym::substitute(v, s);
      copy->instance.arrays.clear();
      ret = copy;
    }
    for (const auto& [field, param] : callee.result_aliases) {
      const auto& [at, path] = args[param.first];
      std::string storage;
      if (param.second.empty()) {
        if (!path) continue;
        storage = *path;
      } else {
        if (at->kind != TypeKind::Coupling) continue;
        storage = field_identity(path ? *path : std::string(), at, param.second);
        if (storage.front() == '.') continue;  // a fresh field of an argument built in place
      }
      if (field.empty()) {
        if (source_path) *source_path = storage;
      } else if (ret->kind == TypeKind::Coupling) {
        std::const_pointer_cast<Type>(ret)->instance.arrays[field] = storage;
      }
    }
    return ret;
  }

  TypePtr check_construct(const Expr& e, FnCtx& ctx, const std::string& binding) {
    TypePtr ct = resolve_alias(e.name);
    if (!ct) {
      diags_.report(DiagKind::UnknownType, e.name_range, e.name);
      return types::error();
    }
    if (ct->kind == TypeKind::Error) return ct;
    if (ct->kind != TypeKind::Coupling) {
      diags_.report(DiagKind::NotAType, e.name_range, code(e.name) + " is not a coupling type; only couplings are constructed");
      return types::error();
    }
    const CouplingDef* def = ct->coupling;
    std::string self = binding.empty() ? fmt::format("{}#{}", e.name, ++fresh_counter_) : binding;
    std::map<std::string, const ast::FieldInit*> given;
    bool ok = true;
    for (const auto& f : e.fields) {
      if (!def->field(f.name.name)) {
        diags_.report(DiagKind::NoSuchField, f.name.range, code(def->name), f.name.name);
        diags_.note(def->range, code(def->name) + " is defined here");
        ok = false;
      } else if (!given.emplace(f.name.name, &f).second) {
        diags_.report(DiagKind::Redefinition, f.name.range, f.name.name);
        ok = false;
      }
    }
    for (const auto& f : def->fields)
      if (!given.count(f.name)) {
        diags_.report(DiagKind::MissingField, e.range, code(def->name), f.name);
        diags_.note(f.range, code(f.name) + " is declared here");
        ok = false;
      }
    if (!ok) return types::error();
    auto result = std::make_shared<Type>(*ct);
    result->instance = {};
    Bindings b;
    b.bindable.insert(def->size_params.begin(), def->size_params.end());
    for (const auto& sp : def->size_params)
      if (auto c = out_.int_consts.find(sp); c != out_.int_consts.end()) b.sizes[sp] = {sym::constant(c->second), {}};
    // Bound fields first (in dependency order), so fresh fields are compared
    // against extents that read the bound arrays.
    std::map<std::string, TypePtr> actual;
    for (int pass = 0; pass < 2; ++pass) {
      for (size_t idx : def->order) {
        const CouplingField& f = def->fields[idx];
        const ast::FieldInit* fi = given[f.name];
        bool fresh = fi->type != nullptr;
        if ((pass == 0) == fresh) continue;
        TypePtr at;
        // A ragged field given as a literal (`data: [[1.0, 2.0], [3.0]]`):
        // fresh storage whose rows are checked against the literal lengths.
        bool ragged_literal = !fresh && fi->value->kind == ExprKind::TensorLit && is_ragged_field(f);
        if (fresh) {
          std::set<std::string> reads;
          ExtentEnv env{ExtentMode::Body, nullptr, &ctx.scope, nullptr, {}, &ctx.facts, &reads, &ctx.output_sizes};
          at = resolve_type(*fi->type, env);
          ctx.frozen.insert(reads.begin(), reads.end());
          result->instance.arrays[f.name] = self + "." + f.name;
        } else if (ragged_literal) {
          at = f.type;  // replaced below, once the field's type is known
          result->instance.arrays[f.name] = self + "." + f.name;
        } else {
          std::optional<std::string> src;
          at = value_type(*fi->value, ctx, "", nullptr, &src);
          if (fi->value->kind == ExprKind::TensorLit && at->kind == TypeKind::Tensor && f.type->kind == TypeKind::Tensor)
            at = literal_as(*fi->value, at, f.type->scalar, f.name);
          if (src) {
            result->instance.arrays[f.name] = *src;
            if (length_fields(*def).count(f.name)) ctx.frozen.insert(*src);
          } else {
            result->instance.arrays[f.name] = self + "." + f.name;
          }
        }
        if (at->kind == TypeKind::Error) {
          ok = false;
          continue;
        }
        // The coupling's field type in terms of this value's arrays and the sizes bound so far.
        sym::Subst s;
        for (const auto& other : def->fields) {
          auto it = result->instance.arrays.find(other.name);
          s.arrays[other.name] = it != result->instance.arrays.end() ? it->second : self + "." + other.name;
        }
        TypePtr want = types::substitute(f.type, s);
        if (ragged_literal) {
          at = ragged_literal_type(f, *fi->value, want, given, b, ctx);
          if (at->kind == TypeKind::Error) {
            diags_.note(f.range, code(f.name) + " is declared as " + code(types::str(f.type)) + " here");
            ok = false;
            continue;
          }
        }
        SourceRange where = fi->type ? fi->type->range : fi->value->range;
        int errors = diags_.error_count();
        if (!unify_type(want, at, b, where, DiagKind::ConstructionMismatch, ctx)) {
          if (diags_.error_count() > errors) {
            auto& d = const_cast<Diagnostic&>(diags_.diagnostics().back());
            if (d.kind == DiagKind::ConstructionMismatch)
              d.message = "field " + code(f.name) + ": " + d.message;
          }
          diags_.note(f.range, code(f.name) + " is declared as " + code(types::str(f.type)) + " here");
          ok = false;
        }
        actual[f.name] = at;
      }
    }
    if (!ok) return types::error();
    // Length arrays written as integer literals are known: later accesses
    // may rely on their values (`s.data[2][0]` when `seqlen: [3, 0, 1]`).
    for (const auto& ln : length_fields(*def)) {
      auto g = given.find(ln);
      if (g == given.end() || !g->second->value || g->second->value->kind != ExprKind::TensorLit) continue;
      const Expr& lit = *g->second->value;
      for (size_t i = 0; i < lit.operands.size(); ++i)
        if (auto v = int_literal_value(*lit.operands[i]))
          ctx.facts.push_back({{}, sym::eq(sym::read(result->instance.arrays[ln], {sym::constant(static_cast<int64_t>(i))}),
                                           sym::constant(*v))});
    }
    for (const auto& sp : def->size_params) {
      auto it = b.sizes.find(sp);
      result->instance.sizes[sp] = it != b.sizes.end() ? it->second.first : sym::size(self + "." + sp);
    }
    return result;
  }

  /// A tensor literal's type `t` with its untyped numbers taken as `elem`
  /// (`seqlen: [3, 1]` for a `[B]i64` field), or an error when one does not fit.
  TypePtr literal_as(const Expr& lit, const TypePtr& t, Scalar elem, const std::string& what) {
    auto le = literal_elem_.find(&lit);
    if (le == literal_elem_.end()) return t;
    int errors = diags_.error_count();
    assign_compatible(types::scalar(elem), le->second, lit.range, what);
    std::function<void(const Expr&)> each = [&](const Expr& x) {
      if (x.kind == ExprKind::TensorLit) for (const auto& o : x.operands) each(*o);
      else check_literal_fits(x, elem);
    };
    each(lit);
    if (diags_.error_count() > errors) return types::error();
    auto copy = std::make_shared<Type>(*t);
    copy->scalar = elem;
    return copy;
  }

  /// Elements of a tensor literal bind no indices, so every name in one must
  /// be a value (elem_type leaves unknown names to the free-index pass,
  /// which does not see literals). Reports each unknown name.
  bool literal_names_known(const Expr& x, FnCtx& ctx) {
    bool ok = true;
    std::function<void(const Expr&)> walk = [&](const Expr& n) {
      if (n.kind == ExprKind::Reduce) return;  // binds its own indices
      if (n.kind == ExprKind::Name && !ctx.scope.count(n.name) && !out_.int_consts.count(n.name) &&
          !out_.float_consts.count(n.name)) {
        diags_.report(DiagKind::UnknownName, n.range, n.name);
        ok = false;
      }
      for (const auto& o : n.operands) walk(*o);
    };
    walk(x);
    return ok;
  }

  /// True when some extent of the field depends on an outer index or a length array.
  static bool is_ragged_field(const CouplingField& f) {
    if (f.type->kind != TypeKind::Tensor) return false;
    if (f.type->groups.size() > 1) return true;
    for (const auto& g : f.type->groups)
      for (const auto& d : g.dims)
        if (d.extent && sym::is_ragged(d.extent)) return true;
    return false;
  }

  /// The value of an integer literal (`3`, `-3`), if `e` is one.
  static std::optional<int64_t> int_literal_value(const Expr& e) {
    if (e.kind == ExprKind::Unary && e.op == "-" && !e.operands.empty()) {
      auto v = int_literal_value(*e.operands[0]);
      if (v) return -*v;
      return std::nullopt;
    }
    if (e.kind != ExprKind::Int) return std::nullopt;
    try {
      size_t used = 0;
      int64_t v = std::stoll(e.text, &used);
      if (used == e.text.size()) return v;
    } catch (...) {
    }
    return std::nullopt;
  }

  /// A ragged field of a construction given as a nested literal, one list
  /// per sequence (`data: [[1.0, 2.0], [3.0]], seqlen: [2, 1]`). The length
  /// arrays its extents read must be literals of the same construction; every
  /// list must have exactly the number of elements its extent gives there.
  /// Returns the field's type with the sizes the literal fixes, or an error.
  TypePtr ragged_literal_type(const CouplingField& f, const Expr& lit, const TypePtr& want,
                              const std::map<std::string, const ast::FieldInit*>& given, Bindings& b, FnCtx& ctx) {
    std::map<std::string, int64_t> sizes;  // size parameters with known values
    for (const auto& [n, v] : b.sizes)
      if (v.first->kind == SymKind::Const) sizes[n] = v.first->value;
    std::map<const IndexVar*, int64_t> env;
    std::vector<std::pair<std::string, int64_t>> outer;  // named indices, for messages
    bool failed = false;
    auto fail = [&](SourceRange at, const std::string& msg) {
      if (!failed) diags_.report(DiagKind::ConstructionMismatch, at, "field " + code(f.name) + ": " + msg);
      failed = true;
      return std::nullopt;
    };
    std::function<std::optional<int64_t>(const SymPtr&)> eval = [&](const SymPtr& e) -> std::optional<int64_t> {
      switch (e->kind) {
        case SymKind::Const: return e->value;
        case SymKind::Size: {
          auto it = sizes.find(e->name);
          if (it != sizes.end()) return it->second;
          if (auto c = out_.int_consts.find(e->name); c != out_.int_consts.end()) return c->second;
          return fail(lit.range, "the size " + code(e->name) + " is not known where this literal needs it");
        }
        case SymKind::Var: {
          auto it = env.find(e->var.get());
          if (it != env.end()) return it->second;
          return fail(lit.range, "the extent " + code(sym::str(e)) + " cannot be evaluated in a literal");
        }
        case SymKind::Read: {
          auto g = given.find(e->name);
          const Expr* x = g != given.end() && g->second->value ? g->second->value.get() : nullptr;
          if (!x || x->kind != ExprKind::TensorLit)
            return fail(lit.range, "a ragged tensor literal needs " + code(e->name) +
                                       " written as a literal in the same construction (`" + e->name + ": [...]`)");
          for (const auto& a : e->args) {
            auto i = eval(a);
            if (!i) return std::nullopt;
            if (x->kind != ExprKind::TensorLit || *i < 0 || *i >= static_cast<int64_t>(x->operands.size()))
              return fail(lit.range, fmt::format("the extent `{}` reads {} at {}, which the literal {} does not have",
                                                 sym::str(e), e->name, *i, code(e->name)));
            x = x->operands[static_cast<size_t>(*i)].get();
          }
          auto v = int_literal_value(*x);
          if (!v) return fail(x->range, "a length used by a ragged tensor literal must be an integer literal");
          return v;
        }
        case SymKind::Add:
        case SymKind::Sub:
        case SymKind::Mul:
        case SymKind::Div:
        case SymKind::Mod:
        case SymKind::Min:
        case SymKind::Max: {
          auto x = eval(e->args[0]);
          auto y = x ? eval(e->args[1]) : std::nullopt;
          if (!y) return std::nullopt;
          if ((e->kind == SymKind::Div || e->kind == SymKind::Mod) && *y == 0)
            return fail(lit.range, "the extent " + code(sym::str(e)) + " divides by zero");
          int64_t r = 0;
          bool overflow = false;
          switch (e->kind) {
            case SymKind::Add: overflow = __builtin_add_overflow(*x, *y, &r); break;
            case SymKind::Sub: overflow = __builtin_sub_overflow(*x, *y, &r); break;
            case SymKind::Mul: overflow = __builtin_mul_overflow(*x, *y, &r); break;
            case SymKind::Div:
            case SymKind::Mod:
              overflow = *x == INT64_MIN && *y == -1;
              if (!overflow) r = e->kind == SymKind::Div ? *x / *y : *x % *y;
              break;
            case SymKind::Min: r = std::min(*x, *y); break;
            default: r = std::max(*x, *y); break;
          }
          if (overflow) return fail(lit.range, "the extent " + code(sym::str(e)) + " overflows 64 bits");
          return r;
        }
        default: return fail(lit.range, "the extent " + code(sym::str(e)) + " cannot be evaluated in a literal");
      }
    };
    std::vector<const DimT*> dims;
    for (const auto& g : f.type->groups)
      for (const auto& d : g.dims) dims.push_back(&d);
    Scalar elem = f.type->scalar;
    std::function<void(const Expr&, size_t)> walk = [&](const Expr& x, size_t d) {
      if (failed) return;
      if (d == dims.size()) {
        if (x.kind == ExprKind::TensorLit) {
          fail(x.range, "a value is expected here, found a list (the literal has more levels than the field)");
          return;
        }
        RhsCtx rc;
        TypePtr t = literal_names_known(x, ctx) ? elem_type(x, ctx, rc) : types::error();
        if (t->kind == TypeKind::Error) {
          failed = true;
          return;
        }
        if (t->kind != TypeKind::Scalar && t->kind != TypeKind::IntValue && t->kind != TypeKind::FloatValue) {
          diags_.report(DiagKind::TypeMismatch, x.range, "tensor literal elements must be scalars");
          failed = true;
          return;
        }
        int errors = diags_.error_count();
        assign_compatible(types::scalar(elem), t, x.range, f.name, &x);
        if (diags_.error_count() > errors) failed = true;
        return;
      }
      const DimT& dim = *dims[d];
      std::string there;
      for (const auto& [n, v] : outer) there += fmt::format("{}{} = {}", there.empty() ? " for " : ", ", n, v);
      if (x.kind != ExprKind::TensorLit) {
        fail(x.range, "a list is expected here (dimension " + std::to_string(d + 1) + " of the field)");
        return;
      }
      int64_t n = static_cast<int64_t>(x.operands.size());
      if (!dim.extent) {
        fail(x.range, "a `?` extent cannot be given as a literal");
        return;
      }
      std::optional<int64_t> extent;
      if (dim.extent->kind == SymKind::Size && !sizes.count(dim.extent->name) &&
          !out_.int_consts.count(dim.extent->name)) {
        sizes[dim.extent->name] = n;  // the literal fixes a size nothing else gives
        extent = n;
      } else {
        extent = eval(dim.extent);
      }
      if (!extent) return;
      if (*extent != n) {
        fail(x.range, fmt::format("this list has {} element(s) but the extent `{}` is {}{}", n,
                                  sym::str(dim.extent), *extent, there));
        return;
      }
      for (int64_t i = 0; i < n && !failed; ++i) {
        if (dim.index) {
          env[dim.index.get()] = i;
          outer.push_back({dim.index->name, i});
        }
        walk(*x.operands[static_cast<size_t>(i)], d + 1);
        if (dim.index) outer.pop_back();
      }
    };
    walk(lit, 0);
    if (failed) return types::error();
    sym::Subst fixed;
    for (const auto& [n, v] : sizes) fixed.sizes[n] = sym::constant(v);
    return types::substitute(want, fixed);
  }

  TypePtr literal_type(const Expr& e, FnCtx& ctx) {
    // Shape: nested lists of equal length; elements scalars of one type.
    std::vector<int64_t> shape;
    TypePtr elem;
    bool ok = true;
    std::function<void(const Expr&, size_t)> walk = [&](const Expr& x, size_t depth) {
      if (!ok) return;
      if (x.kind == ExprKind::TensorLit) {
        if (depth == shape.size()) {
          if (elem) {
            diags_.report(DiagKind::ShapeMismatch, x.range, "tensor literal mixes numbers and nested lists");
            ok = false;
            return;
          }
          shape.push_back(static_cast<int64_t>(x.operands.size()));
        } else if (depth > shape.size() || shape[depth] != static_cast<int64_t>(x.operands.size())) {
          diags_.report(DiagKind::ShapeMismatch, x.range,
                        fmt::format("rows of a tensor literal must have equal lengths: this one has {}, the first has {}",
                                    x.operands.size(), depth < shape.size() ? shape[depth] : 0));
          ok = false;
          return;
        }
        for (const auto& o : x.operands) walk(*o, depth + 1);
        return;
      }
      if (depth != shape.size()) {
        diags_.report(DiagKind::ShapeMismatch, x.range, "tensor literal mixes numbers and nested lists");
        ok = false;
        return;
      }
      RhsCtx rc;
      if (!literal_names_known(x, ctx)) {
        ok = false;
        return;
      }
      TypePtr t = elem_type(x, ctx, rc);
      if (t->kind == TypeKind::Error) {
        ok = false;
        return;
      }
      if (t->kind != TypeKind::Scalar && t->kind != TypeKind::IntValue && t->kind != TypeKind::FloatValue) {
        diags_.report(DiagKind::TypeMismatch, x.range, "tensor literal elements must be scalars");
        ok = false;
        return;
      }
      elem = elem ? unify(elem, t, x.range, "tensor literal") : t;
      if (elem->kind == TypeKind::Error) ok = false;
    };
    walk(e, 0);
    if (!ok) return types::error();
    auto out = std::make_shared<Type>();
    out->kind = TypeKind::Tensor;
    if (!elem || elem->kind == TypeKind::FloatValue) out->scalar = Scalar::F32;
    else if (elem->kind == TypeKind::IntValue) out->scalar = Scalar::I32;
    else out->scalar = elem->scalar;
    GroupT g;
    for (int64_t n : shape) g.dims.push_back({nullptr, sym::constant(n), e.range});
    out->groups.push_back(g);
    literal_elem_.emplace(&e, elem ? elem : types::float_value());
    return out;
  }

  std::set<std::string> uninitialized_;
  std::map<const Expr*, TypePtr> literal_elem_;

  const ast::Program& prog_;
  DiagnosticEngine& diags_;
  CheckOptions opts_;
  Prover prover_;
  CheckedProgram& out_;
  std::map<std::string, const ast::TypeAlias*> alias_decls_;
  std::map<std::string, const ast::FnDecl*> fn_decls_;
  std::map<std::string, size_t> signatures_;
  std::set<std::string> resolving_;
  int fresh_counter_ = 0;
  int extent_depth_ = 0;
  const std::set<std::string>* frozen_ = nullptr;
};

}  // namespace

std::unique_ptr<CheckedProgram> check(const ast::Program& program, DiagnosticEngine& diags,
                                      const CheckOptions& options) {
  auto out = std::make_unique<CheckedProgram>();
  Checker(program, diags, options, *out).run();
  return out;
}

}  // namespace dccc
