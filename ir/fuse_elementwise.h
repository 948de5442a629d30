// Kernel fusion, producer into consumer (CoRa §4.1 "kernel fusion"): a local
// tensor computed element by element and read only afterwards need not be
// stored at all. Each read of it is replaced by the expression that computes
// the element, and its loop nest and buffer are dropped, which saves a
// kernel, a full write and a full read of the tensor.
//
// A local tensor P is fused when
//   - exactly one top-level statement stores P, and that statement is a
//     perfect loop nest whose only statement is `P[v1, .., vn] = value`,
//     with v1..vn the nest's own loop variables in order and the loop
//     extents equal to P's dimension extents (so it writes every element
//     once: there is no zero-initialised element a read could see instead);
//   - no statement before it touches P;
//   - `value` reads neither P nor a scalar, and no buffer it reads is stored
//     by a later statement (so evaluating it later gives the same value);
//   - `value` is cheap: at most kMaxLoads loads and kMaxNodes nodes (it is
//     evaluated once per read instead of once per element).
// Reads P[e1, .., en] become value with vk := ek. The same expression on the
// same values gives the same bits, so results do not change. Runs before
// storage lowering, on multi-index accesses. Used by the CUDA target, where
// a read recomputes in registers what a load would fetch from memory; on the
// CPU, the schedule directive `inline(P)` fuses one named tensor by the same
// rules (ir/apply_schedule.h), and says why when it cannot.
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"

namespace dccc::ir {

/// Fuses every local tensor of `f` that qualifies (see above), in statement
/// order; returns their names.
std::vector<std::string> fuse_elementwise(Func& f);

/// Fuses the one tensor `p` of `f` (see above): "" when done, else why not
/// (a lowercase sentence naming `p`; `f` is unchanged then). fuse_elementwise
/// calls it for every local tensor.
std::string fuse_tensor(Func& f, const Buffer& p);

}  // namespace dccc::ir
