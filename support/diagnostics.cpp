#include "support/diagnostics.h"

#include <algorithm>
#include <ostream>
#include <tuple>

#include "support/diagnostic_format.h"

namespace dccc {
namespace {

struct KindInfo {
  std::string_view name;
  Severity severity;
  std::string_view format;
};

constexpr KindInfo kKinds[] = {
#define DIAG(kind, severity, format) {#kind, Severity::severity, format},
#include "support/diagnostic_kinds.def"
#undef DIAG
};

std::string_view severity_name(Severity s) {
  switch (s) {
    case Severity::Error: return "error";
    case Severity::Warning: return "warning";
    case Severity::Note: return "note";
  }
  return "error";
}

}  // namespace

std::string_view diag_kind_name(DiagKind kind) { return kKinds[static_cast<int>(kind)].name; }
Severity diag_kind_severity(DiagKind kind) { return kKinds[static_cast<int>(kind)].severity; }
std::string_view DiagnosticEngine::format_string(DiagKind kind) {
  return kKinds[static_cast<int>(kind)].format;
}

std::vector<DiagKind> all_diag_kinds() {
  std::vector<DiagKind> out;
  for (size_t i = 0; i < std::size(kKinds); ++i) out.push_back(static_cast<DiagKind>(i));
  return out;
}

Diagnostic& DiagnosticEngine::add(DiagKind kind, SourceRange range, std::string message) {
  Severity sev = diag_kind_severity(kind);
  if (muted_) {
    if (sev == Severity::Error) ++muted_errors_;
    overflow_ = Diagnostic{kind, sev, range, std::move(message), {}, {}};
    return overflow_;
  }
  if (sev == Severity::Error) {
    ++errors_;
    if (errors_ > error_limit_ && diagnostic_style().format == DiagnosticFormat::Text) {
      overflow_ = Diagnostic{kind, sev, range, std::move(message), {}, {}};
      return overflow_;
    }
  }
  diags_.push_back(Diagnostic{kind, sev, range, std::move(message), {}, {}});
  return diags_.back();
}

void DiagnosticEngine::note(SourceRange range, std::string message) {
  if (muted_ || errors_ > error_limit_ || diags_.empty()) return;
  diags_.back().notes.push_back({range, std::move(message)});
}

void DiagnosticEngine::fixit(SourceRange range, std::string replacement) {
  if (muted_ || errors_ > error_limit_ || diags_.empty()) return;  // (muted: its diagnostic was not recorded)
  diags_.back().fixits.push_back({range, std::move(replacement)});
}

std::string DiagnosticEngine::render_location(SourceRange range, std::string_view severity,
                                              std::string_view message,
                                              std::string_view kind,
                                              const std::vector<Diagnostic::FixIt>& fixits) const {
  const SourceFile* file = range.file ? range.file : file_;
  // --color: clang's colours (bold location and message, red error,
  // magenta warning, cyan note, green caret).
  const bool color = diagnostic_style().color;
  auto paint = [color](std::string_view code, std::string_view text) {
    return color ? fmt::format("\x1b[{}m{}\x1b[0m", code, text) : std::string(text);
  };
  std::string where = file ? file->name() : std::string("<input>");
  if (range.valid()) where += fmt::format(":{}:{}", range.line, range.col);
  std::string_view severity_color = severity == "error" ? "1;31" : severity == "warning" ? "1;35" : "1;36";
  std::string out = paint("1", where + ":") + " " + paint(severity_color, std::string(severity) + ":") + " ";
  std::string headline = std::string(message);
  if (!kind.empty()) headline += fmt::format(" [{}]", kind);
  out += paint("1", headline) + '\n';
  if (!file || !range.valid()) return out;
  std::string_view text = file->line(range.line);
  // Keep the echoed line printable: replace control bytes, clip very long lines.
  std::string shown;
  bool has_non_ascii = std::any_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; });
  for (char c : text.substr(0, 400)) {
    unsigned char u = static_cast<unsigned char>(c);
    // Control bytes and (to keep carets aligned) non-ASCII bytes print as '?'.
    shown += c == '\t' ? ' ' : (u < 0x20 || (has_non_ascii && u >= 0x80)) ? '?' : c;
  }
  out += "  " + shown + '\n';
  int col = std::max(1, range.col);
  int width = 1;
  if (range.end_line == range.line && range.end_col > range.col) width = range.end_col - range.col;
  if (col - 1 > static_cast<int>(shown.size())) col = static_cast<int>(shown.size()) + 1;
  width = std::min(width, std::max(1, static_cast<int>(shown.size()) - col + 1));
  out += "  " + std::string(col - 1, ' ') + paint("1;32", "^" + std::string(width - 1, '~')) + '\n';
  // A fix-it on this line: the replacement under the caret, as clang does.
  for (const auto& f : fixits)
    if (f.range.line == range.line && f.range.col >= 1 && f.range.col - 1 <= static_cast<int>(shown.size()))
      out += "  " + std::string(f.range.col - 1, ' ') + paint("32", f.replacement) + '\n';
  return out;
}

std::string DiagnosticEngine::render(const Diagnostic& d) const {
  switch (diagnostic_style().format) {
    case DiagnosticFormat::Json: return diagnostic_json(d, file_) + "\n";
    case DiagnosticFormat::Sarif: sarif_record(d, file_); return "";
    case DiagnosticFormat::Text: break;
  }
  std::string out = render_location(d.range, severity_name(d.severity), d.message,
                                    d.severity == Severity::Note ? "" : diag_kind_name(d.kind), d.fixits);
  for (const auto& n : d.notes) out += render_location(n.range, "note", n.message, "");
  if (d.range.file && d.range.file != file_)
    for (const auto& n : file_notes(d.range.file)) out += render_location(n.range, "note", n.message, "");
  return out;
}

void DiagnosticEngine::print(std::ostream& out) const {
  // Phases report in their own order; readers want source order.
  std::vector<const Diagnostic*> sorted;
  for (const auto& d : diags_) sorted.push_back(&d);
  std::stable_sort(sorted.begin(), sorted.end(), [this](const Diagnostic* a, const Diagnostic* b) {
    // The engine's own file first, then text from elsewhere (the command line).
    auto elsewhere = [this](const Diagnostic* d) { return d->range.file && d->range.file != file_; };
    return std::make_tuple(elsewhere(a), a->range.line, a->range.col) <
           std::make_tuple(elsewhere(b), b->range.line, b->range.col);
  });
  for (const Diagnostic* d : sorted) out << render(*d);
  if (errors_ > error_limit_ && diagnostic_style().format == DiagnosticFormat::Text)
    out << fmt::format("{}: note: {} more error(s) not shown\n",
                       file_ ? file_->name() : "<input>", errors_ - error_limit_);
}

}  // namespace dccc
