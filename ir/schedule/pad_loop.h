// The `pad_loop(T.i, k)` directive (docs/schedules.md): loop i runs to its
// extent rounded up to a multiple of k. The extra iterations compute into
// storage padding when every tensor the body indexes with i is padded there
// by a multiple of k (storage padding below the loop padding, or not a
// multiple of it, is an error) and the body cannot fail or accumulate
// across iterations; otherwise they are guarded by `if (i < extent)`.
// Either way results are unchanged.
#pragma once

#include "ir/schedule/state.h"

namespace dccc::ir {

/// Pads the loop `d` names, unguarded where into_padding allows.
void apply_pad_loop(ScheduleState& st, const Directive& d);

/// Whether the iterations of `loop` past its extent may run unguarded,
/// computing into storage padding; `why` says why not. Reports storage
/// padding that is below (or not a multiple of) the loop padding `k`.
/// (The analysis of apply_pad_loop, which the default padding uses too.)
bool into_padding(ScheduleState& st, const Stmt& loop, int64_t k, const Directive& d, std::string& why);

}  // namespace dccc::ir
