// Parsing: source text -> ast::Program.
//
// parse() validates the encoding, bounds nesting depth before ANTLR sees the
// text (so hostile input cannot exhaust the stack), runs the ANTLR4 parser
// with dccc's own error listeners (several syntax errors per file where the
// grammar can recover), and converts the parse tree to the AST. ANTLR types
// never leave this library.
#pragma once

#include <memory>

#include "frontend/ast.h"
#include "support/diagnostics.h"

namespace dccc {

/// Limits on input shape; past them the parser reports a diagnostic instead of recursing.
struct ParseLimits {
  int max_nesting = 256;
  int max_statement_tokens = 20000;
};

/// Parse `file`. Returns nullptr when any error was reported (the
/// diagnostics say why); an empty program otherwise has no declarations.
std::unique_ptr<ast::Program> parse(const SourceFile& file, DiagnosticEngine& diags,
                                    const ParseLimits& limits = {});

}  // namespace dccc
