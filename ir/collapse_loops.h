// Loop collapsing: a perfect nest of two serial loops whose variables reach
// memory only through contiguous flat offsets is one loop over the product
// of their extents. Used by the fused attention planner
// (backend/gpu/plan_attention.h) on the statements of a query row's body, so
// that a score summed over several dimensions (`reduce(+, q[b][i, h, d] *
// k[b][j, h, d])`, the seed's flash_attention.toy) and the output columns
// (h, d) it writes read as one contraction index and one column index; and by
// the pipeline's check that the fused kernel can take a derived key loop.
//
// Why that is exact. For `for a in 0 .. A { for b in 0 .. B { S } }` in which
// every mention of a and b is inside a flat offset (a Load or Store with
// `flat` set) of the form e = e0 + ca * a + cb * b, with e0, ca and cb free of
// a and b and ca the same expression as cb * B, the iteration (a, b) runs
// r = a * B + b, in the same order as `for r in 0 .. A * B`, and
// e = e0 + cb * (a * B + b) = e0 + cb * r. So S with each such offset
// rewritten to e0 + cb * r is the same statements at the same addresses in
// the same order. B must not depend on a (a rectangular nest). Nests of more
// loops collapse pairwise from the inside out.
#pragma once

#include "ir/ir.h"

namespace dccc::ir {

/// `s` with every collapsible nest of serial loops (see above) inside it
/// collapsed, innermost pairs first; nodes that do not change are shared.
/// `s` itself when nothing collapses.
Stmt collapse_loops(const Stmt& s);

}  // namespace dccc::ir
