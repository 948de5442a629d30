#include "frontend/ast.h"

#include <fmt/format.h>

namespace dccc::ast {

const char* expr_kind_name(ExprKind k) {
  switch (k) {
#define X(kind) \
  case ExprKind::kind: return #kind;
    DCCC_EXPR_KINDS(X)
#undef X
  }
  return "?";
}

IndexChain index_chain(const Expr& e) {
  IndexChain c{&e, {}};
  while (c.base->kind == ExprKind::Index) {
    std::vector<const Expr*> g;
    for (size_t i = 1; i < c.base->operands.size(); ++i) g.push_back(c.base->operands[i].get());
    c.groups.insert(c.groups.begin(), std::move(g));
    c.base = c.base->operands[0].get();
  }
  return c;
}

namespace {

std::string loc(const SourceRange& r) { return fmt::format("@{}:{}", r.line, r.col); }

void dump_expr(const Expr& e, int indent, std::string& out);
void dump_type(const TypeExpr& t, int indent, std::string& out);

void line(std::string& out, int indent, const std::string& text) {
  out += std::string(indent * 2, ' ') + text + '\n';
}

void dump_expr(const Expr& e, int indent, std::string& out) {
  std::string head = expr_kind_name(e.kind);
  switch (e.kind) {
    case ExprKind::Int:
    case ExprKind::Float: head += " " + e.text; break;
    case ExprKind::Bool: head += e.bool_value ? " true" : " false"; break;
    case ExprKind::Name:
    case ExprKind::Field:
    case ExprKind::Construct:
    case ExprKind::Call: head += " " + e.name; break;
    case ExprKind::Unary:
    case ExprKind::Binary:
    case ExprKind::Reduce: head += " " + e.op; break;
    default: break;
  }
  line(out, indent, head + " " + loc(e.range));
  for (const auto& f : e.fields) {
    line(out, indent + 1, "field " + f.name.name + (f.type ? " (fresh)" : " (bound)"));
    if (f.type) dump_type(*f.type, indent + 2, out);
    else dump_expr(*f.value, indent + 2, out);
  }
  for (const auto& o : e.operands) dump_expr(*o, indent + 1, out);
}

void dump_type(const TypeExpr& t, int indent, std::string& out) {
  switch (t.kind) {
    case TypeExprKind::Named:
      line(out, indent, "NamedType " + t.name.name + " " + loc(t.range));
      for (const auto& a : t.type_args) dump_type(*a, indent + 1, out);
      break;
    case TypeExprKind::AutoCoupling: line(out, indent, "AutoCoupling " + loc(t.range)); break;
    case TypeExprKind::List:
      line(out, indent, "ListType " + loc(t.range));
      dump_type(*t.element, indent + 1, out);
      break;
    case TypeExprKind::Tensor:
      line(out, indent, "TensorType " + t.name.name + " " + loc(t.range));
      for (const auto& g : t.groups) {
        line(out, indent + 1, "Group " + loc(g.range));
        for (const auto& d : g.dims) {
          line(out, indent + 2, "Dim" + (d.index ? " " + d.index->name + ":" : std::string()) +
                                    (d.extent ? "" : " ?"));
          if (d.extent) dump_expr(*d.extent, indent + 3, out);
        }
      }
      break;
    case TypeExprKind::Coupling:
      line(out, indent, "CouplingType " + loc(t.range));
      for (const auto& f : t.fields) {
        line(out, indent + 1, "Field " + f.name.name);
        dump_type(*f.type, indent + 2, out);
      }
      for (const auto& w : t.where) {
        line(out, indent + 1, "Where");
        dump_expr(*w, indent + 2, out);
      }
      if (t.has_layout) {
        std::string names;
        for (const auto& l : t.layout) names += " " + l.name;
        line(out, indent + 1, "Layout" + names);
      }
      break;
  }
}

void dump_stmt(const Stmt& s, int indent, std::string& out) {
  switch (s.kind) {
    case StmtKind::Let:
      line(out, indent, "Let " + s.name.name + " " + loc(s.range));
      if (s.type) dump_type(*s.type, indent + 1, out);
      if (s.value) dump_expr(*s.value, indent + 1, out);
      break;
    case StmtKind::Assign:
      line(out, indent, "Assign " + loc(s.range));
      dump_expr(*s.target, indent + 1, out);
      dump_expr(*s.value, indent + 1, out);
      break;
    case StmtKind::Return:
      line(out, indent, "Return " + loc(s.range));
      if (s.value) dump_expr(*s.value, indent + 1, out);
      break;
    case StmtKind::Expr:
      line(out, indent, "ExprStmt " + loc(s.range));
      dump_expr(*s.value, indent + 1, out);
      break;
  }
}

}  // namespace

std::string dump(const Expr& expr) {
  std::string out;
  dump_expr(expr, 0, out);
  return out;
}

std::string dump(const TypeExpr& type) {
  std::string out;
  dump_type(type, 0, out);
  return out;
}

ExprPtr clone(const Expr& e) {
  auto c = std::make_unique<Expr>(e.kind, e.range);
  c->name = e.name;
  c->name_range = e.name_range;
  c->op = e.op;
  c->op_range = e.op_range;
  c->text = e.text;
  c->float_value = e.float_value;
  c->bool_value = e.bool_value;
  for (const auto& o : e.operands) c->operands.push_back(clone(*o));
  for (const auto& f : e.fields)
    c->fields.push_back({f.name, f.type ? clone(*f.type) : nullptr, f.value ? clone(*f.value) : nullptr});
  for (const auto& a : e.type_args) c->type_args.push_back(clone(*a));
  return c;
}

TypeExprPtr clone(const TypeExpr& t) {
  auto c = std::make_unique<TypeExpr>(t.kind, t.range);
  c->name = t.name;
  for (const auto& g : t.groups) {
    DimGroup cg;
    cg.range = g.range;
    for (const auto& d : g.dims) cg.dims.push_back({d.index, d.extent ? clone(*d.extent) : nullptr, d.range});
    c->groups.push_back(std::move(cg));
  }
  for (const auto& f : t.fields) c->fields.push_back({f.name, clone(*f.type)});
  for (const auto& w : t.where) c->where.push_back(clone(*w));
  c->layout = t.layout;
  c->has_layout = t.has_layout;
  if (t.element) c->element = clone(*t.element);
  for (const auto& a : t.type_args) c->type_args.push_back(clone(*a));
  return c;
}

StmtPtr clone(const Stmt& s) {
  auto c = std::make_unique<Stmt>(s.kind, s.range);
  c->name = s.name;
  if (s.type) c->type = clone(*s.type);
  if (s.target) c->target = clone(*s.target);
  if (s.value) c->value = clone(*s.value);
  return c;
}

FnDecl clone(const FnDecl& f) {
  FnDecl c;
  c.name = f.name;
  c.type_params = f.type_params;
  c.instance_of = f.instance_of;
  for (const auto& p : f.params) c.params.push_back({p.name, clone(*p.type)});
  if (f.ret) c.ret = clone(*f.ret);
  for (const auto& w : f.where) c.where.push_back(clone(*w));
  for (const auto& s : f.body) c.body.push_back(clone(*s));
  c.range = f.range;
  return c;
}

std::string dump(const Program& p) {
  std::string out;
  for (auto [kind, i] : p.order) {
    if (kind == 0) {
      line(out, 0, "TypeAlias " + p.types[i].name.name + " " + loc(p.types[i].range));
      dump_type(*p.types[i].type, 1, out);
    } else if (kind == 1) {
      line(out, 0, "Const " + p.consts[i].name.name + " " + loc(p.consts[i].range));
      if (p.consts[i].type) dump_type(*p.consts[i].type, 1, out);
      dump_expr(*p.consts[i].value, 1, out);
    } else if (kind == 3) {
      const ScheduleDecl& sd = p.schedules[i];
      line(out, 0, "Schedule " + sd.func.name + " " + loc(sd.range));
      for (const auto& d : sd.directives) {
        line(out, 1, "Directive " + d.name.name + " " + loc(d.range));
        for (const auto& a : d.args) dump_expr(*a, 2, out);
      }
    } else {
      const FnDecl& f = p.fns[i];
      line(out, 0, "Fn " + f.name.name + " " + loc(f.range));
      for (const auto& prm : f.params) {
        line(out, 1, "Param " + prm.name.name);
        dump_type(*prm.type, 2, out);
      }
      if (f.ret) {
        line(out, 1, "Returns");
        dump_type(*f.ret, 2, out);
      }
      for (const auto& w : f.where) {
        line(out, 1, "Where");
        dump_expr(*w, 2, out);
      }
      for (const auto& s : f.body) dump_stmt(*s, 1, out);
    }
  }
  return out;
}

}  // namespace dccc::ast
