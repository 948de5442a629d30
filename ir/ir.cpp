#include "ir/ir.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <set>

namespace dccc::ir {

Var make_var(std::string name) { return std::make_shared<VarNode>(VarNode{std::move(name)}); }

const char* kind_name(ExprKind k) {
  switch (k) {
#define X(n) \
  case ExprKind::n: return #n;
    DCCC_IR_EXPR_KINDS(X)
#undef X
  }
  return "?";
}

const char* kind_name(StmtKind k) {
  switch (k) {
#define X(n) \
  case StmtKind::n: return #n;
    DCCC_IR_STMT_KINDS(X)
#undef X
  }
  return "?";
}

const char* op_text(BinOp op) {
  switch (op) {
#define X(k, s) \
  case BinOp::k: return s;
    DCCC_IR_BINOPS(X)
#undef X
  }
  return "?";
}

const char* op_text(UnOp op) {
  switch (op) {
#define X(k, s) \
  case UnOp::k: return s;
    DCCC_IR_UNOPS(X)
#undef X
  }
  return "?";
}

bool is_comparison(BinOp op) {
  return op == BinOp::EQ || op == BinOp::NE || op == BinOp::LT || op == BinOp::LE;
}

const char* loop_kind_name(LoopKind k) {
  switch (k) {
    case LoopKind::Serial: return "for";
    case LoopKind::Parallel: return "parallel";
    case LoopKind::Vectorized: return "vectorized";
  }
  return "for";
}

const char* buffer_kind_name(BufferKind k) {
  switch (k) {
    case BufferKind::Input: return "input";
    case BufferKind::Output: return "output";
    case BufferKind::Local: return "local";
    case BufferKind::Scalar: return "scalar";
    case BufferKind::Aux: return "aux";
  }
  return "?";
}

namespace build {
namespace {
std::shared_ptr<ExprNode> node(ExprKind k, Scalar t) {
  auto e = std::make_shared<ExprNode>();
  e->kind = k;
  e->type = t;
  return e;
}
std::shared_ptr<StmtNode> snode(StmtKind k) {
  auto s = std::make_shared<StmtNode>();
  s->kind = k;
  return s;
}
}  // namespace

Expr identity(BinOp op, Scalar t) {
  if (is_float(t)) {
    const double inf = std::numeric_limits<double>::infinity();
    return float_imm(op == BinOp::Add ? 0.0 : op == BinOp::Mul ? 1.0 : op == BinOp::Max ? -inf : inf, t);
  }
  const bool i32 = t == Scalar::I32;
  return int_imm(op == BinOp::Add   ? 0
                 : op == BinOp::Mul ? 1
                 : op == BinOp::Max ? (i32 ? INT32_MIN : INT64_MIN)
                                    : (i32 ? INT32_MAX : INT64_MAX),
                 t);
}

Expr round_up(Expr e, int64_t k) {
  if (k <= 1 || (e->kind == ExprKind::IntImm && e->int_value % k == 0)) return e;
  if (e->kind == ExprKind::IntImm) return int_imm((e->int_value + k - 1) / k * k, e->type);
  Expr kk = int_imm(k);
  return binary(BinOp::Mul, binary(BinOp::Div, binary(BinOp::Add, std::move(e), int_imm(k - 1)), kk), kk);
}

Expr int_imm(int64_t v, Scalar t) {
  auto e = node(ExprKind::IntImm, t);
  e->int_value = v;
  return e;
}
Expr float_imm(double v, Scalar t) {
  auto e = node(ExprKind::FloatImm, t);
  e->float_value = v;
  return e;
}
Expr bool_imm(bool v) { return int_imm(v ? 1 : 0, Scalar::Bool); }
Expr var(const Var& v) {
  auto e = node(ExprKind::VarRef, Scalar::I64);
  e->var = v;
  return e;
}
Expr size(const std::string& name) {
  auto e = node(ExprKind::SizeRef, Scalar::I64);
  e->name = name;
  return e;
}
Expr binary(BinOp op, Expr a, Expr b) {
  Scalar t = is_comparison(op) || op == BinOp::And || op == BinOp::Or ? Scalar::Bool : a->type;
  // Fold integer constants so extents stay readable.
  if (a->kind == ExprKind::IntImm && b->kind == ExprKind::IntImm && a->type == Scalar::I64 && b->type == Scalar::I64) {
    int64_t x = a->int_value, y = b->int_value, r = 0;
    bool ok = true;
    switch (op) {
      case BinOp::Add: ok = !__builtin_add_overflow(x, y, &r); break;
      case BinOp::Sub: ok = !__builtin_sub_overflow(x, y, &r); break;
      case BinOp::Mul: ok = !__builtin_mul_overflow(x, y, &r); break;
      default: ok = false;
    }
    if (ok) return int_imm(r);
  }
  if (b->kind == ExprKind::IntImm && b->type == Scalar::I64) {
    if ((op == BinOp::Add || op == BinOp::Sub) && b->int_value == 0) return a;
    if (op == BinOp::Mul && b->int_value == 1) return a;
  }
  if (a->kind == ExprKind::IntImm && a->type == Scalar::I64) {
    if (op == BinOp::Add && a->int_value == 0) return b;
    if (op == BinOp::Mul && a->int_value == 1) return b;
  }
  auto e = node(ExprKind::Binary, t);
  e->binop = op;
  e->args = {std::move(a), std::move(b)};
  return e;
}
Expr unary(UnOp op, Expr a) {
  auto e = node(ExprKind::Unary, op == UnOp::Not ? Scalar::Bool : a->type);
  e->unop = op;
  e->args = {std::move(a)};
  return e;
}
Expr select(Expr c, Expr a, Expr b) {
  auto e = node(ExprKind::Select, a->type);
  e->args = {std::move(c), std::move(a), std::move(b)};
  return e;
}
Expr cast(Scalar t, Expr a) {
  if (a->type == t) return a;
  auto e = node(ExprKind::Cast, t);
  e->args = {std::move(a)};
  return e;
}
Expr load(const Buffer& b, std::vector<Expr> idx) {
  auto e = node(ExprKind::Load, b->type);
  e->buffer = b;
  e->args = std::move(idx);
  return e;
}
Stmt for_loop(const Var& v, Expr extent, Stmt body, LoopKind k) {
  auto s = snode(StmtKind::For);
  s->var = v;
  s->extent = std::move(extent);
  s->loop = k;
  s->body = {std::move(body)};
  return s;
}
Stmt store(const Buffer& b, std::vector<Expr> idx, Expr value) {
  auto s = snode(StmtKind::Store);
  s->buffer = b;
  s->args = std::move(idx);
  s->value = std::move(value);
  return s;
}
Stmt seq(std::vector<Stmt> items) {
  auto s = snode(StmtKind::Seq);
  for (auto& i : items) {
    if (!i) continue;
    if (i->kind == StmtKind::Seq) s->body.insert(s->body.end(), i->body.begin(), i->body.end());
    else s->body.push_back(std::move(i));
  }
  return s;
}
Stmt if_then_else(Expr c, Stmt then_s, Stmt else_s) {
  auto s = snode(StmtKind::IfThenElse);
  s->value = std::move(c);
  s->body = {std::move(then_s)};
  if (else_s) s->body.push_back(std::move(else_s));
  return s;
}
Stmt print(std::string label, std::vector<Expr> values) {
  auto s = snode(StmtKind::Print);
  s->text = std::move(label);
  s->args = std::move(values);
  return s;
}
Stmt assert_that(Expr cond, std::string text) {
  auto s = snode(StmtKind::Assert);
  s->value = std::move(cond);
  s->text = std::move(text);
  return s;
}
Stmt assert_length(const Buffer& b, Expr index) {
  Expr v = flat_load(b, index);
  auto s = snode(StmtKind::Assert);
  s->value = binary(BinOp::LE, int_imm(0, v->type), v);
  s->text = b->name;
  s->args = {std::move(index), std::move(v)};
  s->length_check = true;
  return s;
}
Expr flat_load(const Buffer& b, Expr offset) {
  auto e = std::make_shared<ExprNode>();
  e->kind = ExprKind::Load;
  e->type = b->type;
  e->buffer = b;
  e->args = {std::move(offset)};
  e->flat = true;
  return e;
}
Stmt flat_store(const Buffer& b, Expr offset, Expr value) {
  auto s = std::make_shared<StmtNode>();
  s->kind = StmtKind::Store;
  s->buffer = b;
  s->args = {std::move(offset)};
  s->value = std::move(value);
  s->flat = true;
  return s;
}

Stmt located(const Stmt& s, SourceRange at) {
  if (!s || !at.valid()) return s;
  auto n = std::make_shared<StmtNode>(*s);
  if (!n->at.valid()) n->at = at;
  for (auto& c : n->body) c = located(c, at);
  return n;
}
}  // namespace build

SourceRange statement_location(const Stmt& s) {
  if (!s) return {};
  if (s->at.valid()) return s->at;
  if (s->kind == StmtKind::Store && s->buffer && s->buffer->at.valid()) return s->buffer->at;
  for (const auto& c : s->body)
    if (SourceRange r = statement_location(c); r.valid()) return r;
  return {};
}

bool mentions(const Expr& e, const Var& v) {
  if (!e) return false;
  if (e->kind == ExprKind::VarRef && e->var == v) return true;
  for (const auto& a : e->args)
    if (mentions(a, v)) return true;
  return false;
}

bool affine_in(const Expr& e, const Var& v) {
  if (!mentions(e, v)) return true;
  if (e->type != Scalar::I64) return false;
  switch (e->kind) {
    case ExprKind::VarRef: return true;
    case ExprKind::Binary:
      if (e->binop == BinOp::Add || e->binop == BinOp::Sub) return affine_in(e->args[0], v) && affine_in(e->args[1], v);
      if (e->binop == BinOp::Mul)
        return (!mentions(e->args[0], v) && affine_in(e->args[1], v)) ||
               (!mentions(e->args[1], v) && affine_in(e->args[0], v));
      return false;
    default: return false;
  }
}

std::vector<Stmt> items_of(const Stmt& body) {
  if (!body) return {};
  if (body->kind == StmtKind::Seq) return body->body;
  return {body};
}

Stmt unwrap(Stmt s) {
  while (s && s->kind == StmtKind::Seq && s->body.size() == 1) s = s->body[0];
  return s;
}

Stmt replace_stmt(const Stmt& s, const StmtNode* inner, const Stmt& with) {
  if (s.get() == inner) return with;
  if (!s || s->body.empty()) return s;
  std::vector<Stmt> body;
  bool changed = false;
  for (const auto& c : s->body) {
    body.push_back(c ? replace_stmt(c, inner, with) : c);
    changed |= body.back() != c;
  }
  if (!changed) return s;
  auto copy = std::make_shared<StmtNode>(*s);
  copy->body = std::move(body);
  return copy;
}

bool may_fail(const Expr& e) {
  bool found = false;
  each_expr(e, [&](const ExprNode& x) {
    found |= x.kind == ExprKind::Binary && (x.binop == BinOp::Div || x.binop == BinOp::Mod) && !is_float(x.type);
  });
  return found;
}

const StmtNode* find_for(const Stmt& s, const VarNode* v) {
  const StmtNode* found = nullptr;
  each_stmt(s, [&](const StmtNode& x) {
    if (!found && x.kind == StmtKind::For && x.var.get() == v) found = &x;
  });
  return found;
}

bool same_expr(const Expr& a, const Expr& b) {
  if (a == b) return true;
  if (!a || !b) return false;
  if (a->kind != b->kind || a->type != b->type || a->args.size() != b->args.size() || a->flat != b->flat) return false;
  switch (a->kind) {
    case ExprKind::IntImm:
      if (a->int_value != b->int_value) return false;
      break;
    case ExprKind::FloatImm:
      if (a->float_value != b->float_value) return false;
      break;
    case ExprKind::VarRef:
      if (a->var != b->var) return false;
      break;
    case ExprKind::SizeRef:
      if (a->name != b->name) return false;
      break;
    case ExprKind::Binary:
      if (a->binop != b->binop) return false;
      break;
    case ExprKind::Unary:
      if (a->unop != b->unop) return false;
      break;
    case ExprKind::Load:
      if (a->buffer != b->buffer) return false;
      break;
    case ExprKind::Select:
    case ExprKind::Cast: break;
  }
  for (size_t k = 0; k < a->args.size(); ++k)
    if (!same_expr(a->args[k], b->args[k])) return false;
  return true;
}

}  // namespace dccc::ir

namespace dccc::ir {

std::vector<Buffer> input_buffers(const Func& f) {
  std::vector<Buffer> out;
  for (const auto& b : f.buffers)
    if (b->kind == BufferKind::Input) out.push_back(b);
  return out;
}

Expr replace_exprs(const Expr& e, const std::function<Expr(const Expr&)>& fn) {
  if (!e) return e;
  if (Expr r = fn(e)) return r;
  if (e->args.empty()) return e;
  std::vector<Expr> args;
  bool changed = false;
  for (const auto& a : e->args) {
    args.push_back(replace_exprs(a, fn));
    changed |= args.back() != a;
  }
  if (!changed) return e;
  auto copy = std::make_shared<ExprNode>(*e);
  copy->args = std::move(args);
  return copy;
}

Expr substitute(const Expr& e, const std::map<const VarNode*, Expr>& m) {
  return replace_exprs(e, [&](const Expr& x) -> Expr {
    if (x->kind != ExprKind::VarRef) return nullptr;
    auto it = m.find(x->var.get());
    return it == m.end() ? x : it->second;
  });
}

Stmt substitute(const Stmt& s, const std::map<const VarNode*, Expr>& m) {
  return rewrite(s, [&](const Expr& e) { return substitute(e, m); });
}

Stmt rename_store(const Stmt& s, const std::map<const VarNode*, Expr>& vars, const BufferNode* from, const Buffer& to) {
  std::function<Expr(const Expr&)> fn = [&](const Expr& e) -> Expr {
    if (e->kind == ExprKind::VarRef) {
      auto it = vars.find(e->var.get());
      return it == vars.end() ? e : it->second;
    }
    if (e->kind != ExprKind::Load || e->buffer.get() != from) return nullptr;
    auto copy = std::make_shared<ExprNode>(*e);
    copy->buffer = to;
    for (auto& a : copy->args) a = replace_exprs(a, fn);
    return copy;
  };
  auto copy = std::make_shared<StmtNode>(*s);
  if (copy->buffer.get() == from) copy->buffer = to;
  copy->value = replace_exprs(copy->value, fn);
  for (auto& a : copy->args) a = replace_exprs(a, fn);
  return copy;
}

bool reads_only_lengths(const Func& f, const std::vector<Expr>& es) {
  std::set<const BufferNode*> lengths;
  for (const auto& b : f.buffers)
    for (const auto& d : b->dims)
      each_expr(d.extent, [&](const ExprNode& e) {
        if (e.kind == ExprKind::Load && e.buffer->kind == BufferKind::Input) lengths.insert(e.buffer.get());
      });
  bool ok = true;
  for (const auto& x : es)
    each_expr(x, [&](const ExprNode& e) { ok &= e.kind != ExprKind::Load || lengths.count(e.buffer.get()) > 0; });
  return ok;
}

std::vector<Buffer> prelude_aux(const Func& f) {
  std::vector<const BufferNode*> stored;
  std::function<void(const Stmt&)> walk = [&](const Stmt& s) {
    if (!s) return;
    if (s->kind == StmtKind::Store && s->buffer && s->buffer->kind == BufferKind::Aux) stored.push_back(s->buffer.get());
    for (const auto& c : s->body) walk(c);
  };
  walk(f.prelude);
  std::vector<Buffer> out;
  for (const auto& b : f.buffers)
    if (std::find(stored.begin(), stored.end(), b.get()) != stored.end()) out.push_back(b);
  return out;
}

Stmt rewrite(const Stmt& s, const std::function<Expr(const Expr&)>& fe) {
  if (!s) return s;
  auto copy = std::make_shared<StmtNode>(*s);
  if (copy->extent) copy->extent = fe(copy->extent);
  if (copy->value) copy->value = fe(copy->value);
  for (auto& a : copy->args) a = fe(a);
  for (auto& b : copy->body) b = rewrite(b, fe);
  return copy;
}

void each_expr(const Expr& e, const std::function<void(const ExprNode&)>& fn) {
  if (!e) return;
  fn(*e);
  for (const auto& a : e->args) each_expr(a, fn);
}

void each_stmt(const Stmt& s, const std::function<void(const StmtNode&)>& fn) {
  if (!s) return;
  fn(*s);
  for (const auto& c : s->body) each_stmt(c, fn);
}

void own_exprs(const StmtNode& s, const std::function<void(const ExprNode&)>& fn) {
  each_expr(s.extent, fn);
  each_expr(s.value, fn);
  for (const auto& a : s.args) each_expr(a, fn);
}

bool loads_from(const Expr& e, const BufferNode* b) {
  bool found = false;
  each_expr(e, [&](const ExprNode& x) { found |= x.kind == ExprKind::Load && x.buffer.get() == b; });
  return found;
}

bool touches(const Stmt& s, const BufferNode* b) {
  bool found = false;
  each_stmt(s, [&](const StmtNode& x) {
    // A Store, or a Print of the whole tensor (before expand_prints).
    if ((x.kind == StmtKind::Store || x.kind == StmtKind::Print) && x.buffer.get() == b) found = true;
    own_exprs(x, [&](const ExprNode& e) { found |= e.kind == ExprKind::Load && e.buffer.get() == b; });
  });
  return found;
}

namespace {

/// True when every execution of `s` stores `b` before anything in it reads
/// `b`: a store that does not read it, a sequence whose first use of `b` is
/// such a statement, or an if whose condition does not read `b` and whose
/// two branches both are. A loop is not (it may run no iteration).
bool stored_first(const Stmt& s, const BufferNode* b) {
  if (!s) return false;
  switch (s->kind) {
    case StmtKind::Store: {
      if (s->buffer.get() != b || loads_from(s->value, b)) return false;
      for (const auto& a : s->args)
        if (loads_from(a, b)) return false;
      return true;
    }
    case StmtKind::Seq:
      for (const auto& c : s->body)
        if (touches(c, b)) return stored_first(c, b);
      return false;
    case StmtKind::IfThenElse:
      return !loads_from(s->value, b) && s->body.size() == 2 && stored_first(s->body[0], b) &&
             stored_first(s->body[1], b);
    default:
      return false;
  }
}

}  // namespace

bool written_before_read(const Stmt& s, const BufferNode* b) {
  if (!s || !touches(s, b)) return true;
  switch (s->kind) {
    case StmtKind::Store:
      return s->buffer.get() == b && !loads_from(s->value, b);
    case StmtKind::For:
      return !loads_from(s->extent, b) && written_before_read(s->body[0], b);
    case StmtKind::IfThenElse:
      if (loads_from(s->value, b)) return false;
      for (const auto& c : s->body)
        if (!written_before_read(c, b)) return false;
      return true;
    case StmtKind::Seq:
      // In order: a use that reads no value of `b` from before it (a loop
      // whose every iteration stores `b` first) leaves the next use as the
      // first again; one that surely stores `b` first covers all after it.
      for (const auto& c : s->body) {
        if (!touches(c, b)) continue;
        if (stored_first(c, b)) return true;
        if (!written_before_read(c, b)) return false;
      }
      return true;
    case StmtKind::Print:
    case StmtKind::Assert:  // only reads: touching b means reading it first
      return false;
  }
  return false;
}

bool touches_outside(const Stmt& s, const StmtNode* loop, const BufferNode* b) {
  if (!s || s.get() == loop) return false;
  bool found = (s->kind == StmtKind::Store || s->kind == StmtKind::Print) && s->buffer.get() == b;
  own_exprs(*s, [&](const ExprNode& e) { found |= e.kind == ExprKind::Load && e.buffer.get() == b; });
  for (const auto& c : s->body) found |= touches_outside(c, loop, b);
  return found;
}

}  // namespace dccc::ir
