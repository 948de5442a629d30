// `dccc --emit=docs FILE`: a Markdown reference of a .toy file's public
// declarations, from its `///` doc comments (docs/stdlib.md is the
// standard library's, tests/docs/stdlib_docs.sh checks it is up to date).
//
// The file's own doc is its leading run of `///` lines that no
// declaration follows directly; a declaration's doc is the run of `///`
// lines right above it. Each public type alias, constant and function
// (names that start with `_` are private and left out) is listed in source
// order with its declaration as written (a function up to its body's `{`)
// and its doc; one without a doc comment says so.
#pragma once

#include <string>

#include "frontend/ast.h"
#include "support/source.h"

namespace dccc {

/// The Markdown reference of `program`, parsed from `file` alone (imports
/// not merged), under the heading `shown` (e.g. `std/nn.toy`).
std::string emit_docs(const SourceFile& file, const ast::Program& program, const std::string& shown);

}  // namespace dccc
