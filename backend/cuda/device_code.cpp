// FuncEmitter: device code as CUDA C++ text -- expressions, statements,
// casts, 16-bit float rounding, literals, private scalars
// (backend/cuda/cuda_emitter.h). It prints what the kernel plans decided.
#include "backend/cuda/cuda_emitter.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

namespace dccc::backend::cudagen {

/// Type of a value in registers: 16-bit floats compute in f32 and are
/// rounded to their type after every operation, as on the CPU target.
const char* value_type(Scalar t) {
  switch (t) {
    case Scalar::F16:
    case Scalar::BF16:
    case Scalar::F32: return "float";
    case Scalar::F64: return "double";
    case Scalar::I32: return "int32_t";
    case Scalar::I64: return "int64_t";
    case Scalar::Bool: return "bool";
  }
  return "void";
}

const char* unsigned_type(Scalar t) { return t == Scalar::I32 ? "uint32_t" : "uint64_t"; }

static bool is_16bit(Scalar t) { return t == Scalar::BF16 || t == Scalar::F16; }

std::string round_to(Scalar t, const std::string& v) {
  if (t == Scalar::BF16) return "dcc_rbf16(" + v + ")";
  if (t == Scalar::F16) return "dcc_rf16(" + v + ")";
  return v;
}

double round_bf16_host(double v) {
  float f = static_cast<float>(v);
  if (std::isnan(f)) return f;
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits += 0x7FFF + ((bits >> 16) & 1);
  bits &= 0xFFFF0000u;
  std::memcpy(&f, &bits, 4);
  return f;
}

std::string float_literal(double v, Scalar t) {
  if (t == Scalar::F64) {
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    return fmt::format("__longlong_as_double(0x{:016x}LL)", bits);
  }
  if (t == Scalar::BF16) v = round_bf16_host(v);
  float f = static_cast<float>(v);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  std::string lit = fmt::format("__int_as_float(0x{:08x})", bits);
  return t == Scalar::F16 ? "dcc_rf16(" + lit + ")" : lit;
}

std::string FuncEmitter::var(const ir::Var& v) {
  auto it = vars_.find(v.get());
  if (it != vars_.end()) return it->second;
  return vars_[v.get()] = fmt::format("v{}_{}", vars_.size(), ident(v->name));
}

std::string FuncEmitter::buf_ptr(const BufferNode* b) {
  return fmt::format("(({}*)a.p[{}])", c_type(b->type), slot_.at(b));
}

std::string FuncEmitter::scalar_ref(const BufferNode* b) {
  if (private_.count(b)) return "r_" + names_.buf(b) + (tiled_ ? "[dx][dy]" : "");
  in_memory_.insert(b);
  return buf_ptr(b) + "[0]";
}

std::string FuncEmitter::load_value(const BufferNode* b, const std::string& lvalue) {
  if (b->type == Scalar::BF16) return "dcc_bf16_load(" + lvalue + ")";
  if (b->type == Scalar::F16) return "dcc_f16_load(" + lvalue + ")";
  if (b->type == Scalar::Bool) return "(" + lvalue + " != 0)";
  return lvalue;
}

std::string FuncEmitter::store_value(Scalar t, const std::string& v) {
  if (t == Scalar::BF16) return "dcc_bf16_bits(" + v + ")";
  if (t == Scalar::F16) return "dcc_f16_bits(" + v + ")";
  if (t == Scalar::Bool) return "(uint8_t)(" + v + ")";
  return v;
}

std::string FuncEmitter::cast(const std::string& v, Scalar from, Scalar to) {
  if (from == to) return v;
  if (to == Scalar::Bool) return fmt::format("({} != 0)", v);
  if (is_float(to)) {
    if (to == Scalar::F64) return fmt::format("((double)({}))", v);
    return round_to(to, fmt::format("((float)({}))", v));
  }
  if (is_float(from)) {
    // Saturating (cvt.rzi): NaN gives 0, out-of-range values clamp.
    bool dbl = from == Scalar::F64;
    if (to == Scalar::I32) return fmt::format("{}({})", dbl ? "__double2int_rz" : "__float2int_rz", v);
    return fmt::format("((int64_t){}({}))", dbl ? "__double2ll_rz" : "__float2ll_rz", v);
  }
  return fmt::format("(({})({}))", value_type(to), v);
}

std::string FuncEmitter::expr(const ir::Expr& e) {
  if (auto it = override_.find(e.get()); it != override_.end()) return it->second;
  switch (e->kind) {
    case ExprKind::IntImm:
      if (e->type == Scalar::Bool) return e->int_value ? "true" : "false";
      if (e->type == Scalar::I32) return fmt::format("((int32_t){})", e->int_value);
      if (e->int_value == INT64_MIN) return "INT64_MIN";
      return fmt::format("((int64_t){}LL)", e->int_value);
    case ExprKind::FloatImm: return float_literal(e->float_value, e->type);
    case ExprKind::VarRef: return var(e->var);
    case ExprKind::SizeRef: {
      auto it = size_index_.find(e->name);
      if (it == size_index_.end()) unsupported(f_.at, "the unknown size `" + e->name + "`");
      return fmt::format("a.s[{}]", it->second);
    }
    case ExprKind::Load: {
      const BufferNode* b = e->buffer.get();
      if (b->dims.empty()) return private_.count(b) ? scalar_ref(b) : load_value(b, scalar_ref(b));
      if (!e->flat) unsupported(f_.at, "an access that was not storage-lowered");
      std::string v = load_value(b, fmt::format("{}[{}]", buf_ptr(b), expr(e->args[0])));
      if (auto it = hoisted_.find(v); it != hoisted_.end()) return it->second;
      return v;
    }
    case ExprKind::Cast:
      note_div16(*e);
      return cast(expr(e->args[0]), e->args[0]->type, e->type);
    case ExprKind::Select:
      return fmt::format("(({}) ? ({}) : ({}))", expr(e->args[0]), expr(e->args[1]), expr(e->args[2]));
    case ExprKind::Unary: return round_to(e->type, unary(e));
    case ExprKind::Binary: return round_to(e->type, binary(e));
  }
  unsupported(f_.at, "this expression");
}

// An f32 division that the cast `e` rounds to 16 bits is printed as a 16-bit
// one (binary, Div).
void FuncEmitter::note_div16(const ir::ExprNode& e) {
  if (const ir::ExprNode* q = gpu::rounded16_division(e); q && q != &e) div16_ = q;
}

std::string FuncEmitter::expr_unrounded(const ir::Expr& e) {
  if (override_.count(e.get()) || !is_16bit(e->type)) return expr(e);
  switch (e->kind) {
    case ExprKind::Cast:
      if (e->args[0]->type != Scalar::F32) break;
      note_div16(*e);
      return expr(e->args[0]);
    case ExprKind::Unary: return unary(e);
    case ExprKind::Binary: return binary(e);
    default: break;
  }
  return expr(e);
}

std::string FuncEmitter::unary(const ir::Expr& e) {
  Scalar t = e->args[0]->type;
  std::string x = expr(e->args[0]);
  bool dbl = t == Scalar::F64;
  auto fn = [&](const char* f32, const char* f64) { return fmt::format("{}({})", dbl ? f64 : f32, x); };
  switch (e->unop) {
    case UnOp::Neg:
      if (is_float(t)) return "(-(" + x + "))";
      return fmt::format("(({})(({})0 - ({})({})))", value_type(t), unsigned_type(t), unsigned_type(t), x);
    case UnOp::Not: return "(!(" + x + "))";
    case UnOp::Abs:
      if (is_float(t)) return fn("fabsf", "fabs");
      return fmt::format("dcc_iabs({})", x);
    // A result rounded to 16 bits: the hardware exp (dcc_exp16, docs/cuda.md "16-bit results").
    case UnOp::Exp: {
      if (is_16bit(e->type)) return fn("dcc_exp16", "exp");
      if (!options_.fast_math || dbl) return fn("expf", "exp");
      // --fast-math (docs/cuda.md "Fast math"): one ex2.approx; of a - b with an
      // operand finite (no -inf - -inf), ex2(a log2 e - b log2 e): one FFMA
      // where b is a row's value (its product computed once).
      const ir::Expr& d = e->args[0];
      if (d->kind == ExprKind::Binary && d->binop == BinOp::Sub && d->type == Scalar::F32 &&
          finite_sub_.count(d.get()) && !override_.count(d.get()))
        return fmt::format("dcc_exp_fast_sub({}, {})", expr(d->args[0]), expr(d->args[1]));
      return fn("dcc_exp_fast", "exp");
    }
    case UnOp::Log: return fn("logf", "log");
    case UnOp::Sqrt: return fn("sqrtf", "sqrt");
    case UnOp::Rsqrt:
      // In f64, then rounded once, like the CPU target.
      if (dbl) return "(1.0 / sqrt(" + x + "))";
      return "((float)(1.0 / sqrt((double)(" + x + "))))";
    case UnOp::Tanh: return fn("tanhf", "tanh");
    case UnOp::Erf: return fn("erff", "erf");
  }
  unsupported(f_.at, "this unary operator");
}

std::string FuncEmitter::binary(const ir::Expr& e) {
  Scalar t = e->args[0]->type;
  std::string a = expr(e->args[0]), c = expr(e->args[1]);
  bool dbl = t == Scalar::F64;
  switch (e->binop) {
    case BinOp::And: return fmt::format("(({}) && ({}))", a, c);
    case BinOp::Or: return fmt::format("(({}) || ({}))", a, c);
    case BinOp::EQ: return fmt::format("(({}) == ({}))", a, c);
    case BinOp::NE: return fmt::format("(({}) != ({}))", a, c);
    case BinOp::LT: return fmt::format("(({}) < ({}))", a, c);
    case BinOp::LE: return fmt::format("(({}) <= ({}))", a, c);
    default: break;
  }
  if (is_float(t)) {
    switch (e->binop) {
      case BinOp::Add: return fmt::format("(({}) + ({}))", a, c);
      // The masked-value rules (ir/masked_arith.h).
      case BinOp::Sub:
        if (finite_sub_.count(e.get())) return fmt::format("(({}) - ({}))", a, c);  // an operand is finite
        return fmt::format("dcc_fsub({}, {})", a, c);
      case BinOp::Mul: return fmt::format("(({}) * ({}))", a, c);
      case BinOp::Div: {
        const bool r16 = is_16bit(e->type) || div16_ == e.get();  // its quotient is rounded to 16 bits
        if (auto it = divisor_.find(e->args[1].get()); it != divisor_.end() && r16)
          return fmt::format("dcc_fdiv16_pre({0}, {1}, {2}_k, {2}_r, {2}_nz)", a, c, it->second);
        if (auto it = divisor32_.find(e->args[1].get()); it != divisor32_.end() && !r16 && t == Scalar::F32 && !fdiv_flag_.empty())
          return fmt::format("dcc_fdiv_pre({}, {}, {}_q, {})", a, c, it->second, fdiv_flag_);
        return fmt::format("{}({}, {})", r16 ? "dcc_fdiv16" : "dcc_fdiv", a, c);
      }
      case BinOp::Mod: return fmt::format("{}({}, {})", dbl ? "fmod" : "fmodf", a, c);
      case BinOp::Min: return fmt::format("{}({}, {})", dbl ? "fmin" : "fminf", a, c);
      case BinOp::Max: return fmt::format("{}({}, {})", dbl ? "fmax" : "fmaxf", a, c);
      case BinOp::Pow: return fmt::format("{}({}, {})", dbl ? "pow" : "powf", a, c);
      default: break;
    }
    unsupported(f_.at, "this float operator");
  }
  const char* vt = value_type(t);
  const char* ut = unsigned_type(t);
  switch (e->binop) {
    // Wrapping, like the CPU target: computed unsigned.
    case BinOp::Add: return fmt::format("(({})(({})({}) + ({})({})))", vt, ut, a, ut, c);
    case BinOp::Sub: return fmt::format("(({})(({})({}) - ({})({})))", vt, ut, a, ut, c);
    case BinOp::Mul: return fmt::format("(({})(({})({}) * ({})({})))", vt, ut, a, ut, c);
    case BinOp::Div: uses_err_ = true; return fmt::format("(({})dcc_idiv({}, {}, a.err))", vt, a, c);
    case BinOp::Mod: uses_err_ = true; return fmt::format("(({})dcc_imod({}, {}, a.err))", vt, a, c);
    case BinOp::Min: return fmt::format("dcc_imin(({}), ({}))", a, c);
    case BinOp::Max: return fmt::format("dcc_imax(({}), ({}))", a, c);
    case BinOp::Pow: return cast(fmt::format("pow((double)({}), (double)({}))", a, c), Scalar::F64, t);
    default: break;
  }
  unsupported(f_.at, "this integer operator");
}

void FuncEmitter::stmt(const ir::Stmt& s, int depth, std::string& out) {
  if (!s) return;
  std::string pad(depth * 2, ' ');
  switch (s->kind) {
    case StmtKind::Seq:
      for (const auto& c : s->body) stmt(c, depth, out);
      return;
    case StmtKind::For: {
      std::string v = var(s->var);
      out += fmt::format("{}for (int64_t {} = 0, {}_n = {}; {} < {}_n; ++{}) {{\n", pad, v, v, expr(s->extent), v, v, v);
      stmt(s->body[0], depth + 1, out);
      out += pad + "}\n";
      return;
    }
    case StmtKind::Store: {
      const BufferNode* b = s->buffer.get();
      std::string v = expr(s->value);
      if (s->value->type != b->type) v = cast(v, s->value->type, b->type);
      if (b->dims.empty()) {
        if (private_.count(b)) out += fmt::format("{}{} = {};\n", pad, scalar_ref(b), v);
        else out += fmt::format("{}{} = {};\n", pad, scalar_ref(b), store_value(b->type, v));
      } else {
        if (!s->flat) unsupported(f_.at, "a store that was not storage-lowered");
        out += fmt::format("{}{}[{}] = {};\n", pad, buf_ptr(b), expr(s->args[0]), store_value(b->type, v));
      }
      return;
    }
    case StmtKind::IfThenElse:
      out += fmt::format("{}if ({}) {{\n", pad, expr(s->value));
      stmt(s->body[0], depth + 1, out);
      if (s->body.size() > 1 && s->body[1]) {
        out += pad + "} else {\n";
        stmt(s->body[1], depth + 1, out);
      }
      out += pad + "}\n";
      return;
    case StmtKind::Print: unsupported(s->at.valid() ? s->at : f_.at, "`print` in a kernel");
    case StmtKind::Assert:
      // Only in a statement of checks alone (cuda_codegen.cpp): the flag
      // stops the launcher before any kernel that relies on the constraint.
      uses_err_ = true;
      out += fmt::format("{}if (!({})) atomicCAS(a.err, 0, {});\n", pad, expr(s->value),
                         kFirstAssert + static_cast<int>(asserts_.size()));
      asserts_.push_back(s->text);
      return;
  }
}

/// `text` with `delta` (negative: removed) spaces of indentation per line.
std::string FuncEmitter::indent_text(const std::string& text, int delta) {
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    size_t lead = line.find_first_not_of(' ');
    if (lead == std::string::npos) lead = line.size();
    int keep = std::max(0, static_cast<int>(lead) + delta);
    out += std::string(keep, ' ') + line.substr(lead) + "\n";
    start = end + 1;
  }
  return out;
}

std::string FuncEmitter::indent(const std::string& text, int extra) {
  std::string pad(extra * 2, ' '), out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out += pad + text.substr(start, end - start) + "\n";
    start = end + 1;
  }
  return out;
}

void FuncEmitter::declare_private(std::string& body, int depth) {
  std::string pad(depth * 2, ' ');
  for (const BufferNode* b : private_in_order()) body += fmt::format("{}{} r_{} = 0;\n", pad, value_type(b->type), names_.buf(b));
}

/// private_ in the function's buffer order: declarations in a fixed order
/// (a set of pointers iterates in allocation order, which varies).
std::vector<const BufferNode*> FuncEmitter::private_in_order() const {
  std::vector<const BufferNode*> out;
  for (const auto& b : f_.buffers)
    if (private_.count(b.get())) out.push_back(b.get());
  return out;
}

}  // namespace dccc::backend::cudagen
