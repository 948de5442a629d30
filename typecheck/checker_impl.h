// Private to typecheck/: the Checker class that check() (checker.h) runs,
// and the small structs its passes share. Not installed; include it only
// from typecheck/check*.cpp.
//
// The checker's methods are defined by concern, one file each:
//   checker.cpp            check(), the run order, globals (names, consts, literals)
//   check_types.cpp        type resolution, extents, coupling definitions
//   check_where.cpp        `where` constraints and path values
//   check_functions.cpp    signatures, function bodies, let/return/expression statements
//   check_elementwise.cpp  element types, index inference and bounds, reductions
//   check_assign.cpp       assignment statements
//   check_calls.cpp        conformance, calls, construction and literals
//   check_generics.cpp     instances of generic functions: muted re-checks, call resolution

#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "frontend/ast.h"
#include "support/diagnostics.h"
#include "typecheck/checker.h"
#include "typecheck/prover.h"
#include "typecheck/types.h"

namespace dccc {
namespace checker_internal {

using ast::Expr;
using ast::ExprKind;

inline bool is_math1(const std::string& n) {
  return n == "exp" || n == "log" || n == "sqrt" || n == "rsqrt" || n == "tanh" || n == "erf" || n == "abs";
}

inline std::string code(const std::string& s) { return "`" + s + "`"; }

/// A named value visible in a function body.
struct Value {
  TypePtr type;
  SourceRange def;
  bool is_size = false;    // a size parameter or an integer `let`: usable in extents
  std::string path;        // array identity of this value ("q", "seqlen")
};

/// How bare names in an extent are resolved.
enum class ExtentMode { Coupling, Signature, Body };

struct CouplingScope {
  const ast::TypeExpr* ast = nullptr;
  std::map<std::string, const ast::TypeExpr*> field_asts;
  std::map<std::string, TypePtr> resolved;  // fields resolved so far
  std::vector<std::string>* size_params = nullptr;
  std::string current_field;  // the field whose type is being resolved
};

/// One occurrence of a free (reduction) index name on a right side.
struct FreeUse {
  const Expr* name_expr;
  std::vector<const Expr*> reduces;  // enclosing reduces, outermost first
  bool direct;                       // used as a whole index, so it gives a range
};

/// A resolved tensor access `path[g0][g1]...`.
struct Access {
  const Expr* expr = nullptr;  // the outermost Index node
  const Expr* base = nullptr;
  TypePtr type;                // the indexed value's type
  std::vector<std::vector<const Expr*>> groups;
};

/// A fix-it on `d` (reported at `range` for the unknown field `name`): the
/// field of `def` that `name` most likely misspells, when one is certain
/// enough (support/spelling.h); "; did you mean `x`?" ends the message.
void suggest_field(Diagnostic& d, SourceRange range, const std::string& name, const CouplingDef& def);
/// The same for a name among `candidates`.
void suggest_name(Diagnostic& d, SourceRange range, const std::string& name, const std::vector<std::string>& candidates);

class Checker {
 public:
  Checker(const ast::Program& p, DiagnosticEngine& d, const CheckOptions& o, CheckedProgram& out)
      : prog_(p), diags_(d), opts_(o), prover_(o.solver_budget), out_(out) {}

  void run();

 private:
  // ---------------------------------------------------------------- globals (checker.cpp)
  void declare_globals();
  static bool is_builtin(const std::string& n);
  void check_const(const ast::ConstDecl& c);
  std::optional<int64_t> int_literal(const Expr& e, bool negative = false);
  std::optional<double> float_literal(const Expr& e);

  // --------------------------------------------------------- types and couplings (check_types.cpp)
  TypePtr resolve_alias(const std::string& name);

  struct ExtentEnv {
    ExtentMode mode;
    CouplingScope* coupling;
    const std::map<std::string, Value>* scope;
    std::vector<std::string>* size_params;
    std::vector<std::pair<std::string, std::pair<IndexVarPtr, SymPtr>>> named;  // outer named dims
    std::vector<Fact>* facts = nullptr;
    std::set<std::string>* reads = nullptr;  // arrays read by extents (for freezing)
    const std::set<std::string>* pending_sizes = nullptr;  // output sizes not yet defined
  };

  TypePtr resolve_type(const ast::TypeExpr& t, ExtentEnv& env);
  TypePtr instantiate_sizes(const TypePtr& t, ExtentEnv& env);
  void bind_size_name(const std::string& name, ExtentEnv& env, sym::Subst& s);
  TypePtr instantiate_coupling(const TypePtr& t, ExtentEnv& env);
  TypePtr resolve_tensor(const ast::TypeExpr& t, ExtentEnv& env);
  std::vector<Fact> extent_facts(const ExtentEnv& env);
  SymPtr resolve_extent(const Expr& e, ExtentEnv& env);
  SymPtr extent_name(const Expr& e, ExtentEnv& env);
  SymPtr extent_read(const Expr& e, ExtentEnv& env);
  bool check_grouping(const Expr& at, const std::vector<std::vector<const Expr*>>& groups, const TypePtr& type,
                      const std::string& shown);
  static std::string group_shape(const std::vector<std::vector<const Expr*>>& groups);
  ProofResult prove(const std::vector<Fact>& facts, const SymPtr& goal, SourceRange at);
  bool prove_in_bounds(const std::vector<Fact>& facts, const SymPtr& idx, const SymPtr& extent, SourceRange at,
                       const std::map<const IndexVar*, std::pair<SymPtr, SourceRange>>& ranges);
  TypePtr resolve_coupling(const ast::TypeExpr& t, const std::string& name);

  // ---------------------------------------------------------------- where (check_where.cpp)
  std::optional<Fact> where_fact(const Expr& w, const std::map<std::string, Value>& scope,
                                 const std::vector<Fact>& facts);
  static bool is_bool_sym(const SymPtr& s);

  struct WhereCtx {
    const std::map<std::string, Value>& scope;
    std::map<std::string, std::pair<IndexVarPtr, SymPtr>> quantified;
    std::vector<std::string> order;
    bool allow_free;
    struct Check {
      SymPtr index, extent;
      SourceRange at;
    };
    std::vector<Check> checks;  // indices to prove in bounds once ranges are known
  };

  SymPtr where_operand(const Expr& operand, WhereCtx& ctx, bool want_truth, const std::string& op);
  SymPtr where_sym(const Expr& e, WhereCtx& ctx);
  std::optional<std::pair<std::string, TypePtr>> path_value(const Expr& e, const std::map<std::string, Value>& scope,
                                                            bool report);
  static std::string field_identity(const std::string& base, const TypePtr& t, const std::string& field);
  TypePtr field_type(const std::string& base, const TypePtr& t, const CouplingField& f);

  // --------------------------------------------------- functions, statements (check_functions.cpp)
  std::vector<size_t> callees_first() const;
  void check_signature(const ast::FnDecl& f);

  struct FnCtx {
    CheckedFunction* fn;
    std::map<std::string, Value> scope;
    std::vector<Fact> facts;
    std::set<std::string> frozen;     // arrays that already determine extents
    std::set<std::string> assigned;   // int arrays given definitional facts
    std::set<std::string> output_sizes;  // sizes named only by the return type
    std::set<std::string> let_sizes;     // integer `let`s: sizes that may be negative
    bool returned = false;
  };

  void check_body(CheckedFunction& cf);
  void collect_sizes(const TypePtr& t, std::set<std::string>& out);
  static std::set<std::string> length_fields(const CouplingDef& def);
  void add_value_facts(const std::string& path, const TypePtr& t, FnCtx& ctx);

  /// Per-statement index state.
  struct RhsCtx {
    std::map<std::string, IndexVarPtr> lhs;  // left-side indices by name
    std::map<const IndexVar*, std::pair<SymPtr, SourceRange>> ranges;
    std::map<const Expr*, IndexVarPtr> free_var;  // Name node -> its reduction var
    std::map<const Expr*, std::vector<IndexVarPtr>> binds;  // reduce -> vars it binds
    std::vector<Access> accesses;
    std::vector<IndexInfo> infos;
    std::set<std::string> reported;  // names already diagnosed
  };

  void check_stmt(const ast::Stmt& s, FnCtx& ctx);
  bool name_taken(const std::string& n, const FnCtx& ctx);
  void check_let(const ast::Stmt& s, FnCtx& ctx);
  TypePtr value_type(const Expr& e, FnCtx& ctx, const std::string& binding, StmtInfo* info,
                     std::optional<std::string>* source_path = nullptr);
  void check_return(const ast::Stmt& s, FnCtx& ctx);
  static void note_result_aliases(const TypePtr& vt, const std::optional<std::string>& source, CheckedFunction& fn);
  void check_expr_stmt(const ast::Stmt& s, FnCtx& ctx);

  // ---------------------------------------- index inference, element types (check_elementwise.cpp)
  TypePtr element_check(const Expr& e, FnCtx& ctx, RhsCtx& rc, StmtInfo* info);
  std::vector<Fact> stmt_facts(const FnCtx& ctx, const RhsCtx& rc);
  static IndexVarPtr lookup_var(const RhsCtx& rc, const IndexVar* v);
  bool resolvable(const std::string& n, const FnCtx& ctx, const RhsCtx& rc);
  void collect(const Expr& e, FnCtx& ctx, RhsCtx& rc, std::vector<const Expr*>& stack, std::vector<FreeUse>& uses,
               bool in_len);
  bool bind_free(const std::vector<FreeUse>& uses, FnCtx& ctx, RhsCtx& rc);

  /// The index expressions of an access with the extent each must respect,
  /// outer named dims substituted by the actual indices.
  struct IndexSlot {
    const Expr* index;
    SymPtr extent;  // null: unknown (`?`) — checked through list lengths
    SymPtr sym;     // the index as a Sym (null if not an integer expression)
  };

  std::optional<std::vector<IndexSlot>> access_slots(const Access& a, FnCtx& ctx, RhsCtx& rc, bool report);
  static std::string expr_path_text(const Expr& e);
  bool infer_ranges(FnCtx& ctx, RhsCtx& rc);
  bool check_access_bounds(const Access& a, const std::vector<Fact>& facts, FnCtx& ctx, RhsCtx& rc);
  SymPtr to_sym(const Expr& e, const RhsCtx& rc, FnCtx& ctx);
  TypePtr unify(const TypePtr& a, const TypePtr& b, SourceRange at, const std::string& what);
  TypePtr adapt(const TypePtr& concrete, const TypePtr& untyped, SourceRange at, const std::string& what);
  bool is_numeric(const TypePtr& t);
  bool is_boolean(const TypePtr& t) { return t->kind == TypeKind::Scalar && t->scalar == Scalar::Bool; }
  TypePtr elem_type(const Expr& e, FnCtx& ctx, RhsCtx& rc);
  TypePtr elem_type_of(const Expr& e, FnCtx& ctx, RhsCtx& rc);
  TypePtr call_type(const Expr& e, FnCtx& ctx, RhsCtx& rc);

  // ---------------------------------------------------------------- assignment (check_assign.cpp)
  void check_assign(const ast::Stmt& s, FnCtx& ctx);
  static void drop_facts_mentioning(const std::string& array, FnCtx& ctx);
  static std::string root_name(const Expr& e);
  bool check_literal_fits(const Expr& e, Scalar t);
  void assign_compatible(const TypePtr& target, const TypePtr& value, SourceRange at, const std::string& what,
                         const Expr* value_expr = nullptr);

  // -------------------------------------------- conformance, calls, construction (check_calls.cpp)
  struct Bindings {
    std::set<std::string> bindable;  // callee size names that calls may bind
    std::map<std::string, std::pair<SymPtr, SourceRange>> sizes;
  };

  bool unify_type(const TypePtr& formal, const TypePtr& actual, Bindings& b, SourceRange at, DiagKind kind, FnCtx& ctx,
                  sym::Subst vars = {});
  bool same_coupling(const CouplingDef* a, const CouplingDef* b);
  bool unify_sym(const SymPtr& formal, const SymPtr& actual, Bindings& b, SourceRange at, DiagKind kind, FnCtx& ctx,
                 const TypePtr& actual_type = nullptr);
  bool conforms(const TypePtr& formal, const TypePtr& actual, SourceRange at, DiagKind kind, FnCtx& ctx);
  TypePtr check_call(const Expr& e, FnCtx& ctx, std::optional<std::string>* source_path = nullptr);
  TypePtr check_construct(const Expr& e, FnCtx& ctx, const std::string& binding);
  TypePtr literal_as(const Expr& lit, const TypePtr& t, Scalar elem, const std::string& what);
  bool literal_names_known(const Expr& x, FnCtx& ctx);
  static bool is_ragged_field(const CouplingField& f);
  static std::optional<int64_t> int_literal_value(const Expr& e);
  TypePtr ragged_literal_type(const CouplingField& f, const Expr& lit, const TypePtr& want,
                              const std::map<std::string, const ast::FieldInit*>& given, Bindings& b, FnCtx& ctx);
  TypePtr literal_type(const Expr& e, FnCtx& ctx);

  std::set<std::string> uninitialized_;
  std::map<const Expr*, TypePtr> literal_elem_;

  const ast::Program& prog_;
  DiagnosticEngine& diags_;
  CheckOptions opts_;
  Prover prover_;
  CheckedProgram& out_;
  std::map<std::string, const ast::TypeAlias*> alias_decls_;
  std::map<std::string, const ast::FnDecl*> fn_decls_;
  std::map<std::string, size_t> signatures_;
  // --------------------------------------------------- generics (check_generics.cpp)
  /// Runs `check` on an instance of a generic function: once one instance
  /// of a generic has reported errors, the others are checked muted (an
  /// error in a generic body is shown once, for the first type it fails).
  void checking(const ast::FnDecl& f, const std::function<void()>& check);
  /// The instance of generic `g` that a call with these argument types
  /// selects, or nullopt after a [GenericInference] / [GenericConstraint]
  /// error.
  std::optional<std::string> pick_instance(const Expr& call, const ast::FnDecl& g, const std::vector<TypePtr>& actual);
  /// The function whose parameter kinds (scalar or whole value) a call of
  /// `name` has: the function, or a generic's first instance; null if none.
  const CheckedFunction* shape_of(const std::string& name);
  std::map<std::string, const ast::FnDecl*> generic_fns_;
  std::map<std::string, std::vector<size_t>> generic_instances_;  // generic -> indices into out_.functions
  std::set<std::string> failed_generics_;
  std::set<std::string> resolving_;
  int fresh_counter_ = 0;
  int extent_depth_ = 0;
  const std::set<std::string>* frozen_ = nullptr;
  const std::set<std::string>* let_sizes_ = nullptr;  // of the function being checked
};

}  // namespace checker_internal
}  // namespace dccc
