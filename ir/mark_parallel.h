// Marks the loops whose iterations may run concurrently (LoopKind::Parallel).
//
// The backend runs a Parallel loop on the runtime's thread pool
// (dcc_parallel_for), so a mark is a promise that no two iterations touch
// the same memory unless both only read it, and that nothing the loop does
// depends on the order of its iterations. The pass marks, conservatively,
// the outermost loop of each top-level statement of a function body (each
// assignment's nest over its left-side indices, e.g. the `b` loop of
// `scores[b][i, h, j] = ...`), and only when
//   - the loop prints nothing (print order is observable);
//   - every tensor it stores to is stored and loaded inside the loop only
//     with the loop variable itself as first index, so iterations write
//     disjoint elements and read only their own (an input is never stored);
//   - every scalar it stores to (a `reduce` accumulator) is private to an
//     iteration: no iteration reads a value of it stored before the
//     iteration began (ir/ir.h, written_before_read: each use in turn
//     stores it first or is a loop whose every iteration does, as each of
//     the online form's per-row reduction loops over a block), and the
//     scalar is used nowhere outside the loop; results (Output scalars) are
//     never stored inside a parallel loop.
// Reduction loops are never marked: they sit inside the left-side nest, and
// only outermost loops are candidates. Runs before storage lowering, on
// multi-index accesses (storage lowering keeps the marks).
#pragma once

#include "ir/ir.h"

namespace dccc::ir {

/// Marks the parallel loops of `f` (see above); returns how many it marked.
int mark_parallel(Func& f);

}  // namespace dccc::ir
