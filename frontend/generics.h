// Element-type generics: a merged ast::Program with generic declarations ->
// the same program with their instances (monomorphisation).
//
// `fn softmax<T: float>(x: Rows<T>) Rows<T>` and
// `type Rows<T: float> = coupling { data: [b: B][seqlen[b], D]T, ... }`
// take element-type parameters. A constraint is `float` (f16 bf16 f32 f64),
// `int` (i32 i64), `any` (every scalar type, the default when none is
// written), or scalar types and these classes joined by `|`
// (`T: f16 | bf16 | f32`, `T: int | float`), each type at most once.
//
// instantiate_generics() moves every generic declaration to
// Program::generic_fns / generic_types and adds:
//  - for a generic function, one instance per type its constraint allows
//    (per tuple of types when it has several parameters), named
//    instance_name(): `softmax__f32`, `attention.mha__bf16`, `f__f32_i32`.
//    Every instance is checked, so an error in a generic body is found
//    whatever the callers; the checker reports it once, for the first type
//    that fails, and resolves each call to the instance its arguments'
//    element types select (typecheck/check_calls.cpp);
//  - for a generic alias, one instance per distinct use with scalar
//    arguments (`Rows<f32>` -> alias `Rows__f32`), every use renamed;
//  - a `schedule` of a generic function, copied to each instance.
// Inside an instance the parameter is replaced by its type wherever it
// names a type: an element type (`[N]T`), a scalar type (`x: T`), a cast
// (`T(x)`) and a type argument (`Rows<T>`).
//
// Errors: a bad parameter list ([GenericParam]), a generic alias used
// without arguments, with the wrong number, or a non-generic name given
// arguments ([GenericArguments]), an argument outside the constraint
// ([GenericConstraint]).
#pragma once

#include <string>
#include <vector>

#include "frontend/ast.h"
#include "support/diagnostics.h"

namespace dccc {

/// The name of the instance of `generic` for `args` (scalar type names):
/// `generic + "__" + args joined by "_"`. Stable: a library's C symbols and
/// struct names are built from it (docs/abi.md).
std::string instance_name(const std::string& generic, const std::vector<std::string>& args);

/// The scalar types a parameter's constraint allows: a class in the order
/// f16 bf16 f32 f64 i32 i64 bool, a `|` list in its written order; empty
/// when the constraint names something else or a type twice.
std::vector<std::string> constraint_types(const ast::TypeParam& p);

/// The constraint as written: `float`, `f16 | bf16`, `any`.
std::string constraint_text(const ast::TypeParam& p);

/// Instantiates every generic declaration of `program` (see above).
/// Returns false when it reported an error.
bool instantiate_generics(ast::Program& program, DiagnosticEngine& diags);

}  // namespace dccc
