// The `gpu_blocks(T.a[, T.b])` and `gpu_threads(T.x[, T.y[, T.z]])`
// directives (docs/schedules.md): the CUDA grid and block mapping of a
// statement (ir.h GpuMapping); only `parallel` loops, chains of loops from
// the statement's outermost one. ir/apply_schedule applies them after every
// other directive, so that they name the loops as those left them.
#pragma once

#include "ir/schedule/state.h"

namespace dccc::ir {

/// gpu_blocks(T.a[, T.b]) and gpu_threads(T.x[, T.y[, T.z]]): which loops of
/// a top-level statement run on the CUDA grid and which on the threads of
/// a block (ir.h GpuMapping), for every such directive of `all`. Checked on
/// every target; recorded on the CUDA target only (the CPU target ignores
/// them, and --explain says so).
void apply_gpu_mapping(ScheduleState& st, const std::vector<Directive>& all);

}  // namespace dccc::ir
