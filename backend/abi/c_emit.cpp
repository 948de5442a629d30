#include "backend/abi/c_emit.h"

#include <fmt/format.h>

#include <cctype>
#include <stdexcept>

namespace dccc::backend {

using ir::BinOp;
using ir::ExprKind;
using ir::StmtKind;

const char* c_type(Scalar t) {
  switch (t) {
    case Scalar::F16:
    case Scalar::BF16: return "uint16_t";  // bit patterns
    case Scalar::F32: return "float";
    case Scalar::F64: return "double";
    case Scalar::I32: return "int32_t";
    case Scalar::I64: return "int64_t";
    case Scalar::Bool: return "uint8_t";
  }
  return "void";
}

std::string ident(const std::string& s) {
  std::string out;
  for (char c : s) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

const char* const kCheckedIntHelpers =
    "static inline int64_t dcc__add(int64_t a, int64_t b, int* ovf) { int64_t r; if (__builtin_add_overflow(a, b, &r)) *ovf = 1; return r; }\n"
    "static inline int64_t dcc__sub(int64_t a, int64_t b, int* ovf) { int64_t r; if (__builtin_sub_overflow(a, b, &r)) *ovf = 1; return r; }\n"
    "static inline int64_t dcc__mul(int64_t a, int64_t b, int* ovf) { int64_t r; if (__builtin_mul_overflow(a, b, &r)) *ovf = 1; return r; }\n"
    "static inline int64_t dcc__div(int64_t a, int64_t b, int* ovf) { if (b == 0 || (a == INT64_MIN && b == -1)) { *ovf = 1; return 0; } return a / b; }\n"
    "static inline int64_t dcc__mod(int64_t a, int64_t b, int* ovf) { if (b == 0 || (a == INT64_MIN && b == -1)) { *ovf = 1; return 0; } return a % b; }\n"
    "static inline int64_t dcc__min(int64_t a, int64_t b) { return a < b ? a : b; }\n"
    "static inline int64_t dcc__max(int64_t a, int64_t b) { return a > b ? a : b; }\n";

std::string CEmitter::expr(const ir::Expr& e) {
  switch (e->kind) {
    case ExprKind::IntImm: return fmt::format("INT64_C({})", e->int_value);
    case ExprKind::FloatImm: return fmt::format("{}", e->float_value);
    case ExprKind::SizeRef: return "s_" + ident(e->name);
    case ExprKind::VarRef: return var(e->var);
    case ExprKind::Cast: return fmt::format("(({}){})", c_type(e->type), expr(e->args[0]));
    case ExprKind::Unary:
      if (e->unop == ir::UnOp::Not) return "(!" + expr(e->args[0]) + ")";
      if (e->unop == ir::UnOp::Neg) return "dcc__sub(INT64_C(0), " + expr(e->args[0]) + ", &ovf)";
      break;
    case ExprKind::Load: {
      std::string b = buffer(e->buffer.get());
      if (e->buffer->dims.empty()) return b;
      return fmt::format("{}[{}]", b, expr(e->args[0]));
    }
    case ExprKind::Binary: {
      std::string a = expr(e->args[0]), c = expr(e->args[1]);
      switch (e->binop) {
        case BinOp::Add: return fmt::format("dcc__add({}, {}, &ovf)", a, c);
        case BinOp::Sub: return fmt::format("dcc__sub({}, {}, &ovf)", a, c);
        case BinOp::Mul: return fmt::format("dcc__mul({}, {}, &ovf)", a, c);
        case BinOp::Div: return fmt::format("dcc__div({}, {}, &ovf)", a, c);
        case BinOp::Mod: return fmt::format("dcc__mod({}, {}, &ovf)", a, c);
        case BinOp::Min: return fmt::format("dcc__min({}, {})", a, c);
        case BinOp::Max: return fmt::format("dcc__max({}, {})", a, c);
        case BinOp::EQ: return fmt::format("({} == {})", a, c);
        case BinOp::NE: return fmt::format("({} != {})", a, c);
        case BinOp::LT: return fmt::format("({} < {})", a, c);
        case BinOp::LE: return fmt::format("({} <= {})", a, c);
        case BinOp::And: return fmt::format("({} && {})", a, c);
        case BinOp::Or: return fmt::format("({} || {})", a, c);
        default: break;
      }
      break;
    }
    case ExprKind::Select:  // `remap`'s ranking in the prelude
      return fmt::format("({} ? {} : {})", expr(e->args[0]), expr(e->args[1]), expr(e->args[2]));
    default: break;
  }
  throw std::runtime_error("the C ABI cannot express an IR expression of kind " + std::string(ir::kind_name(e->kind)));
}

void CEmitter::stmt(const ir::Stmt& s, int depth, std::string& out) {
  if (!s) return;
  std::string pad(depth * 2, ' ');
  switch (s->kind) {
    case StmtKind::Seq:
      for (const auto& c : s->body) stmt(c, depth, out);
      return;
    case StmtKind::For: {
      std::string v = var(s->var);
      out += fmt::format("{}{{\n{}  const int64_t {}_n = {};\n", pad, pad, v, expr(s->extent));
      out += fmt::format("{}  for (int64_t {} = 0; {} < {}_n; ++{}) {{\n", pad, v, v, v, v);
      stmt(s->body[0], depth + 2, out);
      out += pad + "  }\n" + pad + "}\n";
      return;
    }
    case StmtKind::Store: {
      std::string b = buffer(s->buffer.get());
      if (s->buffer->dims.empty()) out += fmt::format("{}{} = {};\n", pad, b, expr(s->value));
      else out += fmt::format("{}{}[{}] = {};\n", pad, b, expr(s->args[0]), expr(s->value));
      return;
    }
    default: break;
  }
  throw std::runtime_error("the C ABI cannot express an IR statement of kind " + std::string(ir::kind_name(s->kind)));
}

std::string CEmitter::var(const ir::Var& v) {
  auto it = vars.find(v.get());
  if (it != vars.end()) return it->second;
  return vars[v.get()] = fmt::format("v_{}_{}", ident(v->name), vars.size());
}
std::string CEmitter::buffer(const ir::BufferNode* b) {
  auto it = buffers.find(b);
  if (it == buffers.end()) throw std::runtime_error("the C ABI has no storage for `" + b->name + "`");
  return it->second;
}

}  // namespace dccc::backend
