// Records, before the CPU target's nest-restructuring passes, which local
// tensors need no zero fill.
//
// written_first (ir/written_first.h) recognises a tensor stored whole by the
// first nest that touches it only while that nest is one loop per
// dimension. ir/tile_contractions.h then splits mha's `scores` writer into
// 4-row tiles and a remainder loop, which store the same elements but no
// longer in that shape, so storage lowering would zero-fill `scores` (a
// memset of the whole tensor on every call). This pass runs written_first
// first and clears BufferNode::zero_fill where it holds; storage lowering
// keeps a cleared flag. The passes that run between them
// (transpose_operands, tile_contractions, fuse_parallel_loops) keep every
// element stored before it is read: tiling stores the same elements in the
// same statement, a transposed copy is a new tensor, and fused parallel
// loops keep each iteration's statements in order on slices no other
// iteration touches.
#pragma once

#include "ir/ir.h"

namespace dccc::ir {

/// Clears zero_fill on every local tensor of `f` (multi-index IR) that
/// written_first(f, tensor) accepts now.
void mark_written_first(Func& f);

}  // namespace dccc::ir
