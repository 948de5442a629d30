// The checker: ast::Program -> CheckedProgram.
//
// check() resolves names and types, builds and checks every coupling's
// dimension graph, unifies size parameters per function signature, infers
// the range of every index of every assignment (left side binds, reduce
// binds the rest) and proves with Z3 that every tensor access stays in
// bounds, that reduction ranges agree, and that constructions match their
// coupling. Its results (types of every expression, index variables of
// every statement) are what lowering consumes.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "frontend/ast.h"
#include "support/diagnostics.h"
#include "typecheck/types.h"

namespace dccc {

/// One index variable of an assignment with its inferred range [0, extent).
struct IndexInfo {
  IndexVarPtr var;
  SymPtr extent;
  bool reduced = false;
  std::string reduce_op;                 // when reduced
  const ast::Expr* reduce_expr = nullptr;  // the binding reduce
  SourceRange range_from;                // the dimension the range was read from
};

/// What the checker learned about one statement.
struct StmtInfo {
  const ast::Stmt* stmt = nullptr;
  std::vector<IndexInfo> indices;  // left-side indices first, then reductions
  TypePtr value_type;              // the assigned element or let type
};

struct CheckedFunction {
  const ast::FnDecl* decl = nullptr;
  std::vector<std::pair<std::string, TypePtr>> params;
  TypePtr ret;
  std::vector<std::string> size_params;  // signature sizes, in order of first use
  std::vector<Fact> facts;               // every fact known at the end of the body
  std::vector<Fact> entry_facts;         // the `where` facts the entry must check
  std::vector<StmtInfo> stmts;
  std::map<std::string, TypePtr> locals;
  /// Storage the result shares with an argument. Calls are inlined, so a
  /// returned parameter (or a coupling bound to a parameter's fields) is the
  /// caller's own storage: result field ("" for a tensor result) -> (parameter
  /// index, the field of that parameter, "" for the parameter itself).
  std::map<std::string, std::pair<size_t, std::string>> result_aliases;
};

struct CheckedProgram {
  const ast::Program* ast = nullptr;
  std::vector<std::unique_ptr<CouplingDef>> couplings;
  std::map<std::string, TypePtr> type_aliases;
  std::map<std::string, int64_t> int_consts;
  std::map<std::string, double> float_consts;
  std::vector<CheckedFunction> functions;
  /// Element type of every element-wise expression node.
  std::map<const ast::Expr*, TypePtr> expr_types;
  /// Name nodes that denote index variables (left side, reduce-bound).
  std::map<const ast::Expr*, IndexVarPtr> index_refs;
  /// Name/Field nodes that denote values: the array identity ("q.seqlen").
  std::map<const ast::Expr*, std::string> paths;
  /// Calls to `.toy` functions that take or return whole values: each of the
  /// callee's size parameters in the caller's terms. A size only the callee's
  /// body defines (it appears in the return type alone) is a fresh size
  /// `f#N.S`, the name the caller's types use for it.
  std::map<const ast::Expr*, std::map<std::string, SymPtr>> call_sizes;
  /// Calls of generic functions (frontend/generics.h): the instance each
  /// call's argument types selected (`softmax` -> `softmax__bf16`). A call
  /// not listed calls the function it names.
  std::map<const ast::Expr*, std::string> call_targets;
  /// The callee a call expression resolved to (call_targets, else its name).
  const std::string& callee_name(const ast::Expr& call) const {
    auto it = call_targets.find(&call);
    return it != call_targets.end() ? it->second : call.name;
  }
  int solver_calls = 0;
};

struct CheckOptions {
  /// Z3 resource limit per query (deterministic; see Prover).
  unsigned solver_budget = 500000;
  /// Size values fixed from the command line (`-DD=64`), like `const`.
  std::map<std::string, int64_t> defines;
};

/// Check `program`; errors go to `diags`. The result is complete only when
/// diags has no errors.
std::unique_ptr<CheckedProgram> check(const ast::Program& program, DiagnosticEngine& diags,
                                      const CheckOptions& options = {});

/// `--emit=typed`: each function with its sizes and facts, and each
/// statement with its index variables, their ranges and which are reduced.
std::string dump_typed(const CheckedProgram& program);

/// The one-paragraph-per-function summary printed by the main job.
std::string summarize(const CheckedProgram& program);

}  // namespace dccc
