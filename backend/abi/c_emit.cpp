#include "backend/abi/c_emit.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
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

bool c_reserved(const std::string& n) {
  static const std::set<std::string> words = {
      // C11 and C23 keywords
      "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum", "extern",
      "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return", "short", "signed",
      "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void", "volatile", "while", "bool",
      "true", "false", "nullptr", "alignas", "alignof", "static_assert", "thread_local", "typeof", "typeof_unqual",
      "constexpr",
      // C++ keywords and alternative tokens (the header is C++ too, the CUDA code C++)
      "asm", "catch", "char8_t", "char16_t", "char32_t", "class", "concept", "consteval", "constinit", "const_cast",
      "co_await", "co_return", "co_yield", "decltype", "delete", "dynamic_cast", "explicit", "export", "friend",
      "mutable", "namespace", "new", "noexcept", "operator", "private", "protected", "public", "reinterpret_cast",
      "requires", "static_cast", "template", "this", "throw", "try", "typeid", "typename", "using", "virtual",
      "wchar_t", "and", "and_eq", "bitand", "bitor", "compl", "not", "not_eq", "or", "or_eq", "xor", "xor_eq",
      // what <stddef.h>, <stdint.h>, <stdio.h>, <string.h>, <stdarg.h> and
      // dccrt.h declare or define, that a name could meet (the rest below)
      "NULL", "offsetof", "FILE", "EOF", "BUFSIZ", "FILENAME_MAX", "FOPEN_MAX", "TMP_MAX", "L_tmpnam", "stdin",
      "stdout", "stderr", "SIZE_MAX", "va_start", "va_end", "va_arg", "va_copy",
      // the C library functions the generated code, libdccrt and the
      // kernels call (a library function of that name would replace them)
      "main", "memcpy", "memset", "memmove", "memcmp", "strcmp", "strlen", "printf", "fprintf", "snprintf",
      "vsnprintf", "puts", "putchar", "fputs", "fflush", "malloc", "calloc", "realloc", "free", "aligned_alloc",
      "posix_memalign", "abort", "exit", "atexit", "getenv", "exp", "expf", "log", "logf", "sqrt", "sqrtf", "tanh",
      "tanhf", "erf", "erff", "fabs", "fabsf", "pow", "powf", "fmax", "fmaxf", "fmin", "fminf", "fma", "fmaf",
      "floor", "floorf", "ceil", "ceilf", "round", "roundf", "isnan", "isinf", "errno",
      // CUDA
      "dim3", "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize",
      // the library's description (backend/abi/metadata.h)
      "dccc_module_info"};
  auto starts = [&](const char* p) { return n.rfind(p, 0) == 0; };
  auto ends = [&](const char* p) {
    size_t k = std::char_traits<char>::length(p);
    return n.size() >= k && n.compare(n.size() - k, k, p) == 0;
  };
  if (words.count(n)) return true;
  // Reserved to the implementation (`__x`, `_X`), the runtime (`dcc_`,
  // `DCC`), POSIX and <stdint.h> types (`*_t`), <stdint.h> limits and macros
  // (`INT8_MAX`, `UINT64_C`, `PTRDIFF_MIN`, ...).
  if (starts("__") || (n.size() > 1 && n[0] == '_' && std::isupper(static_cast<unsigned char>(n[1])))) return true;
  if (starts("dcc_") || starts("DCC")) return true;
  if (ends("_t")) return true;
  if (starts("INT") || starts("UINT") || starts("PTRDIFF_") || starts("SIG_ATOMIC_") || starts("WCHAR_") ||
      starts("WINT_") || starts("SEEK_") || starts("_IO"))
    return true;
  return false;
}

std::string api_name(const std::string& name, const std::set<std::string>& taken) {
  std::string n = ident(name);
  if (c_reserved(n) && c_reserved(n + "_")) n = "u_" + n;  // reserved by its beginning (`dcc_x`, `__x`, `INT8_MAX`)
  while (c_reserved(n) || taken.count(n)) n += '_';
  return n;
}

CNames::CNames(const ir::Func& f) {
  // Natural stems first, so that a disambiguated `x_2` never takes the
  // natural stem of a later buffer.
  std::set<std::string> natural, used;
  for (const auto& b : f.buffers) natural.insert(ident(b->name));
  for (const auto& b : f.buffers) {
    if (bufs_.count(b.get())) continue;
    const std::string base = ident(b->name);
    std::string n = base;
    for (int k = 2; used.count(n) || (n != base && natural.count(n)); ++k) n = base + "_" + std::to_string(k);
    used.insert(n);
    bufs_[b.get()] = n;
  }
  std::set<std::string> size_natural, size_used;  // `xs.count` of a list and a size `xs_count`
  for (const auto& s : f.sizes) size_natural.insert(ident(s.name));
  for (const auto& s : f.sizes) {
    const std::string base = ident(s.name);
    std::string n = base;
    for (int k = 2; size_used.count(n) || (n != base && size_natural.count(n)); ++k) n = base + "_" + std::to_string(k);
    size_used.insert(n);
    sizes_[s.name] = n;
  }
}

std::string CNames::buf(const ir::BufferNode* b) const {
  auto it = bufs_.find(b);
  return it != bufs_.end() ? it->second : ident(b->name);
}

std::string CNames::size(const std::string& name) const {
  auto it = sizes_.find(name);
  return it != sizes_.end() ? it->second : ident(name);
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
    case ExprKind::FloatImm:
      if (std::isnan(e->float_value)) return "((double)NAN)";
      if (std::isinf(e->float_value)) return e->float_value < 0 ? "(-(double)INFINITY)" : "((double)INFINITY)";
      return fmt::format("{}", e->float_value);
    case ExprKind::SizeRef: return "s_" + (names ? names->size(e->name) : ident(e->name));
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
  throw BackendUnsupported(at, std::string("an IR expression of kind ") + ir::kind_name(e->kind) +
                                 " in the C wrapper's sizes, offsets or checks");
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
    case StmtKind::Assert:
      if (!s->length_check || !length_check) break;
      out += length_check(expr(s->value), expr(s->args[0]), expr(s->args[1]), s->text, pad);
      return;
    default: break;
  }
  throw BackendUnsupported(s->at.valid() ? s->at : at, std::string("an IR statement of kind ") + ir::kind_name(s->kind) +
                                                         " in the C wrapper's sizes, offsets or checks");
}

std::string CEmitter::var(const ir::Var& v) {
  auto it = vars.find(v.get());
  if (it != vars.end()) return it->second;
  return vars[v.get()] = fmt::format("v_{}_{}", ident(v->name), vars.size());
}
std::string CEmitter::buffer(const ir::BufferNode* b) {
  auto it = buffers.find(b);
  if (it == buffers.end())
    throw BackendUnsupported(b->at.valid() ? b->at : at, "sizes, offsets or `where` checks that read `" + b->name +
                                                           "`, which the function computes (the C wrapper computes them "
                                                           "before the call)");
  return it->second;
}

}  // namespace dccc::backend
