// Which local tensors need no zero-fill.
//
// Fresh storage reads as zeros (docs/language.md). A local tensor whose
// first use, in statement order, is one assignment that stores every one of
// its elements (a nest of loops over exactly its dimensions, each loop
// running to the extent of the dimension it indexes, the store made on every
// iteration, not under a condition, by a value that does not read the
// tensor) can never be read as zeros: the backends skip zero-filling it.
// The nest may also sit first in the body of outer loops that index the
// tensor's first dimensions, followed there by statements that read only the
// slice those loops index, complete by then (`for b { t[b, ...] = ...;
// ... t[b, ...] ... }`, the copy of ir/transpose_operands.h)
// (a large intermediate such as attention scores is written once instead of
// twice). A storage-padded dimension (`pad K`) counts as stored in full only
// when its loop runs over the padding too (to the extent rounded up to a
// multiple of K, as a padded loop does: mha's `p`); otherwise the padding
// is never stored and must read as zeros. Such a dimension may also be
// indexed `o * K + i` by two loops of the nest, i over [0, K) and o over the
// padded extent divided by K (the blocked copy of ir/transpose_operands.h).
// A padded dimension whose loop stops at the unpadded extent also counts
// when the padding is dead (padding_dead): mha's `scores`, whose padding
// only the padded `p = exp(scores - row_max)` loop reads, into `p`'s
// padding, which nothing reads.
#pragma once

#include "ir/ir.h"

namespace dccc::ir {

/// True when `b`, a local tensor of `f`, is stored at every element by the
/// first top-level statement of `f.body` that touches it, before anything
/// reads it. `f` must be multi-index IR (before storage lowering);
/// conservative: false whenever the pattern above is not recognised.
bool written_first(const Func& f, const BufferNode* b);

/// True when no result of `f` can depend on the storage padding of local
/// tensor `b` (its elements past a dimension's extent in a `pad K`
/// dimension): every load of `b` indexes each padded dimension by a loop
/// variable, and a loop that runs past that dimension's extent is one store
/// `U[.., var, ..] = ...` into another local tensor padded along var, of the
/// same extent, whose padding is dead in turn (padding flows only into
/// padding); `b` is never printed whole. Multi-index IR; conservative.
bool padding_dead(const Func& f, const BufferNode* b);

}  // namespace dccc::ir
