// The `split(T.i, k)` directive (docs/schedules.md):
//   for i_o in 0 .. ceil(E / k) { for i_i in 0 .. k { if (i_o * k + i_i < E) body } }
// with no guard when E is a multiple of k (is_multiple_of in ir/split_op.h);
// i_o keeps i's parallel mark. `tile` splits through it too.
#pragma once

#include "ir/schedule/state.h"

namespace dccc::ir {

/// Splits loop `r` by `k` for directive `d` (a `split` or a `tile`); false
/// after an error.
bool apply_split(ScheduleState& st, const Directive& d, const LoopRef& r, int64_t k);

}  // namespace dccc::ir
