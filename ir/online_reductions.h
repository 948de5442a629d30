// Online reductions: a chain of reductions over one index, in which a later
// reduction reads an earlier one's result, computed in one pass over that
// index (flash attention's running maximum and sum, derived from the naive
// program rather than recognised; docs/vloop.md, "Online reductions").
//
// A top-level assignment R = reduce(op, X) over a loop j (the root) whose
// body or result reads the result r of an earlier reduction over the same
// range of j (a member; its own body may read earlier members, and so on)
// is fused with its members into one loop over j when every member's body
// separates in the earlier results it reads:
//
//   op +:        X = G(j) * exp(E(r)) * P(r)    (a product; exp factors of
//                the body merge into one exponent, split into a j part
//                and an r part E)
//   op max/min:  X = G(j) + H(r)
//
// found by rewriting X (products, quotients, exp of sums and differences,
// scaling by values independent of j and r, casts between float types,
// `select` on a condition independent of r with a zero branch or with
// branches that separate alike), never by matching one program. Each + member
// keeps acc = sum over j' <= j of X(j', r_j) with the results r_j of the
// prefix; when they move from r_old to r_new it multiplies acc by
// exp(E(r_new) - E(r_old)) (1 when E does not change, 0 when E(r_old) is
// -inf, so no quotient of large exponentials and no inf * 0), and adds
// X(j, r_new) with its P factors left out; P(r) is applied after the loop
// with the final results (the factor is 1, and not computed, while E does
// not move). A max/min member folds G(j) and adds H(r) after the loop. An
// exp of the step that reads no extra index is computed once per j. Element-wise tensors read by the chain (p = exp(s - m), masks,
// scales, casts) are computed in the fused body; a tensor indexed by j that
// a reduction over other indices computes (the scores q k^T) is computed per
// j into a scalar. No tensor indexed by j is stored any more: the memory of
// attention drops from O(s^2) to the results (rows) and, for a root with
// left-side indices beyond the rows (d), its accumulator (the output itself
// when its type is the accumulator's).
//
// Nothing changes (and --explain says why) when a body does not separate
// (`sqrt(s - m)`, `exp(s * m)`, `s + m` in a sum), a tensor of the chain is
// read elsewhere before the root or is indexed by j and read outside the
// chain, a statement between the chain's assignments writes what they read,
// a `schedule` directive names one of its assignments, or `materialize(T)`
// names one of its tensors. Runs on multi-index IR before mark_parallel, for
// both targets.
//
// On the CPU the fused loop runs over blocks of JB = kCpuOnlineBlock values
// of j (the last one shorter): the per-j values (the scores, the shared
// exponentials) of a block go to a row of JB elements of a local tensor
// indexed by the rows (O(rows * JB) memory, no more O(s^2)), and each member
// takes one step a block: a max/min member folds the block's maximum, a +
// member is rescaled once to the results after the block and adds the
// block's sum of X(j, r) at those results. The sum over the block is exact
// algebra (the rescaling brings every term to the same results), the loops
// over the block are plain reductions and element-wise loops the backend
// vectorizes, and the exponential runs once a block, not once a key.
// Two layout choices go with the blocks (ir/online_tile.h): the row that
// the loads moving with j do not read (the query i) goes innermost and runs
// a tile of kCpuOnlineRows rows at a time, the rows' loops jammed and each
// row with its own block rows (without that index); an operand of a per-j
// reduction indexed by j and contiguous along the reduced index (k[b][j,
// h, d]) is read from a transposed copy made before the loop (O(s)).
// The first block runs on its own, with nothing to rescale: its sums are
// stored as they are, and a row of one block (short sequences) stores the
// root's final value (`/ row_sum`) straight from the block's sums, no pass
// over d after it, when the root is its own accumulator (an f32 output; a
// bf16 one sums into an f32 tensor and takes its value after the blocks,
// one copy of the first block either way). A later block's weighted sums (d) are rescaled and added
// in the store of their own reduction nest (out[d] = out[d] * ratio + sum,
// ir/flat_reduction.h), not in a pass of their own. The loops that fill the
// block rows from the transposed copies (the scores, their exponentials)
// run to the block's end rounded up to 16 (the copies' padding), so the
// backend emits them in whole vectors; the lanes past the end are never
// read. The CUDA target keeps one value of j a step (block 1).
//
// The pass's parts, each a file pair with one entry point: this file runs
// them over the function's top level (online_reductions); ir/online_nest.h
// takes a top-level assignment apart (parse_nest); ir/online_chain.h finds
// a root's chain and checks it may be fused (Chain::analyse), with the
// algebra of separation in ir/separate.h; ir/online_fuse.h builds the fused
// loop (fuse_chain), with the row tiles and transposed copies of
// ir/online_tile.h.
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include "ir/ir.h"

namespace dccc::ir {

/// Values of j a block of the CPU's fused loop (eight vectors of 16 f32
/// lanes): a row of mha's shorter batches (up to 128 keys) is one block,
/// computed as the materialised form computes it but in rows that stay in
/// cache; longer rows rescale their sums once every 128 keys.
inline constexpr int64_t kCpuOnlineBlock = 128;
/// Rows a tile of the CPU's fused loop (ir/online_tile.h).
inline constexpr int64_t kCpuOnlineRows = 4;

/// What online_reductions fused.
struct OnlineFused {
  int chains = 0;           // chains fused
  int per_key_reduced = 0;  // of which some value per j is a reduction (a contraction: the scores q . k)
};

/// Fuses every chain of dependent reductions of `f` that qualifies (see
/// above). `keep` names tensors a `materialize` directive keeps stored and
/// `scheduled` the tensors whose assignments a directive names; chains
/// touching either are left alone. `block` > 1 runs the fused loop over
/// blocks of that many values of j (see above; 1: one value a step).
/// Appends to `explain` (when not null) one line per chain fused or
/// refused, saying which rewrite or which factor. Returns what it fused.
OnlineFused online_reductions(Func& f, const std::set<std::string>& keep, const std::set<std::string>& scheduled,
                       int64_t block, std::string* explain);

}  // namespace dccc::ir
