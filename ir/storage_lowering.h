// Storage-access lowering (CoRa §5.2, appendix B.1, Algorithm 1).
//
// Every multi-index access to a tensor buffer becomes one flat offset in
// its packed storage: sequence after sequence, row-major, no padding (the
// layout of FlashAttention and PyTorch nested tensors). A dimension whose
// index sizes inner dimensions (it has dependents in the dimension graph)
// contributes A_d[i], a prefix-sum array computed by the prelude; any other
// dimension contributes i * (size of the slice below it). A_d arrays with
// the same definition are shared between buffers, so the prelude computes
// each once (the paper's "CoRa-Optimized"). A dimension with storage
// padding p (BufferNode::pad, set by a schedule; only on dimensions that
// size nothing) holds its extent rounded up to a multiple of p. Two
// consecutive indices `X / C`, `X % C` over an unpadded dimension of extent
// C contribute X * (size below them), the place of X itself: exact wherever
// the access runs (the checker proved X % C in [0, C), so C > 0), and it
// leaves the offset affine in X (a split head dim, `q[b][i, h, e / K, e % K]`,
// is still a contraction index for the GPU planners).
//
// A_d arrays of lengths the function computes itself (a local `n` in
// `[b: B][n[b], D]`) are filled in the body, just before the first
// statement that needs them, after a loop of `assert ... length "n"`
// (build::assert_length) over every element of each such array, unless
// every value stored to it is plainly non-negative: a negative length
// would make the offsets step back, so that rows overlap or leave the
// storage. The back ends sum offsets (stores to aux arrays) with
// overflow checks.
#pragma once

#include "ir/ir.h"
#include "support/diagnostics.h"

namespace dccc::ir {

/// Returns `f` with flat accesses, aux buffers, totals and a prelude; false
/// (with an [Unsupported] diagnostic) for a layout it cannot lower yet.
bool lower_storage(Func& f, DiagnosticEngine& diags);

}  // namespace dccc::ir
