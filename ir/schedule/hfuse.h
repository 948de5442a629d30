// The `hfuse(A.x, B.y, ...)` directive (docs/schedules.md), horizontal
// fusion: the checks and loop names around the transform of ir/hfuse.h,
// into one loop A.x_y (= B.x_y); the two parts of one split_op may both
// store the assignment's tensor.
#pragma once

#include "ir/schedule/state.h"

namespace dccc::ir {

/// hfuse(A.x, B.y, ...): ir/hfuse.h. The fused loop is named by the
/// loops' names joined with `_`, in each assignment it holds.
void apply_hfuse(ScheduleState& st, const Directive& d);

}  // namespace dccc::ir
