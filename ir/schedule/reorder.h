// The `reorder(T.a, T.b, ...)` directive (docs/schedules.md): the named
// loops of one perfectly nested chain take the given order (outermost
// first); refused when a loop would move above a loop its extent depends on
// (a vloop above its bound's loop), when iterations are not independent (a
// `reduce` accumulation, a tensor read where it is written, prints), or when
// other statements lie between the loops. Bound checks of split loops in
// the chain sink to its innermost body. `tile` reorders through it too.
#pragma once

#include "ir/schedule/state.h"

namespace dccc::ir {

/// Reorders the loops `refs` for directive `d` (a `reorder` or a `tile`);
/// false after an error.
bool apply_reorder(ScheduleState& st, const Directive& d, const std::vector<LoopRef>& refs);

}  // namespace dccc::ir
