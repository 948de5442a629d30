// Semantic types of dccc: scalars, dense and ragged tensors, couplings, lists.
//
// A tensor type is a list of bracket groups; each dimension has an extent
// (a Sym over size parameters, outer named indices and length arrays) and
// optionally a named index (an IndexVar) that later extents may mention.
// A coupling type is a definition (fields, where facts, layout) whose field
// extents refer to sibling fields by bare name ("seqlen"); a value of it
// renames those to the value's path ("q.seqlen") and binds its size
// parameters.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "frontend/ast.h"
#include "typecheck/sym.h"

namespace dccc {

enum class Scalar { F16, BF16, F32, F64, I32, I64, Bool };
const char* scalar_name(Scalar s);
std::optional<Scalar> scalar_from_name(const std::string& name);
bool is_float(Scalar s);
bool is_int(Scalar s);

struct Type;
using TypePtr = std::shared_ptr<const Type>;
struct CouplingDef;

struct DimT {
  IndexVarPtr index;  // the named index (`b` in `[b: B]`), or null
  SymPtr extent;      // null: `?`, a length known only at run time
  SourceRange range;
};
struct GroupT {
  std::vector<DimT> dims;
};

enum class TypeKind {
  Scalar,     // scalar
  IntValue,   // an untyped integer: literal, size parameter, index, len()
  FloatValue, // an untyped float literal or math of untyped values
  Tensor,     // groups + scalar element
  Coupling,   // def + instance substitution
  List,       // element
  Void,
  Error       // an error was already reported; suppress follow-ups
};

struct Type {
  TypeKind kind = TypeKind::Error;
  Scalar scalar = Scalar::F32;  // Scalar, and the element of Tensor
  std::vector<GroupT> groups;   // Tensor
  const CouplingDef* coupling = nullptr;
  sym::Subst instance;  // Coupling: sizes and array names of this value
  TypePtr element;      // List

  size_t rank() const;
};

namespace types {
TypePtr scalar(Scalar s);
TypePtr int_value();
TypePtr float_value();
TypePtr void_type();
TypePtr error();
/// Human-readable form: `[b: B][q.seqlen[b], H, D]f32`, `PackedQueries`.
std::string str(const TypePtr& t);
/// Apply a substitution to every extent of a tensor type (named indices kept).
TypePtr substitute(const TypePtr& t, const sym::Subst& s);
}  // namespace types

struct CouplingField {
  std::string name;
  TypePtr type;  // extents refer to siblings by bare name
  SourceRange range;
};

/// A checked `coupling { ... }` definition.
struct CouplingDef {
  std::string name;  // the alias name, or "coupling" when anonymous
  std::vector<CouplingField> fields;
  std::vector<std::string> size_params;  // in order of first use
  std::vector<Fact> where;               // over bare field names and size params
  std::vector<std::string> layout;
  /// Fields in dependency order (a field after every field its extents read).
  std::vector<size_t> order;
  SourceRange range;

  const CouplingField* field(const std::string& n) const;
};

}  // namespace dccc
