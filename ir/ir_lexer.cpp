#include "ir/ir_lexer.h"

#include <fmt/format.h>

#include <cctype>
#include <cstdint>
#include <string_view>

namespace dccc::ir::vloop_text {

/// Offset of the first byte that is not part of valid UTF-8, or npos (the
/// parser checks the whole text before lexing).
size_t invalid_utf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > s.size()) return i;
    uint32_t cp = n == 1 ? c : n == 2 ? c & 0x1F : n == 3 ? c & 0x0F : c & 0x07;
    for (size_t k = 1; k < n; ++k) {
      unsigned char d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (d & 0x3F);
    }
    bool overlong = (n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000);
    if (overlong || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += n;
  }
  return std::string::npos;
}

namespace {

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool digit(char c) { return c >= '0' && c <= '9'; }


class Lexer {
 public:
  Lexer(const std::string& s, DiagnosticEngine& diags) : s_(s), diags_(diags) {}

  std::vector<Token> run() {
    std::vector<Token> out;
    for (;;) {
      skip_space();
      Token t;
      t.begin = pos_;
      t.line = line_;
      t.col = col_;
      if (pos_ >= s_.size()) {
        t.kind = Tok::End;
        finish(t);
        out.push_back(std::move(t));
        return out;
      }
      char c = s_[pos_];
      if (ident_start(c)) {
        t.kind = Tok::Ident;
        while (pos_ < s_.size() && ident_char(s_[pos_])) advance();
        // Dotted names: `q.seqlen`, and the printer's suffixes `i.1`.
        while (peek(0) == '.' && ident_char(peek(1))) {
          advance();
          while (pos_ < s_.size() && ident_char(s_[pos_])) advance();
        }
        t.text = s_.substr(t.begin, pos_ - t.begin);
      } else if (digit(c)) {
        t.kind = Tok::Number;
        while (digit(peek(0))) advance();
        if (peek(0) == '.' && digit(peek(1))) {
          advance();
          while (digit(peek(0))) advance();
        }
        if ((peek(0) == 'e' || peek(0) == 'E') &&
            (digit(peek(1)) || ((peek(1) == '+' || peek(1) == '-') && digit(peek(2))))) {
          advance();
          if (!digit(peek(0))) advance();
          while (digit(peek(0))) advance();
        }
        t.text = s_.substr(t.begin, pos_ - t.begin);
        size_t suffix = pos_;
        while (ident_char(peek(0))) advance();
        t.suffix = s_.substr(suffix, pos_ - suffix);
      } else if (c == '"' || c == '`') {
        t.kind = c == '"' ? Tok::String : Tok::Text;
        t.text = quoted(c, t);
      } else {
        t.kind = Tok::Punct;
        static const char* two[] = {"..", "->", "==", "!=", "<=", "&&", "||"};
        for (const char* p : two)
          if (c == p[0] && peek(1) == p[1]) t.text = p;
        if (t.text.empty() && std::string_view("()[]{},;:=@+-*/%<!").find(c) != std::string_view::npos) t.text = c;
        if (t.text.empty()) {
          finish(t);
          t.end_col = t.col + 1;
          unsigned char u = static_cast<unsigned char>(c);
          error(t, u >= 0x20 && u < 0x7F ? fmt::format("unexpected character `{}`", c)
                                         : fmt::format("unexpected character with code 0x{:02x}", u));
        }
        for (size_t k = 0; k < t.text.size(); ++k) advance();
      }
      finish(t);
      out.push_back(std::move(t));
    }
  }

 private:
  char peek(size_t k) const { return pos_ + k < s_.size() ? s_[pos_ + k] : '\0'; }

  /// Columns count characters, not bytes: a UTF-8 continuation byte does not
  /// start a column.
  void advance() {
    char c = s_[pos_++];
    if (c == '\n') {
      ++line_;
      col_ = 1;
    } else if (pos_ >= s_.size() || (static_cast<unsigned char>(s_[pos_]) & 0xC0) != 0x80) {
      ++col_;
    }
  }

  void finish(Token& t) const {
    t.end = pos_;
    t.end_line = line_;
    t.end_col = col_;
  }

  [[noreturn]] void error(const Token& at, const std::string& msg) {
    diags_.report(DiagKind::IRSyntax, at.range(), msg);
    throw Failed{};
  }

  void skip_space() {
    for (;;) {
      char c = peek(0);
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
        advance();
      } else if (c == '/' && peek(1) == '/') {
        while (pos_ < s_.size() && s_[pos_] != '\n') advance();
      } else {
        return;
      }
    }
  }

  /// The contents of a "string" or `text`, with escapes \n \t \\ \" \` \xHH.
  std::string quoted(char close, Token& t) {
    std::string out;
    advance();
    for (;;) {
      if (pos_ >= s_.size() || s_[pos_] == '\n') {
        finish(t);
        error(t, close == '"' ? "unterminated string: a `\"` is missing before the end of the line"
                              : "unterminated check text: a backtick is missing before the end of the line");
      }
      char c = s_[pos_];
      if (c == close) {
        advance();
        return out;
      }
      if (c != '\\') {
        out += c;
        advance();
        continue;
      }
      Token esc;
      esc.line = line_;
      esc.col = col_;
      advance();
      char e = peek(0);
      auto hex = [](char h) {
        return digit(h) ? h - '0' : (h >= 'a' && h <= 'f') ? h - 'a' + 10 : (h >= 'A' && h <= 'F') ? h - 'A' + 10 : -1;
      };
      if (e == 'n') out += '\n';
      else if (e == 't') out += '\t';
      else if (e == '\\' || e == '"' || e == '`') out += e;
      else if (e == 'x' && hex(peek(1)) >= 0 && hex(peek(2)) >= 0) {
        out += static_cast<char>(hex(peek(1)) * 16 + hex(peek(2)));
        advance();
        advance();
      } else {
        esc.end_line = line_;
        esc.end_col = col_ + 1;
        error(esc, "unknown escape sequence; expected one of \\n \\t \\\\ \\\" \\` \\xHH");
      }
      advance();
    }
  }

  const std::string& s_;
  DiagnosticEngine& diags_;
  size_t pos_ = 0;
  int line_ = 1, col_ = 1;
};

}  // namespace

std::vector<Token> lex(const std::string& s, DiagnosticEngine& diags) { return Lexer(s, diags).run(); }

}  // namespace dccc::ir::vloop_text
