#include "ir/verifier.h"

#include <fmt/format.h>

#include <set>

namespace dccc::ir {
namespace {

class Verifier {
 public:
  Verifier(const Func& f, const std::string& pass) : f_(f), pass_(pass) {
    for (const auto& b : f.buffers) owned_.insert(b.get());
  }

  std::vector<std::string> run() {
    for (const auto& b : f_.buffers) {
      // A dimension's extent may use the variables of the dimensions before it.
      std::vector<const VarNode*> dims;
      for (const auto& d : b->dims) {
        if (!d.var || !d.extent) {
          fail(fmt::format("buffer `{}` has a dimension without a variable or an extent", b->name));
          continue;
        }
        scope_ = dims;
        expr(d.extent, fmt::format("extent of `{}`", b->name));
        integer(d.extent, fmt::format("extent of `{}`", b->name));
        dims.push_back(d.var.get());
      }
      scope_.clear();
      if (b->total) expr(b->total, fmt::format("total of `{}`", b->name));
      // Storage padding: positive, only where it cannot change the C ABI
      // (local tensors) and only on dimensions no extent depends on.
      for (size_t d = 0; d < b->pad.size(); ++d) {
        if (b->pad[d] < 1) fail(fmt::format("buffer `{}` has storage padding {} in dimension {}", b->name, b->pad[d], d));
        if (b->pad[d] <= 1) continue;
        if (d >= b->dims.size()) fail(fmt::format("buffer `{}` pads dimension {}, which it lacks", b->name, d));
        if (b->kind != BufferKind::Local)
          fail(fmt::format("{} buffer `{}` has storage padding", buffer_kind_name(b->kind), b->name));
        for (size_t j = d + 1; j < b->dims.size(); ++j)
          if (d < b->dims.size() && mentions(b->dims[j].extent, b->dims[d].var))
            fail(fmt::format("buffer `{}` pads dimension {}, which sizes dimension {}", b->name, d, j));
      }
    }
    for (const auto& c : f_.checks) {
      stmt(c.pre);
      for (const auto& [v, e] : c.vars) {
        expr(e, "entry check `" + c.text + "`");
        scope_.push_back(v.get());
      }
      expr(c.cond, "entry check `" + c.text + "`");
      if (c.cond && c.cond->type != Scalar::Bool) fail("entry check `" + c.text + "` is not a boolean");
      scope_.clear();
    }
    stmt(f_.prelude);
    stmt(f_.body);
    // A scalar local read but never written holds garbage (the LLVM
    // backend's alloca, the CUDA backend's register): a pass that renamed
    // a scalar in some statements and not in the one that sets it.
    for (const auto& b : f_.buffers)
      if (b->kind == BufferKind::Scalar && read_.count(b.get()) && !written_.count(b.get()))
        fail(fmt::format("scalar `{}` is read but never written", b->name));
    return std::move(problems_);
  }

 private:
  void fail(const std::string& what) { problems_.push_back(fmt::format("after {}: in `{}`: {}", pass_, f_.name, what)); }

  void integer(const Expr& e, const std::string& where) {
    if (e && is_float(e->type)) fail(where + " is a float, not an integer");
  }

  void access(const BufferNode* b, const std::vector<Expr>& args, bool flat, const std::string& what) {
    if (!owned_.count(b)) fail(fmt::format("{} `{}`, which is not one of the function's buffers", what, b->name));
    size_t want = b->dims.size();
    if (flat && !b->dims.empty()) want = 1;
    if (flat && !f_.storage_lowered) fail(fmt::format("{} `{}` with a flat offset before storage lowering", what, b->name));
    if (args.size() != want)
      fail(fmt::format("{} `{}` with {} index(es); it needs {}", what, b->name, args.size(), want));
    for (const auto& a : args) {
      expr(a, fmt::format("index of `{}`", b->name));
      integer(a, fmt::format("an index of `{}`", b->name));
    }
  }

  void expr(const Expr& e, const std::string& where) {
    if (!e) {
      fail("a missing expression in " + where);
      return;
    }
    switch (e->kind) {
      case ExprKind::VarRef:
        if (std::find(scope_.begin(), scope_.end(), e->var.get()) == scope_.end())
          fail(fmt::format("variable `{}` is used outside the loop that binds it ({})", e->var->name, where));
        return;
      case ExprKind::Load:
        read_.insert(e->buffer.get());
        access(e->buffer.get(), e->args, e->flat, "a load from");
        return;
      case ExprKind::Select:
        if (e->args.size() != 3) fail("a select without three operands");
        else if (e->args[0]->type != Scalar::Bool) fail("a select whose condition is not a boolean");
        break;
      case ExprKind::Binary:
        if (e->args.size() != 2) fail("a binary operation without two operands");
        else if (e->args[0]->type != e->args[1]->type)
          fail(fmt::format("`{}` on `{}` and `{}` operands ({})", op_text(e->binop), scalar_name(e->args[0]->type),
                           scalar_name(e->args[1]->type), where));
        break;
      default: break;
    }
    for (const auto& a : e->args) expr(a, where);
  }

  void stmt(const Stmt& s) {
    if (!s) return;
    switch (s->kind) {
      case StmtKind::Seq:
        for (const auto& c : s->body) stmt(c);
        return;
      case StmtKind::For:
        expr(s->extent, "the extent of loop `" + s->var->name + "`");
        integer(s->extent, "the extent of loop `" + s->var->name + "`");
        if (std::find(scope_.begin(), scope_.end(), s->var.get()) != scope_.end())
          fail("loop `" + s->var->name + "` rebinds a variable already in scope");
        scope_.push_back(s->var.get());
        if (s->body.size() != 1) fail("loop `" + s->var->name + "` without exactly one body");
        for (const auto& c : s->body) stmt(c);
        scope_.pop_back();
        return;
      case StmtKind::Store:
        written_.insert(s->buffer.get());
        access(s->buffer.get(), s->args, s->flat, "a store to");
        expr(s->value, "the value stored to `" + s->buffer->name + "`");
        if (s->value && s->buffer->type == Scalar::Bool && s->value->type != Scalar::Bool)
          fail("a non-boolean value stored to boolean `" + s->buffer->name + "`");
        return;
      case StmtKind::IfThenElse:
        expr(s->value, "a condition");
        if (s->value && s->value->type != Scalar::Bool) fail("an `if` whose condition is not a boolean");
        for (const auto& c : s->body) stmt(c);
        return;
      case StmtKind::Assert:
        expr(s->value, "an assertion");
        if (s->value && s->value->type != Scalar::Bool) fail("an `assert` whose condition is not a boolean");
        if (s->length_check && s->args.size() != 2) fail("a length check without its index and value");
        for (const auto& a : s->args) expr(a, "a checked length");
        return;
      case StmtKind::Print:
        if (s->buffer && !owned_.count(s->buffer.get())) fail("a print of a buffer not in the function");
        if (s->buffer) read_.insert(s->buffer.get());
        for (const auto& a : s->args) expr(a, "a printed value");
        return;
    }
  }

  const Func& f_;
  std::string pass_;
  std::set<const BufferNode*> owned_;
  std::set<const BufferNode*> read_, written_;
  std::vector<const VarNode*> scope_;
  std::vector<std::string> problems_;
};

}  // namespace

std::vector<std::string> verify(const Func& f, const std::string& pass) { return Verifier(f, pass).run(); }

}  // namespace dccc::ir
