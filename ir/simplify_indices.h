// Z3-backed simplification of storage-lowered index expressions (CoRa
// appendix B.2), elimination of the bound checks it proves redundant, and
// hoisting of loop-invariant auxiliary-array loads.
//
// The arrays that storage lowering and `fuse` fill are uninterpreted
// functions to Z3, with the facts their fill loops establish as axioms:
//   prefix sums  P[0] = 0, P[y+1] = P[y] + s(y) for y in [0, E), monotone
//                when s >= 0 (the A_d offsets and the fusion maps F_oif);
//                P[y] = c * Q[y] when two prefix sums over the same extent
//                have proportional slices (A_d of a tensor with inner
//                dimensions of size c against F_oif of the same lengths);
//   fusion maps  for f in [0, F_oif[E]): 0 <= F_fo[f] < E,
//                0 <= F_fi[f] < s(F_fo[f]), F_oif[F_fo[f]] + F_fi[f] = f, and
//                F_fo[F_oif[o] + i] = o, F_fi[F_oif[o] + i] = i;
//   lengths      loads of arrays that size a tensor dimension are >= 0;
//                size parameters are >= 0.
// An array's axioms hold only where it is final: recognised fills are the
// only stores to it, the arrays its slices read are written only before the
// fill, and no statement before the fill reads it. Z3 never invents a
// rewrite: candidate rewrites are generated syntactically and kept only when
// Z3 proves them equal under those axioms and the enclosing loop ranges and
// conditions (a deterministic resource limit per query: Z3 4.8's wall-clock
// timeout can hang, see typecheck/prover.h); anything unproved stays as it
// was.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace dccc::ir {

struct SimplifyOptions {
  /// Hoist loop-invariant aux loads into scalars (off for the CUDA target,
  /// whose emitter hoists kernel-invariant loads itself).
  bool hoist = true;
  /// Z3 resource limit (rlimit) per query.
  unsigned budget = 200000;
};

/// What the pass did, for --explain and tests.
struct SimplifyReport {
  int indices = 0;   // index expressions replaced by proved-equal simpler ones
  int checks = 0;    // bound checks removed
  int hoisted = 0;   // loads hoisted out of loops
  int queries = 0;   // queries that reached Z3
  std::vector<std::string> notes;  // one line per change, for --explain
};

/// Simplifies `f` (storage-lowered: flat accesses) in place: proved index
/// rewrites, proved-redundant `if` conditions dropped, and (with
/// `options.hoist`) loop-invariant loads of aux, fusion-map and length
/// arrays stored into `scalar hoistN` before the outermost loop they do not
/// depend on, where Z3 proves the load in bounds. Results never change.
SimplifyReport simplify_indices(Func& f, const SimplifyOptions& options = {});

/// The prover of the pass, for tests: is `goal` (a boolean IR expression)
/// true at the end of `f`'s body, for every value of `loops` (each variable
/// in [0, extent)), under the axioms of `f`'s recognised arrays?
/// True only when Z3 proves it.
bool prove_in_func(const Func& f, const std::vector<std::pair<Var, Expr>>& loops, const Expr& goal,
                   unsigned budget = SimplifyOptions{}.budget);

}  // namespace dccc::ir
