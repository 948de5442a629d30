// A row reduction computed inside the contraction that reads it.
//
// Attention's softmax divides by a row sum that a statement of its own
// computes, reading every element of the row once more:
//
//   R[b, i, h] = reduce(+, T(b, i, h, j))                       (S_R)
//   out[b, i, h, d] = reduce(+, T(b, i, h, j) * v[b, j, h, d]) / R[b, i, h]   (S_C)
//
// When S_C's reduction loop runs over the same range as S_R's and one
// factor of its product is S_R's summand T (after the variables are
// renamed), S_C can sum T itself, in a second accumulator next to its own,
// and S_R and R are dropped:
//
//   acc = 0; rsum = 0;
//   for j { acc = acc + T * v[..]; rsum = rsum + T }
//   out[..] = acc / rsum
//
// The sum is made in the same order (j ascending from the same initial
// value), so it has the same bits as R; the CUDA contraction kernel adds the
// staged T values it already has (backend/cuda), which saves a kernel and a
// pass over the row. On the CPU it would recompute each row's sum once per
// d, so only the CUDA pipeline runs it.
//
// Fused when: S_R is a perfect loop nest over R's dimensions (extents equal
// to R's, so it writes every element) whose innermost body is
// `acc = C; for j { acc = acc + T }; R[v1, .., vn] = V(acc)` with C a
// constant and T reading neither acc nor R; R is a local tensor read by
// exactly one load, in the statement after S_R's loop nest of a later
// top-level statement S_C whose innermost body is
// `acc2 = C2; for r { acc2 = acc2 + [cast](P * Q) }; OUT[..] = ..R[e1, .., en]..`
// with r's extent equal to j's extent at vk := ek, and P or Q equal to T at
// vk := ek, j := r; and nothing from S_R to S_C (S_C included) writes a
// buffer T reads. Runs before storage lowering, after fuse_elementwise
// (which computes mha's `p` in both readers, making T and P equal).
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"

namespace dccc::ir {

/// Fuses every row sum of `f` that qualifies (see above) into its reader;
/// returns the names of the dropped tensors.
std::vector<std::string> fuse_row_sums(Func& f);

}  // namespace dccc::ir
