// Thread remapping (CoRa §4.1 "load balancing", appendix A.1 and the
// "longest sequence first" order of appendix D): iteration t of a parallel
// loop runs the original iteration perm[t], so that the thread pool, which
// hands out iterations in increasing t, starts the longest ones first.
//
// For a loop `parallel v in 0 .. E { body(v) }` at any depth of a top-level
// statement S, with E mentioning no loop variable and no tensor S writes,
// the statement sequence becomes
//
//   for y in 0 .. E { R_keyN[y] = key(y); R_rankN[y] = 0; }
//   for y in 0 .. E {
//     for z in 0 .. E { R_rankN[y] = R_rankN[y] + select(<z before y>, 1, 0); }
//     R_permN[R_rankN[y]] = y;
//   }
//   S with  parallel v_r in 0 .. E { body(R_permN[v_r]) }
//
// where z comes before y when key(z) > key(y), or key(z) == key(y) and
// z < y: a strict total order, so R_rankN is a permutation of 0 .. E and
// R_permN its inverse (descending key, ties by index: deterministic). The
// ranking is O(E^2), meant for batch loops (E = B, a few thousand at most).
// The three arrays are local i64 buffers filled in the body on every call.
//
// The key is either a user expression of v (integer: sizes, constants, loads
// of tensors S does not write, `+ - *`), or, for `longest_first`, the work of
// one iteration: the number of statements the body executes, counted with
// every inner loop at its extent and an inner loop variable in an extent
// bounded by that loop's extent (an over-estimate for triangular loops,
// exact for rectangular and ragged ones).
//
// The caller checks that the loop is parallel and that its iterations are
// independent (each stores elements of its own, reads nothing it writes,
// prints nothing), which is what makes results bit-identical: every
// iteration runs the same operations on the same values, in another order.
// Runs before storage lowering, on multi-index IR.
#pragma once

#include <string>

#include "ir/ir.h"
#include "ir/schedule.h"

namespace dccc::ir {

/// What remap_loop did, or why not.
struct RemapResult {
  std::string error;   // empty: done
  SourceRange at;      // where the error lies (a part of the key), when known
  Var loop;            // the new loop variable (`v_r`)
  Buffer perm;         // R_permN
  std::string key;     // the key as the explanation prints it
};

/// Remaps the loop of `v` in `f` (named `name` in the schedule) by
/// descending `key` (null: longest_first); `id` numbers the arrays.
RemapResult remap_loop(Func& f, const Var& v, const std::string& name, const Term* key, int id);

}  // namespace dccc::ir
