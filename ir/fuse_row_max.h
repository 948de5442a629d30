// A row maximum computed by the statement that writes the rows.
//
// Attention's softmax subtracts each row's maximum, which a statement of its
// own computes by reading every element of the scores once more:
//
//   S[b, i, h, j] = V                                  (S_W, writes S)
//   ...
//   R[b, i, h] = reduce(max, S[b, i, h, j])            (S_M)
//
// A maximum does not depend on the order of its operands (fmax skips NaN, so
// NaN does not either), so S_W can fold each value into R as it stores it,
// and S_M is dropped:
//
//   R[b, i, h] = C                                     (before S_W)
//   S_W with its store `S[..] = V` become
//     t = V; S[..] = t; R[b, i, h] = max(R[b, i, h], t)
//
// For a fixed row, S_W visits j in ascending order whatever the order of its
// loops, as S_M did, so the interpreter computes the same bits. The CUDA
// target then folds a row's values with an atomic maximum (after a warp
// reduction in the contraction kernel: backend/cuda), which saves a kernel
// and a pass over the scores. On the CPU a separate pass is as cheap, so only
// the CUDA pipeline runs this.
//
// Fused when: S_M is a perfect loop nest over R's dimensions (extents equal
// to R's, so it writes every element) whose innermost body is
// `acc = C; for j { acc = max(acc, S[v1, .., vn, j]) }; R[v1, .., vn] = acc`
// with C a constant that is not NaN, R and acc of one type (f32 or f64),
// R a local tensor that no statement before S_M reads and no other statement
// writes; S a local tensor of R's type whose first n dimensions have R's
// extents and whose last one j's extent, stored by exactly one statement,
// an earlier one, S_W, in which the store `S[w1, .., wn, wj] = V` (V of S's
// type) lies directly in loops over w1 .. wn, wj (in any order, no
// other loop or `if` around it, extents S's), so that it stores each element
// once; and no statement between S_W and S_M writes S or touches R. Runs
// before storage lowering, after fuse_elementwise and fuse_row_sums.
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"

namespace dccc::ir {

/// Fuses every row maximum of `f` that qualifies (see above) into the
/// statement that writes its rows; returns the names of the tensors whose
/// maximum moved.
std::vector<std::string> fuse_row_max(Func& f);

}  // namespace dccc::ir
