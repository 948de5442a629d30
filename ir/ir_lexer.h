// Lexer of the vloop IR's text form (ir/ir_parser.h): splits the text that
// ir/printer.h prints into identifiers (dotted: `q.seqlen`, `i.1`), numbers
// with their type suffix (`5i32`), quoted strings and `backquoted` text, and
// punctuation, each with its line and column (columns count characters,
// not bytes). Also the UTF-8 check the parser makes before lexing.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "support/diagnostics.h"

namespace dccc::ir::vloop_text {

enum class Tok { Ident, Number, String, Text, Punct, End };

struct Token {
  Tok kind = Tok::End;
  std::string text;    // Ident, Punct: as written; Number: the digits; String, Text: unescaped
  std::string suffix;  // Number: the type suffix (`i32` of `5i32`), or empty
  size_t begin = 0, end = 0;  // byte offsets
  int line = 1, col = 1, end_line = 1, end_col = 1;
  SourceRange range() const { return {line, col, end_line, end_col}; }
};

/// Thrown once the first error has been reported.
struct Failed {};

/// Offset of the first byte that is not part of valid UTF-8, or npos.
size_t invalid_utf8(const std::string& s);

/// The tokens of `s`, the last one Tok::End. A character that starts no
/// token, or a string that does not end, is an [IRSyntax] error reported to
/// `diags`, then Failed is thrown.
std::vector<Token> lex(const std::string& s, DiagnosticEngine& diags);

}  // namespace dccc::ir::vloop_text
