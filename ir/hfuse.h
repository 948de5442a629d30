// Horizontal fusion (CoRa §4.1 "HFusion", Fig. 5 step 3): the outermost
// loops of two or more top-level loop nests become one loop over the sum of
// their extents, whose body branches by range to each nest's body:
//
//   for x in 0 .. E1 { A }          for x_y in 0 .. (E1 + E2) {
//   for y in 0 .. E2 { B }    =>      if (x_y < E1) { A[x := x_y] } else { B[y := x_y - E1] }
//                                   }
//
// so on the CPU the nests run in one parallel region (one thread-pool
// dispatch), as they would in one kernel on a GPU. The fused loop is
// `parallel` when every fused loop was; otherwise serial, running the nests'
// iterations in their original order.
//
// Legal when the nests are independent — none stores a tensor another one
// loads or stores (unless the caller knows the nests store disjoint elements
// of it and neither loads it: the parts of one split operation) (loads in extents and in the shapes of the tensors they
// touch included), none prints or checks a condition, and each scalar
// accumulator is written before read in every iteration — and when they are
// top-level statements named in program order. Statements between them
// (another assignment, the maps of a `fuse`) move before the fused loop,
// which is refused when one of them depends on a nest it would move above.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace dccc::ir {

/// Why hfuse refused: a message (lowercase, no final period) and the
/// position of the loop it is about in `loops` (or -1: the directive).
struct HFuseRefusal {
  int arg = -1;
  std::string message;
};

/// Fuses the top-level loops `loops` of `f` (two or more, each the
/// outermost loop of a top-level statement, in program order) into one loop
/// named `name`, as described above; messages call loop q `shown[q]`. Returns the fused loop's variable, or
/// null after setting `why`. `disjoint(p, q)` is the caller's knowledge that
/// the nests of loops[p] and loops[q] store disjoint elements of every
/// tensor both store (the parts of one split operation): then both may
/// store it, as long as neither loads it.
Var hfuse(Func& f, const std::vector<Var>& loops, const std::vector<std::string>& shown, const std::string& name,
          const std::function<bool(size_t, size_t)>& disjoint, HFuseRefusal& why);

}  // namespace dccc::ir
