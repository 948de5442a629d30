// The vloop IR's parser (ir/ir_parser.h): functions, declarations, entry
// checks, statements and expressions read from the tokens of ir/ir_lexer.h,
// with the scope and access checks that make an [IRInvalid] error.
#include "ir/ir_parser.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <set>

#include "ir/ir_lexer.h"
#include "ir/verifier.h"

namespace dccc::ir {
namespace {

/// Deeper nesting of expressions and statements is refused, so that hostile
/// input cannot exhaust the stack (the printed IR of real programs nests a
/// few dozen levels at most).
constexpr int kMaxNesting = 256;

using vloop_text::Failed;
using vloop_text::Tok;
using vloop_text::Token;

/// Names the printer never gives a variable (nor can a size have them), since
/// a bare name would read as a literal (`true`, `f32(inf)`). A buffer may
/// have them: it is always followed by `[` or `@`. The other words of the
/// text form are keywords only where a name cannot stand (a statement
/// `for i ...` versus a store `for[i] = ...`).
bool reserved(const std::string& n) { return n == "true" || n == "false" || n == "inf" || n == "nan"; }

/// The name an object had before the printer made it unique (`i.1`: the
/// second object named `i`). Names from programs never end in `.DIGITS`, so
/// objects keep their own names and the backends name things as they would
/// for the program; printing again gives back the same suffixes.
std::string base_name(const std::string& printed) {
  std::string n = printed;
  for (size_t dot = n.rfind('.'); dot != std::string::npos && dot > 0 && dot + 1 < n.size() &&
                                  n.find_first_not_of("0123456789", dot + 1) == std::string::npos;
       dot = n.rfind('.'))
    n.resize(dot);
  return n;
}

std::optional<BufferKind> buffer_kind_from(const std::string& w) {
  for (BufferKind k : {BufferKind::Input, BufferKind::Output, BufferKind::Local, BufferKind::Scalar, BufferKind::Aux})
    if (w == buffer_kind_name(k)) return k;
  return std::nullopt;
}

std::optional<UnOp> math_from(const std::string& w) {
  for (UnOp op : {UnOp::Exp, UnOp::Log, UnOp::Sqrt, UnOp::Rsqrt, UnOp::Tanh, UnOp::Erf, UnOp::Abs})
    if (w == op_text(op)) return op;
  return std::nullopt;
}

std::optional<BinOp> infix_from(const std::string& p) {
  for (BinOp op : {BinOp::Add, BinOp::Sub, BinOp::Mul, BinOp::Div, BinOp::Mod, BinOp::EQ, BinOp::NE, BinOp::LT,
                   BinOp::LE, BinOp::And, BinOp::Or})
    if (p == op_text(op)) return op;
  return std::nullopt;
}

Expr node(ExprKind k, Scalar t, std::vector<Expr> args = {}) {
  auto e = std::make_shared<ExprNode>();
  e->kind = k;
  e->type = t;
  e->args = std::move(args);
  return e;
}

/// Statements in a block: a Seq, as the printer flattens any.
Stmt seq_of(std::vector<Stmt> items) {
  auto s = std::make_shared<StmtNode>();
  s->kind = StmtKind::Seq;
  s->body = std::move(items);
  return s;
}

/// The body of a loop or branch: one statement stands alone, as lowering and
/// build::for_loop make it (passes that look for perfect nests, such as
/// reorder-loops, take `for a { for c { .. } }` only so); more, or none, are
/// a Seq.
Stmt body_of(std::vector<Stmt> items) {
  if (items.size() == 1 && items[0]->kind != StmtKind::Seq) return std::move(items[0]);
  return seq_of(std::move(items));
}

class Parser {
 public:
  Parser(std::vector<Token> toks, DiagnosticEngine& diags) : toks_(std::move(toks)), diags_(diags) {}

  Module module() {
    Module m;
    std::set<std::string> names;
    while (cur().kind != Tok::End) {
      const Token& at = peek_tok(1);
      Func f = func();
      if (!names.insert(f.name).second) invalid(at.range(), fmt::format("function `{}` is defined twice", f.name));
      m.funcs.push_back(std::move(f));
    }
    return m;
  }

 private:
  // ------------------------------------------------------------ tokens
  const Token& cur() const { return toks_[pos_]; }
  const Token& peek_tok(size_t k) const { return toks_[std::min(pos_ + k, toks_.size() - 1)]; }
  static bool punct(const Token& t, std::string_view p) { return t.kind == Tok::Punct && t.text == p; }
  static bool word(const Token& t, std::string_view w) { return t.kind == Tok::Ident && t.text == w; }
  bool is(std::string_view p) const { return punct(cur(), p); }
  bool is_word(std::string_view w) const { return word(cur(), w); }
  /// `w` as a keyword: not a buffer name followed by `[` or `@`.
  bool keyword(std::string_view w) const {
    return is_word(w) && !punct(peek_tok(1), "[") && !punct(peek_tok(1), "@");
  }
  bool decl_start() const { return cur().kind == Tok::Ident && buffer_kind_from(cur().text) && peek_tok(1).kind == Tok::Ident; }
  bool accept(std::string_view p) {
    if (!is(p)) return false;
    ++pos_;
    return true;
  }

  static std::string describe(const Token& t) {
    switch (t.kind) {
      case Tok::End: return "the end of the file";
      case Tok::String: return "a string";
      case Tok::Text: return "a check text";
      case Tok::Number: return "`" + t.text + t.suffix + "`";
      default: return "`" + t.text + "`";
    }
  }

  [[noreturn]] void syntax(const Token& at, const std::string& msg) {
    diags_.report(DiagKind::IRSyntax, at.range(), msg);
    throw Failed{};
  }
  [[noreturn]] void invalid(SourceRange at, const std::string& msg) {
    diags_.report(DiagKind::IRInvalid, at, msg);
    throw Failed{};
  }
  [[noreturn]] void expected(const std::string& what) {
    const Token& t = cur();
    std::string hint;
    if (what[0] == '`' && t.kind == Tok::Punct && infix_from(t.text))
      hint = fmt::format(" (a binary operation is written in parentheses, as in `(a {} b)`)", t.text);
    syntax(t, fmt::format("expected {}, found {}{}", what, describe(t), hint));
  }

  void expect(std::string_view p) {
    if (!accept(p)) expected(fmt::format("`{}`", p));
  }
  void expect_word(std::string_view w) {
    if (!is_word(w)) expected(fmt::format("`{}`", w));
    ++pos_;
  }
  const Token& ident(const std::string& what) {
    if (cur().kind != Tok::Ident) expected(what);
    return toks_[pos_++];
  }

  /// Counts nesting; refuses more than kMaxNesting levels.
  struct Depth {
    Parser& p;
    Depth(Parser& parser, const Token& at) : p(parser) {
      if (++p.depth_ > kMaxNesting) {
        p.diags_.report(DiagKind::NestingTooDeep, at.range(), kMaxNesting);
        throw Failed{};
      }
    }
    ~Depth() { --p.depth_; }
    Depth(const Depth&) = delete;
    Depth& operator=(const Depth&) = delete;
  };

  // ------------------------------------------------------------ functions
  /// Buffers and sizes are named in the header before the body declares
  /// them, and a declaration's extents and total may name buffers declared
  /// after it (the aux arrays): collect the names, kinds and element types
  /// of the declarations first.
  void prescan(size_t p) {
    int depth = 0;
    for (; toks_[p].kind != Tok::End; ++p) {
      const Token& t = toks_[p];
      if (punct(t, "(") || punct(t, "[")) ++depth;
      else if (punct(t, ")") || punct(t, "]")) --depth;
      else if (punct(t, "{") && depth <= 0) break;
    }
    if (toks_[p].kind == Tok::End) return;
    ++p;
    if (word(toks_[p], "sizes") && toks_[p + 1].kind == Tok::Ident) {
      // sizes A, B, C;
      for (++p; toks_[p].kind == Tok::Ident; p += 2) {
        sizes_.insert(toks_[p].text);
        if (!punct(toks_[p + 1], ",")) break;
      }
      if (toks_[p].kind == Tok::Ident) ++p;
      if (punct(toks_[p], ";")) ++p;
    }
    while (toks_[p].kind == Tok::Ident && buffer_kind_from(toks_[p].text) && toks_[p + 1].kind == Tok::Ident) {
      const Token& name = toks_[p + 1];
      if (name.kind == Tok::Ident && punct(toks_[p + 2], ":") && toks_[p + 3].kind == Tok::Ident &&
          scalar_from_name(toks_[p + 3].text)) {
        if (buffers_.count(name.text)) invalid(name.range(), fmt::format("buffer `{}` is declared twice", name.text));
        auto b = std::make_shared<BufferNode>();
        b->name = base_name(name.text);
        printed_[b.get()] = name.text;
        b->kind = *buffer_kind_from(toks_[p].text);
        b->type = *scalar_from_name(toks_[p + 3].text);
        buffers_[name.text] = b;
      }
      int d = 0;
      for (++p; toks_[p].kind != Tok::End; ++p) {
        const Token& t = toks_[p];
        if (punct(t, "(") || punct(t, "[") || punct(t, "{")) ++d;
        else if (punct(t, ")") || punct(t, "]")) --d;
        else if (punct(t, "}") && --d < 0) return;
        else if (punct(t, ";") && d <= 0) break;
      }
      if (toks_[p].kind == Tok::End) return;
      ++p;
    }
  }

  Func func() {
    expect_word("func");
    const Token& name = ident("a function name");
    Func f;
    f.name = name.text;
    buffers_.clear();
    declared_.clear();
    decl_at_.clear();
    printed_.clear();
    sizes_.clear();
    vars_.clear();
    scope_.clear();
    accesses_.clear();
    in_statement_ = false;
    prescan(pos_);

    expect("(");
    if (!is(")")) {
      do f.params.push_back(param());
      while (accept(","));
    }
    expect(")");
    if (accept("->")) {
      expect("(");
      f.results.push_back(param());
      expect(")");
    }
    expect("{");
    if (is_word("sizes") && peek_tok(1).kind == Tok::Ident) {
      ++pos_;
      do {
        const Token& s = ident("a size name");
        if (reserved(s.text)) invalid(s.range(), fmt::format("`{}` is a reserved word, not a size name", s.text));
        for (const auto& other : f.sizes)
          if (other.name == s.text) invalid(s.range(), fmt::format("size `{}` is listed twice", s.text));
        f.sizes.push_back({s.text});
      } while (accept(","));
      expect(";");
    }
    while (decl_start()) f.buffers.push_back(decl());
    in_statement_ = true;
    while (is_word("check") && peek_tok(1).kind == Tok::Text) f.checks.push_back(check());
    bool lowered = false;
    if (is_word("prelude") && punct(peek_tok(1), "{")) {
      ++pos_;
      expect("{");
      f.prelude = seq_of(block());
      expect("}");
      lowered = true;
    }
    f.body = seq_of(block());
    expect("}");
    f.storage_lowered = lowered;
    check_accesses(f);
    for (const auto& problem : verify(f, "parsing")) invalid(name.range(), problem);
    return f;
  }

  /// `q: coupling PackedQueries = {data: q.data, seqlen: q.seqlen} sizes(B = B)`
  Param param() {
    Param p;
    p.name = ident("a parameter name").text;
    expect(":");
    const Token& kind = ident("`coupling`, `tensor`, `scalar` or `list`");
    if (kind.text == "coupling") p.kind = Param::Coupling;
    else if (kind.text == "tensor") p.kind = Param::Tensor;
    else if (kind.text == "scalar") p.kind = Param::Scalar;
    else if (kind.text == "list") p.kind = Param::List;
    else syntax(kind, fmt::format("expected `coupling`, `tensor`, `scalar` or `list`, found {}", describe(kind)));
    if (cur().kind == Tok::Ident) p.type_name = toks_[pos_++].text;
    expect("=");
    expect("{");
    if (!is("}")) {
      do {
        std::string field = ident("a field name").text;
        expect(":");
        p.fields.push_back({field, buffer_ref(ident("a buffer name"))});
      } while (accept(","));
    }
    expect("}");
    if (is_word("sizes")) {
      ++pos_;
      expect("(");
      do {
        std::string size = ident("a size field name").text;
        expect("=");
        const Token& at = cur();
        Expr e = expr();
        integer(e, at, "a size");
        p.sizes.push_back({size, e});
      } while (accept(","));
      expect(")");
    }
    return p;
  }

  /// `input q.data: f32 [b: B, i: i64(q.seqlen[b]) pad 4] total EXPR;`
  Buffer decl() {
    BufferKind kind = *buffer_kind_from(toks_[pos_++].text);
    const Token& name = ident("a buffer name");
    expect(":");
    const Token& type = ident("an element type");
    if (!scalar_from_name(type.text))
      syntax(type, fmt::format("expected an element type (f16, bf16, f32, f64, i32, i64, bool), found {}", describe(type)));
    if (declared_.count(name.text)) invalid(name.range(), fmt::format("buffer `{}` is declared twice", name.text));
    Buffer& b = buffers_[name.text];
    if (!b) {  // a declaration the prescan could not read: nothing refers to it yet
      b = std::make_shared<BufferNode>();
      b->name = base_name(name.text);
      printed_[b.get()] = name.text;
      b->kind = kind;
      b->type = *scalar_from_name(type.text);
    }
    declared_.insert(name.text);
    decl_at_[name.text] = name.range();
    if (accept("[")) {
      size_t mark = scope_.size();
      do {
        const Token& v = ident("a dimension variable");
        expect(":");
        const Token& at = cur();
        Expr extent = expr();
        integer(extent, at, "an extent");
        Var var = bind(v);
        scope_.push_back(var.get());
        b->dims.push_back({var, extent});
        b->pad.push_back(1);
        if (is_word("pad")) {
          ++pos_;
          const Token& n = cur();
          if (n.kind != Tok::Number || !n.suffix.empty() || n.text.find_first_not_of("0123456789") != std::string::npos ||
              n.text.size() > 9 || std::stoll(n.text) < 1)
            expected("a padding (a positive integer)");
          b->pad.back() = std::stoll(n.text);
          // Padding would change the layout a host passes (inputs, outputs)
          // or the meaning of what inner extents index: only local tensors'
          // dimensions that size nothing are padded (checked at the `]`).
          if (b->pad.back() > 1 && kind != BufferKind::Local)
            invalid(n.range(), fmt::format("only local tensors have storage padding; `{}` is {}", name.text,
                                           buffer_kind_name(kind)));
          ++pos_;
        }
      } while (accept(","));
      expect("]");
      scope_.resize(mark);
      for (size_t d = 0; d < b->dims.size(); ++d)
        for (size_t j = d + 1; j < b->dims.size() && b->pad[d] > 1; ++j)
          if (mentions(b->dims[j].extent, b->dims[d].var)) {
            invalid(name.range(), fmt::format("dimension {} of `{}` sizes dimension {} and cannot have storage padding",
                                              d, name.text, j));
            break;
          }
    }
    if (is_word("total")) {
      ++pos_;
      const Token& at = cur();
      b->total = expr();
      integer(b->total, at, "a total");
    }
    expect(";");
    return b;
  }

  /// check `text` { PRE... [for v in 0 .. E, ...:] require COND; }
  EntryCheck check() {
    ++pos_;
    EntryCheck c;
    if (cur().kind != Tok::Text) expected("the constraint's text in backticks");
    c.text = toks_[pos_++].text;
    expect("{");
    std::vector<Stmt> pre;
    size_t mark = scope_.size();
    while (!keyword("require")) {
      if (keyword("for")) {
        // `for v in 0 .. E {` is a statement; `for v in 0 .. E,` or `:` the checked range.
        size_t start = pos_;
        ++pos_;
        const Token& v = ident("a variable name");
        Expr extent = range_from_zero();
        if (is("{")) {
          pos_ = start;
          pre.push_back(stmt());
          continue;
        }
        c.vars.push_back({bind(v), extent});
        scope_.push_back(c.vars.back().first.get());
        while (accept(",")) {
          const Token& w = ident("a variable name");
          Expr e = range_from_zero();
          c.vars.push_back({bind(w), e});
          scope_.push_back(c.vars.back().first.get());
        }
        expect(":");
        if (!keyword("require")) expected("`require`");
        break;
      }
      if (is("}") || cur().kind == Tok::End) expected("`require`");
      pre.push_back(stmt());
    }
    ++pos_;
    const Token& at = cur();
    c.cond = expr();
    if (c.cond->type != Scalar::Bool) invalid(at.range(), "a `require` condition must be a `bool`");
    expect(";");
    expect("}");
    scope_.resize(mark);
    if (!pre.empty()) c.pre = seq_of(std::move(pre));
    return c;
  }

  /// `in 0 .. EXTENT`, returning EXTENT.
  Expr range_from_zero() {
    expect_word("in");
    if (cur().kind != Tok::Number || cur().text != "0" || !cur().suffix.empty()) expected("`0`");
    ++pos_;
    expect("..");
    const Token& at = cur();
    Expr e = expr();
    integer(e, at, "a loop extent");
    return e;
  }

  // ------------------------------------------------------------ statements
  std::vector<Stmt> block() {
    std::vector<Stmt> items;
    while (!is("}")) {
      if (cur().kind == Tok::End) expected("`}`");
      items.push_back(stmt());
    }
    return items;
  }

  Stmt stmt() {
    const Token& t = cur();
    Depth depth(*this, t);
    auto s = std::make_shared<StmtNode>();
    if (t.kind == Tok::Ident && (punct(peek_tok(1), "[") || punct(peek_tok(1), "@"))) {
      s->kind = StmtKind::Store;
      ++pos_;
      s->buffer = buffer_ref(t);
      access(s->args, s->flat, t);
      const Token& at = cur();
      expect("=");
      s->value = expr();
      if (s->buffer->type == Scalar::Bool && s->value->type != Scalar::Bool)
        invalid(at.range(), fmt::format("a `{}` value stored to `bool` buffer `{}`", scalar_name(s->value->type), t.text));
      expect(";");
      record(s->buffer, s->args.size(), s->flat, t);
      return s;
    }
    if (word(t, "for") || word(t, "parallel") || word(t, "vectorized")) {
      s->kind = StmtKind::For;
      s->loop = t.text == "for" ? LoopKind::Serial : t.text == "parallel" ? LoopKind::Parallel : LoopKind::Vectorized;
      ++pos_;
      const Token& v = ident("a loop variable");
      s->extent = range_from_zero();
      s->var = bind(v);
      expect("{");
      scope_.push_back(s->var.get());
      s->body = {body_of(block())};
      scope_.pop_back();
      expect("}");
      return s;
    }
    if (word(t, "if")) {
      s->kind = StmtKind::IfThenElse;
      ++pos_;
      const Token& at = cur();
      s->value = expr();
      if (s->value->type != Scalar::Bool) invalid(at.range(), "an `if` condition must be a `bool`");
      expect("{");
      s->body = {body_of(block())};
      expect("}");
      if (is_word("else") && punct(peek_tok(1), "{")) {
        ++pos_;
        expect("{");
        s->body.push_back(body_of(block()));
        expect("}");
      }
      return s;
    }
    if (word(t, "assert")) {
      // assert COND "the `where` constraint it checks";
      // assert COND length "NAME" (INDEX, VALUE);
      s->kind = StmtKind::Assert;
      ++pos_;
      const Token& at = cur();
      s->value = expr();
      if (s->value->type != Scalar::Bool) invalid(at.range(), "an `assert` condition must be a `bool`");
      if (is_word("length")) {
        // assert COND length "NAME" (INDEX, VALUE); -- a computed length's check
        ++pos_;
        s->length_check = true;
        if (cur().kind != Tok::String) expected("the length array's name in quotes");
        s->text = toks_[pos_++].text;
        expect("(");
        s->args.push_back(expr());
        expect(",");
        s->args.push_back(expr());
        expect(")");
        expect(";");
        return s;
      }
      if (cur().kind != Tok::String) expected("the asserted constraint's text in quotes");
      s->text = toks_[pos_++].text;
      expect(";");
      return s;
    }
    if (word(t, "print") || word(t, "println")) {
      s->kind = StmtKind::Print;
      s->newline = t.text == "println";
      ++pos_;
      if (cur().kind != Tok::String) expected("the printed text in quotes");
      s->text = toks_[pos_++].text;
      if (cur().kind == Tok::Ident) s->buffer = buffer_ref(toks_[pos_++]);
      if (accept("(")) {
        do s->args.push_back(expr());
        while (accept(","));
        expect(")");
      }
      expect(";");
      return s;
    }
    expected("a statement");
  }

  // ------------------------------------------------------------ expressions
  void integer(const Expr& e, const Token& at, const char* what) {
    if (!is_int(e->type))
      invalid(at.range(), fmt::format("{} must be an integer (`i32` or `i64`), not `{}`", what, scalar_name(e->type)));
  }

  /// Reads `[i, j]` or `@(offset)` after a buffer name.
  void access(std::vector<Expr>& args, bool& flat, const Token& name) {
    if (accept("[")) {
      if (!is("]")) {
        do {
          const Token& at = cur();
          args.push_back(expr());
          integer(args.back(), at, "an index");
        } while (accept(","));
      }
      expect("]");
      flat = false;
      return;
    }
    if (!accept("@")) syntax(name, "expected `[` or `@(` after a buffer name");
    expect("(");
    const Token& at = cur();
    args.push_back(expr());
    integer(args.back(), at, "a flat offset");
    expect(")");
    flat = true;
  }

  Expr expr() {
    const Token& t = cur();
    Depth depth(*this, t);
    switch (t.kind) {
      case Tok::Number: ++pos_; return number(t, false, t.range());
      case Tok::Ident: return named(t);
      case Tok::Punct:
        if (t.text == "-") {
          ++pos_;
          // `-5` (no space) is a negative literal; `-(5)` or `-x` a negation.
          if (cur().kind == Tok::Number && cur().begin == t.end) {
            const Token& n = toks_[pos_++];
            return number(n, true, SourceRange::cover(t.range(), n.range()));
          }
          Expr a = expr();
          if (a->type == Scalar::Bool) invalid(t.range(), "`-` of a `bool`");
          return unary(UnOp::Neg, a);
        }
        if (t.text == "!") {
          ++pos_;
          Expr a = expr();
          if (a->type != Scalar::Bool) invalid(t.range(), fmt::format("`!` of a `{}`; it needs a `bool`", scalar_name(a->type)));
          return unary(UnOp::Not, a);
        }
        if (t.text == "(") {
          ++pos_;
          Expr a = expr();
          if (accept(")")) return a;  // `-(5)`: the printer's negation of a literal
          const Token& op = cur();
          auto bop = op.kind == Tok::Punct ? infix_from(op.text) : std::nullopt;
          if (!bop) expected("an operator (+ - * / % == != < <= && ||)");
          ++pos_;
          Expr b = expr();
          expect(")");
          return binary(*bop, a, b, op);
        }
        break;
      default: break;
    }
    expected("an expression");
  }

  Expr unary(UnOp op, Expr a) {
    Scalar t = op == UnOp::Not ? Scalar::Bool : a->type;
    auto e = node(ExprKind::Unary, t, {std::move(a)});
    std::const_pointer_cast<ExprNode>(e)->unop = op;
    return e;
  }

  Expr binary(BinOp op, Expr a, Expr b, const Token& at) {
    if (a->type != b->type)
      invalid(at.range(), fmt::format("operands of `{}` have different types: `{}` and `{}`", op_text(op),
                                      scalar_name(a->type), scalar_name(b->type)));
    bool logical = op == BinOp::And || op == BinOp::Or;
    if (logical && a->type != Scalar::Bool)
      invalid(at.range(), fmt::format("`{}` needs `bool` operands, not `{}`", op_text(op), scalar_name(a->type)));
    if (!logical && !is_comparison(op) && a->type == Scalar::Bool)
      invalid(at.range(), fmt::format("`{}` of `bool` operands", op_text(op)));
    Scalar t = logical || is_comparison(op) ? Scalar::Bool : a->type;
    auto e = node(ExprKind::Binary, t, {std::move(a), std::move(b)});
    std::const_pointer_cast<ExprNode>(e)->binop = op;
    return e;
  }

  Expr number(const Token& t, bool negative, SourceRange at) {
    std::string written = (negative ? "-" : "") + t.text + t.suffix;
    std::optional<Scalar> type = Scalar::I64;
    if (!t.suffix.empty()) {
      type = scalar_from_name(t.suffix);
      if (!type) invalid(at, fmt::format("unknown type suffix `{}` on `{}`", t.suffix, written));
      if (*type == Scalar::Bool) invalid(at, "boolean literals are written `true` and `false`");
    }
    bool is_float_literal = t.text.find_first_of(".eE") != std::string::npos;
    if (is_float_literal) {
      if (t.suffix.empty()) invalid(at, fmt::format("float literal `{}` needs a type suffix, as in `{}f32`", written, written));
      errno = 0;
      double v = std::strtod(t.text.c_str(), nullptr);
      if (std::isinf(v)) {
        diags_.report(DiagKind::LiteralOutOfRange, at, written, "a float literal (write `f64(inf)` for infinity)");
        throw Failed{};
      }
      auto e = node(ExprKind::FloatImm, *type);
      std::const_pointer_cast<ExprNode>(e)->float_value = negative ? -v : v;
      return e;
    }
    // Magnitudes up to 2^63 (for -2^63).
    uint64_t v = 0;
    bool overflow = t.text.size() > 19;
    for (char c : t.text) {
      if (overflow) break;
      if (v > (UINT64_MAX - static_cast<uint64_t>(c - '0')) / 10) overflow = true;
      else v = v * 10 + static_cast<uint64_t>(c - '0');
    }
    uint64_t limit = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
    if (overflow || v > limit) {
      diags_.report(DiagKind::LiteralOutOfRange, at, written, "a 64-bit integer");
      throw Failed{};
    }
    auto e = node(ExprKind::IntImm, *type);
    std::const_pointer_cast<ExprNode>(e)->int_value =
        negative ? static_cast<int64_t>(~v + 1) : static_cast<int64_t>(v);
    return e;
  }

  Expr named(const Token& t) {
    const Token& next = peek_tok(1);
    if (punct(next, "[") || punct(next, "@")) {
      ++pos_;
      Buffer b = buffer_ref(t);
      auto e = node(ExprKind::Load, b->type);
      auto* n = const_cast<ExprNode*>(e.get());
      n->buffer = b;
      access(n->args, n->flat, t);
      record(b, n->args.size(), n->flat, t);
      return e;
    }
    if (t.text == "true" || t.text == "false") {
      ++pos_;
      auto e = node(ExprKind::IntImm, Scalar::Bool);
      std::const_pointer_cast<ExprNode>(e)->int_value = t.text == "true";
      return e;
    }
    if (punct(next, "(")) return call(t);
    ++pos_;
    if (auto v = vars_.find(t.text); v != vars_.end()) {
      if (std::find(scope_.begin(), scope_.end(), v->second.get()) == scope_.end())
        invalid(t.range(), fmt::format("variable `{}` is used outside the loop that binds it", t.text));
      auto e = node(ExprKind::VarRef, Scalar::I64);
      std::const_pointer_cast<ExprNode>(e)->var = v->second;
      return e;
    }
    if (sizes_.count(t.text)) {
      auto e = node(ExprKind::SizeRef, Scalar::I64);
      std::const_pointer_cast<ExprNode>(e)->name = t.text;
      return e;
    }
    if (buffers_.count(t.text))
      invalid(t.range(), fmt::format("buffer `{}` is read without an index (`{}[...]`, or `{}[]` for a scalar)", t.text,
                                     t.text, t.text));
    invalid(t.range(), fmt::format("unknown name `{}`: neither a variable bound here nor a size of the function", t.text));
  }

  /// `f32(x)`, `f32(inf)`, `select(c, a, b)`, `min(a, b)`, `exp(x)`, ...
  Expr call(const Token& name) {
    pos_ += 2;
    const std::string& n = name.text;
    if (auto type = scalar_from_name(n)) {
      bool neg = is("-") && cur().end == peek_tok(1).begin;
      const Token& w = peek_tok(neg ? 1 : 0);
      if ((word(w, "inf") || word(w, "nan")) && punct(peek_tok(neg ? 2 : 1), ")")) {
        pos_ += neg ? 3 : 2;
        double v = w.text == "inf" ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
        if (!is_float(*type)) invalid(name.range(), fmt::format("`{}` is not a float type", n));
        auto e = node(ExprKind::FloatImm, *type);
        std::const_pointer_cast<ExprNode>(e)->float_value = neg ? -v : v;
        return e;
      }
      Expr a = expr();
      expect(")");
      return node(ExprKind::Cast, *type, {a});
    }
    std::vector<Expr> args;
    do args.push_back(expr());
    while (accept(","));
    expect(")");
    auto want = [&](size_t k) {
      if (args.size() != k)
        invalid(name.range(), fmt::format("`{}` takes {} operand(s), not {}", n, k, args.size()));
    };
    if (n == "select") {
      want(3);
      if (args[0]->type != Scalar::Bool) invalid(name.range(), "the condition of a `select` must be a `bool`");
      if (args[1]->type != args[2]->type)
        invalid(name.range(), fmt::format("the values of a `select` have different types: `{}` and `{}`",
                                          scalar_name(args[1]->type), scalar_name(args[2]->type)));
      return node(ExprKind::Select, args[1]->type, args);
    }
    if (n == "min" || n == "max" || n == "pow") {
      want(2);
      return binary(n == "min" ? BinOp::Min : n == "max" ? BinOp::Max : BinOp::Pow, args[0], args[1], name);
    }
    if (auto op = math_from(n)) {
      want(1);
      if (*op == UnOp::Abs ? args[0]->type == Scalar::Bool : !is_float(args[0]->type))
        invalid(name.range(), fmt::format("`{}` of a `{}`", n, scalar_name(args[0]->type)));
      return unary(*op, args[0]);
    }
    syntax(name, fmt::format("unknown function `{}`", n));
  }

  // ------------------------------------------------------------ names
  Buffer buffer_ref(const Token& t) {
    auto it = buffers_.find(t.text);
    if (it == buffers_.end()) invalid(t.range(), fmt::format("unknown buffer `{}`", t.text));
    return it->second;
  }

  /// The variable a binder names: one object per name in a function.
  Var bind(const Token& t) {
    if (reserved(t.text)) invalid(t.range(), fmt::format("`{}` is a reserved word, not a variable name", t.text));
    if (sizes_.count(t.text)) invalid(t.range(), fmt::format("`{}` is a size of the function, not a variable", t.text));
    if (buffers_.count(t.text)) invalid(t.range(), fmt::format("`{}` is a buffer, not a variable", t.text));
    Var& v = vars_[t.text];
    if (!v) v = make_var(base_name(t.text));
    if (std::find(scope_.begin(), scope_.end(), v.get()) != scope_.end())
      invalid(t.range(), fmt::format("variable `{}` is bound again inside the loop that binds it", t.text));
    return v;
  }

  struct Access {
    const BufferNode* buffer;
    size_t count;
    bool flat;
    bool in_statement;  // body, prelude or check (not an extent, a total or a parameter size)
    SourceRange at;
  };
  void record(const Buffer& b, size_t n, bool flat, const Token& at) {
    accesses_.push_back({b.get(), n, flat, in_statement_, at.range()});
  }

  /// Index counts depend on declarations that may come later; flat offsets
  /// on whether the function turns out to have a prelude.
  void check_accesses(const Func& f) {
    for (const Access& a : accesses_) {
      const BufferNode& b = *a.buffer;
      const std::string& name = printed_[a.buffer];
      if (b.dims.empty()) {
        if (a.flat) invalid(a.at, fmt::format("`{}` is a scalar: it is read as `{}[]`, not by a flat offset", name, name));
        if (a.count != 0) invalid(a.at, fmt::format("`{}` is a scalar and takes no index (`{}[]`)", name, name));
        continue;
      }
      if (a.flat) {
        if (!f.storage_lowered)
          invalid(a.at, fmt::format("flat offset into `{}` in a function that is not storage-lowered (it has no "
                                    "`prelude` block)", name));
        continue;
      }
      if (a.count != b.dims.size())
        invalid(a.at, fmt::format("`{}` has {} dimension(s) but {} index(es) here", name, b.dims.size(), a.count));
      if (f.storage_lowered && a.in_statement)
        invalid(a.at, fmt::format("a storage-lowered function (one with a `prelude` block) accesses tensor `{}` by "
                                  "a flat offset, `{}@(...)`", name, name));
    }
    if (f.storage_lowered)
      for (const auto& b : f.buffers)
        if (!b->dims.empty() && !b->total)
          invalid(decl_at_[printed_[b.get()]],
                  fmt::format("tensor `{}` needs a `total` in a storage-lowered function", printed_[b.get()]));
  }

  std::vector<Token> toks_;
  DiagnosticEngine& diags_;
  size_t pos_ = 0;
  int depth_ = 0;
  bool in_statement_ = false;
  // Per function.
  std::map<std::string, Buffer> buffers_;
  std::set<std::string> declared_;
  std::map<std::string, SourceRange> decl_at_;
  std::map<const BufferNode*, std::string> printed_;  // the name as written (`x.1`)
  std::set<std::string> sizes_;
  std::map<std::string, Var> vars_;
  std::vector<const VarNode*> scope_;
  std::vector<Access> accesses_;
};

}  // namespace

std::optional<Module> parse_vloop(const SourceFile& file, DiagnosticEngine& diags) {
  const std::string& text = file.text();
  if (size_t bad = vloop_text::invalid_utf8(text); bad != std::string::npos) {
    int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(bad), '\n'));
    size_t nl = bad == 0 ? std::string::npos : text.rfind('\n', bad - 1);
    int col = 1 + static_cast<int>(bad - (nl == std::string::npos ? 0 : nl + 1));
    diags.report(DiagKind::InvalidEncoding, SourceRange::point(line, col), static_cast<unsigned char>(text[bad]));
    return std::nullopt;
  }
  try {
    std::vector<Token> toks = vloop_text::lex(text, diags);
    Module m = Parser(std::move(toks), diags).module();
    if (m.funcs.empty()) diags.report(DiagKind::EmptyProgram, SourceRange::point(1, 1));
    return m;
  } catch (const Failed&) {
    return std::nullopt;
  }
}

}  // namespace dccc::ir
