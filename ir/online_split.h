// Part of the online-reductions pass (ir/online_reductions.h): an
// assignment that computes its value from several reductions in one
// statement (`y = reduce(+, e * v) / reduce(+, e)`, lowered as one nest
// with an accumulator and loop each, then the store) taken apart so the
// chain analysis sees the shape it knows (mha's `out = reduce(+, p * v) /
// row_sum` with row_sum its own statement).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace dccc::ir {

/// A top-level statement split in two or more.
struct SplitReductions {
  std::vector<Stmt> items;          // replace the statement, in order
  std::vector<Buffer> new_buffers;  // the local tensors the extra reductions store
};

/// When top-level statement `item` is `loops { acc1 = c1; for r.. {acc1 =
/// acc1 op x1}; acc2 = c2; for ..; ...; T[v] = post(acc1, acc2, ..) }` (two
/// or more reductions, the left side the loops' variables as parse_nest
/// wants it): each reduction after the first as its own statement before
/// it, over fresh copies of the loops, storing local tensor `T.reduceK`
/// (T's dimensions, the accumulator's type), and the statement itself with
/// only the first reduction, its store reading `T.reduceK[v]` where it read
/// accK. The same values in the same order of operations, one more tensor
/// of T's rows. nullopt when the statement is not of that shape (a
/// reduction reads an earlier one's accumulator, an extra statement, ...).
/// `taken(name)` says whether a buffer name is in use.
std::optional<SplitReductions> split_reductions(const Stmt& item, const std::function<bool(const std::string&)>& taken);

}  // namespace dccc::ir
