// LLVM 19 code generation for storage-lowered vloop IR.
//
// Each ir::Func becomes
//   int32_t NAME(const int64_t* sizes, void* const* buffers)
// where `sizes` holds the function's size parameters in Func::sizes order
// and `buffers` one pointer per input and output buffer in Func::buffers
// order, then one per aux array the prelude fills (ir::prelude_aux) when the caller has
// them (the C wrapper takes them from the prelude cache), or one NULL, or
// nothing when `buffers` is NULL: then the kernel computes the prelude
// itself. Local tensors and aux arrays it computes are allocated inside
// (dcc_alloc/dcc_free); accumulators live on the stack. The result is 0 on
// success or a dcc_status (integer division by zero, allocation failure, a
// negative length the function computes, offsets that overflow: a store to
// an aux array sums in i64 with overflow checks),
// with the text available from dcc_last_error(). Float-to-integer casts
// saturate, so no input makes the generated code undefined.
//
// Performance (all of it keeps results independent of the thread count):
// - A loop marked Parallel (ir/mark_parallel.h) is outlined into
//   `internal void NAME__parK(void* ctx, int64_t begin, int64_t end)` and run
//   by dcc_parallel_for; a failure inside it reaches the caller's status and
//   dcc_last_error() through the context (see emit_parallel).
// - optimize() runs LLVM's O3 pipeline for the host CPU with glibc's libmvec
//   as vector math library (its AVX-512 variants too, on a CPU that has
//   them); float `reduce` steps carry `reassoc`, so inner reductions
//   vectorize, and a step `acc + a * b` is one llvm.fmuladd (a fused
//   multiply-add where the CPU has one); loads and stores carry type-based
//   alias tags.
// - A reduction nest `for o { acc = init; for r { acc = acc op x }; t[.., o] = f(acc) }`
//   (or a tile of them, one accumulator per row, from ir/tile_contractions.h)
//   where x reads memory contiguously in o but strided in r runs in lane
//   blocks: vector accumulators along o held in registers through the whole
//   r loop, 32 or 64 lanes a block, the last lanes in masked vectors
//   (emit_lane_blocks), when every expression that moves with o is float
//   arithmetic on loads contiguous in o; other such nests are interchanged
//   (per-o accumulators in a stack array, inner loop over o). Which nests
//   these are is ir/flat_reduction.h's; a nest where x has a load
//   independent of o comes unrolled and jammed (ir/jam_reductions.h, the
//   CPU pipeline's last pass).
//   The interchanged lane loops run to a multiple of 16 instead of ending
//   in scalar steps when the loads they move read rows of a local tensor
//   storage-padded to 16 (the transposed copies of ir/transpose_operands.h).
// - A copy `for d { for r in 0 .. W { T[f(d) + r] = B[g(r) + d] } }` (W
//   elements in 64 bytes: the blocked transposed copies of
//   ir/transpose_operands.h) moves W x W tiles: W vector loads along d, a
//   transpose in registers by shuffles, W vector stores along r.
// - A float `max`/`min` reduction loop `for j { acc = max(acc, x(j)) }` runs
//   16 steps at a time in the lanes of a vector accumulator (LLVM's
//   vectorizer leaves maxnum/minnum reductions scalar without no-NaNs
//   flags); maxnum/minnum ignore NaNs in any order, so results are unchanged.
#pragma once

#include <memory>
#include <string>

#include "ir/ir.h"

namespace llvm {
class LLVMContext;
class Module;
class TargetMachine;
class Triple;
}  // namespace llvm

namespace dccc::backend {

/// Emits every function of `m` (which must be storage-lowered) into a new
/// LLVM module; returns null and sets `error` when the IR is malformed.
/// A non-empty `debug_file` adds DWARF line tables in that `.toy` file's
/// lines (backend/llvm/debug_info.h).
std::unique_ptr<llvm::Module> emit_llvm(const ir::Module& m, llvm::LLVMContext& ctx, std::string& error,
                                        const std::string& debug_file = "");

/// Runs the O3 pipeline (loop and SLP vectorizers on) over the module, with
/// `tm`'s cost model (may be null); `opt_level` 0..2 runs LLVM's O0..O2
/// pipelines instead (`dccc -O`).
void optimize(llvm::Module& m, llvm::TargetMachine* tm, int opt_level = 3);

/// True when optimize() lets the vectorizer call glibc's libmvec (x86-64
/// GNU/Linux): code for `triple` must then be linked with -lmvec.
bool uses_libmvec(const llvm::Triple& triple);

/// The host CPU's features in LLVM's "+avx2,-avx512f,..." form.
std::string host_features();

}  // namespace dccc::backend
