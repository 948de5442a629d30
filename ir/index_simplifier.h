// The simplifier of ir/simplify_indices.h, shared by the files that
// implement it (private to them): ir/simplify_indices.cpp (the entry
// points, the rewriting of index sums and bound checks, and the hoisting of
// loads), ir/simplify_facts.cpp (the recognition of the arrays whose fill
// loops give axioms: prefix sums, fusion maps, lengths) and
// ir/simplify_prover.cpp (the queries to Z3 under those axioms).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ir/simplify_indices.h"

namespace z3 {
class solver;
}  // namespace z3

namespace dccc::ir::simplify {

// Helpers on IR (ir/simplify_indices.cpp).
std::string show(const Expr& e);
std::string key(const Expr& e);
Expr add(Expr a, Expr b);
Expr mul(Expr a, Expr b);
Expr land(Expr a, Expr b);
bool is_imm(const Expr& e, int64_t v);
const Expr* single_index(const Expr& e);
Expr range_fact(const Var& v, const Expr& extent);
void flatten_items(const Stmt& s, std::vector<Stmt>& out);
Stmt single(const Stmt& s);
std::set<const BufferNode*> loaded_buffers(const Expr& e);
std::set<const BufferNode*> stored_buffers(const Stmt& s);

// ------------------------------------------------------------ facts

/// A recognised prefix-sum array: P[0] = 0; for y in 0..extent: P[y+1] = P[y] + slice.
struct Prefix {
  Buffer buf;
  Expr extent;
  Var y;
  Expr slice;
  size_t ready = 0;  // first top-level body item at which its axioms hold
  bool nonneg = false;
};

/// A recognised vloop fusion: maps fo, fi filled from the prefix oif.
struct Fusion {
  const Prefix* oif = nullptr;
  Buffer fo, fi;
  size_t ready = 0;
};

/// P[y] = c * Q[y] for y in [0, extent].
struct Ratio {
  const Prefix* p = nullptr;
  const Prefix* q = nullptr;
  Expr c;
};

class Simplifier {
 public:
  Simplifier(Func& f, const SimplifyOptions& o);
  ~Simplifier();

  SimplifyReport run();

  /// For prove_in_func: the axioms available after the whole body.
  bool prove_at_end(const std::vector<std::pair<Var, Expr>>& loops, const Expr& goal);

 private:
  void recognise();

  /// Settled without Z3 (most queries of unscheduled programs): sums and
  /// products of constants >= 0, sizes, loop variables and lengths.
  bool plainly_nonneg(const Expr& e) const;

  /// `v < bound` settled without Z3: v is a loop variable of the context
  /// whose extent is `bound` or `bound - 1`.
  bool plainly_below(const Expr& v, const Expr& bound) const;

  const Prefix* prefix_of(const BufferNode* b) const;
  const Fusion* fusion_of_fo(const BufferNode* b) const;
  bool aux_like(const BufferNode* b) const;

  struct Z3;

  struct Tr;

  /// Axioms about the arrays in `bufs` (closed over what they mention).
  void axioms(z3::solver& sol, std::set<const BufferNode*> bufs);

  /// The value of `e` with every loop variable at `corner` (0: the first
  /// iteration, 1: the last, for variables with a constant extent); none
  /// where it reads memory or a size.
  std::optional<int64_t> at_corner(const Expr& e, int corner) const;

  /// Whether `c` is false at a corner of the loop ranges: then it cannot
  /// always hold and Z3 need not be asked (a filter only: skipping a proof
  /// is always safe).
  bool false_at_a_corner(const Expr& c) const;

  /// Is `goal` true here (context_, the arrays ready at pos_)?
  bool prove(const Expr& goal);

  bool prove_equal(const Expr& a, const Expr& b) { return prove(build::binary(BinOp::EQ, a, b)); }

  struct Term {
    bool neg;
    Expr e;
  };

  static void terms_of(const Expr& e, bool neg, std::vector<Term>& out);

  /// Rebuilds the sum `e` with its leaves replaced in order by `leaves`.
  static Expr reshape(const Expr& e, const std::vector<Term>& leaves, size_t& k);

  /// The sum of `terms`, an integer expression of type `type` (its
  /// constants take that type: an i64 zero beside an i32 value is ill-typed
  /// IR).
  static Expr sum(const std::vector<Term>& terms, Scalar type);

  /// `x` as an expression of type `t`: a rewrite never changes the type of
  /// what it replaces.
  static Expr typed(const Expr& x, Scalar t);

  static Expr times(const Expr& x, const Expr& k);

  /// A sum of integer terms: A[F_fo[X]] + F_fi[X] * K -> X * K, and x - x -> 0,
  /// each kept only when Z3 proves the whole sum unchanged.
  Expr simplify_sum(const Expr& e);

  /// (Q * k + r) / k -> Q and (Q * k + r) % k -> r when 0 <= r < k (proved).
  Expr simplify_divmod(const Expr& e);

  Expr simplify_expr(const Expr& e);

  /// A fact about the loop or condition `s` is valid inside it only when
  /// nothing inside writes what it reads.
  static bool stable(const Expr& fact, const Stmt& s);

  Stmt simplify(const Stmt& s);

  /// Whether load `e` may move out of loop `loop` (vars bound in it:
  /// `inner`; buffers stored in it: `written`).
  bool hoistable(const Expr& e, const std::set<const VarNode*>& inner,
                 const std::set<const BufferNode*>& written) const;

  bool in_bounds(const Expr& e);

  /// `e` with each sub-expression equal (same_expr) to a `first` of `m`
  /// replaced by its `second`, outermost first (ir.h replace_exprs).
  static Expr replace_expr(const Expr& e, const std::vector<std::pair<Expr, Expr>>& m);

  std::string fresh_name();

  Stmt hoist(const Stmt& s);

  Func& f_;
  SimplifyOptions o_;
  SimplifyReport report_;
  std::vector<std::unique_ptr<Prefix>> prefixes_;
  std::vector<std::unique_ptr<Fusion>> fusions_;
  std::vector<Ratio> ratios_;
  std::set<const BufferNode*> lengths_;
  std::vector<Expr> context_;
  size_t pos_ = 0;
  std::unique_ptr<Z3> z3_;
  std::map<std::string, bool> cache_;
  int hoist_id_ = 0;
  std::map<const BufferNode*, Expr> hoisted_;  // scalar hoistN -> the load it holds
};

}  // namespace dccc::ir::simplify
