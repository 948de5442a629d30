// The fused attention planner: one top-level statement of a storage-lowered
// vloop function, when it is the one-pass (online-softmax) nest that the
// online-reductions pass derives (ir/online_reductions.h), as ONE tensor-core
// kernel of the kernel IR (gpu::AttentionKernel in backend/gpu/kernel_ir.h;
// docs/cuda.md, "Fused attention").
//
// Recognised by properties, not by loop shapes or names:
//   - a perfect nest of parallel loops (the batch: sequences, heads, and the
//     query rows i) whose innermost body is
//       <row statements>  for d { T[.., d] = 0 }
//       for j { acc = 0; for r { acc = acc + Q(i, r) * K(j, r) };  <body> }
//       <statements after: loops over d reading T, row statements>
//     with Q indexed by i and not j, K by j and not i, of one type: bf16 or
//     f16 (m16n8k16), or f32 (m16n8k8 on tf32 parts: 3xTF32 by default,
//     one TF32 product with --fp32-math=tf32; --fp32-math=ieee keeps
//     backend/cuda's kernels), strides and extents depending on the batch only;
//   - <body> is, in any order the data flow allows: scalar statements per
//     (i, j) element (the scale, masks, caps, casts: they read j or an
//     element value), folds `a = max(a, x)` / `min` / `a = a [* c] + x` of
//     an element value x, row statements reading only row values (copies of
//     running results, the rescale `c = 1; if (...) c = exp(F(new) - F(old))`),
//     and one loop over the output columns `T[.., d] = T[.., d] [* c] + p * V(j, d)`;
//   - every rescale factor c telescopes: it is 1 unless its condition holds,
//     and otherwise exp(X - Y) where Y is X with a running result replaced by
//     its copy from before the fold (exp(F(r_new) - F(r_old))), so a tile of
//     keys may be folded at once (docs/vloop.md, "Blocks and tiles").
// Key tiles are skipped when the body's one index-only mask condition
// (`select(j <= i && i - j < W, s, -inf)`) makes every value that reaches a
// fold or P its identity (-inf for max, 0 for + and P), and one of its
// conjuncts, affine in i and j, holds at no corner of the tile pair.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "backend/gpu/kernel_ir.h"
#include "ir/ir.h"

namespace dccc::gpu {

struct AttentionOptions {
  /// Whether a loop's iterations may run in parallel (backend/cuda's is_parallel_loop).
  std::function<bool(const ir::Stmt&)> parallel;
  /// How f32 operands reach the tensor cores (`--fp32-math`): 3xTF32 (the
  /// default) or TF32; Ieee declines f32 attention (backend/cuda's kernels).
  Fp32Math fp32 = Fp32Math::Split3xTf32;
  AttentionTuning tuning;
};

/// The fused kernel named `name` for statement `item` of `f`, or nullopt
/// with `why` (when given) naming the first property that fails.
std::optional<AttentionKernel> plan_attention(const ir::Func& f, const ir::Stmt& item, const std::string& name,
                                              const AttentionOptions& options, std::string* why = nullptr);

/// True when `why` (from plan_attention) declines a nest that has a key loop
/// starting with a score contraction -- one worth saying why (the others are
/// not attention at all).
bool attention_candidate(const std::string& why);

}  // namespace dccc::gpu
