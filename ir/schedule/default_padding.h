// The default padding: what dccc does to the assignments no directive
// names (ScheduleDefaults::pad in ir/apply_schedule.h), after the schedule.
#pragma once

#include "ir/schedule/state.h"

namespace dccc::ir {

/// The default padding (CoRa §4.1, chosen by dccc when no directive
/// names the assignment): the innermost loop of an assignment, when it is
/// a vloop over a left-side index with a straight-line body, runs to a
/// multiple of `k` and computes into storage padding of a multiple of `k`
/// added to every tensor it indexes. Only where that needs no guard: every
/// such tensor is local (inputs and results keep the packed C ABI), its
/// dimension sizes no other, and the body cannot fail or accumulate
/// across iterations. Anything else keeps the packed, unpadded default;
/// --explain says which and why. k = 0: no default padding.
void apply_default_padding(ScheduleState& st, int64_t k, const std::string& off_reason,
                           const std::string& order_note);

}  // namespace dccc::ir
