// The `split_op(T.i, k)` directive (docs/schedules.md), operation
// splitting: the checks and loop names around the transform of
// ir/split_op.h. The bulk keeps the names, i over (E / k) * k; the
// remainder statement's loops are T.X_rest (T.X_rest2, ... for a later
// split_op of the same assignment).
#pragma once

#include "ir/schedule/state.h"

namespace dccc::ir {

/// split_op(T.i, k): ir/split_op.h. The remainder nest's loops are named
/// after the originals with `_rest` (`T.b_rest`, `T.i_rest`); the two
/// statements are recorded as parts of one operation (ScheduleState::part_of),
/// which `hfuse` may fuse although both store the assignment's tensor.
void apply_split_op(ScheduleState& st, const Directive& d);

}  // namespace dccc::ir
