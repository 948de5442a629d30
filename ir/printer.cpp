#include "ir/printer.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <set>

namespace dccc::ir {
namespace {

class Printer {
 public:
  std::string func(const Func& f) {
    // A variable, which stands bare in expressions, never takes a size's
    // name or a word that reads as a literal, so that ir_parser.cpp reads
    // every name back unambiguously (a buffer is always followed by `[`, `@`).
    for (const char* w : kReserved) var_reserved_.insert(w);
    for (const auto& s : f.sizes) var_reserved_.insert(s.name);
    std::string out = "func " + f.name + "(";
    auto param = [&](const Param& p) {
      const char* kind = p.kind == Param::Coupling ? "coupling"
                         : p.kind == Param::Tensor ? "tensor"
                         : p.kind == Param::List   ? "list"
                                                   : "scalar";
      std::string t = p.name + ": " + kind + (p.type_name.empty() ? "" : " " + p.type_name) + " = {";
      for (size_t k = 0; k < p.fields.size(); ++k) t += (k ? ", " : "") + p.fields[k].first + ": " + buf_name(p.fields[k].second);
      t += "}";
      for (size_t k = 0; k < p.sizes.size(); ++k)
        t += (k ? ", " : " sizes(") + p.sizes[k].first + " = " + expr(p.sizes[k].second);
      return t + (p.sizes.empty() ? "" : ")");
    };
    for (size_t i = 0; i < f.params.size(); ++i) out += (i ? ", " : "") + param(f.params[i]);
    out += ")";
    if (!f.results.empty()) out += " -> (" + param(f.results[0]) + ")";
    out += " {\n";
    if (!f.sizes.empty()) {
      out += "  sizes";
      for (size_t i = 0; i < f.sizes.size(); ++i) out += (i ? ", " : " ") + f.sizes[i].name;
      out += ";\n";
    }
    for (const auto& b : f.buffers) out += "  " + buffer_decl(b) + ";\n";
    for (const auto& c : f.checks) {
      out += "  check `" + escape(c.text, '`') + "` {\n";
      if (c.pre) stmt(c.pre, 2, out);
      std::string vars;
      for (const auto& [v, e] : c.vars) vars += (vars.empty() ? "" : ", ") + var_name(v) + " in 0 .. " + expr(e);
      out += "    " + (vars.empty() ? std::string() : "for " + vars + ": ") + "require " + expr(c.cond) + ";\n  }\n";
    }
    if (f.prelude) {
      out += "  prelude {\n";
      stmt(f.prelude, 2, out);
      out += "  }\n";
    }
    stmt(f.body, 1, out);
    out += "}\n";
    return out;
  }

  // Also used by FuncText (after func() has named everything).
  std::string var_name(const Var& v) { return unique(v.get(), v->name, var_names_, true); }
  std::string buf_name(const Buffer& b) { return unique(b.get(), b->name, buf_names_, false); }
  friend class dccc::ir::FuncText;

 private:
  std::string buffer_decl(const Buffer& b) {
    std::string out = fmt::format("{} {}: {}", buffer_kind_name(b->kind), buf_name(b), scalar_name(b->type));
    if (!b->dims.empty()) {
      out += " [";
      for (size_t i = 0; i < b->dims.size(); ++i) {
        out += (i ? ", " : "") + var_name(b->dims[i].var) + ": " + expr(b->dims[i].extent);
        if (i < b->pad.size() && b->pad[i] > 1) out += fmt::format(" pad {}", b->pad[i]);
      }
      out += "]";
    }
    if (b->total) out += " total " + expr(b->total);
    return out;
  }

  std::string unique(const void* key, const std::string& base, std::map<const void*, std::string>& names,
                     bool var) {
    auto it = names.find(key);
    if (it != names.end()) return it->second;
    std::string n = base;
    for (int k = 1; used_.count(n) || (var && var_reserved_.count(n)); ++k) n = fmt::format("{}.{}", base, k);
    used_.insert(n);
    return names[key] = n;
  }
  std::string literal(const Expr& e) {
    if (e->kind == ExprKind::IntImm) {
      if (e->type == Scalar::Bool) return e->int_value ? "true" : "false";
      if (e->type == Scalar::I64) return std::to_string(e->int_value);
      return fmt::format("{}{}", e->int_value, scalar_name(e->type));
    }
    if (std::isinf(e->float_value)) return fmt::format("{}({}inf)", scalar_name(e->type), e->float_value < 0 ? "-" : "");
    if (std::isnan(e->float_value)) return fmt::format("{}(nan)", scalar_name(e->type));
    std::string s = fmt::format("{}", e->float_value);
    if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
    return s + scalar_name(e->type);
  }

  std::string expr(const Expr& e) {
    if (!e) return "?";
    switch (e->kind) {
      case ExprKind::IntImm:
      case ExprKind::FloatImm: return literal(e);
      case ExprKind::VarRef: return var_name(e->var);
      case ExprKind::SizeRef: return e->name;
      case ExprKind::Binary:
        if (e->binop == BinOp::Min || e->binop == BinOp::Max || e->binop == BinOp::Pow)
          return fmt::format("{}({}, {})", op_text(e->binop), expr(e->args[0]), expr(e->args[1]));
        return fmt::format("({} {} {})", expr(e->args[0]), op_text(e->binop), expr(e->args[1]));
      case ExprKind::Unary:
        if (e->unop == UnOp::Neg || e->unop == UnOp::Not) {
          // `-(5)`: `-5` is the literal.
          std::string a = expr(e->args[0]);
          if (a[0] >= '0' && a[0] <= '9') return fmt::format("{}({})", op_text(e->unop), a);
          return fmt::format("{}{}", op_text(e->unop), a);
        }
        return fmt::format("{}({})", op_text(e->unop), expr(e->args[0]));
      case ExprKind::Select:
        return fmt::format("select({}, {}, {})", expr(e->args[0]), expr(e->args[1]), expr(e->args[2]));
      case ExprKind::Cast: return fmt::format("{}({})", scalar_name(e->type), expr(e->args[0]));
      case ExprKind::Load:
        if (e->flat) return buf_name(e->buffer) + "@(" + expr(e->args[0]) + ")";
        return buf_name(e->buffer) + "[" + list(e->args) + "]";
    }
    return "?";
  }

  std::string list(const std::vector<Expr>& xs) {
    std::string out;
    for (size_t i = 0; i < xs.size(); ++i) out += (i ? ", " : "") + expr(xs[i]);
    return out;
  }

  void stmt(const Stmt& s, int depth, std::string& out) {
    if (!s) return;
    std::string pad(depth * 2, ' ');
    switch (s->kind) {
      case StmtKind::Seq:
        for (const auto& c : s->body) stmt(c, depth, out);
        return;
      case StmtKind::For: {
        bool vloop = false;
        for (const auto& v : open_)
          if (mentions(s->extent, v)) vloop = true;
        out += fmt::format("{}{} {} in 0 .. {} {{{}\n", pad, loop_kind_name(s->loop), var_name(s->var), expr(s->extent),
                           vloop ? "  // vloop" : "");
        open_.push_back(s->var);
        stmt(s->body[0], depth + 1, out);
        open_.pop_back();
        out += pad + "}\n";
        return;
      }
      case StmtKind::Store:
        if (s->flat) out += fmt::format("{}{}@({}) = {};\n", pad, buf_name(s->buffer), expr(s->args[0]), expr(s->value));
        else out += fmt::format("{}{}[{}] = {};\n", pad, buf_name(s->buffer), list(s->args), expr(s->value));
        return;
      case StmtKind::IfThenElse:
        out += fmt::format("{}if {} {{\n", pad, expr(s->value));
        stmt(s->body[0], depth + 1, out);
        if (s->body.size() > 1) {
          out += pad + "} else {\n";
          stmt(s->body[1], depth + 1, out);
        }
        out += pad + "}\n";
        return;
      case StmtKind::Assert:
        if (s->length_check && s->args.size() == 2)
          out += fmt::format("{}assert {} length \"{}\" ({});\n", pad, expr(s->value), escape(s->text, '"'),
                             list(s->args));
        else
          out += fmt::format("{}assert {} \"{}\";\n", pad, expr(s->value), escape(s->text, '"'));
        return;
      case StmtKind::Print:
        {
          std::string text = escape(s->text, '"');
          out += fmt::format("{}print{} \"{}\"{}{};\n", pad, s->newline ? "ln" : "", text,
                             s->buffer ? " " + buf_name(s->buffer) : std::string(),
                             s->args.empty() ? "" : " (" + list(s->args) + ")");
        }
        return;
    }
  }

  /// `text` between `quote`s: \n \t \\ \xHH and the quote escaped.
  static std::string escape(const std::string& text, char quote) {
    std::string out;
    for (char c : text) {
      if (c == '\n') out += "\\n";
      else if (c == '\t') out += "\\t";
      else if (c == '\\' || c == quote) out += std::string("\\") + c;
      else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
      else out += c;
    }
    return out;
  }

  /// Bare, these would read as literals (ir_parser.cpp).
  static constexpr const char* kReserved[] = {"true", "false", "inf", "nan"};

  std::map<const void*, std::string> var_names_, buf_names_;
  std::set<std::string> used_, var_reserved_;
  std::vector<Var> open_;
};

}  // namespace

std::string print(const Func& f) { return Printer().func(f); }

struct FuncText::Impl {
  Printer p;
};
FuncText::FuncText(const Func& f) : impl_(std::make_unique<Impl>()) { impl_->p.func(f); }
FuncText::~FuncText() = default;
std::string FuncText::expr(const Expr& e) { return impl_->p.expr(e); }
std::string FuncText::var(const Var& v) { return impl_->p.var_name(v); }
std::string FuncText::buffer(const Buffer& b) { return impl_->p.buf_name(b); }
std::string FuncText::stmt(const Stmt& s, int depth) {
  std::string out;
  impl_->p.stmt(s, depth, out);
  return out;
}

std::string print(const Module& m) {
  std::string out;
  for (const auto& f : m.funcs) out += print(f) + "\n";
  return out;
}

}  // namespace dccc::ir
