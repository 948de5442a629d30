#include "support/source.h"

#include <algorithm>

namespace dccc {

SourceFile::SourceFile(std::string name, std::string text)
    : name_(std::move(name)), text_(std::move(text)) {
  line_starts_.push_back(0);
  for (size_t i = 0; i < text_.size(); ++i) {
    if (text_[i] == '\n' && i + 1 < text_.size()) line_starts_.push_back(i + 1);
  }
}

std::string_view SourceFile::line(int line) const {
  if (line < 1 || line > line_count()) return {};
  size_t begin = line_starts_[line - 1];
  size_t end = text_.find('\n', begin);
  if (end == std::string::npos) end = text_.size();
  if (end > begin && text_[end - 1] == '\r') --end;
  return std::string_view(text_).substr(begin, end - begin);
}

SourceRange SourceRange::cover(const SourceRange& a, const SourceRange& b) {
  if (!a.valid()) return b;
  if (!b.valid()) return a;
  SourceRange r = a;
  if (b.line < r.line || (b.line == r.line && b.col < r.col)) {
    r.line = b.line;
    r.col = b.col;
  }
  if (b.end_line > r.end_line || (b.end_line == r.end_line && b.end_col > r.end_col)) {
    r.end_line = b.end_line;
    r.end_col = b.end_col;
  }
  return r;
}

}  // namespace dccc
