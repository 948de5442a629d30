// The `remap(T.b, longest_first | KEY)` directive (docs/schedules.md),
// thread remapping: the checks and loop names around the transform of
// ir/remap_loop.h.
#pragma once

#include "ir/schedule/state.h"

namespace dccc::ir {

/// remap(T.v, longest_first | KEY): ir/remap_loop.h. The loop must be
/// parallel with independent iterations, so that the order cannot show.
void apply_remap(ScheduleState& st, const Directive& d);

}  // namespace dccc::ir
