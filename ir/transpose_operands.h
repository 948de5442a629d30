// Transposed copies of contraction operands, so that the CPU contraction
// vectorizes along its output instead of along its reduction.
//
// In a contraction nest
//   for i { for j { acc = init; for r { acc = acc op x }; t[.., i, .., j, ..] = f(acc) } }
// (`scores[b][i, h, j] = reduce(+, q[b][i, h, d] * k[b][j, h, d])`, r = d),
// an operand B[.., j, .., r] that reads memory contiguously along r but is
// indexed by j (k) leaves the backend one choice: vectorize the r loop and
// reduce every output's vector accumulator horizontally, which costs about
// as much as the loop itself when r is short (D = 64 is 4 AVX-512 vectors).
// When B's row is shared by all i (no index of the load mentions i), the
// pass stores a transposed copy BT of B before the statement, with B's
// dimension indexed by j moved last:
//   for (B's other dims) { for j { BT[.., j] = B[.., j, .., ..] } }
// and the nest reads BT[.., r-side indices, j] instead. Then some operand is
// contiguous along j, so ir/tile_contractions takes rows of i in tiles and
// the backend interchanges j with r (backend/llvm/codegen.h), vectorizing
// along j with one accumulator per output lane and no horizontal reduction,
// as it does for `p v`. The copy costs one pass over B, against one pass
// over B per i of the nest.
//
// Each element of BT holds the same value the load read from B, so the
// results are bit-identical in the interpreter. Conditions:
//   - the nest has the shape above (j and r serial loops, i the loop that
//     directly encloses j, the step `acc = acc op x` the only statement of
//     r's body);
//   - the load's last index is r itself, exactly one other index is j
//     itself, no other index mentions j or r, and none mentions i;
//   - no load of x is already contiguous along j (last index j);
//   - B is an input or an unpadded local tensor, not stored inside the
//     top-level statement, and no extent of B's other dimensions mentions
//     the variable of the dimension indexed by j.
// BT is a new local tensor, its rows (along j) storage-padded to a multiple
// of 16 so that the backend's vector lanes along j can run into the padding
// instead of ending in scalar steps; the copy's j loop runs over the padding
// too, storing there copies of the row's last element (read at min(j, n - 1):
// in bounds, and never used), so BT is written in full by its copy nest and
// needs no zero fill (ir/written_first.h). When the top-level statement is a loop
// over exactly B's first dimension and the load's first index is its
// variable (`parallel b in 0 .. B`, `k[b][j, h, d]`), the copy of that
// slice goes first in the loop's body, so it is still in cache when read;
// otherwise the whole copy goes before the statement, its outer loop
// parallel when the statement's is (it stores BT only at its own first
// index and reads only B). Runs on multi-index IR (before storage lowering), after
// mark_parallel and reorder_loops, before tile_contractions; CPU pipeline
// only.
#pragma once

#include "ir/ir.h"

namespace dccc::ir {

/// Transposes contraction operands of `f` as described above; returns how
/// many copies it made.
int transpose_operands(Func& f);

}  // namespace dccc::ir
