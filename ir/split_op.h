// Operation splitting (CoRa §4.1, Fig. 5 step 1): one top-level loop nest
// becomes two, the first running its loop `i` over the bulk [0, P), P =
// floor(E / k) * k, the second over the remainder [P, E):
//
//   for b { for i in 0 .. E { body } }
//     =>
//   for b { for i in 0 .. (E / k) * k { body } }
//   for b_rest { for i_rest in 0 .. E % k { body[b := b_rest, i := i_rest + (E / k) * k] } }
//
// Every loop of the second nest is a fresh variable (the scheduler names it
// after the original, with `_rest`), and so is every scalar accumulator the
// nest stores (so each part keeps its own, as tile_contractions wants).
// Loop kinds (`parallel`) are kept: each part runs a subset of the original
// iterations. The bulk runs a multiple of k iterations, so a later
// split/tile of `i` by k (or a divisor of k) needs no bound check
// (is_multiple_of).
//
// Legal when the reordering shows nowhere: every iteration of the loops
// from the statement's outermost loop down to `i` (a perfectly nested
// chain, through bound checks only) is independent of every other —
// nothing is printed or checked; each tensor the nest stores is stored at
// indices that name each of those loops plainly and is loaded nowhere in
// the nest; each scalar it stores is written before read in every
// iteration of `i` and used nowhere else. A `reduce` loop is refused (its
// accumulation would be split across two statements), as is a loop with a
// constant extent that is a multiple of k (no remainder).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "ir/ir.h"

namespace dccc::ir {

/// What split_op made: the new nest's loop (and scalar) for each original.
struct SplitOpResult {
  std::map<const VarNode*, Var> rest_loops;  // original loop -> its twin in the remainder nest
  Expr bulk_extent;                          // (E / k) * k
  Expr rest_extent;                          // E % k
};

/// Splits the top-level nest holding loop `loop` of `f` at floor(E / k) * k
/// as described above. `rest_name(v)` names the twin of loop `v`. On
/// refusal returns nothing and sets `why` (lowercase, no final period).
std::optional<SplitOpResult> split_op(Func& f, const Var& loop, int64_t k,
                                      const std::function<std::string(const VarNode*)>& rest_name,
                                      std::string& why);

/// True when `e` is a multiple of `k` for every value of its variables: a
/// constant multiple, or `(x / m) * m` with m a multiple of k (the bulk
/// extent of split_op, the extent of pad_loop).
bool is_multiple_of(const Expr& e, int64_t k);

/// `e / k` for `e` with is_multiple_of(e, k): `x / m * (m / k)`, or `x / k`
/// when m == k, folded for constants.
Expr exact_quotient(const Expr& e, int64_t k);

/// The loop variables of `nest` that index `e` names one-to-one: `v`, or a
/// split loop's `v_o * k + v_i` with v_i running over 0 .. k (nested).
void plain_index_vars(const Stmt& nest, const Expr& e, std::set<const VarNode*>& out);

}  // namespace dccc::ir
