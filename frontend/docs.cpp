// emit_docs() (frontend/docs.h): doc comments and declarations -> Markdown.
#include "frontend/docs.h"

#include <cctype>
#include <set>
#include <string_view>

namespace dccc {
namespace {

std::string_view trim_left(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return s;
}

bool is_doc(std::string_view line) { return trim_left(line).substr(0, 3) == "///"; }

/// The text of a `///` line after the slashes and one space.
std::string doc_text(std::string_view line) {
  std::string_view t = trim_left(line).substr(3);
  if (!t.empty() && t.front() == ' ') t.remove_prefix(1);
  return std::string(t);
}

/// The `///` lines right above line `decl` (1-based), joined by newlines.
std::string doc_above(const SourceFile& f, int decl, std::set<int>& used) {
  int first = decl;
  while (first > 1 && is_doc(f.line(first - 1))) --first;
  std::string out;
  for (int l = first; l < decl; ++l) {
    used.insert(l);
    out += doc_text(f.line(l)) + "\n";
  }
  return out;
}

/// The declaration's source text from `r`'s start: a function up to the
/// `{` that opens its body, anything else whole.
std::string decl_text(const SourceFile& f, SourceRange r, bool fn, int body_line, int body_col) {
  std::string out;
  int end_line = fn ? body_line : r.end_line;
  for (int l = r.line; l <= end_line; ++l) {
    std::string_view t = f.line(l);
    if (l == end_line) t = t.substr(0, fn ? static_cast<size_t>(body_col - 1) : static_cast<size_t>(r.end_col - 1));
    if (l == r.line) t = t.substr(static_cast<size_t>(r.col - 1));
    out += std::string(t);
    if (l != end_line) out += "\n";
  }
  while (!out.empty() && (out.back() == ' ' || out.back() == '\n')) out.pop_back();
  return out;
}

}  // namespace

std::string emit_docs(const SourceFile& file, const ast::Program& p, const std::string& shown) {
  std::set<int> used;
  std::string body;
  for (auto [kind, i] : p.order) {
    if (kind == 3) continue;
    const ast::Ident& name = kind == 0 ? p.types[i].name : kind == 1 ? p.consts[i].name : p.fns[i].name;
    SourceRange r = kind == 0 ? p.types[i].range : kind == 1 ? p.consts[i].range : p.fns[i].range;
    if (!name.name.empty() && name.name[0] == '_') {  // private: its doc is not the file's
      doc_above(file, r.line, used);
      continue;
    }
    std::string doc = doc_above(file, r.line, used);
    std::string text;
    if (kind == 2) {
      // The `{` that opens the body: the first one outside parentheses,
      // brackets (an inline coupling type) and a `where { ... }` block.
      int open_line = r.end_line, open_col = r.end_col;
      int paren = 0, brace = 0;
      bool where = false, found = false;
      for (int l = r.line; l <= r.end_line && !found; ++l) {
        std::string_view t = file.line(l);
        for (size_t c = l == r.line ? static_cast<size_t>(r.col - 1) : 0; c < t.size() && !found; ++c) {
          char ch = t[c];
          if (t.substr(c, 2) == "//") break;
          if (ch == '(' || ch == '[') ++paren;
          if (ch == ')' || ch == ']') --paren;
          bool word_start = c == 0 || !(std::isalnum(static_cast<unsigned char>(t[c - 1])) || t[c - 1] == '_');
          if (paren == 0 && brace == 0 && word_start && t.substr(c, 5) == "where") where = true;
          if (ch == '{') {
            if (paren == 0 && brace == 0 && !where) {
              open_line = l;
              open_col = static_cast<int>(c) + 1;
              found = true;
            } else {
              ++brace;
              where = false;
            }
          }
          if (ch == '}') --brace;
        }
      }
      text = decl_text(file, r, true, open_line, open_col);
    } else {
      text = decl_text(file, r, false, 0, 0);
    }
    std::string kind_name = kind == 0 ? "type" : kind == 1 ? "const" : "fn";
    body += "### `" + name.name + "` (" + kind_name + ")\n\n```toy\n" + text + "\n```\n\n";
    body += doc.empty() ? "(no doc comment)\n\n" : doc + "\n";
  }
  // The file's doc: its first run of `///` lines that no declaration took.
  std::string head;
  for (int l = 1; l <= file.line_count(); ++l) {
    if (!is_doc(file.line(l)) || used.count(l)) {
      if (!head.empty()) break;
      continue;
    }
    head += doc_text(file.line(l)) + "\n";
  }
  return "## " + shown + "\n\n" + (head.empty() ? "" : head + "\n") + body;
}

}  // namespace dccc
