// Parser of the vloop IR's text form: reads back what `dccc --emit=vloop`
// (ir/printer.h) prints, before or after storage lowering, so that a
// reproducer can be written in the IR and print(parse(print(M))) ==
// print(M).
//
// Variables and buffers are objects: the printer gives every distinct
// object of a function a distinct name (`i`, `i.1`), so the parser makes
// one Var per variable name and one Buffer per buffer name of a function,
// and a name that appears twice denotes the same object (a loop variable
// that is also a buffer's dimension variable stays one Var). Objects get
// the names they had before printing (`i` for `i.1`). A variable is
// in scope only inside what binds it: its `for` loop, the later dimensions
// of its buffer, or its entry check. A function is storage-lowered exactly when it has a
// `prelude` block (possibly empty).
//
// The result passes the IR verifier (ir/verifier.h). Text that is not in
// the printed form gets an [IRSyntax] error; text in that form that does
// not describe valid IR (an unknown buffer, a variable used outside its
// loop, a buffer declared twice, operands of different types, a wrong
// number of indices) gets an [IRInvalid] error. Each at its line and
// column; the parser stops at the first error. docs/vloop.md describes the
// text form.
#pragma once

#include <optional>

#include "ir/ir.h"
#include "support/diagnostics.h"
#include "support/source.h"

namespace dccc::ir {

/// Parses a module in the text form of print(const Module&). Returns
/// nullopt after reporting an error to `diags`.
std::optional<Module> parse_vloop(const SourceFile& file, DiagnosticEngine& diags);

}  // namespace dccc::ir
