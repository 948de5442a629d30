// The `materialize(T)` schedule directive: local tensor T stays stored, so
// the online-reductions pass (ir/online_reductions.h), which runs before
// apply-schedule and reads the directive from the schedule itself, leaves
// every chain that would compute T in its loop alone. apply-schedule checks
// the name here and notes the choice for --explain.
#pragma once

#include <cstddef>
#include <string>

#include "ir/ir.h"
#include "ir/schedule.h"

namespace dccc::ir {

struct MaterializeCheck {
  std::string error;  // a [Schedule] error at the tensor's name; empty: fine
  size_t nest = 0;    // the assignment to T in Func::nests
  std::string note;   // what --explain says of it
};

/// Checks `materialize(r.tensor)` against `f`: T must be the left side of
/// exactly one of f's assignments.
MaterializeCheck check_materialize(const Func& f, const LoopRef& r);

}  // namespace dccc::ir
