// Swaps perfectly nested left-side loops for cache reuse.
//
// In `for i { for h { for j { ... k[b][j, h, d] ... } } }` (the scores of
// multi-head attention), the inner loops read a slice of k that depends on
// h but not on i; with i outside, consecutive reads of the same slice are a
// whole sweep over h apart and fall out of the cache on long sequences.
// The pass swaps two loops `for a { for c { body } }` (c's loop directly
// the body of a's, c's extent independent of a) into `for c { for a { body } }`
// when
//   - body is itself a loop (c is not the innermost left-side loop, which
//     the backend vectorizes or interchanges with its reduction);
//   - some load in body does not depend on a but depends on c and on a
//     loop inside body (a slice reused across a, now consecutively); and
//   - the iterations are independent, so the order cannot show: every
//     tensor stored in the nest is stored at indices naming both a and c
//     and loaded nowhere in the nest, every scalar stored is written before
//     read in body and used nowhere outside it, and nothing is printed.
// Runs on multi-index IR (before storage lowering), after mark_parallel; a
// parallel loop is never moved (its extent is B and its body's extents read
// b, so it is never the inner loop of a pair, and swapping it outward would
// need an extent independent of the outer loop, which it has not).
#pragma once

#include "ir/ir.h"

namespace dccc::ir {

/// Swaps loops in `f` as described above; returns how many pairs it swapped.
int reorder_loops(Func& f);

}  // namespace dccc::ir
