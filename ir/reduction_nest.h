// The shape the row-reduction fusions (ir/fuse_row_sums.h, ir/fuse_row_max.h)
// look for: a top-level statement that is a perfect loop nest whose
// innermost body is
//
//   acc = C; for r { acc = acc OP X }; post
//
// with acc a scalar, C a constant (no loads, variables or sizes), X reading
// no acc, and post a store through indices (not storage-lowered).
#pragma once

#include <optional>
#include <vector>

#include "ir/ir.h"

namespace dccc::ir {

struct ReductionNest {
  std::vector<const StmtNode*> loops;  // the nest, outermost first
  const StmtNode* inner = nullptr;     // the innermost body (a Seq of three)
  Stmt init;                           // acc = C
  Stmt loop;                           // for r { acc = acc OP X }
  Stmt update;                         // acc = acc OP X
  Stmt post;                           // the store after the loop
  Buffer acc;
};

/// `item` as a ReductionNest whose update uses `op`, or nothing.
std::optional<ReductionNest> parse_reduction_nest(const Stmt& item, BinOp op);

}  // namespace dccc::ir
