#include "typecheck/types.h"

namespace dccc {

const char* scalar_name(Scalar s) {
  switch (s) {
    case Scalar::F16: return "f16";
    case Scalar::BF16: return "bf16";
    case Scalar::F32: return "f32";
    case Scalar::F64: return "f64";
    case Scalar::I32: return "i32";
    case Scalar::I64: return "i64";
    case Scalar::Bool: return "bool";
  }
  return "?";
}

std::optional<Scalar> scalar_from_name(const std::string& n) {
  if (n == "f16") return Scalar::F16;
  if (n == "bf16") return Scalar::BF16;
  if (n == "f32") return Scalar::F32;
  if (n == "f64") return Scalar::F64;
  if (n == "i32") return Scalar::I32;
  if (n == "i64") return Scalar::I64;
  if (n == "bool") return Scalar::Bool;
  return std::nullopt;
}

bool is_float(Scalar s) { return s == Scalar::F16 || s == Scalar::BF16 || s == Scalar::F32 || s == Scalar::F64; }
bool is_int(Scalar s) { return s == Scalar::I32 || s == Scalar::I64; }

size_t Type::rank() const {
  size_t n = 0;
  for (const auto& g : groups) n += g.dims.size();
  return n;
}

const CouplingField* CouplingDef::field(const std::string& n) const {
  for (const auto& f : fields)
    if (f.name == n) return &f;
  return nullptr;
}

namespace types {

namespace {
TypePtr make(TypeKind k) {
  auto t = std::make_shared<Type>();
  t->kind = k;
  return t;
}
}  // namespace

TypePtr scalar(Scalar s) {
  auto t = std::make_shared<Type>();
  t->kind = TypeKind::Scalar;
  t->scalar = s;
  return t;
}
TypePtr int_value() {
  static TypePtr t = make(TypeKind::IntValue);
  return t;
}
TypePtr float_value() {
  static TypePtr t = make(TypeKind::FloatValue);
  return t;
}
TypePtr void_type() {
  static TypePtr t = make(TypeKind::Void);
  return t;
}
TypePtr error() {
  static TypePtr t = make(TypeKind::Error);
  return t;
}

std::string str(const TypePtr& t) {
  if (!t) return "?";
  switch (t->kind) {
    case TypeKind::Scalar: return scalar_name(t->scalar);
    case TypeKind::IntValue: return "integer";
    case TypeKind::FloatValue: return "float";
    case TypeKind::Void: return "nothing";
    case TypeKind::Error: return "<error>";
    case TypeKind::Coupling: return t->coupling ? t->coupling->name : "coupling";
    case TypeKind::List: return "list[" + str(t->element) + "]";
    case TypeKind::Tensor: {
      std::string out;
      for (const auto& g : t->groups) {
        out += "[";
        for (size_t i = 0; i < g.dims.size(); ++i) {
          if (i) out += ", ";
          if (g.dims[i].index) out += g.dims[i].index->name + ": ";
          out += g.dims[i].extent ? sym::str(g.dims[i].extent) : "?";
        }
        out += "]";
      }
      return out + scalar_name(t->scalar);
    }
  }
  return "?";
}

TypePtr substitute(const TypePtr& t, const sym::Subst& s) {
  if (!t || s.empty()) return t;
  if (t->kind == TypeKind::Tensor) {
    auto out = std::make_shared<Type>(*t);
    for (auto& g : out->groups)
      for (auto& d : g.dims) d.extent = sym::substitute(d.extent, s);
    return out;
  }
  if (t->kind == TypeKind::List) {
    auto out = std::make_shared<Type>(*t);
    out->element = substitute(t->element, s);
    return out;
  }
  if (t->kind == TypeKind::Coupling) {
    // Compose: the instance's own bindings, then s applied to their values.
    auto out = std::make_shared<Type>(*t);
    for (auto& [name, v] : out->instance.sizes) v = sym::substitute(v, s);
    for (auto& [from, to] : out->instance.arrays) {
      auto it = s.arrays.find(to);
      if (it != s.arrays.end()) to = it->second;
    }
    return out;
  }
  return t;
}

}  // namespace types
}  // namespace dccc
