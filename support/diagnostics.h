// The diagnostics engine: every error, warning and note dccc reports.
//
// Kinds are registered in diagnostic_kinds.def with their severity and fmt
// format string. Output has the form of a C compiler's:
//   file.toy:LINE:COL: error: message [Kind]
//     <source line>
//     ^~~~
// followed by `note:` lines that point at the other side of a conflict.
#pragma once

#include <fmt/format.h>

#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "support/source.h"

namespace dccc {

enum class DiagKind {
#define DIAG(kind, severity, format) kind,
#include "support/diagnostic_kinds.def"
#undef DIAG
};

enum class Severity { Error, Warning, Note };

/// Name of a kind as printed in brackets, e.g. "UnknownField".
std::string_view diag_kind_name(DiagKind kind);
Severity diag_kind_severity(DiagKind kind);
/// All registered kinds (for tests that check coverage).
std::vector<DiagKind> all_diag_kinds();

struct Diagnostic {
  DiagKind kind;
  Severity severity;
  SourceRange range;
  std::string message;
  struct Note {
    SourceRange range;
    std::string message;
  };
  std::vector<Note> notes;
  /// A certain fix: replace `range` with `replacement` (a misspelled field
  /// for the one it most likely meant). Text output shows the replacement
  /// under the caret; JSON and SARIF carry it for editors to apply.
  struct FixIt {
    SourceRange range;
    std::string replacement;
  };
  std::vector<FixIt> fixits;
};

/// Collects diagnostics for one source file and renders them.
class DiagnosticEngine {
 public:
  explicit DiagnosticEngine(const SourceFile* file) : file_(file) {}

  template <typename... Args>
  Diagnostic& report(DiagKind kind, SourceRange range, Args&&... args) {
    return add(kind, range, format_message(kind, std::forward<Args>(args)...));
  }
  /// Attach a note to the most recent diagnostic.
  void note(SourceRange range, std::string message);
  /// Attach a fix-it to the most recent diagnostic (see Diagnostic::FixIt).
  void fixit(SourceRange range, std::string replacement);
  /// Attach a note to every diagnostic recorded from index `first` of
  /// diagnostics() on.
  void note_from(size_t first, SourceRange range, const std::string& message) {
    for (size_t i = first; i < diags_.size(); ++i) diags_[i].notes.push_back({range, message});
  }

  const std::vector<Diagnostic>& diagnostics() const { return diags_; }
  /// Every error reported, muted ones included.
  int error_count() const { return errors_ + muted_errors_; }
  /// The errors that print() shows (and "N error(s) generated" counts).
  int shown_error_count() const { return errors_; }
  bool has_errors() const { return error_count() > 0; }
  /// While muted, errors are counted (has_errors()) but not recorded, and
  /// notes are dropped: the checker mutes the instances of a generic
  /// function after one instance has shown its errors (typecheck/).
  void set_muted(bool muted) { muted_ = muted; }
  bool muted() const { return muted_; }
  /// Stop recording after this many errors (further ones are counted only).
  void set_error_limit(int limit) { error_limit_ = limit; }

  /// Notes printed after every diagnostic located in `file` (an imported
  /// module: "imported from FILE:LINE", one per import on the chain).
  void set_file_notes(const SourceFile* file, std::vector<Diagnostic::Note> notes) {
    file_notes_.emplace_back(file, std::move(notes));
  }
  /// The notes set_file_notes registered for `file` (none: empty).
  std::vector<Diagnostic::Note> file_notes(const SourceFile* file) const {
    for (const auto& [f, notes] : file_notes_)
      if (f == file) return notes;
    return {};
  }

  /// Render all diagnostics in order.
  void print(std::ostream& out) const;
  std::string render(const Diagnostic& d) const;
  const SourceFile* file() const { return file_; }

 private:
  template <typename... Args>
  static std::string format_message(DiagKind kind, Args&&... args) {
    return fmt::vformat(format_string(kind), fmt::make_format_args(args...));
  }
  static std::string_view format_string(DiagKind kind);
  Diagnostic& add(DiagKind kind, SourceRange range, std::string message);
  std::string render_location(SourceRange range, std::string_view severity,
                              std::string_view message, std::string_view kind,
                              const std::vector<Diagnostic::FixIt>& fixits = {}) const;

  const SourceFile* file_;
  std::vector<std::pair<const SourceFile*, std::vector<Diagnostic::Note>>> file_notes_;
  std::vector<Diagnostic> diags_;
  Diagnostic overflow_{};  // sink once the error limit is reached
  int errors_ = 0;
  int muted_errors_ = 0;
  bool muted_ = false;
  int error_limit_ = 100;
};

}  // namespace dccc
