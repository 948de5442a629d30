// The `pad_storage(T.i, p)` directive (docs/schedules.md): T's dimension
// indexed by i holds its extent rounded up to a multiple of p. Only local
// tensors (the C ABI of inputs and results stays packed, docs/abi.md) and
// only dimensions no other extent depends on. ir/apply_schedule applies
// every pad_storage before the loop directives, whatever their order.
#pragma once

#include "ir/schedule/state.h"

namespace dccc::ir {

/// Records the padding in T's buffer (BufferNode::pad) and where it was
/// asked for (ScheduleState::storage_at, for pad_loop's errors).
void apply_pad_storage(ScheduleState& st, const Directive& d);

}  // namespace dccc::ir
