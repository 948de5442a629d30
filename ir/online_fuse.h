// The building half of the online-reductions pass (ir/online_reductions.h):
// the fused loop that replaces a chain Chain::analyse accepted
// (ir/online_chain.h). One pass over j keeps each member's running result
// and each + member's sum rescaled by exp(E(new) - E(old)); on the CPU the
// pass runs over blocks of j (block rows of per-j values, the first block
// peeled, transposed operands) with the rows a tile at a time
// (ir/online_tile.h). The rule and its worked example: docs/vloop.md,
// "Online reductions".
#pragma once

#include <cstdint>
#include <string>

#include "ir/ir.h"
#include "ir/online_chain.h"

namespace dccc::ir {

/// The fused statement replacing the root of `chain` (analysed), over
/// blocks of `block` values of j (1: one at a time). New buffers go to
/// `chain.new_buffers`, the nests to run before it (transposed copies) to
/// `chain.pre`; `note` gets what --explain says of the rewrite.
Stmt fuse_chain(Chain& chain, int64_t block, std::string& note);

}  // namespace dccc::ir
