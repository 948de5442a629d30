#include "ir/schedule.h"

#include <fmt/format.h>

#include <optional>

namespace dccc::ir {
namespace {

using ast::ExprKind;

/// Directives by name: kind, how many loops, how many factors (-1 loops: two
/// or more; -2: one or more).
struct Spec {
  const char* name;
  DirectiveKind kind;
  int loops;
  int factors;
  const char* usage;
};
constexpr Spec kSpecs[] = {
    {"pad_loop", DirectiveKind::PadLoop, 1, 1, "pad_loop(TENSOR.INDEX, FACTOR)"},
    {"pad_storage", DirectiveKind::PadStorage, 1, 1, "pad_storage(TENSOR.INDEX, FACTOR)"},
    {"split", DirectiveKind::Split, 1, 1, "split(TENSOR.INDEX, FACTOR)"},
    {"reorder", DirectiveKind::Reorder, -1, 0, "reorder(TENSOR.INDEX, TENSOR.INDEX, ...)"},
    {"tile", DirectiveKind::Tile, 2, 2, "tile(TENSOR.OUTER, TENSOR.INNER, FACTOR, FACTOR)"},
    {"fuse", DirectiveKind::Fuse, 2, 0, "fuse(TENSOR.OUTER, TENSOR.INNER)"},
    {"split_op", DirectiveKind::SplitOp, 1, 1, "split_op(TENSOR.INDEX, FACTOR)"},
    {"hfuse", DirectiveKind::HFuse, -1, 0, "hfuse(TENSOR.INDEX, TENSOR.INDEX, ...)"},
    // remap's second argument is its key (a Term) and inline's only one a
    // tensor name, read in place of a factor and a loop.
    {"remap", DirectiveKind::Remap, 1, 1, "remap(TENSOR.INDEX, longest_first) or remap(TENSOR.INDEX, KEY)"},
    {"inline", DirectiveKind::Inline, 1, 0, "inline(TENSOR)"},
    {"materialize", DirectiveKind::Materialize, 1, 0, "materialize(TENSOR)"},
    {"fuse_dims", DirectiveKind::FuseDims, 2, 0, "fuse_dims(TENSOR.OUTER, TENSOR.INNER)"},
    // -2 loops: one or more (the count is checked by apply_schedule).
    {"gpu_blocks", DirectiveKind::GpuBlocks, -2, 0, "gpu_blocks(TENSOR.INDEX[, TENSOR.INDEX])"},
    {"gpu_threads", DirectiveKind::GpuThreads, -2, 0, "gpu_threads(TENSOR.INDEX, ...)"},
};

/// The largest factor accepted: far beyond any useful padding or tile, and
/// small enough that rounding an extent up cannot overflow.
constexpr int64_t kMaxFactor = 1 << 20;

class Reader {
 public:
  Reader(const SourceFile* file, DiagnosticEngine& diags) : file_(file), diags_(diags) {}

  std::optional<Directive> directive(const ast::Directive& d) {
    const Spec* spec = nullptr;
    for (const auto& s : kSpecs)
      if (d.name.name == s.name) spec = &s;
    if (!spec) {
      std::string names;
      for (const auto& s : kSpecs) names += std::string(names.empty() ? "`" : ", `") + s.name + "`";
      error(d.name.range, fmt::format("unknown schedule directive `{}`; expected one of {}", d.name.name, names));
      return std::nullopt;
    }
    Directive out{spec->kind, {}, {}, tag(d.range)};
    size_t want = spec->loops < 0 ? 0 : static_cast<size_t>(spec->loops + spec->factors);
    if ((spec->loops == -1 && d.args.size() < 2) || (spec->loops == -2 && d.args.empty()) ||
        (spec->loops >= 0 && d.args.size() != want)) {
      error(d.range, fmt::format("`{}` takes {}; found {} argument(s)", spec->name, spec->usage, d.args.size()));
      return std::nullopt;
    }
    size_t loops = spec->loops < 0 ? d.args.size() : static_cast<size_t>(spec->loops);
    bool ok = true;
    for (size_t i = 0; i < d.args.size(); ++i) {
      if (spec->kind == DirectiveKind::Inline || spec->kind == DirectiveKind::Materialize) {
        auto r = tensor_ref(*d.args[i]);
        if (r) out.loops.push_back(*r);
        else ok = false;
      } else if (spec->kind == DirectiveKind::Remap && i == 1) {
        auto t = term(*d.args[i]);
        if (!t) ok = false;
        else if (!(t->kind == Term::Name && t->text == "longest_first")) out.key.push_back(std::move(*t));
      } else if (i < loops) {
        auto r = loop_ref(*d.args[i], spec->usage);
        if (r) out.loops.push_back(*r);
        else ok = false;
      } else {
        auto f = factor(*d.args[i]);
        if (f) out.factors.push_back(*f);
        else ok = false;
      }
    }
    if (!ok) return std::nullopt;
    return out;
  }

  SourceRange tag(SourceRange r) const {
    r.file = file_;
    return r;
  }

  void error(SourceRange at, const std::string& msg) { diags_.report(DiagKind::Schedule, tag(at), msg); }

 private:
  /// `y.data.i`: a field chain of at least two names.
  std::optional<LoopRef> loop_ref(const ast::Expr& e, const char* usage) {
    std::vector<std::string> parts;
    const ast::Expr* cur = &e;
    while (cur->kind == ExprKind::Field && !cur->operands.empty()) {
      parts.insert(parts.begin(), cur->name);
      cur = cur->operands[0].get();
    }
    if (cur->kind != ExprKind::Name || parts.empty()) {
      error(e.range, fmt::format("expected a loop named `TENSOR.INDEX` (the index of the assignment to TENSOR), as in "
                                 "{}",
                                 usage));
      return std::nullopt;
    }
    parts.insert(parts.begin(), cur->name);
    LoopRef r;
    r.index = parts.back();
    parts.pop_back();
    for (size_t i = 0; i < parts.size(); ++i) r.tensor += (i ? "." : "") + parts[i];
    r.at = tag(e.range);
    return r;
  }

  /// `t`, `x.data`: a name or a field chain (inline's tensor).
  std::optional<LoopRef> tensor_ref(const ast::Expr& e) {
    std::string name;
    const ast::Expr* cur = &e;
    while (cur->kind == ExprKind::Field && !cur->operands.empty()) {
      name = "." + cur->name + name;
      cur = cur->operands[0].get();
    }
    if (cur->kind != ExprKind::Name) {
      error(e.range, "expected a tensor name, as in inline(TENSOR)");
      return std::nullopt;
    }
    return LoopRef{cur->name + name, "", tag(e.range)};
  }

  /// remap's key: integer literals, names, tensor elements, `+ - *`, negation.
  std::optional<Term> term(const ast::Expr& e) {
    Term t;
    t.at = tag(e.range);
    auto sub = [&](const ast::Expr& x) {
      auto s = term(x);
      if (s) t.args.push_back(std::move(*s));
      return s.has_value();
    };
    switch (e.kind) {
      case ExprKind::Int: {
        if (e.text.size() > 18) break;
        t.kind = Term::Int;
        t.value = std::stoll(e.text);
        return t;
      }
      case ExprKind::Name:
        t.kind = Term::Name;
        t.text = e.name;
        return t;
      case ExprKind::Index: {
        if (e.operands.empty()) break;
        auto base = tensor_ref(*e.operands[0]);
        if (!base) return std::nullopt;
        t.kind = Term::Load;
        t.text = base->tensor;
        for (size_t k = 1; k < e.operands.size(); ++k)
          if (!sub(*e.operands[k])) return std::nullopt;
        return t;
      }
      case ExprKind::Binary:
        if (e.op != "+" && e.op != "-" && e.op != "*") break;
        t.kind = Term::Binary;
        t.text = e.op;
        if (e.operands.size() != 2 || !sub(*e.operands[0]) || !sub(*e.operands[1])) return std::nullopt;
        return t;
      case ExprKind::Unary:
        if (e.op != "-" || e.operands.size() != 1) break;
        t.kind = Term::Neg;
        if (!sub(*e.operands[0])) return std::nullopt;
        return t;
      default: break;
    }
    error(e.range, "a `remap` key is `longest_first` or an integer expression of the loop index, sizes and tensor "
                   "elements with `+`, `-`, `*` (as in `x.seqlen[b]`)");
    return std::nullopt;
  }

  std::optional<int64_t> factor(const ast::Expr& e) {
    if (e.kind == ExprKind::Int) {
      bool small = e.text.size() <= 9;
      int64_t v = small ? std::stoll(e.text) : 0;
      if (small && v >= 1 && v <= kMaxFactor) return v;
      error(e.range, fmt::format("a factor must be a positive integer of at most {}, found `{}`", kMaxFactor, e.text));
      return std::nullopt;
    }
    bool negative = e.kind == ExprKind::Unary && e.op == "-" && !e.operands.empty() &&
                    e.operands[0]->kind == ExprKind::Int;
    error(e.range, negative ? "a factor must be a positive integer, found a negative one"
                            : "a factor must be a positive integer literal");
    return std::nullopt;
  }

  const SourceFile* file_;
  DiagnosticEngine& diags_;
};

}  // namespace

const char* directive_name(DirectiveKind k) {
  for (const auto& s : kSpecs)
    if (s.kind == k) return s.name;
  return "?";
}

std::vector<Schedule> schedules_from_ast(const ast::Program& program, const SourceFile* file,
                                         DiagnosticEngine& diags) {
  Reader reader(file, diags);
  std::vector<Schedule> out;
  for (const auto& sd : program.schedules) {
    Schedule s{sd.func.name, reader.tag(sd.func.range), {}};
    for (const auto& d : sd.directives)
      if (auto x = reader.directive(d)) s.directives.push_back(std::move(*x));
    out.push_back(std::move(s));
  }
  return out;
}

std::string term_text(const Term& t) {
  switch (t.kind) {
    case Term::Int: return std::to_string(t.value);
    case Term::Name: return t.text;
    case Term::Load: {
      std::string out = t.text + "[";
      for (size_t k = 0; k < t.args.size(); ++k) out += (k ? ", " : "") + term_text(t.args[k]);
      return out + "]";
    }
    case Term::Binary: return "(" + term_text(t.args[0]) + " " + t.text + " " + term_text(t.args[1]) + ")";
    case Term::Neg: return "-" + term_text(t.args[0]);
  }
  return "?";
}

std::string directive_text(const Directive& d) {
  std::string out = std::string(directive_name(d.kind)) + "(";
  bool first = true;
  for (const auto& l : d.loops) {
    out += (first ? "" : ", ") + l.tensor + (l.index.empty() ? "" : "." + l.index);
    first = false;
  }
  if (d.kind == DirectiveKind::Remap) out += ", " + (d.key.empty() ? std::string("longest_first") : term_text(d.key[0]));
  for (int64_t f : d.factors) {
    out += (first ? "" : ", ") + std::to_string(f);
    first = false;
  }
  return out + ")";
}

}  // namespace dccc::ir
