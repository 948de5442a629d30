// The fused attention kernel's per-block values, decided once the planner
// (plan_attention.h) has classified the nest: what a block computes once
// instead of per element or per store, and what the host computes for it.
#pragma once

#include "backend/gpu/kernel_ir.h"

namespace dccc::gpu {

/// Fills, on `k` as plan_attention built it (steps, post, scalars, batch):
/// the element work's block invariants (AttentionKernel::invariants: maximal
/// subexpressions of batch variables, sizes and constants with an operation
/// in them, no load, no integer division), the stores' (post_invariants:
/// integer parts with a load of a tensor `item` does not write), the paired
/// output stores (pair_stores) and the per-block values the host stores in
/// the tile-list entry (TileScalar::entry, Invariant::entry, entry_width).
/// `item`: the statement the kernel computes.
void plan_block_values(AttentionKernel& k, const ir::Stmt& item);

}  // namespace dccc::gpu
