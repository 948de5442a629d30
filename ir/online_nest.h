// The top-level assignments the online-reductions pass (ir/online_reductions.h)
// builds chains from: a statement of a function's top level that computes
// every element of one local (or output) tensor exactly once, element-wise
// (`T[v] = value`) or as a reduction (`acc = init; for r.. { acc = acc OP x
// }; T[v] = post`), taken apart into its loops, operand and result.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "ir/ir.h"

namespace dccc::ir {

/// One top-level assignment, taken apart.
struct Nest {
  size_t item = 0;
  Buffer target;
  std::vector<const StmtNode*> loops;  // left-side loops, outermost first
  std::vector<Var> lhs;                // their variables, T's dimensions in order
  bool reduction = false;
  Expr value;                          // element-wise: the value stored
  Buffer acc;                          // reduction: the accumulator
  Expr init, x, post;                  // acc's initial value, the operand, the stored value
  BinOp op = BinOp::Add;
  std::vector<const StmtNode*> rloops;  // the reduction loops, outermost first
};

/// The assignment top-level statement `item` (at `index` in the function's
/// top level) makes, or nullopt when it is not one of the two shapes above
/// (its store's indices not its loops' variables, its extents not the
/// tensor's, an accumulator's initial value not a constant, ...).
std::optional<Nest> parse_nest(const Stmt& item, size_t index);

/// Whether `s` stores to `b`.
bool stores_to(const Stmt& s, const BufferNode* b);
/// Whether `s` loads, stores or prints `b`.
bool uses(const Stmt& s, const BufferNode* b);

}  // namespace dccc::ir
