#include "tools/repl.h"

#include <dccrt.h>
#include <llvm/LineEditor/LineEditor.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "backend/cuda/cuda_codegen.h"
#include "backend/llvm/jit.h"
#include "backend/llvm/llvm_text.h"
#include "frontend/imports.h"
#include "frontend/parser.h"
#include "ir/lower.h"
#include "ir/pipeline.h"
#include "ir/printer.h"
#include "ir/schedule.h"

namespace dccc::repl {
namespace {

// Names the synthetic program uses; a user's program does not start names
// with `__repl_`.
constexpr const char* kEntry = "__repl_main";
constexpr const char* kValue = "__repl_value";

const char* kHelp = R"(Enter DCC declarations, statements or an expression; input continues over
several lines until every bracket is closed.
  type T = ...;  const N = 3;  fn f(...) { ... }   kept for later inputs
  import "std/nn.toy" as nn;                       kept, like a declaration
  let x: [3]f32 = [1.0, 2.0, 3.0];                 kept (re-run by later inputs)
  x[i] = x[i] * 2.0;                               kept, like `let`
  print(x);                                        runs once
  reduce(+, x[i] * x[i])                           prints `14 : f32`
commands:
  :type EXPR                  the type of EXPR, without running it
  :emit vloop|llvm|cuda [NAME]
                              function NAME (or every function) as
                              `dccc --emit=vloop|llvm|cuda` prints it
  :load FILE.toy              evaluate the declarations of a file
  :reset                      forget every declaration and value
  :help                       this text
  :quit                       leave (end of input does too)
)";

/// Text of `file` from (line, col) to (end_line, end_col); columns count
/// code points, as the parser's do.
std::string slice(const SourceFile& file, SourceRange r) {
  auto offset = [&](int line, int col) {
    std::string_view l = file.line(line);
    size_t start = static_cast<size_t>(l.data() - file.text().data());
    size_t i = 0;
    for (int c = 1; c < col && i < l.size(); ++c) {
      ++i;
      while (i < l.size() && (static_cast<unsigned char>(l[i]) & 0xC0) == 0x80) ++i;
    }
    return start + i;
  };
  size_t a = offset(r.line, r.col);
  size_t b = offset(r.end_line, r.end_col);
  return b > a ? file.text().substr(a, b - a) : std::string();
}

int count_lines(const std::string& text) {
  return static_cast<int>(std::count(text.begin(), text.end(), '\n')) + (text.empty() || text.back() != '\n');
}

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return "";
  size_t b = s.find_last_not_of(" \t\r\n");
  return s.substr(a, b - a + 1);
}

/// A piece of text the session accepted, with where it came from.
struct Entry {
  std::shared_ptr<const SourceFile> file;
  int line = 1;  // where `text` starts in `file`
  int col = 1;
  std::string text;
};

/// What an input is, judged from its tokens at bracket depth 0.
enum class InputKind { Decl, Stmts, Expr };

/// The first word, skipping blanks and comments.
std::string first_word(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    if (std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    else if (s.compare(i, 2, "//") == 0) i = s.find('\n', i) == std::string::npos ? s.size() : s.find('\n', i);
    else if (s.compare(i, 2, "/*") == 0) {
      size_t e = s.find("*/", i + 2);
      i = e == std::string::npos ? s.size() : e + 2;
    } else break;
  }
  size_t j = i;
  while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
  return s.substr(i, j - i);
}

/// Visits the characters of `s` that are code (not comments), with the
/// bracket depth before each.
template <typename F>
void scan_code(const std::string& s, F&& visit) {
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s.compare(i, 2, "//") == 0) {
      size_t e = s.find('\n', i);
      if (e == std::string::npos) break;
      i = e;
      continue;
    }
    if (s.compare(i, 2, "/*") == 0) {
      size_t e = s.find("*/", i + 2);
      if (e == std::string::npos) break;
      i = e + 1;
      continue;
    }
    char c = s[i];
    if (c == ')' || c == ']' || c == '}') --depth;
    visit(i, c, depth);
    if (c == '(' || c == '[' || c == '{') ++depth;
  }
}

InputKind classify(const std::string& input) {
  std::string w = first_word(input);
  if (w == "type" || w == "const" || w == "fn" || w == "import") return InputKind::Decl;
  if (w == "let" || w == "print" || w == "return") return InputKind::Stmts;
  std::string t = trim(input);
  bool stmts = false;
  scan_code(t, [&](size_t i, char c, int depth) {
    if (depth != 0) return;
    // `;` before the end separates statements; a lone `=` assigns.
    if (c == ';' && i + 1 < t.size()) stmts = true;
    if (c == '=') {
      char before = i > 0 ? t[i - 1] : ' ';
      char after = i + 1 < t.size() ? t[i + 1] : ' ';
      if (after != '=' && before != '=' && before != '<' && before != '>' && before != '!') stmts = true;
    }
  });
  return stmts ? InputKind::Stmts : InputKind::Expr;
}

/// A synthetic program under construction, with a map from its lines back
/// to the inputs they came from.
struct Synthetic {
  struct Segment {
    std::shared_ptr<const SourceFile> file;
    int first_line;  // in the synthetic text
    int file_line;   // in `file`
    int lines;
  };
  std::string text;
  int line = 1;  // the line the next text starts on
  std::vector<Segment> segments;

  void raw(const std::string& s) {
    text += s;
    line += static_cast<int>(std::count(s.begin(), s.end(), '\n'));
  }
  /// Appends an entry on lines of its own, indented to its column so that
  /// columns stay the same.
  void entry(const Entry& e) {
    if (!text.empty() && text.back() != '\n') raw("\n");
    int n = count_lines(e.text);
    segments.push_back({e.file, line, e.line, n});
    raw(std::string(static_cast<size_t>(e.col - 1), ' ') + e.text);
    if (e.text.empty() || e.text.back() != '\n') raw("\n");
  }
};

/// A range of the synthetic program as a range of one input.
struct Mapped {
  std::shared_ptr<const SourceFile> file;
  SourceRange range;
};

/// What a session keeps: declarations (placed at the top level) and
/// statements (re-run, in order, at the start of the entry function).
struct SessionState {
  std::vector<Entry> decls;
  std::vector<Entry> stmts;
};

}  // namespace

bool input_complete(const std::string& text) {
  int depth = 0;
  bool open_comment = false;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text.compare(i, 2, "//") == 0) {
      size_t e = text.find('\n', i);
      if (e == std::string::npos) break;
      i = e;
    } else if (text.compare(i, 2, "/*") == 0) {
      size_t e = text.find("*/", i + 2);
      if (e == std::string::npos) {
        open_comment = true;
        break;
      }
      i = e + 1;
    } else if (text[i] == '(' || text[i] == '[' || text[i] == '{') {
      ++depth;
    } else if (text[i] == ')' || text[i] == ']' || text[i] == '}') {
      --depth;
    }
  }
  // More closers than openers cannot be completed by more lines: evaluate
  // now and let the parser say where.
  return !open_comment && depth <= 0;
}

struct Session::Impl {
  Options opts;
  std::ostream& out;
  std::ostream& err;
  SessionState state;
  int inputs = 0;
  bool quit = false;

  Impl(Options o, std::ostream& o_out, std::ostream& o_err) : opts(std::move(o)), out(o_out), err(o_err) {}

  /// The result of running an input through the pipeline.
  struct Compiled {
    Synthetic synth;
    std::unique_ptr<SourceFile> file;
    std::unique_ptr<DiagnosticEngine> diags;
    LoadedFiles loaded;  // imported files, which diagnostics may point into
    std::unique_ptr<ast::Program> program;
    std::unique_ptr<CheckedProgram> checked;
    std::optional<ir::Module> module;
  };

  // ------------------------------------------------------------ diagnostics
  Mapped map(const Synthetic& s, SourceRange r, const std::shared_ptr<const SourceFile>& current) const {
    if (r.valid())
      for (const auto& seg : s.segments)
        if (r.line >= seg.first_line && r.line < seg.first_line + seg.lines) {
          SourceRange m = r;
          m.line = r.line - seg.first_line + seg.file_line;
          m.end_line = r.end_line - seg.first_line + seg.file_line;
          int last = seg.file_line + seg.lines - 1;
          if (m.end_line > last || m.end_line < m.line) {
            m.end_line = m.line;
            m.end_col = static_cast<int>(seg.file->line(m.line).size()) + 1;
          }
          return {seg.file, m};
        }
    // The synthetic wrapper (`let __repl_value =`): point at the input.
    int width = static_cast<int>(current->line(1).size());
    return {current, {1, 1, 1, 1 + std::max(1, width)}};
  }

  void report(const Compiled& c, const std::shared_ptr<const SourceFile>& current) {
    std::vector<const Diagnostic*> sorted;
    for (const auto& d : c.diags->diagnostics()) sorted.push_back(&d);
    std::stable_sort(sorted.begin(), sorted.end(), [](const Diagnostic* a, const Diagnostic* b) {
      return std::make_pair(a->range.line, a->range.col) < std::make_pair(b->range.line, b->range.col);
    });
    out.flush();
    // A range in an imported file stays as it is; others map to the inputs.
    auto place = [&](SourceRange r) -> Mapped {
      if (r.file && r.file != c.file.get()) return {std::shared_ptr<const SourceFile>(std::shared_ptr<void>(), r.file), r};
      return map(c.synth, r, current);
    };
    for (const Diagnostic* d : sorted) {
      Mapped m = place(d->range);
      Diagnostic main = *d;
      main.range = m.range;
      main.notes.clear();
      std::string text = DiagnosticEngine(m.file.get()).render(main);
      std::vector<Diagnostic::Note> notes = d->notes;
      if (d->range.file && d->range.file != c.file.get())
        for (const auto& n : c.diags->file_notes(d->range.file)) notes.push_back(n);
      for (const auto& n : notes) {
        Mapped nm = place(n.range);
        Diagnostic note{DiagKind::NoteDefinedHere, Severity::Note, nm.range, n.message, {}, {}};
        text += DiagnosticEngine(nm.file.get()).render(note);
      }
      err << text;
    }
    err.flush();
  }

  // ------------------------------------------------------------ the pipeline
  /// Builds the program: kept declarations, `extra_decl`, then the entry
  /// function with the kept statements and `body` (a callback adding the
  /// input's own lines).
  template <typename Body>
  Synthetic synthesize(const Entry* extra_decl, Body&& body) const {
    Synthetic s;
    for (const auto& d : state.decls) s.entry(d);
    if (extra_decl) s.entry(*extra_decl);
    s.raw(std::string("fn ") + kEntry + "() {\n");
    for (const auto& st : state.stmts) s.entry(st);
    body(s);
    s.raw("}\n");
    return s;
  }

  /// Parses and checks; false (diagnostics reported) on errors.
  bool front_end(Compiled& c, const std::shared_ptr<const SourceFile>& current) {
    if (std::getenv("DCCC_REPL_DEBUG")) err << "--- synthetic program:\n" << c.synth.text << "---\n";
    c.file = std::make_unique<SourceFile>("<repl>", c.synth.text);
    c.diags = std::make_unique<DiagnosticEngine>(c.file.get());
    // Imports resolve as in a file: next to the `:load`ed file the import
    // came from (the working directory for one typed at the prompt), then
    // the standard library.
    ImportOptions imports;
    imports.root_dir_of = [&c](const ast::ImportDecl& imp) -> std::string {
      for (const auto& seg : c.synth.segments)
        if (imp.range.line >= seg.first_line && imp.range.line < seg.first_line + seg.lines) {
          std::error_code ec;
          std::filesystem::path p(seg.file->name());
          if (std::filesystem::is_regular_file(p, ec)) return p.parent_path().string();
        }
      return ".";
    };
    c.program = parse_with_imports(*c.file, *c.diags, imports, c.loaded);
    if (c.program) c.checked = check(*c.program, *c.diags, opts.check);
    bool ok = !c.diags->has_errors() && c.program && c.checked;
    if (!ok || !c.diags->diagnostics().empty()) report(c, current);  // errors, or warnings only
    return ok;
  }

  /// Lowers and runs the pipeline (ir/pipeline.h) exactly as
  /// `dccc --emit=vloop` does for the CPU target, or for the CUDA target
  /// (`:emit cuda`); false on errors.
  bool back_end(Compiled& c, const std::shared_ptr<const SourceFile>& current, bool cuda = false) {
    c.module = ir::lower(*c.checked, *c.diags);
    if (!c.module) {
      report(c, current);
      return false;
    }
    ir::PipelineOptions po;
    po.target = cuda ? ir::Target::Cuda : ir::Target::Cpu;
    po.schedules = ir::schedules_from_ast(*c.program, c.file.get(), *c.diags);
    po.verify_each = opts.verify_each;
    auto result = ir::run_pipeline(*c.module, po, *c.diags);
    if (result.status == ir::PipelineResult::Status::Internal) {
      out.flush();
      err << "internal error: " << result.internal_error << "\n";
      return false;
    }
    if (!result.ok() || c.diags->has_errors()) {
      report(c, current);
      return false;
    }
    return true;
  }

  const CheckedFunction* entry_function(const CheckedProgram& p) const {
    for (const auto& f : p.functions)
      if (f.decl && f.decl->name.name == kEntry) return &f;
    return nullptr;
  }

  /// JIT-compiles the entry function and runs it, capturing what it prints.
  /// nullopt (the error reported) on failure.
  std::optional<std::string> run(const Compiled& c, const std::string& where) {
    ir::Module m;
    for (const auto& f : c.module->funcs)
      if (f.name == kEntry) m.funcs.push_back(f);
    std::string error;
    auto program = backend::JitProgram::compile(m, error);
    auto kernel = program ? program->kernel(kEntry) : nullptr;
    if (!kernel) {
      out.flush();
      err << "internal error: code generation failed: " << (error.empty() ? "no entry point" : error) << "\n";
      return std::nullopt;
    }
    // The generated code prints through C stdio; send it to a temporary
    // file while it runs.
    std::fflush(stdout);
    FILE* capture = std::tmpfile();
    int saved = dup(fileno(stdout));
    if (!capture || saved < 0 || dup2(fileno(capture), fileno(stdout)) < 0) {
      if (capture) std::fclose(capture);
      if (saved >= 0) close(saved);
      out.flush();
      err << "error: cannot capture the program's output: " << std::strerror(errno) << "\n";
      return std::nullopt;
    }
    dcc_clear_error();
    int32_t status = kernel(nullptr, nullptr);
    std::fflush(stdout);
    dup2(saved, fileno(stdout));
    close(saved);
    std::string printed;
    std::rewind(capture);
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, capture)) > 0) printed.append(buf, n);
    std::fclose(capture);
    if (status != 0) {
      out << printed;
      out.flush();
      err << where << ": run-time error: " << dcc_last_error() << "\n";
      return std::nullopt;
    }
    return printed;
  }

  // ------------------------------------------------------------ inputs
  std::string next_name() { return "<input:" + std::to_string(++inputs) + ">"; }

  static std::string display_type(const TypePtr& t) {
    if (t->kind == TypeKind::IntValue) return "i64";  // an untyped integer is computed in i64
    if (t->kind == TypeKind::FloatValue) return "f32";
    return types::str(t);
  }

  /// The statements the input added to the entry function that the
  /// session keeps (`let` and assignments; not `print`).
  std::vector<Entry> kept_statements(const Compiled& c, const std::shared_ptr<const SourceFile>& current) const {
    std::vector<Entry> kept;
    for (const auto& fn : c.program->fns) {
      if (fn.name.name != kEntry) continue;
      for (const auto& st : fn.body) {
        if (st->kind != ast::StmtKind::Let && st->kind != ast::StmtKind::Assign) continue;
        Mapped m = map(c.synth, st->range, current);
        if (m.file != current) continue;  // a statement kept earlier
        kept.push_back({current, m.range.line, m.range.col, slice(*current, m.range)});
      }
    }
    return kept;
  }

  /// Reports a bracket the input closes without opening it: in the
  /// synthetic program it would close the entry function instead.
  bool brackets_balanced(const std::shared_ptr<const SourceFile>& current) {
    const std::string& text = current->text();
    std::optional<size_t> stray;
    scan_code(text, [&](size_t i, char, int depth) {
      if (depth < 0 && !stray) stray = i;
    });
    if (!stray) return true;
    int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(*stray), '\n'));
    size_t line_start = text.rfind('\n', *stray == 0 ? 0 : *stray - 1);
    line_start = line_start == std::string::npos || *stray == 0 ? 0 : line_start + 1;
    int col = 1;
    for (size_t i = line_start; i < *stray; ++i) col += (static_cast<unsigned char>(text[i]) & 0xC0) != 0x80;
    DiagnosticEngine diags(current.get());
    diags.report(DiagKind::SyntaxError, SourceRange::point(line, col),
                 "unexpected `" + std::string(1, text[*stray]) + "`: it closes nothing this input opened");
    out.flush();
    diags.print(err);
    err.flush();
    return false;
  }

  bool eval_code(const std::string& text, const std::string& name) {
    InputKind kind = classify(text);
    if (first_word(text) == "return") {
      out.flush();
      err << name << ": error: `return` belongs in a function body; type the expression to see its value\n";
      return false;
    }
    std::string t = trim(text);
    // A missing final `;` is supplied (and becomes part of the input's
    // text, which kept statements are cut from); an expression's is dropped.
    std::string code = text;
    if (kind != InputKind::Expr && !t.empty() && t.back() != ';' && t.back() != '}') code = text + ";";
    auto current = std::make_shared<const SourceFile>(name, code);
    if (!brackets_balanced(current)) return false;
    Entry input{current, 1, 1, code};
    if (kind == InputKind::Expr && !t.empty() && t.back() == ';') input.text = t.substr(0, t.size() - 1);

    Compiled c;
    if (kind == InputKind::Decl) {
      c.synth = synthesize(&input, [](Synthetic&) {});
      if (!front_end(c, current) || !back_end(c, current)) return false;
      state.decls.push_back(input);
      return true;
    }
    if (kind == InputKind::Stmts) {
      c.synth = synthesize(nullptr, [&](Synthetic& s) { s.entry(input); });
      if (!front_end(c, current) || !back_end(c, current)) return false;
      auto printed = run(c, name);
      if (!printed) return false;
      out << *printed;
      out.flush();
      for (auto& e : kept_statements(c, current)) state.stmts.push_back(std::move(e));
      return true;
    }
    // An expression: bind it, then print it (field by field for a coupling).
    TypePtr type;
    std::vector<std::string> fields;  // of a coupling value, printed one by one
    for (int attempt = 0; attempt < 2; ++attempt) {
      c = Compiled{};
      c.synth = synthesize(nullptr, [&](Synthetic& s) {
        s.raw(std::string("let ") + kValue + " =\n");
        s.entry(input);
        s.raw(";\n");
        if (fields.empty()) s.raw(std::string("print(") + kValue + ");\n");
        for (const auto& f : fields) s.raw(std::string("print(") + kValue + "." + f + ");\n");
      });
      if (!front_end(c, current)) return false;
      const CheckedFunction* fn = entry_function(*c.checked);
      if (!fn || !fn->locals.count(kValue)) {
        out.flush();
        err << "internal error: the checker kept no type for the value\n";
        return false;
      }
      type = fn->locals.at(kValue);
      // The type (and the coupling it names) lives as long as `c`: keep the
      // field names for the second round.
      if (type->kind != TypeKind::Coupling || !fields.empty()) break;
      for (const auto& f : type->coupling->fields) fields.push_back(f.name);
    }
    if (!back_end(c, current)) return false;
    auto printed = run(c, name);
    if (!printed) return false;
    out << format_value(*printed, type) << " : " << display_type(type) << "\n";
    out.flush();
    return true;
  }

  /// The printed value, without its final newline; a coupling as
  /// `Name {` one field per line `}`.
  static std::string format_value(const std::string& printed, const TypePtr& type) {
    std::string text = printed;
    if (!text.empty() && text.back() == '\n') text.pop_back();
    if (type->kind != TypeKind::Coupling) return text;
    // Each field's print is one line, or `[` ... `]` on lines of their own
    // for a ragged tensor.
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    std::vector<std::string> items;
    for (size_t i = 0; i < lines.size(); ++i) {
      std::string item = lines[i];
      if (lines[i] == "[")
        while (++i < lines.size()) {
          item += "\n  " + lines[i];
          if (lines[i] == "]") break;
        }
      items.push_back(item);
    }
    std::string result = type->coupling->name + " {\n";
    const auto& fields = type->coupling->fields;
    for (size_t f = 0; f < fields.size(); ++f)
      result += "  " + fields[f].name + ": " + (f < items.size() ? items[f] : "?") + (f + 1 < fields.size() ? ",\n" : "\n");
    return result + "}";
  }

  bool eval_type(const std::string& expr) {
    std::string name = next_name();
    auto current = std::make_shared<const SourceFile>(name, expr);
    Compiled c;
    c.synth = synthesize(nullptr, [&](Synthetic& s) {
      s.raw(std::string("let ") + kValue + " =\n");
      std::string t = trim(expr);
      s.entry({current, 1, 1, !t.empty() && t.back() == ';' ? t.substr(0, t.size() - 1) : expr});
      s.raw(";\n");
    });
    if (!front_end(c, current)) return false;
    const CheckedFunction* fn = entry_function(*c.checked);
    if (!fn || !fn->locals.count(kValue)) {
      out.flush();
      err << "internal error: the checker kept no type for the value\n";
      return false;
    }
    out << display_type(fn->locals.at(kValue)) << "\n";
    out.flush();
    return true;
  }

  bool eval_emit(const std::string& args) {
    std::istringstream in(args);
    std::string target, fname, extra;
    in >> target >> fname >> extra;
    auto usage = [&] {
      out.flush();
      err << "error: usage: :emit vloop|llvm|cuda [NAME]\n";
      return false;
    };
    if (target.empty() || !extra.empty()) return usage();
    if (target != "vloop" && target != "llvm" && target != "cuda") return usage();
    auto current = std::make_shared<const SourceFile>("<emit>", args);
    Compiled c;
    c.synth = synthesize(nullptr, [](Synthetic&) {});
    if (!front_end(c, current) || !back_end(c, current, target == "cuda")) return false;
    ir::Module m;
    // No NAME: every function of the session, as `dccc --emit=STAGE` prints
    // a file's.
    for (const auto& f : c.module->funcs)
      if ((fname.empty() || f.name == fname) && f.name != kEntry) m.funcs.push_back(f);
    if (m.funcs.empty()) {
      std::string known;
      for (const auto& f : c.module->funcs)
        if (f.name != kEntry) known += (known.empty() ? "" : ", ") + ("`" + f.name + "`");
      out.flush();
      err << "error: no function" << (fname.empty() ? std::string() : " `" + fname + "`") << " in this session"
          << (known.empty() ? std::string(" (none declared yet)") : "; declared: " + known) << "\n";
      return false;
    }
    if (target == "vloop") {
      out << ir::print(m);
    } else if (target == "cuda") {
      try {
        out << backend::emit_cuda(m);
      } catch (const std::runtime_error& e) {
        out.flush();
        err << "error: " << e.what() << "\n";
        return false;
      }
    } else {
      std::string error;
      auto text = backend::llvm_ir_text(m, error);
      if (!text) {
        out.flush();
        err << "internal error: code generation failed: " << error << "\n";
        return false;
      }
      out << *text;
    }
    out.flush();
    return true;
  }

  bool eval_load(const std::string& path) {
    if (path.empty()) {
      out.flush();
      err << "error: usage: :load FILE.toy\n";
      return false;
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      out.flush();
      err << "error: cannot read `" << path << "`: " << std::strerror(errno) << "\n";
      return false;
    }
    std::stringstream buf;
    buf << in.rdbuf();
    std::string text = buf.str();
    if (first_word(text).empty() && trim(text).empty()) return true;
    if (classify(text) != InputKind::Decl) {
      out.flush();
      err << "error: `" << path << "` must hold declarations (`import`, `type`, `const`, `fn`)\n";
      return false;
    }
    return eval_code(text, path);
  }

  /// True when the input holds no code: only blanks, comments and `;`.
  static bool no_code(const std::string& text) {
    bool code = false;
    scan_code(text, [&](size_t, char c, int) { code |= !std::isspace(static_cast<unsigned char>(c)) && c != ';'; });
    return !code;
  }

  bool eval(const std::string& raw_input) {
    std::string t = trim(raw_input);
    if (t.empty() || (t[0] != ':' && no_code(raw_input))) return true;
    if (t[0] != ':') return eval_code(raw_input, next_name());
    size_t sp = t.find_first_of(" \t\r\n");
    std::string cmd = t.substr(0, sp);
    std::string rest = sp == std::string::npos ? "" : trim(t.substr(sp));
    if (cmd == ":quit" || cmd == ":q") {
      quit = true;
      return true;
    }
    if (cmd == ":help" || cmd == ":h") {
      out << kHelp;
      out.flush();
      return true;
    }
    if (cmd == ":reset") {
      state = SessionState{};
      return true;
    }
    if (cmd == ":type" || cmd == ":t") {
      if (rest.empty()) {
        out.flush();
        err << "error: usage: :type EXPR\n";
        return false;
      }
      return eval_type(rest);
    }
    if (cmd == ":emit") return eval_emit(rest);
    if (cmd == ":load") return eval_load(rest);
    out.flush();
    err << "error: unknown command `" << cmd << "`; `:help` lists the commands\n";
    return false;
  }
};

Session::Session(Options options, std::ostream& out, std::ostream& err)
    : impl_(std::make_unique<Impl>(std::move(options), out, err)) {}
Session::~Session() = default;

bool Session::eval(const std::string& input) {
  try {
    return impl_->eval(input);
  } catch (const std::exception& e) {
    impl_->out.flush();
    impl_->err << "internal error: " << e.what() << "\n";
  }
  return false;
}

bool Session::quit_requested() const { return impl_->quit; }

std::vector<std::string> Session::completions(const std::string& line, size_t pos) const {
  pos = std::min(pos, line.size());
  size_t start = pos;
  auto word_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  while (start > 0 && word_char(line[start - 1])) --start;
  bool command = start > 0 && line[start - 1] == ':' && trim(line.substr(0, start - 1)).empty();
  std::string prefix = line.substr(start, pos - start);
  std::vector<std::string> words;
  if (command) {
    words = {"emit", "help", "load", "quit", "reset", "type"};
  } else if (trim(line.substr(0, start)) == ":emit") {
    words = {"cuda", "llvm", "vloop"};
  } else {
    words = {"let", "fn", "type", "const", "coupling", "where", "layout", "reduce", "print", "select",
             "true", "false", "inf", "nan", "f16", "bf16", "f32", "f64", "i32", "i64", "bool", "exp", "log",
             "sqrt", "rsqrt", "tanh", "erf", "abs", "pow", "max", "min", "len"};
    // The names the kept declarations and statements introduce.
    auto collect = [&](const std::string& text) {
      std::istringstream in(text);
      std::string previous, word;
      for (char c; in.get(c);) {
        if (word_char(c)) {
          word += c;
          continue;
        }
        if (!word.empty()) {
          if (previous == "let" || previous == "fn" || previous == "type" || previous == "const") words.push_back(word);
          previous = word;
          word.clear();
        }
      }
      if (!word.empty() && (previous == "let" || previous == "fn" || previous == "type" || previous == "const"))
        words.push_back(word);
    };
    for (const auto& d : impl_->state.decls) collect(d.text);
    for (const auto& st : impl_->state.stmts) collect(st.text);
  }
  std::vector<std::string> out;
  for (const auto& w : words)
    if (w.size() > prefix.size() && w.compare(0, prefix.size(), prefix) == 0) out.push_back(w);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

namespace {

const char* kUsage = R"(usage: dccc repl [options]

Reads DCC declarations, statements and expressions from stdin and evaluates
each with the LLVM JIT; an expression prints its value and its type
(`14 : f32`). `:help` inside lists the commands; docs/repl.md has the rest.

options:
  -DNAME=VALUE     fix size parameter NAME to an integer, like `const`
  --verify-each    run the IR verifier after every pass
  --help           show this help

exit status: 0 every input was accepted, 1 some input had errors, 2 bad usage
)";

}  // namespace

int main(const std::vector<std::string>& args) {
  Options o;
#ifndef NDEBUG
  o.verify_each = true;
#endif
  for (const auto& a : args) {
    if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      return 0;
    } else if (a == "--verify-each") {
      o.verify_each = true;
    } else if (a.rfind("-D", 0) == 0) {
      std::string def = a.substr(2);
      size_t eq = def.find('=');
      try {
        if (eq == std::string::npos || eq == 0) throw std::invalid_argument("no name");
        size_t used = 0;
        long long v = std::stoll(def.substr(eq + 1), &used);
        if (used != def.size() - eq - 1) throw std::invalid_argument("trailing");
        o.check.defines[def.substr(0, eq)] = v;
      } catch (...) {
        std::cerr << "dccc: error: -D" << def << ": expected -DNAME=INTEGER\n";
        return 2;
      }
    } else {
      std::cerr << "dccc: error: unknown `dccc repl` argument `" << a << "`\nrun `dccc repl --help` for usage\n";
      return 2;
    }
  }
  o.interactive = isatty(fileno(stdin)) != 0;
  Session session(o, std::cout, std::cerr);
  bool all_ok = true;
  std::string pending;
  if (o.interactive) {
    llvm::LineEditor editor("dccc", llvm::LineEditor::getDefaultHistoryPath("dccc"));
    editor.loadHistory();
    // Tab completes commands and names; a completion inserts the rest of the word.
    editor.setListCompleter([&](llvm::StringRef buffer, size_t pos) {
      std::string text = buffer.str();
      size_t start = std::min(pos, text.size());
      while (start > 0 && (std::isalnum(static_cast<unsigned char>(text[start - 1])) || text[start - 1] == '_'))
        --start;
      std::vector<llvm::LineEditor::Completion> out;
      for (const auto& w : session.completions(text, pos)) out.emplace_back(w.substr(pos - start), w);
      return out;
    });
    std::cout << "dccc " << DCCC_VERSION << " repl; `:help` lists the commands, `:quit` leaves\n";
    std::cout.flush();
    while (!session.quit_requested()) {
      editor.setPrompt(pending.empty() ? "dcc> " : "...> ");
      std::optional<std::string> line = editor.readLine();
      if (!line) {
        std::cout << "\n";  // Ctrl-D: leave the shell's prompt on a line of its own
        break;
      }
      pending += *line + "\n";
      if (trim(pending).empty()) {
        pending.clear();
        continue;
      }
      if (trim(pending)[0] != ':' && !input_complete(pending)) continue;
      all_ok &= session.eval(pending);
      pending.clear();
    }
    editor.saveHistory();
  } else {
    for (std::string line; !session.quit_requested() && std::getline(std::cin, line);) {
      pending += line + "\n";
      if (trim(pending).empty()) {
        pending.clear();
        continue;
      }
      if (trim(pending)[0] != ':' && !input_complete(pending)) continue;
      all_ok &= session.eval(pending);
      pending.clear();
    }
  }
  if (!session.quit_requested() && !trim(pending).empty()) all_ok &= session.eval(pending);
  std::cout.flush();
  return all_ok ? 0 : 1;
}

}  // namespace dccc::repl
