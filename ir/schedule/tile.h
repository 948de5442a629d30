// The `tile(T.x, T.y, a, b)` directive (docs/schedules.md): split(T.x, a),
// split(T.y, b), reorder(T.x_o, T.y_o, T.x_i, T.y_i).
#pragma once

#include "ir/schedule/state.h"

namespace dccc::ir {

/// Tiles the two loops `d` names (ir/schedule/split.h, ir/schedule/reorder.h).
void apply_tile(ScheduleState& st, const Directive& d);

}  // namespace dccc::ir
