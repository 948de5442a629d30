// The dccc abstract syntax tree: what the parser hands the checker.
//
// Every node carries the SourceRange it was parsed from. Nodes own their
// children through unique_ptr; the tree is built once by parse() and only
// read afterwards (the checker keeps its facts in side tables). Expression
// kinds are listed once in DCCC_EXPR_KINDS.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "support/source.h"

namespace dccc::ast {

#define DCCC_EXPR_KINDS(X) \
  X(Int)                   \
  X(Float)                 \
  X(Bool)                  \
  X(Name)                  \
  X(Field)                 \
  X(Index)                 \
  X(Unary)                 \
  X(Binary)                \
  X(Reduce)                \
  X(Construct)             \
  X(Call)                  \
  X(TensorLit)

enum class ExprKind {
#define X(k) k,
  DCCC_EXPR_KINDS(X)
#undef X
};
const char* expr_kind_name(ExprKind k);

struct Expr;
struct TypeExpr;
using ExprPtr = std::unique_ptr<Expr>;
using TypeExprPtr = std::unique_ptr<TypeExpr>;

/// An identifier with where it was written.
struct Ident {
  std::string name;
  SourceRange range;
};

/// One field of a construction `T { field: Type }` or `T { field: value }`:
/// exactly one of `type` and `value` is set.
struct FieldInit {
  Ident name;
  TypeExprPtr type;
  ExprPtr value;
};

/// An expression. Which members are meaningful depends on `kind`:
///  Int: int_text (digits, checked for range by the checker); Float: float_value, text
///  Bool: bool_value; Name: name; Field: operands[0] . name
///  Index: operands[0] [ operands[1..] ]  (one bracket group per node)
///  Unary: op operands[0]; Binary: operands[0] op operands[1]
///  Reduce: op (with op_range) over operands[0]
///  Construct: name { fields }; Call: name ( operands ) (a Construct's or
///    Call's name, and a Named/Tensor TypeExpr's name, may be qualified,
///    `nn.rmsnorm`, until frontend/imports.h resolves it)
///  TensorLit: [ operands ]
struct Expr {
  ExprKind kind;
  SourceRange range;
  std::string name;  // Name, Field (field name), Construct (type), Call (callee)
  SourceRange name_range;
  std::string op;  // Unary, Binary, Reduce
  SourceRange op_range;
  std::string text;  // literal spelling (Int, Float)
  double float_value = 0;
  bool bool_value = false;
  std::vector<ExprPtr> operands;
  std::vector<FieldInit> fields;  // Construct
  /// Construct: the type arguments of a generic alias, `Rows<T> { ... }`
  /// (frontend/generics.h replaces them by the instance's name).
  std::vector<TypeExprPtr> type_args;

  Expr(ExprKind k, SourceRange r) : kind(k), range(r) {}
};

/// One dimension of a tensor type: an optional index name and an extent
/// (nullptr extent means `?`, a length known only at run time).
struct Dim {
  std::optional<Ident> index;
  ExprPtr extent;
  SourceRange range;
};

/// One bracket group `[...]` of a tensor type.
struct DimGroup {
  std::vector<Dim> dims;
  SourceRange range;
};

struct CouplingField {
  Ident name;
  TypeExprPtr type;
};

enum class TypeExprKind { Named, Tensor, Coupling, List, AutoCoupling };

/// A written type. Named: name; Tensor: groups + element (a scalar or alias
/// name); Coupling: fields, where, layout; List: element.
struct TypeExpr {
  TypeExprKind kind;
  SourceRange range;
  Ident name;     // Named; Tensor: element type name
  std::vector<DimGroup> groups;
  std::vector<CouplingField> fields;
  std::vector<ExprPtr> where;
  std::vector<Ident> layout;
  bool has_layout = false;
  TypeExprPtr element;  // List
  /// Named: type arguments of a generic alias, `Rows<f32>`, until
  /// frontend/generics.h names the instance (`Rows__f32`).
  std::vector<TypeExprPtr> type_args;

  TypeExpr(TypeExprKind k, SourceRange r) : kind(k), range(r) {}
};

enum class StmtKind { Let, Assign, Return, Expr };

/// A statement. Let: name, type?, value?; Assign: target = value;
/// Return: value?; Expr: value.
struct Stmt {
  StmtKind kind;
  SourceRange range;
  Ident name;
  TypeExprPtr type;
  ExprPtr target;
  ExprPtr value;

  Stmt(StmtKind k, SourceRange r) : kind(k), range(r) {}
};
using StmtPtr = std::unique_ptr<Stmt>;

struct Param {
  Ident name;
  TypeExprPtr type;
};

/// An element-type parameter `T: float` (frontend/generics.h): the
/// constraint as written (`float`, `int`, `any`, or scalar names joined by
/// `|`; empty: `any`).
struct TypeParam {
  Ident name;
  std::vector<Ident> constraint;
  SourceRange range;
};

/// Where an instance of a generic declaration came from: the generic's
/// name and the scalar types its parameters were bound to, in order.
struct InstanceOf {
  std::string generic;
  std::vector<std::string> args;
};

struct FnDecl {
  Ident name;
  std::vector<TypeParam> type_params;  // non-empty: generic, never checked itself
  std::optional<InstanceOf> instance_of;  // set on an instance frontend/generics.h made
  std::vector<Param> params;
  TypeExprPtr ret;  // nullptr: returns nothing
  std::vector<ExprPtr> where;
  std::vector<StmtPtr> body;
  SourceRange range;
};

struct TypeAlias {
  Ident name;
  std::vector<TypeParam> type_params;
  std::optional<InstanceOf> instance_of;
  TypeExprPtr type;
  SourceRange range;
};

struct ConstDecl {
  Ident name;
  TypeExprPtr type;  // optional
  ExprPtr value;
  SourceRange range;
};

/// A whole parsed file, declarations in source order.
/// `name(args);` in a `schedule` block; the arguments are expressions
/// (loop names like `y.data.i` are field chains), interpreted by ir/schedule.h.
struct Directive {
  Ident name;
  std::vector<ExprPtr> args;
  SourceRange range;
};

/// `schedule f { ... }`: directives for function `f`, apart from its body.
struct ScheduleDecl {
  Ident func;
  std::vector<Directive> directives;
  SourceRange range;
};

/// `import "PATH";` or `import "PATH" as alias;` (frontend/imports.h).
struct ImportDecl {
  std::string path;  // the text between the quotes
  SourceRange path_range;
  std::optional<Ident> alias;
  SourceRange range;
};

struct Program {
  /// A parsed file's imports; frontend/imports.h merges the imported files'
  /// declarations in and leaves this empty in the program it returns.
  std::vector<ImportDecl> imports;
  std::vector<TypeAlias> types;
  std::vector<ConstDecl> consts;
  std::vector<FnDecl> fns;
  std::vector<ScheduleDecl> schedules;
  /// Generic functions and type aliases, moved out of `fns` and `types` by
  /// frontend/generics.h, which adds their instances to `fns` and `types`.
  std::vector<FnDecl> generic_fns;
  std::vector<TypeAlias> generic_types;
  /// Source order of all declarations: (0 type | 1 const | 2 fn | 3 schedule, index).
  std::vector<std::pair<int, size_t>> order;
};

/// `x.f[a][b, c]` split into its base (`x.f`) and its bracket groups
/// (`[a]`, `[b, c]`), outermost group first.
struct IndexChain {
  const Expr* base;
  std::vector<std::vector<const Expr*>> groups;
};
IndexChain index_chain(const Expr& e);

/// Print the tree in an indented, stable text form (`--emit=ast`).
std::string dump(const Program& program);
std::string dump(const Expr& expr);
std::string dump(const TypeExpr& type);

/// Deep copies (frontend/generics.h makes instances from them).
ExprPtr clone(const Expr& e);
TypeExprPtr clone(const TypeExpr& t);
StmtPtr clone(const Stmt& s);
FnDecl clone(const FnDecl& f);

}  // namespace dccc::ast
