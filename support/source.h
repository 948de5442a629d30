// Source files and locations shared by every phase.
//
// A SourceFile owns the text of one input (a file or a REPL entry); a
// SourceRange names a half-open span of it by 1-based line and column, so
// diagnostics can print the line and a caret without re-reading anything.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace dccc {

/// One input text with its display name and a line index.
class SourceFile {
 public:
  SourceFile(std::string name, std::string text);

  const std::string& name() const { return name_; }
  const std::string& text() const { return text_; }
  /// Number of lines (a trailing newline does not start a new line).
  int line_count() const { return static_cast<int>(line_starts_.size()); }
  /// Text of 1-based line `line`, without its newline; empty when out of range.
  std::string_view line(int line) const;

 private:
  std::string name_;
  std::string text_;
  std::vector<size_t> line_starts_;
};

class SourceFile;

/// A 1-based [begin, end) span; line == 0 means "no location". `file` is
/// null for the file a DiagnosticEngine was made for; text from elsewhere
/// (a `--schedule` given on the command line) names its own file.
struct SourceRange {
  int line = 0;
  int col = 0;
  int end_line = 0;
  int end_col = 0;
  const SourceFile* file = nullptr;

  bool valid() const { return line > 0; }
  static SourceRange point(int line, int col) { return {line, col, line, col + 1}; }
  /// The smallest range covering both.
  static SourceRange cover(const SourceRange& a, const SourceRange& b);
};

}  // namespace dccc
