// Reduction nests of storage-lowered IR, and how their loads move.
//
// A loop over o whose body is
//   acc_u = init_u (every u); for r { acc_u = acc_u op x_u (every u) }; t_u[off_u] = f_u(acc_u) (every u)
// -- k distinct scalar accumulators (k >= 1; k > 1 for a tile of rows from
// ir/tile_contractions.h), r serial with an extent free of o, no accumulator
// read where it is not yet set, and no output t_u read inside the nest but by
// a fin at the element it stores (f_u = t_u[off_u] * c + acc_u, a sum kept
// in t_u across nests: the online-reductions pass's blocks) -- is
// a FlatReduction. What to do with one is decided from the stride, along o
// and along r, of the flat offset of each load in the x_u:
// - interchange_pays: some load is contiguous in o and strided in r (p v's
//   v[j, h, d] with o = d, r = j) and none the other way round; the CPU
//   backend then runs o inside r, in vector lanes
//   (backend/llvm/reduction_nests.cpp);
// - jam_pays: some load does not move with o but does with r (q k^T's
//   q[i, h, d] with o = j, r = d); ir/jam_reductions.h then runs several o
//   at once, each load of it serving all of them.
// Target-independent: used by the CPU pipeline's jam-reductions pass and by
// the LLVM backend.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "ir/ir.h"

namespace dccc::ir {

/// How an offset moves when a variable grows by one: not at all, by one
/// element, or otherwise (any other affine step, or not affine).
enum class Stride { Zero, One, Other };

/// The stride of integer offset `e` along `v`.
Stride stride(const Expr& e, const Var& v);

/// The parts of a FlatReduction, statement u of each list for accumulator u.
struct FlatReduction {
  std::vector<Stmt> inits;  // acc_u = init_u
  Stmt red;                 // the r loop
  std::vector<Stmt> steps;  // acc_u = acc_u op x_u
  std::vector<Stmt> fins;   // t_u[off_u] = f_u(acc_u)
};

/// `loop` (a For) as a FlatReduction, or nothing.
std::optional<FlatReduction> match_flat_reduction(const StmtNode& loop);

/// Calls fn(stride along the loop's variable, stride along r) for the flat
/// offset of every load in the steps' operands x_u.
void each_load_stride(const StmtNode& loop, const FlatReduction& n, const std::function<void(Stride, Stride)>& fn);

/// A load contiguous along the loop's variable and strided along r; none the other way.
bool interchange_pays(const StmtNode& loop, const FlatReduction& n);

/// A load that does not move with the loop's variable but does with r.
bool jam_pays(const StmtNode& loop, const FlatReduction& n);

}  // namespace dccc::ir
