// Tensor-dimension fusion (CoRa §5.2, appendix B): after vloop fusion of
// loops b and i (`fuse(T.b, T.i)`, maps F_oif, F_fo, F_fi), the two storage
// dimensions (b, i) of a packed ragged tensor are one flat row dimension
// indexed by the fused iteration itself.
//
// Why that is exact. Storage lowering (CoRa Algorithm 1) places element
// T[b, i, r...] of a tensor with dimensions [b: E_b][L(b), R...] at
//   A[b] + i * R + rest(r...),   A[b] = sum_{c < b} L(c) * R,
// where R is the product of the (padded) extents below i, which must not
// depend on b or i. Vloop fusion numbers the iterations (b, i) sequence after
// sequence: F_oif[b] = sum_{c < b} L'(c) and fused iteration f has
// F_fo[f] = b, F_fi[f] = i with f = F_oif[b] + i, where L' is the inner
// loop's extent. When L == L' (the tensor's dimension i is what the fused
// loop iterates, unpadded), A[b] = F_oif[b] * R, so
//   A[F_fo[f]] + F_fi[f] * R = (F_oif[b] + i) * R = f * R:
// the fused iteration is the packed row index. An access T[F_fo[e],
// F_fi[e], r...] (e: the fused loop variable, or what split or padding made
// of it) becomes the flat access T@(e * R + rest(r...)), built here in the
// same row-major order storage lowering uses (which leaves flat accesses as
// they are). The addresses are the same, so results are bit-identical; what
// changes is that the body no longer loads A, F_fo and F_fi for them.
//
// The directive checks the layout and records the fusion in
// Func::dim_fusions (fuse_dims); storage lowering rewrites the accesses
// first thing (apply_dim_fusions), so multi-index IR (and the layout-free
// interpreter of `--no-storage-lowering`) keeps plain (b, i) accesses. The
// rewrite re-checks each tensor's layout then, since later passes (the
// default padding) may pad a tensor; one that no longer qualifies keeps its
// offset-array access. A map (F_fo, F_fi) that nothing reads after the
// rewrite is neither filled nor allocated.
//
// Refused (the reason returned) for the directive's own tensor when its
// storage is padded along i or b, its dimension i is not the fused loop's
// extent, its rows (dimensions below i) depend on b or i, or the fused loop
// does not index its first two dimensions. Other tensors the loop indexes
// by (b, i) are rewritten when they qualify and listed as skipped otherwise.
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"

namespace dccc::ir {

/// Checks that `fused` can index `target`'s rows (and which other tensors'
/// too) and records it in `f.dim_fusions`; "" when done, else why not
/// (nothing recorded then). `rewritten` and `skipped` (reasons) list the
/// tensors as of now.
std::string fuse_dims(Func& f, const FusedLoops& fused, const Buffer& target, std::vector<std::string>& rewritten,
                      std::vector<std::string>& skipped);

/// Rewrites the accesses at (F_fo[e], F_fi[e]) of every qualifying tensor,
/// for each fusion in `f.dim_fusions`, into flat row accesses; called by
/// storage lowering. Clears the list.
void apply_dim_fusions(Func& f);

}  // namespace dccc::ir
