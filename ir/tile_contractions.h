// Register tiling of contractions for the CPU (unroll-and-jam over two
// left-side loops).
//
// A contraction nest, as lowering writes it,
//   for i { for j { acc = init; for r { acc = acc op x }; t[.., i, .., j, ..] = f(acc) } }
// (`scores[i, h, j] = reduce(+, q[i, h, d] * k[j, h, d])`, the `d` loop
// being r) reads, in x, operands that do not depend on i (k) or not on j
// (q). Computing one output per pass of r loads each of them once per
// output. The pass computes a TI x TJ tile of outputs per pass of r
// instead, each with its own accumulator (a fresh Scalar buffer), so one
// load of k serves TI outputs and one load of q serves TJ:
//   for io in 0 .. ni / TI {
//     for jo in 0 .. nj / TJ { acc_uw = init(i = io*TI+u, j = jo*TJ+w) for all u, w;
//                              for r' { acc_uw = acc_uw op x(...) for all u, w };
//                              t[...] = f(acc_uw) for all u, w }
//     for jr in 0 .. nj % TJ { the same tile with TJ = 1, j = (nj / TJ)*TJ + jr }
//   }
//   for ir in 0 .. ni % TI { the original j loop with i = (ni / TI)*TI + ir }
// Lengths that are not multiples of the tile, zero included, go through
// the remainder loops. TI = TJ = 4 (16 accumulators: with vector lanes along
// r, 16 of the 32 AVX-512 registers). When some operand reads memory
// contiguously along j (`p[i, h, j] * v[j, h, d]`, where j's role is played
// by d), TJ = 1: the backend interchanges j with r to vectorize along j
// (backend/llvm/codegen.h), and the TI accumulators share each load of v.
//
// Each output's accumulator sees exactly the operations of the original in
// the same order, so the results are bit-identical in the interpreter.
//
// Legal when the nest's iterations are independent: i and j serial loops,
// j's extent independent of i, r's independent of i and j; the fin store
// names both i and j as whole indices (so distinct (i, j) write distinct
// elements) and its tensor is loaded nowhere in the nest; the accumulator is
// a Scalar written before read and used nowhere else in the function;
// nothing is printed. Profitable when x has a load that depends on r but
// not on i (shared by the TI rows). Runs on multi-index IR (before storage
// lowering), after mark_parallel and reorder_loops; CPU pipeline only (the
// CUDA target maps these loops to threads).
#pragma once

#include "ir/ir.h"

namespace dccc::ir {

/// Tiles the contraction nests of `f` as described above; returns how many
/// nests it tiled.
int tile_contractions(Func& f);

}  // namespace dccc::ir
