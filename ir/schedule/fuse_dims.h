// The `fuse_dims(T.o, T.i)` directive (docs/schedules.md), tensor-dimension
// fusion after `fuse(T.o, T.i)`: the checks around ir/fuse_dims.h.
#pragma once

#include "ir/schedule/state.h"

namespace dccc::ir {

/// fuse_dims(T.o, T.i): after fuse(T.o, T.i), T's rows (o, i) are indexed
/// by the fused loop directly (ir/fuse_dims.h).
void apply_fuse_dims(ScheduleState& st, const Directive& d);

}  // namespace dccc::ir
