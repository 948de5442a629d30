// The `fuse(T.o, T.i)` directive (docs/schedules.md), vloop fusion (CoRa
// appendix B). The fusion maps it records (ScheduleState::fusion_maps) are
// what a later `fuse_dims` reads.
#pragma once

#include "ir/schedule/state.h"

namespace dccc::ir {

/// fuse(T.o, T.i): loop i directly inside loop o becomes one loop o_i over
/// every (o, i) in order (CoRa appendix B, vloop fusion). Before the
/// top-level statement holding the nest, the maps are computed into i64
/// arrays (aux arrays that storage lowering moves into the cached prelude
/// when the extents read only inputs): oif[o] (first fused iteration of o;
/// oif[E_o] = the fused extent F), fo[f] and fi[f] (o and i of fused
/// iteration f); the body
/// reads o and i from them. Iterations run in the original order; the
/// fused loop keeps o's `parallel` mark only when i's iterations are
/// independent.
void apply_fuse(ScheduleState& st, const Directive& d);

}  // namespace dccc::ir
