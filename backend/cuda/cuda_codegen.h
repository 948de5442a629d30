// The CUDA backend: CUDA C++ source for the kernels of a storage-lowered
// vloop module, with host launch code, built by nvcc into the same kind of
// shared library as the CPU target (`dccc prog.toy --target=cuda -o prog.so`).
//
// Mapping (the default, until schedules choose one): every top-level
// statement of a function body becomes one kernel. When its outermost loop
// is parallel (its iterations write disjoint elements and privatise every
// scalar accumulator they use), that loop is spread over blockIdx.y and the
// perfectly nested parallel loops below it whose extents depend only on it
// (e.g. `i` over q.seqlen[b] and `j` over kv.seqlen[b]) are flattened over
// the threads of a grid-stride loop on x. Reductions run serially inside a
// thread. A statement without a parallel outer loop runs on one thread.
//
// A schedule's `gpu_blocks` / `gpu_threads` (ir::Func::gpu_mappings)
// replaces that choice for its statement: the named loops go on the grid
// (one block per iteration; two loops: blockIdx.y, blockIdx.x) and on the
// threads of a block (flattened into threadIdx.x); the body below runs
// serially in a thread (no shared-memory tiling, no warp reductions).
// Other directives need nothing of their own: the kernels are formed from
// the scheduled loops as from any others (guards, split and padded loops,
// F_* fusion maps and R_perm permutations read like offset arrays), except
// an `hfuse`d loop, whose ranges (an if / else chain) each get their own
// loops flattened over the threads.
//
// The prelude (the aux offset arrays) and every allocation size are computed
// on the host from host copies of the length arrays, then uploaded; the
// tile lists of the tensor-core and fused attention kernels are kept in the
// prelude cache per length pattern (FuncEmitter::tile_list).
//
// For every function `f` the generated source defines (extern "C"):
//   int32_t f__cuda(const int64_t* sizes, void* const* dev, void* const* host,
//                   void* const* aux_dev, void* const* aux_host, void* held,
//                   void* stream, int flags)
//     runs f on the device. `dev` has one pointer per input and output
//     buffer in Func::buffers order (device memory; scalars: host memory);
//     `host` is parallel to `dev` and holds host copies of the length
//     arrays the extents read (NULL for other buffers); aux_dev/aux_host the
//     prelude's arrays (NULL: computed and uploaded here); `held` a
//     dcc_prelude* that keeps the tile lists (NULL: the prelude cache);
//     every kernel runs on `stream` (a cudaStream_t); flags & 1
//     (f_on_stream) returns without waiting, and the scalar result's
//     pointer is device memory. Returns 0 or a dcc_status, with
//     dcc_last_error() set. The C wrapper (backend/abi) declares and calls
//     it as cuda_abi.h's kCudaLauncher / kCudaLauncherParams tell it.
//   int32_t f__cuda_host(const int64_t* sizes, void* const* host_buffers)
//     the same on host memory (copies in, runs, copies out): the signature
//     of the CPU backend's kernels, used by the differential tests.
// plus `int dcc_cuda_device_count(void)` (0 when there is no usable GPU).
#pragma once

#include <stdexcept>
#include <string>

#include "backend/abi/c_emit.h"
#include "backend/gpu/kernel_ir.h"
#include "ir/ir.h"

namespace dccc::backend {

/// What the CUDA target cannot express, located at the schedule directive,
/// declaration or statement that asked for it (reported as an [Unsupported]
/// error there).
struct CudaUnsupported : BackendUnsupported {
  using BackendUnsupported::BackendUnsupported;
};

/// Choices of the CUDA target that the command line makes.
struct CudaOptions {
  /// How f32 contractions use the tensor cores (`--fp32-math`).
  gpu::Fp32Math fp32 = gpu::Fp32Math::Split3xTf32;
  /// `--fast-math`: an `exp` with an f32 result is one `ex2.approx` of
  /// x log2 e (relative error below 2^-21 + |x| 2^-23, results under 2^-126
  /// flushed to 0; docs/cuda.md "Fast math") instead of `expf`.
  bool fast_math = false;
  /// `--gemm-stages`: shared-memory stages of a 16-bit contraction's sm_90a
  /// (wgmma, warp-specialized) form, 2-4 (48 KB each); 0: no such form
  /// (gpu::PlanOptions::wgmma_stages). 3 by default: with 16-bit outputs
  /// the staged epilogue fits beside 3, not 4 (docs/cuda.md, "wgmma GEMM").
  int gemm_stages = 3;
  /// `--attention-tiles`: tiles forced on the fused attention kernel.
  gpu::AttentionTuning attention;
  /// Non-empty (`dccc -lineinfo`: the root `.toy` file's path): `#line N
  /// "FILE"` before each statement's kernel, N the line of the `.toy`
  /// statement it runs and FILE its file (line_file, or the imported file it
  /// came from), so nvcc -lineinfo and the profilers name `.toy` lines.
  std::string line_file;
};

/// The .cu source for every function of `m` except `main`. Throws
/// CudaUnsupported naming what the CUDA target cannot express yet and where.
/// A statement that backend/gpu's contraction planner maps
/// (gpu/plan_contraction.h) becomes a tensor-core kernel printed from the
/// kernel IR; the others keep the kernels described above.
std::string emit_cuda(const ir::Module& m, const CudaOptions& options = {});

/// `dccc --emit=kernel`: per function and top-level statement, the kernel
/// IR of the planned tensor-core kernels (gpu::print_kernel), or one line
/// saying which kernel of this backend runs it and why the planner declined.
std::string emit_kernel_ir(const ir::Module& m, const CudaOptions& options = {});

/// `dccc --explain` on the CUDA target: one line per top-level statement
/// saying which kernel runs it -- the fused attention kernel or a
/// tensor-core contraction with its tile sizes, pipeline depth, schedule
/// order and assumed occupancy, or backend/cuda's kernels and why not.
std::string explain_kernels(const ir::Module& m, const CudaOptions& options = {});

/// True when the loop `loop` (a For) may run its iterations in parallel:
/// every tensor store in its body indexes with its variable, and every
/// scalar it writes is assigned before it is read in each iteration.
bool is_parallel_loop(const ir::Stmt& loop);

}  // namespace dccc::backend
