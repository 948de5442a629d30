// The `inline(T)` directive (docs/schedules.md), kernel fusion of a
// producer into its readers: the checks around ir/fuse_elementwise.h.
// ir/apply_schedule applies it after pad_storage and before the other
// directives, so that their checks see the fused reads.
#pragma once

#include "ir/schedule/state.h"

namespace dccc::ir {

/// inline(P): kernel fusion of P into its readers (ir/fuse_elementwise.h).
void apply_inline(ScheduleState& st, const Directive& d);

}  // namespace dccc::ir
