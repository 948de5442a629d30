// Small pieces of the C wrapper's text (backend/abi/wrapper_text.h).
#include "backend/abi/wrapper_text.h"

#include <fmt/format.h>

#include "backend/abi/c_emit.h"

namespace dccc::backend::cabi {

using ir::BufferKind;
using ir::BufferNode;
using ir::ExprKind;
using ir::Param;

bool reads_aux(const ir::Expr& e) {
  if (!e) return false;
  if (e->kind == ExprKind::Load && e->buffer->kind == BufferKind::Aux) return true;
  for (const auto& a : e->args)
    if (reads_aux(a)) return true;
  return false;
}

std::string fail_return(const std::string& status, const std::string& fmt_text) {
  return fmt::format("dcc__fail({}, {});", status, fmt_text);
}

std::string fail(const std::string& status, const std::string& fmt_text, const std::string& args) {
  return fmt::format("st = dcc__fail({}, {}{});", status, fmt_text, args.empty() ? "" : ", " + args);
}

/// A C string literal of the printf format `s` (its `%` directives kept).
std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

/// Text that a printf format shows as is (`%` doubled).
std::string literal(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '%' ? std::string("%%") : std::string(1, c);
  return out;
}

/// The wrapper's locals of list argument `p` (`l_xs__packed`, `__rows`,
/// `__row`): a family of their own, apart from the parameters' `a_`.
std::string list_local(const Param& p) { return "l_" + ident(p.name); }

/// `text` with the list locals written as `ARG__x` renamed to `LOCAL__x`.
std::string to_list_locals(std::string text, const std::string& arg, const std::string& local) {
  for (size_t at = 0; (at = text.find(arg + "__", at)) != std::string::npos; at += local.size() + 2)
    text.replace(at, arg.size() + 2, local + "__");
  return text;
}

namespace {

/// The input buffers loaded anywhere in `e` or in `s`.
void loaded_inputs(const ir::Expr& e, std::set<const BufferNode*>& out) {
  ir::each_expr(e, [&](const ir::ExprNode& x) {
    if (x.kind == ExprKind::Load && x.buffer->kind == BufferKind::Input) out.insert(x.buffer.get());
  });
}
void loaded_inputs(const ir::Stmt& s, std::set<const BufferNode*>& out) {
  ir::each_stmt(s, [&](const ir::StmtNode& x) {
    ir::own_exprs(x, [&](const ir::ExprNode& e) {
      if (e.kind == ExprKind::Load && e.buffer->kind == BufferKind::Input) out.insert(e.buffer.get());
    });
  });
}

}  // namespace

/// Buffers whose values are read by totals, the prelude or checks: lengths.
std::set<const BufferNode*> length_buffers(const ir::Func& f) {
  std::set<const BufferNode*> out;
  for (const auto& b : f.buffers) loaded_inputs(b->total, out);
  loaded_inputs(f.prelude, out);
  return out;
}

}  // namespace dccc::backend::cabi
