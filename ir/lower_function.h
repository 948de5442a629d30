// The lowering of one checked function (ir/lower.h), shared by the files
// that implement it: ir/lower.cpp (the function's parameters, entry checks,
// buffers, symbolic extents and the inlining of calls), ir/lower_stmt.cpp
// (statements) and ir/lower_expr.cpp (expressions). Private to them.
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ir/lower.h"

namespace dccc::ir::lowering {

using ast::ExprKind;

/// Thrown to abandon one function after an [Unsupported] diagnostic.
struct Abandon {};

/// A whole value: what an inlined call gives its caller, or an argument.
struct Value {
  enum Kind { None, Coupling, Tensor, Scalar } kind = None;
  std::map<std::string, Buffer> fields;  // Coupling: field name -> buffer
  Buffer buffer;                          // Tensor, Scalar
};

/// Lowers one function. A call to another `.toy` function is inlined by a
/// child lowerer of the callee that writes into the caller's Func: the
/// arguments' buffers stand for the callee's parameters (scalars are copied
/// into fresh scalars), the callee's size parameters are the caller's
/// expressions the checker unified them with, its `where` constraints become
/// run-time assertions, its locals fresh buffers, and its `return` the value
/// of the call.
class FuncLowerer {
 public:
  FuncLowerer(const CheckedProgram& cp, const CheckedFunction& cf, DiagnosticEngine& diags,
              std::set<std::pair<int, int>>& reported);

  Func run();

 private:
  /// A child that inlines `callee` into `parent`'s function.
  FuncLowerer(FuncLowerer& parent, const CheckedFunction& callee);

  /// Inlines the call `e` (whose arguments the caller has turned into
  /// `args`); the statements go to `out`, the result is returned.
  Value inline_call(const ast::Expr& e, const CheckedFunction& callee, const std::vector<Value>& args,
                    std::vector<Stmt>& out);

  /// A `where` constraint of an inlined callee as statements.
  Stmt assertion(const EntryCheck& c);

  /// The whole value an argument expression denotes (a name, a field, or a
  /// call, inlined here); scalars are evaluated into a fresh scalar.
  Value value_of(const ast::Expr& a, const TypePtr& formal, const std::string& name, const StmtInfo& info,
                 std::vector<Stmt>& out);

  /// Inlines a call to a `.toy` function.
  Value call_value(const ast::Expr& e, const CheckedFunction& callee, const StmtInfo& info, std::vector<Stmt>& out);

  Buffer scalar_buffer(const std::string& name, Scalar t);

  /// The fields of a coupling value named `base` of type `t`.
  std::map<std::string, Buffer> coupling_fields(const TypePtr& t, const std::string& base, SourceRange at);

  [[noreturn]] void unsupported(SourceRange at, const std::string& what);

  Buffer new_buffer(const std::string& name, const std::string& identity, const TypePtr& t, BufferKind kind,
                    SourceRange at);

  Var var_for(const IndexVarPtr& iv);

  Buffer array(const std::string& identity, SourceRange at);

  /// The type of coupling field `f` of a value whose arrays are `inst`.
  static TypePtr field_type(const TypePtr& ct, const CouplingField& f, const std::string& base);
  static std::string identity_of(const TypePtr& ct, const std::string& field, const std::string& base);

  /// Size fields a tensor argument carries: the size parameters its extents name.
  void tensor_sizes(const TypePtr& t, Param& p, SourceRange at);

  void coupling_sizes(const TypePtr& t, Param& p, SourceRange at);

  void lower_param(const std::string& name, const TypePtr& t);

  /// `xs: list[[?, H, D]f32]`: size `xs.count` (`len(xs)`), an input length
  /// array `xs.len` [xs.count]i32 (the `?` extents, `len(xs[b])`) and the
  /// elements as one ragged input [b: xs.count][xs.len[b], H, D]f32.
  void lower_list_param(const std::string& name, const TypePtr& elem, Param& p, SourceRange at);

  static bool mentions_var(const Expr& e);

  /// An expression whose value cannot change while the function runs: sizes,
  /// constants, loop variables and reads of the function's own inputs.
  static bool invariant(const Expr& e);

  EntryCheck lower_check(const Fact& fact);

  Expr sym_bool(const SymPtr& s, SourceRange at);

  Expr sym_expr(const SymPtr& s, SourceRange at);

  Stmt lower_stmt(const ast::Stmt& s);

  Stmt lower_let(const ast::Stmt& s, const StmtInfo& info);

  /// Allocates the fresh fields of construction `v` of type `t` whose
  /// arrays are named `base.FIELD` unless bound, and records the value as
  /// `name`. Fields given as literals (`seqlen: [3, 1]`, `data: [[1.0, 2.0,
  /// 3.0], [4.0]]`) are stored (to `stores`) in dependency order, lengths
  /// before what they shape.
  std::map<std::string, Buffer> construct(const TypePtr& t, const std::string& name, const std::string& base,
                                          const ast::Expr& v, std::vector<Stmt>& stores);

  Stmt lower_literal(const Buffer& b, const ast::Expr& lit);

  Stmt lower_assign(const ast::Stmt& s, const StmtInfo& info);

  /// `x.data` for the left side's base (a name or a field chain).
  static std::string dotted(const ast::Expr& e);

  /// The left side indexes with distinct plain variables (`a[b, i]`, not
  /// `a[0]` or `a[i + 1]`), so the statement defines every element.
  bool plain_indices(const ast::Stmt& s);

  Stmt lower_return(const ast::Stmt& s, const StmtInfo& info);

  Stmt lower_print(const ast::Stmt& s, const StmtInfo& info);

  /// The concrete scalar type an expression computes in, given the type
  /// its context wants for untyped literals and sizes.
  Scalar type_in(const ast::Expr& e, Scalar want);

  /// The type two operands share.
  Scalar operand_type(const ast::Expr& a, const ast::Expr& b, Scalar want);

  Expr lower_expr(const ast::Expr& e, Scalar want, const StmtInfo& info, std::vector<Stmt>& pre);

  /// lower_expr with the result in type `t`: an untyped integer expression
  /// (`1 + 0`) lowers in i64 whatever the context, and the two sides of a
  /// `select`, `max`, `min` or `pow` must have one type.
  Expr lower_as(const ast::Expr& e, Scalar t, const StmtInfo& info, std::vector<Stmt>& pre);

  Expr lower_call(const ast::Expr& e, Scalar t, const StmtInfo& info, std::vector<Stmt>& pre);

  Expr lower_reduce(const ast::Expr& e, Scalar t, const StmtInfo& info, std::vector<Stmt>& pre);

  const CheckedProgram& cp_;
  const CheckedFunction& cf_;
  DiagnosticEngine& diags_;
  std::map<const ast::Stmt*, const StmtInfo*> infos_;
  std::map<std::string, Buffer> arrays_;
  std::map<std::string, Buffer> scalars_;
  std::map<const IndexVar*, Var> vars_;
  int acc_counter_ = 0;
  std::vector<Stmt>* check_pre_ = nullptr;  // while lowering a `where` check
  Func own_;
  Func* f_;                                // own_, or the function a call is inlined into
  std::set<std::pair<int, int>>* reported_;  // where [Unsupported] was reported
  FuncLowerer* parent_ = nullptr;          // the caller, while inlining
  int depth_ = 0;                          // calls being inlined around this one
  std::string prefix_;                     // buffer names of an inlined callee: `f.`
  std::map<std::string, const CheckedFunction*> by_name_;
  std::map<std::string, Expr> size_subst_;  // a callee's size parameters, in the caller's terms
  std::map<std::string, Expr> size_alias_;  // `f#N.S`: sizes defined by an inlined callee's body
  std::map<std::string, std::map<std::string, Buffer>> couplings_;  // coupling values by name: field -> buffer
  Value result_;                           // what the inlined callee returned
  std::map<std::string, std::string> list_sizes_;  // `len(xs)` of a list parameter -> size `xs.count`
  std::map<std::string, Expr> size_values_;  // integer lets whose value reads only sizes and inputs
  /// Int arrays defined element-wise from inputs: the left side's variables and the value.
  std::map<const BufferNode*, std::pair<std::vector<Var>, Expr>> defs_;
};

}  // namespace dccc::ir::lowering
