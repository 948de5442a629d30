// Lowering: CheckedProgram -> ir::Module (the unscheduled vloop IR).
//
// Each assignment becomes a loop nest: left-side indices outermost (ragged
// ones as vloops whose extent reads a length buffer), each `reduce` an
// accumulator with its own nest inside, in the order the checker bound
// them. `let` and construction allocate buffers; a coupling contributes one
// buffer per field, fields bound to another value share its buffer. Calls
// to other `.toy` functions are inlined (the callee's `where` becomes
// run-time `assert`s); a `list` parameter becomes a size `xs.count`, a
// length array `xs.len` and one packed ragged input.
#pragma once

#include <optional>

#include "ir/ir.h"
#include "support/diagnostics.h"
#include "typecheck/checker.h"

namespace dccc::ir {

/// Lower every function of a checked program but the instances of generic
/// functions of imported files (named `stem.f__T`; they are inlined into
/// their callers only). Constructs the code generator does not handle yet
/// are reported as [Unsupported] errors.
std::optional<Module> lower(const CheckedProgram& program, DiagnosticEngine& diags);

}  // namespace dccc::ir
