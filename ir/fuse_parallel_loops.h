// Loop fusion of consecutive parallel loops (CPU).
//
// After mark_parallel, each assignment of multi-head attention is its own
// `parallel b in 0 .. B` loop: scores, row max, p, row sum, out. Run one
// after the other, each pass streams its whole tensor through memory
// (scores and p are 4 * H * sum(len^2) bytes, 130 MB on the race batch),
// so every intermediate makes a round trip to DRAM. Fused,
//   parallel b in 0 .. B { scores[b]...; row_max[b]...; p[b]...; row_sum[b]...; out[b]... }
// each iteration computes one sequence's intermediates while they are
// still in cache, and the pool dispatches once instead of five times.
//
// Two consecutive top-level loops `parallel v in 0 .. E { A }` and
// `parallel w in 0 .. E { S }` (the same extent) become
// `parallel v in 0 .. E { A; S[w := v] }` when, for every tensor that one
// of them stores and the other touches, every access in both (loads,
// stores, extents) has the loop's own variable as first index: iteration v
// of S then reads only elements that iteration v of A wrote (mark_parallel
// has made sure no other iteration of A writes them) and A never sees what
// S writes, so every element gets the same operations on the same values
// as before (bit-identical results). No scalar may be touched by both (each
// loop's accumulators stay private to its iterations), and the extent may
// not read what either loop stores. A run of such loops fuses into one.
// Runs on multi-index IR (before storage lowering), last of the CPU passes
// (after tile_contractions); CPU pipeline only.
#pragma once

#include "ir/ir.h"

namespace dccc::ir {

/// Fuses consecutive parallel loops of `f`'s body as described above;
/// returns how many loops it fused into a previous one.
int fuse_parallel_loops(Func& f);

}  // namespace dccc::ir
