#include "typecheck/sym.h"

#include <fmt/format.h>

namespace dccc::sym {
namespace {

SymPtr make(SymKind k, std::vector<SymPtr> args) {
  auto s = std::make_shared<Sym>();
  s->kind = k;
  s->args = std::move(args);
  return s;
}

bool is_const(const SymPtr& s, int64_t* v = nullptr) {
  if (s->kind != SymKind::Const) return false;
  if (v) *v = s->value;
  return true;
}

int precedence(SymKind k) {
  switch (k) {
    case SymKind::Or: return 1;
    case SymKind::And: return 2;
    case SymKind::Eq: case SymKind::Ne: case SymKind::Lt: case SymKind::Le: return 3;
    case SymKind::Add: case SymKind::Sub: return 4;
    case SymKind::Mul: case SymKind::Div: case SymKind::Mod: return 5;
    default: return 9;
  }
}

}  // namespace

SymPtr constant(int64_t v) {
  auto s = std::make_shared<Sym>();
  s->kind = SymKind::Const;
  s->value = v;
  return s;
}

SymPtr size(std::string name) {
  auto s = std::make_shared<Sym>();
  s->kind = SymKind::Size;
  s->name = std::move(name);
  return s;
}

SymPtr var(IndexVarPtr v) {
  auto s = std::make_shared<Sym>();
  s->kind = SymKind::Var;
  s->var = std::move(v);
  return s;
}

SymPtr read(std::string array, std::vector<SymPtr> args) {
  auto s = make(SymKind::Read, std::move(args));
  std::const_pointer_cast<Sym>(s)->name = std::move(array);
  return s;
}

SymPtr truth() { return make(SymKind::True, {}); }

SymPtr op(SymKind k, std::vector<SymPtr> args) {
  int64_t a = 0, b = 0;
  if (args.size() == 2 && is_const(args[0], &a) && is_const(args[1], &b)) {
    // Fold only where no overflow or division by zero can occur.
    switch (k) {
      case SymKind::Add:
        if (int64_t r; !__builtin_add_overflow(a, b, &r)) return constant(r);
        break;
      case SymKind::Sub:
        if (int64_t r; !__builtin_sub_overflow(a, b, &r)) return constant(r);
        break;
      case SymKind::Mul:
        if (int64_t r; !__builtin_mul_overflow(a, b, &r)) return constant(r);
        break;
      case SymKind::Min: return constant(std::min(a, b));
      case SymKind::Max: return constant(std::max(a, b));
      default: break;
    }
  }
  if (args.size() == 2 && (k == SymKind::Add || k == SymKind::Sub) && is_const(args[1], &b) && b == 0)
    return args[0];
  if (args.size() == 2 && k == SymKind::Add && is_const(args[0], &a) && a == 0) return args[1];
  if (args.size() == 2 && k == SymKind::Mul && is_const(args[1], &b) && b == 1) return args[0];
  if (args.size() == 2 && k == SymKind::Mul && is_const(args[0], &a) && a == 1) return args[1];
  return make(k, std::move(args));
}

SymPtr add(SymPtr a, SymPtr b) { return op(SymKind::Add, {std::move(a), std::move(b)}); }
SymPtr sub(SymPtr a, SymPtr b) { return op(SymKind::Sub, {std::move(a), std::move(b)}); }
SymPtr lt(SymPtr a, SymPtr b) { return op(SymKind::Lt, {std::move(a), std::move(b)}); }
SymPtr le(SymPtr a, SymPtr b) { return op(SymKind::Le, {std::move(a), std::move(b)}); }
SymPtr eq(SymPtr a, SymPtr b) { return op(SymKind::Eq, {std::move(a), std::move(b)}); }

bool same(const SymPtr& a, const SymPtr& b) {
  if (a == b) return true;
  if (!a || !b) return false;
  if (a->kind != b->kind || a->args.size() != b->args.size()) return false;
  switch (a->kind) {
    case SymKind::Const:
      if (a->value != b->value) return false;
      break;
    case SymKind::Size:
    case SymKind::Read:
      if (a->name != b->name) return false;
      break;
    case SymKind::Var:
      if (a->var != b->var) return false;
      break;
    default: break;
  }
  for (size_t i = 0; i < a->args.size(); ++i)
    if (!same(a->args[i], b->args[i])) return false;
  return true;
}

std::string str(const SymPtr& s) {
  if (!s) return "?";
  auto sub_str = [&](const SymPtr& c, bool right) {
    std::string t = str(c);
    int pc = precedence(c->kind), ps = precedence(s->kind);
    if (pc < ps || (right && pc == ps && pc < 9)) return "(" + t + ")";
    return t;
  };
  auto bin = [&](const char* o) { return sub_str(s->args[0], false) + " " + o + " " + sub_str(s->args[1], true); };
  switch (s->kind) {
    case SymKind::Const: return std::to_string(s->value);
    case SymKind::Size: return s->name;
    case SymKind::Var: return s->var ? s->var->name : "?";
    case SymKind::Read: {
      std::string out = s->name + "[";
      for (size_t i = 0; i < s->args.size(); ++i) out += (i ? ", " : "") + str(s->args[i]);
      return out + "]";
    }
    case SymKind::Add: return bin("+");
    case SymKind::Sub: return bin("-");
    case SymKind::Mul: return bin("*");
    case SymKind::Div: return bin("/");
    case SymKind::Mod: return bin("%");
    case SymKind::Min: return "min(" + str(s->args[0]) + ", " + str(s->args[1]) + ")";
    case SymKind::Max: return "max(" + str(s->args[0]) + ", " + str(s->args[1]) + ")";
    case SymKind::Eq: return bin("==");
    case SymKind::Ne: return bin("!=");
    case SymKind::Lt: return bin("<");
    case SymKind::Le: return bin("<=");
    case SymKind::And: return bin("&&");
    case SymKind::Or: return bin("||");
    case SymKind::Not: return "!" + sub_str(s->args[0], false);
    case SymKind::True: return "true";
  }
  return "?";
}

bool is_ragged(const SymPtr& s) {
  if (!s) return false;
  if (s->kind == SymKind::Var || s->kind == SymKind::Read) return true;
  for (const auto& a : s->args)
    if (is_ragged(a)) return true;
  return false;
}

void vars(const SymPtr& s, std::vector<IndexVarPtr>& out) {
  if (!s) return;
  if (s->kind == SymKind::Var) {
    for (const auto& v : out)
      if (v == s->var) return;
    out.push_back(s->var);
  }
  for (const auto& a : s->args) vars(a, out);
}

void reads(const SymPtr& s, std::vector<SymPtr>& out) {
  if (!s) return;
  if (s->kind == SymKind::Read) out.push_back(s);
  for (const auto& a : s->args) reads(a, out);
}

SymPtr substitute(const SymPtr& s, const Subst& subst) {
  if (!s || subst.empty()) return s;
  switch (s->kind) {
    case SymKind::Const:
    case SymKind::True: return s;
    case SymKind::Size: {
      auto it = subst.sizes.find(s->name);
      return it == subst.sizes.end() ? s : it->second;
    }
    case SymKind::Var: {
      auto it = subst.vars.find(s->var.get());
      return it == subst.vars.end() ? s : it->second;
    }
    default: break;
  }
  std::vector<SymPtr> args;
  bool changed = false;
  for (const auto& a : s->args) {
    args.push_back(substitute(a, subst));
    changed |= args.back() != a;
  }
  if (s->kind == SymKind::Read) {
    std::string name = s->name;
    auto it = subst.arrays.find(name);
    if (it == subst.arrays.end()) {
      size_t dot = name.find('.');
      if (dot != std::string::npos) {
        auto p = subst.arrays.find(name.substr(0, dot));
        if (p != subst.arrays.end()) {
          name = p->second + name.substr(dot);
          changed = true;
        }
      }
    } else {
      name = it->second;
      changed = true;
    }
    if (!changed) return s;
    return read(name, std::move(args));
  }
  if (!changed) return s;
  return op(s->kind, std::move(args));
}

}  // namespace dccc::sym
