#include "frontend/parser.h"

#include <antlr4-runtime.h>

#include <algorithm>

#include "DCCLexer.h"
#include "DCCParser.h"

namespace dccc {
namespace {

using P = DCCParser;

/// The file being parsed when it is not the DiagnosticEngine's own (an
/// imported module): every range then names it. Set by parse() only.
thread_local const SourceFile* g_range_file = nullptr;

SourceRange in_file(SourceRange r) {
  r.file = g_range_file;
  return r;
}

SourceRange token_range(const antlr4::Token* t) {
  if (!t) return {};
  int line = static_cast<int>(t->getLine());
  int col = static_cast<int>(t->getCharPositionInLine()) + 1;
  int len = 1;
  if (t->getType() != antlr4::Token::EOF) {
    size_t begin = t->getStartIndex(), end = t->getStopIndex();
    if (end >= begin) len = static_cast<int>(end - begin + 1);
  }
  return {line, col, line, col + len, g_range_file};
}

SourceRange ctx_range(antlr4::ParserRuleContext* ctx) {
  if (!ctx) return {};
  SourceRange a = token_range(ctx->getStart());
  const antlr4::Token* stop = ctx->getStop();
  if (!stop || stop->getTokenIndex() < ctx->getStart()->getTokenIndex()) return a;
  return SourceRange::cover(a, token_range(stop));
}

SourceRange node_range(antlr4::tree::TerminalNode* n) { return n ? token_range(n->getSymbol()) : SourceRange{}; }

/// Returns the byte offset of the first invalid UTF-8 sequence, or npos.
size_t find_invalid_utf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    int n = c < 0x80 ? 0 : (c >> 5) == 0x6 ? 1 : (c >> 4) == 0xE ? 2 : (c >> 3) == 0x1E ? 3 : -1;
    if (n < 0 || (n == 1 && c < 0xC2) || (n == 3 && c > 0xF4)) return i;
    for (int k = 1; k <= n; ++k) {
      if (i + k >= s.size() || (static_cast<unsigned char>(s[i + k]) >> 6) != 0x2) return i;
    }
    if (n == 2) {  // no overlongs, no surrogates
      unsigned char c1 = static_cast<unsigned char>(s[i + 1]);
      if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 >= 0xA0)) return i;
    }
    if (n == 3) {
      unsigned char c1 = static_cast<unsigned char>(s[i + 1]);
      if ((c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 >= 0x90)) return i;
    }
    i += n + 1;
  }
  return std::string::npos;
}

std::string shorten(std::string text) {
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  for (char& c : text)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  return text;
}

std::string token_desc(const antlr4::Token* t) {
  if (!t || t->getType() == antlr4::Token::EOF) return "end of file";
  return "`" + shorten(t->getText()) + "`";
}

/// Rewrites ANTLR's messages into dccc's style and reports them.
class SyntaxErrorListener : public antlr4::BaseErrorListener {
 public:
  explicit SyntaxErrorListener(DiagnosticEngine& diags) : diags_(diags) {}

  void syntaxError(antlr4::Recognizer*, antlr4::Token* offending, size_t line, size_t col,
                   const std::string& msg, std::exception_ptr) override {
    // Stray characters were already reported by the pre-pass.
    if (offending && offending->getType() == DCCLexer::BAD_CHAR) return;
    SourceRange range = offending ? token_range(offending)
                                  : in_file(SourceRange::point(static_cast<int>(line), static_cast<int>(col) + 1));
    diags_.report(DiagKind::SyntaxError, range, rewrite(msg, offending));
  }

 private:
  // Plain string parsing, not std::regex: a message can quote a
  // megabyte-long token, and std::regex recurses per character.
  static std::string rewrite(const std::string& msg, const antlr4::Token* offending) {
    std::string expected;
    size_t at = msg.rfind(" expecting ");
    if (at != std::string::npos) {
      std::string list = msg.substr(at + 11);
      if (!list.empty() && list.front() == '{' && list.back() == '}') list = list.substr(1, list.size() - 2);
      size_t commas = std::count(list.begin(), list.end(), ',');
      if (commas < 5) {
        std::string pretty;
        size_t pos = 0;
        while (pos <= list.size()) {
          size_t comma = list.find(", ", pos);
          std::string s = list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
          pos = comma == std::string::npos ? list.size() + 1 : comma + 2;
          if (s.size() >= 2 && s.front() == '\'' && s.back() == '\'') s = s.substr(1, s.size() - 2);
          if (s.empty()) continue;
          if (s == "<EOF>") s = "end of file";
          else if (s == "ID") s = "a name";
          else if (s == "STRING") s = "a quoted file name";
          else if (s == "INT") s = "an integer";
          else if (s == "FLOAT") s = "a number";
          else s = "`" + s + "`";
          pretty += (pretty.empty() ? "" : " or ") + s;
        }
        if (!pretty.empty()) expected = "; expected " + pretty;
      }
    }
    if (msg.rfind("missing ", 0) == 0) {
      size_t end_what = msg.find(" at ", 8);
      if (end_what != std::string::npos) {
        std::string what = msg.substr(8, end_what - 8);
        if (what.size() >= 2 && what.front() == '\'' && what.back() == '\'') what = "`" + what.substr(1, what.size() - 2) + "`";
        else if (what == "ID") what = "a name";
        else if (what == "STRING") what = "a quoted file name";
        return "expected " + shorten(what) + " before " + token_desc(offending);
      }
    }
    return "unexpected " + token_desc(offending) + expected;
  }

  DiagnosticEngine& diags_;
};

/// Lexer-level checks before parsing: stray characters, nesting depth,
/// statement length. Returns false when parsing must not proceed.
bool prepass(antlr4::CommonTokenStream& tokens, DiagnosticEngine& diags, const ParseLimits& limits) {
  tokens.fill();
  int depth = 0;
  int stmt_tokens = 0;
  bool ok = true;
  const auto& all = tokens.getTokens();
  for (size_t k = 0; k < all.size(); ++k) {
    antlr4::Token* t = all[k];
    if (t->getChannel() != antlr4::Token::DEFAULT_CHANNEL) continue;
    size_t type = t->getType();
    // `/*` that the lexer could not close lexes as `/` then `*`.
    if (t->getText() == "/" && k + 1 < all.size() && all[k + 1]->getText() == "*" &&
        all[k + 1]->getStartIndex() == t->getStopIndex() + 1) {
      diags.report(DiagKind::SyntaxError, token_range(t), "unterminated `/*` comment");
      return false;
    }
    if (type == DCCLexer::BAD_CHAR) {
      std::string text = t->getText();
      diags.report(DiagKind::SyntaxError, token_range(t), "unexpected character `" + shorten(text) + "`");
      continue;
    }
    std::string text = t->getText();
    if (text == "(" || text == "[" || text == "{") {
      if (++depth > limits.max_nesting) {
        diags.report(DiagKind::NestingTooDeep, token_range(t), limits.max_nesting);
        return false;
      }
    } else if (text == ")" || text == "]" || text == "}") {
      depth = std::max(0, depth - 1);
    }
    if (text == ";" || text == "{" || text == "}") {
      stmt_tokens = 0;
    } else if (++stmt_tokens > limits.max_statement_tokens) {
      diags.report(DiagKind::ExpressionTooLong, token_range(t), limits.max_statement_tokens);
      return false;
    }
  }
  return ok;
}

/// Converts ANTLR parse-tree contexts into AST nodes.
class Builder {
 public:
  explicit Builder(DiagnosticEngine& diags) : diags_(diags) {}

  std::unique_ptr<ast::Program> program(P::ProgramContext* ctx) {
    auto prog = std::make_unique<ast::Program>();
    for (auto* im : ctx->importDecl()) {
      ast::ImportDecl decl;
      std::string quoted = im->STRING()->getText();
      decl.path = quoted.substr(1, quoted.size() - 2);
      decl.path_range = node_range(im->STRING());
      decl.range = ctx_range(im);
      auto ids = im->ID();
      if (ids.size() == 2) {
        if (ids[0]->getText() != "as") {
          diags_.report(DiagKind::SyntaxError, node_range(ids[0]),
                        "expected `as` or `;` after the imported file's name, not " + token_desc(ids[0]->getSymbol()));
          continue;
        }
        decl.alias = ident(ids[1]);
      }
      prog->imports.push_back(std::move(decl));
    }
    for (auto* d : ctx->topDecl()) {
      if (auto* t = d->typeAlias()) {
        ast::TypeAlias a;
        a.name = ident(t->ID());
        if (t->typeParams()) a.type_params = type_params(t->typeParams());
        a.type = type(t->typeExpr());
        a.range = ctx_range(t);
        prog->types.push_back(std::move(a));
        prog->order.emplace_back(0, prog->types.size() - 1);
      } else if (auto* c = d->constDecl()) {
        prog->consts.push_back({ident(c->ID()), c->typeExpr() ? type(c->typeExpr()) : nullptr,
                                expr(c->expr()), ctx_range(c)});
        prog->order.emplace_back(1, prog->consts.size() - 1);
      } else if (auto* f = d->fnDecl()) {
        prog->fns.push_back(fn(f));
        prog->order.emplace_back(2, prog->fns.size() - 1);
      } else if (auto* sd = d->scheduleDecl()) {
        ast::ScheduleDecl decl{ident(sd->ID()), {}, ctx_range(sd)};
        for (auto* dir : sd->directive()) {
          ast::Directive x{ident(dir->ID()), {}, ctx_range(dir)};
          for (auto* e : dir->expr()) x.args.push_back(expr(e));
          decl.directives.push_back(std::move(x));
        }
        prog->schedules.push_back(std::move(decl));
        prog->order.emplace_back(3, prog->schedules.size() - 1);
      }
    }
    return prog;
  }

 private:
  DiagnosticEngine& diags_;

  static ast::Ident ident(antlr4::tree::TerminalNode* n) {
    if (!n) return {};
    return {n->getText(), node_range(n)};
  }
  /// `nn.rmsnorm` as one name, resolved by frontend/imports.cpp.
  static ast::Ident qual(P::QualNameContext* q) {
    if (!q) return {};
    return {q->getText(), ctx_range(q)};
  }

  static std::vector<ast::TypeParam> type_params(P::TypeParamsContext* c) {
    std::vector<ast::TypeParam> out;
    for (auto* p : c->typeParam()) {
      ast::TypeParam tp;
      auto ids = p->ID();
      tp.name = ident(ids[0]);
      for (size_t i = 1; i < ids.size(); ++i) tp.constraint.push_back(ident(ids[i]));
      tp.range = ctx_range(p);
      out.push_back(std::move(tp));
    }
    return out;
  }

  std::vector<ast::TypeExprPtr> type_args(P::TypeArgsContext* c) {
    std::vector<ast::TypeExprPtr> out;
    if (c)
      for (auto* t : c->typeExpr()) out.push_back(type(t));
    return out;
  }

  ast::FnDecl fn(P::FnDeclContext* f) {
    ast::FnDecl d;
    d.name = ident(f->ID());
    d.range = ctx_range(f);
    if (f->typeParams()) d.type_params = type_params(f->typeParams());
    for (auto* p : f->param()) d.params.push_back({ident(p->ID()), type(p->typeExpr())});
    if (f->typeExpr()) d.ret = type(f->typeExpr());
    if (f->whereClause())
      for (auto* e : f->whereClause()->expr()) d.where.push_back(expr(e));
    for (auto* s : f->block()->stmt()) {
      if (auto st = stmt(s)) d.body.push_back(std::move(st));
    }
    return d;
  }

  ast::StmtPtr stmt(P::StmtContext* s) {
    SourceRange r = ctx_range(s);
    if (auto* l = dynamic_cast<P::LetStmtContext*>(s)) {
      auto st = std::make_unique<ast::Stmt>(ast::StmtKind::Let, r);
      st->name = ident(l->ID());
      if (l->typeExpr()) st->type = type(l->typeExpr());
      if (l->expr()) st->value = expr(l->expr());
      return st;
    }
    if (auto* a = dynamic_cast<P::AssignStmtContext*>(s)) {
      auto st = std::make_unique<ast::Stmt>(ast::StmtKind::Assign, r);
      st->target = expr(a->expr(0));
      st->value = expr(a->expr(1));
      return st;
    }
    if (auto* ret = dynamic_cast<P::ReturnStmtContext*>(s)) {
      auto st = std::make_unique<ast::Stmt>(ast::StmtKind::Return, r);
      if (ret->expr()) st->value = expr(ret->expr());
      return st;
    }
    if (auto* e = dynamic_cast<P::ExprStmtContext*>(s)) {
      auto st = std::make_unique<ast::Stmt>(ast::StmtKind::Expr, r);
      st->value = expr(e->expr());
      return st;
    }
    return nullptr;  // empty statement
  }

  ast::TypeExprPtr coupling(P::CouplingTypeContext* c) {
    auto t = std::make_unique<ast::TypeExpr>(ast::TypeExprKind::Coupling, ctx_range(c));
    for (auto* f : c->field()) t->fields.push_back({ident(f->ID()), type(f->typeExpr())});
    if (c->whereClause())
      for (auto* e : c->whereClause()->expr()) t->where.push_back(expr(e));
    if (c->layoutClause()) {
      t->has_layout = true;
      for (auto* id : c->layoutClause()->ID()) t->layout.push_back(ident(id));
    }
    return t;
  }

  ast::TypeExprPtr tensor(const std::vector<P::DimGroupContext*>& groups, P::QualNameContext* elem,
                          SourceRange r) {
    auto t = std::make_unique<ast::TypeExpr>(ast::TypeExprKind::Tensor, r);
    for (auto* g : groups) {
      ast::DimGroup group;
      group.range = ctx_range(g);
      for (auto* d : g->dim()) {
        ast::Dim dim;
        dim.range = ctx_range(d);
        if (d->ID()) dim.index = ident(d->ID());
        if (d->extent()->expr()) dim.extent = expr(d->extent()->expr());
        group.dims.push_back(std::move(dim));
      }
      t->groups.push_back(std::move(group));
    }
    t->name = qual(elem);
    return t;
  }

  ast::TypeExprPtr type(P::TypeExprContext* t) {
    SourceRange r = ctx_range(t);
    if (auto* c = dynamic_cast<P::CouplingTypeExprContext*>(t)) return coupling(c->couplingType());
    if (auto* te = dynamic_cast<P::TensorTypeExprContext*>(t)) return tensor(te->dimGroup(), te->qualName(), r);
    if (auto* l = dynamic_cast<P::ListTypeExprContext*>(t)) {
      auto out = std::make_unique<ast::TypeExpr>(ast::TypeExprKind::List, r);
      out->element = type(l->typeExpr());
      return out;
    }
    if (dynamic_cast<P::AutoCouplingTypeExprContext*>(t))
      return std::make_unique<ast::TypeExpr>(ast::TypeExprKind::AutoCoupling, r);
    auto* n = dynamic_cast<P::NamedTypeExprContext*>(t);
    auto out = std::make_unique<ast::TypeExpr>(ast::TypeExprKind::Named, r);
    if (n) {
      out->name = qual(n->qualName());
      out->type_args = type_args(n->typeArgs());
    }
    return out;
  }

  ast::TypeExprPtr field_type(P::FieldTypeContext* f) {
    SourceRange r = ctx_range(f);
    if (f->couplingType()) return coupling(f->couplingType());
    if (f->LIST()) {
      auto out = std::make_unique<ast::TypeExpr>(ast::TypeExprKind::List, r);
      out->element = type(f->typeExpr());
      return out;
    }
    return tensor(f->dimGroup(), f->qualName(), r);
  }

  ast::ExprPtr make(ast::ExprKind k, antlr4::ParserRuleContext* ctx) {
    return std::make_unique<ast::Expr>(k, ctx_range(ctx));
  }

  ast::ExprPtr binary(antlr4::ParserRuleContext* ctx, P::ExprContext* a, P::ExprContext* b,
                      const antlr4::Token* op) {
    auto e = make(ast::ExprKind::Binary, ctx);
    e->op = op->getText();
    e->op_range = token_range(op);
    e->operands.push_back(expr(a));
    e->operands.push_back(expr(b));
    return e;
  }

  ast::ExprPtr expr(P::ExprContext* c) {
    using K = ast::ExprKind;
    if (auto* x = dynamic_cast<P::FieldExprContext*>(c)) {
      auto e = make(K::Field, c);
      e->operands.push_back(expr(x->expr()));
      e->name = x->ID()->getText();
      e->name_range = node_range(x->ID());
      return e;
    }
    if (auto* x = dynamic_cast<P::IndexExprContext*>(c)) {
      auto e = make(K::Index, c);
      for (auto* o : x->expr()) e->operands.push_back(expr(o));
      return e;
    }
    if (auto* x = dynamic_cast<P::UnaryExprContext*>(c)) {
      auto e = make(K::Unary, c);
      e->op = x->op->getText();
      e->op_range = token_range(x->op);
      e->operands.push_back(expr(x->expr()));
      return e;
    }
    if (auto* x = dynamic_cast<P::MulExprContext*>(c)) return binary(c, x->expr(0), x->expr(1), x->op);
    if (auto* x = dynamic_cast<P::AddExprContext*>(c)) return binary(c, x->expr(0), x->expr(1), x->op);
    if (auto* x = dynamic_cast<P::CmpExprContext*>(c)) return binary(c, x->expr(0), x->expr(1), x->op);
    if (auto* x = dynamic_cast<P::EqExprContext*>(c)) return binary(c, x->expr(0), x->expr(1), x->op);
    if (auto* x = dynamic_cast<P::AndExprContext*>(c))
      return binary(c, x->expr(0), x->expr(1), static_cast<antlr4::tree::TerminalNode*>(x->children[1])->getSymbol());
    if (auto* x = dynamic_cast<P::OrExprContext*>(c))
      return binary(c, x->expr(0), x->expr(1), static_cast<antlr4::tree::TerminalNode*>(x->children[1])->getSymbol());
    if (auto* x = dynamic_cast<P::ReduceExprContext*>(c)) {
      auto e = make(K::Reduce, c);
      e->op = x->reduceOp()->getText();
      e->op_range = ctx_range(x->reduceOp());
      e->operands.push_back(expr(x->expr()));
      return e;
    }
    if (auto* x = dynamic_cast<P::ConstructExprContext*>(c)) {
      auto e = make(K::Construct, c);
      e->type_args = type_args(x->typeArgs());
      e->name = x->qualName()->getText();
      e->name_range = ctx_range(x->qualName());
      for (auto* f : x->fieldInit()) {
        ast::FieldInit fi;
        fi.name = ident(f->ID());
        if (f->fieldType()) fi.type = field_type(f->fieldType());
        else fi.value = expr(f->expr());
        e->fields.push_back(std::move(fi));
      }
      return e;
    }
    if (auto* x = dynamic_cast<P::CallExprContext*>(c)) {
      auto e = make(K::Call, c);
      e->name = x->qualName()->getText();
      e->name_range = ctx_range(x->qualName());
      for (auto* o : x->expr()) e->operands.push_back(expr(o));
      return e;
    }
    if (auto* x = dynamic_cast<P::TensorLitExprContext*>(c)) {
      auto e = make(K::TensorLit, c);
      for (auto* o : x->expr()) e->operands.push_back(expr(o));
      return e;
    }
    if (auto* x = dynamic_cast<P::ParenExprContext*>(c)) {
      auto inner = expr(x->expr());
      inner->range = ctx_range(c);
      return inner;
    }
    if (dynamic_cast<P::IntExprContext*>(c)) {
      auto e = make(K::Int, c);
      e->text = c->getText();
      return e;
    }
    if (dynamic_cast<P::FloatExprContext*>(c)) {
      auto e = make(K::Float, c);
      e->text = c->getText();
      // strtod reads `inf` and `nan` too (the INF_LIT and NAN_LIT keywords).
      e->float_value = std::strtod(e->text.c_str(), nullptr);
      return e;
    }
    if (auto* x = dynamic_cast<P::BoolExprContext*>(c)) {
      auto e = make(K::Bool, c);
      e->bool_value = x->TRUE() != nullptr;
      return e;
    }
    auto e = make(K::Name, c);
    e->name = c->getText();
    e->name_range = e->range;
    return e;
  }
};

}  // namespace

std::unique_ptr<ast::Program> parse(const SourceFile& file, DiagnosticEngine& diags,
                                    const ParseLimits& limits) {
  struct FileScope {
    explicit FileScope(const SourceFile* f) : saved(g_range_file) { g_range_file = f; }
    ~FileScope() { g_range_file = saved; }
    const SourceFile* saved;
  } scope(&file == diags.file() ? nullptr : &file);
  const std::string& text = file.text();
  if (size_t bad = find_invalid_utf8(text); bad != std::string::npos) {
    int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + bad, '\n'));
    size_t line_start = text.rfind('\n', bad == 0 ? 0 : bad - 1);
    int col = static_cast<int>(bad - (line_start == std::string::npos || bad == 0 ? 0 : line_start + 1)) + 1;
    if (bad == 0) col = 1;
    diags.report(DiagKind::InvalidEncoding, in_file(SourceRange::point(line, col)), static_cast<unsigned char>(text[bad]));
    return nullptr;
  }
  antlr4::ANTLRInputStream input(text);
  DCCLexer lexer(&input);
  lexer.removeErrorListeners();
  antlr4::CommonTokenStream tokens(&lexer);
  int errors_before = diags.error_count();
  if (!prepass(tokens, diags, limits)) return nullptr;

  DCCParser parser(&tokens);
  parser.removeErrorListeners();
  SyntaxErrorListener listener(diags);
  parser.addErrorListener(&listener);
  P::ProgramContext* tree = parser.program();
  if (diags.error_count() > errors_before) return nullptr;

  auto program = Builder(diags).program(tree);
  if (diags.error_count() > errors_before) return nullptr;
  if (program->order.empty() && program->imports.empty()) diags.report(DiagKind::EmptyProgram, in_file(SourceRange::point(1, 1)));
  return program;
}

}  // namespace dccc
