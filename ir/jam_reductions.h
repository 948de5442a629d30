// Unroll-and-jam of one-accumulator reduction nests (CPU target).
//
// A FlatReduction (ir/flat_reduction.h) with one accumulator,
//   for j { acc = init; for d { acc = acc op x }; t[off] = f(acc) }
// where some load of x does not move with j but does with d (q k^T's
// q[i, h, d]: `scores[i, h, j] = reduce(+, q[i, h, d] * k[j, h, d])`) and
// interchanging j with d does not pay (the CPU backend would run that one
// in vector lanes), runs kJam = 4 consecutive j at once, each with its own
// accumulator (a fresh Scalar buffer `acc.jU`), so one load of q serves four
// dot products and the d loop vectorizes with four reductions:
//   for j.o in 0 .. n / 4 { acc.jU = init(j = j.o * 4 + U) for every U;
//                           for d { acc.jU = acc.jU op x(j = j.o * 4 + U) for every U };
//                           t[off(j = j.o * 4 + U)] = f(acc.jU) for every U }
//   for j.r in 0 .. n % 4 { the original body, j = n / 4 * 4 + j.r }
// Each output's accumulator sees exactly the operations of the original in
// the same order, so results are unchanged. A `parallel` loop (run by the
// thread pool) is not jammed itself; loops inside it are. Nor is a loop
// whose extent is below 4 by its form (a constant, or `e % c` with c <= 4,
// as the remainder loop above): so the pass leaves IR it has jammed as it
// is, and IR text read back prints unchanged. The nests that
// ir/tile_contractions.h tiled before storage lowering do not match (their
// bodies hold several accumulators).
//
// Runs on storage-lowered functions (flat offsets), on the body only: the
// prelude is also the C wrapper's (prelude units, docs/abi.md), which keeps
// it as lowered. Last in the CPU pipeline, after simplify-indices, so the
// LLVM backend emits what it leaves.
#pragma once

#include "ir/ir.h"

namespace dccc::ir {

/// Unrolls and jams the nests of `f`'s body described above; returns how
/// many it rewrote.
int jam_reductions(Func& f);

}  // namespace dccc::ir
