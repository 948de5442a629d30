// The contraction planner: one top-level statement of a storage-lowered
// vloop function, when it is a contraction, as a tiled tensor-core kernel
// of the kernel IR (backend/gpu/kernel_ir.h; docs/cuda.md, "The
// contraction planner").
//
// A contraction is recognised by its properties, not by a loop shape: a
// perfect nest of parallel loops whose innermost body is
//     acc = 0; for r { acc = acc + A * B }; <statements reading acc>
// where A and B are loads (f32, or bf16 / f16 widened to f32, both of one
// type), r indexes both, exactly one loop (the rows, M) indexes only A and
// exactly one (the columns, N) only B, and every other loop (the batch:
// groups, sequences, heads) indexes both or neither. The offsets must be
// affine in the row (column) variable and r, with strides and extents that
// depend on the batch variables alone -- ragged M, N and K per batch entry
// included (grouped GEMM, QK^T and PV per sequence and head). A factor may
// also be an f32 expression of one f32 load and of values of its own row
// (PV's exp(scores - row_max)). Anything else is declined, with the
// reason, and keeps backend/cuda's kernels.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "backend/gpu/kernel_ir.h"
#include "ir/ir.h"

namespace dccc::gpu {

struct PlanOptions {
  Fp32Math fp32 = Fp32Math::Split3xTf32;
  /// Whether a loop's iterations may run in parallel (backend/cuda's
  /// is_parallel_loop): every loop of the nest must be.
  std::function<bool(const ir::Stmt&)> parallel;
  /// Shared-memory stages of the sm_90a (wgmma, warp-specialized) form of
  /// a 16-bit contraction (2-4, 48 KB each; 0: no such form, sm_90a runs
  /// the mma.sync one). The driver's default is 3 (CudaOptions::gemm_stages).
  int wgmma_stages = 3;
};

/// The kernel named `name` for statement `item` of `f`, or nullopt with
/// `why` (when given) saying why it is not a contraction this planner maps.
std::optional<Kernel> plan_contraction(const ir::Func& f, const ir::Stmt& item, const std::string& name,
                                       const PlanOptions& options, std::string* why = nullptr);

}  // namespace dccc::gpu
