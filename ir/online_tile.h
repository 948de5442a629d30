// Rows of the online-reductions pass's fused loop computed a tile at a time
// (ir/online_reductions.h): the loop over one row variable v whose values
// the keys and values do not depend on (the queries i of attention) runs
// `tile` rows per iteration with the rows' loops jammed, so each load of a
// key or value row serves all rows of the tile:
//
//   for v in 0 .. n { body(v) }
// becomes
//   for v.o in 0 .. n / T { jam(body(v.o * T + u), u = 0 .. T-1) }
//   for v.r in 0 .. n % T { body((n / T) * T + v.r) }
//
// Copy u of the body has its own scalars (accumulators, running results)
// and shares the loops of the others: jam() walks the copies in step, one
// loop for the copies' loops (their extents must not read v), their other
// statements one after another. Legal because the copies are independent:
// the body of a row writes only that row's elements and its own scalars
// (the caller's guarantee) and the tile only reorders statements of
// different rows.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace dccc::ir {

/// The order of the fused loop's row loops (variables `rows`, extents
/// `extents`, outermost first): rows that no load moving with j (one whose
/// indices read a variable of `moving`: the keys and values k[b][j, h, d])
/// reads go innermost, so that consecutive rows (the queries i of one head
/// h) read the same slices while they are in cache; the rows' own order
/// otherwise, and where an extent would then read a row bound inside it.
/// `unread` says whether the innermost row is one the moving loads do not
/// read (the row tile_rows may tile).
std::vector<size_t> row_order(const std::vector<Stmt>& step, const std::vector<Var>& moving,
                              const std::vector<Var>& rows, const std::vector<Expr>& extents, bool& unread);

/// A local tensor of per-row scratch (the block rows of the fused loop),
/// indexed by v at dimension `dim`: each copy of the row (and the rest
/// loop) gets its own tensor without that dimension, so the scratch of a
/// tile stays in cache instead of one row per value of v.
struct RowScratch {
  Buffer buffer;
  size_t dim = 0;
};

/// The loop `for v in 0 .. extent { body }` (kind `kind`) with its rows in
/// tiles of `tile` as above, or null when a loop extent or an unsupported
/// statement (print, assert) in `body` prevents it. `fresh_scalar(base, t)`
/// declares each new scalar of the copies, `fresh_local(like, dim, suffix)`
/// each copy of a scratch tensor (`like` without dimension `dim`).
Stmt tile_rows(const Stmt& body, const Var& v, const Expr& extent, LoopKind kind, int64_t tile,
               const std::vector<RowScratch>& scratch,
               const std::function<Buffer(const std::string&, Scalar)>& fresh_scalar,
               const std::function<Buffer(const Buffer&, size_t, const std::string&)>& fresh_local);

/// `x`, an operand of a reduction over `r` computed for each value of `j`
/// (the scores q[b][i, h, d] * k[b][j, h, d] with r = d), with each load
/// B[.., j, .., r] of an input or local tensor (last index r, one index j,
/// no other index reading j or r) read from a transposed copy
/// BT[.., .., r, j] instead: B's dimensions in order with the one indexed
/// by j moved last (when no other dimension's extent reads its variable).
/// The loop over j of a block then reads BT contiguously, and the backend
/// runs it in vector lanes along j with no horizontal sums. `copies` gets
/// the nest that fills each new BT (one per B, kept in `made`; the caller
/// runs it before the fused loop: one pass over B, O(B) memory);
/// `fresh_name(base)` names the new tensors.
/// The rows of a transposed copy (below) are padded to a multiple of this.
inline constexpr int64_t kTransposePad = 16;

/// `s` with each loop's variable a fresh one, so that copies of one nest
/// (the rows of a tile that are not jammed, the first block of the fused
/// loop and the others) each bind their own.
Stmt fresh_loops(const Stmt& s, std::map<const VarNode*, Expr> vars = {});

Expr transpose_loads(const Expr& x, const Var& j, const Var& r, std::map<const BufferNode*, Buffer>& made,
                     std::vector<Stmt>& copies, std::vector<Buffer>& buffers,
                     const std::function<std::string(const std::string&)>& fresh_name);

}  // namespace dccc::ir
