// The CUDA printer of the kernel IR (backend/gpu/kernel_ir.h): CUDA C++
// with inline PTX for the tensor-core and asynchronous-copy instructions.
// It decides nothing: every shape, layout, stage and operation comes from
// the Kernel; vloop expressions are printed by the CUDA backend's own
// expression printer (DeviceText).
//
// The per-lane fragment layouts it reads from shared memory are those of
// the PTX ISA ("Matrix Fragments for mma.m16n8k16 / mma.m16n8k8"), written
// out in docs/cuda.md. Under `#ifdef DCC_EMU` (tests/unit/backend/cuda_emu.h)
// the PTX is replaced by calls to a CPU emulation of each instruction.
#pragma once

#include <string>

#include "backend/gpu/kernel_ir.h"

namespace dccc::gpu {

/// How the CUDA backend prints vloop pieces in device code.
struct DeviceText {
  virtual ~DeviceText() = default;
  virtual std::string var(const ir::Var& v) = 0;              // a loop variable's C name
  virtual std::string expr(const ir::Expr& e) = 0;            // a value (loads through `a`)
  virtual std::string stmts(const std::vector<ir::Stmt>& s, int depth) = 0;
  virtual std::string buffer(const ir::BufferNode* b) = 0;    // a typed pointer to its storage
  virtual std::string scalar(const ir::BufferNode* b) = 0;    // a private scalar's register
  virtual std::string declare(const ir::BufferNode* b) = 0;   // its declaration (`float r_x = 0;`)
  /// A 16-bit value as the f32 it is rounded from (a cast from f32, or a
  /// 16-bit operation computed in f32), for a pack that rounds two at once.
  virtual std::string expr_unrounded(const ir::Expr& e) = 0;
  virtual std::string args_type() = 0;                        // the function's argument struct
};

/// Device helpers the printed kernels call (cp.async, tf32 conversion, the
/// MMAs, mbarriers; mma_prologue.cpp), once per source file that has such a
/// kernel.
extern const char* const kMmaPrologue;

/// `k` as CUDA C++: a struct `NAME__launch { ARGS a; const int32_t* tiles; }`
/// and `__global__ void NAME(NAME__launch)`, launched with one block of
/// k.threads threads per tile-list entry (the host builds the list:
/// tile_entry_ints(k) int32 values per entry, batch indices then m-tile
/// then n-tile).
std::string print_cuda(const Kernel& k, DeviceText& d);

/// int32 values per tile-list entry.
int tile_entry_ints(const Kernel& k);

/// Where a wgmma's A comes from: registers (4 of 16-bit pairs a lane,
/// mma.sync's A layout per warp), or shared memory by descriptor, K-major
/// or MN-major.
enum class WgmmaA { Registers, SharedK, SharedMN };

/// The specialisation (declared by the tensor-core prologue) of one
/// wgmma.mma_async.m64n<n>k16 with f32 accumulators and B through a
/// shared-memory descriptor, K-major or (trans_b) MN-major:
/// `dcc_wgmma_{bf16,f16}<n, trans_b>(d, a, bdesc)` with A from registers,
/// `dcc_wgmma_ss_{bf16,f16}<n, trans_a, trans_b>(d, adesc, bdesc)` with A in
/// shared memory; for f32 (m64n<n>k8 on tf32, K-major only)
/// `dcc_wgmma_tf32<n>(d, a, bdesc)` and `dcc_wgmma_ss_tf32<n>(d, adesc, bdesc,
/// scale_d)`; guarded so that kernels using the same one may each print it.
std::string wgmma_function(Elem e, int n, WgmmaA a, bool trans_b);

/// The store of a paired output's two f32 values `pr[0]`, `pr[1]` at
/// `ptr[at]` (StorePair): one float2 for f32 (`bits` 64), else both rounded
/// to `t` (bf16 / f16) and packed by one cvt into a 32-bit word.
std::string pair_store(const std::string& ptr, const std::string& at, int bits, Scalar t);

/// The prologue's helper that rounds two f32 values to bf16 (else f16) and
/// packs them into one 32-bit word, the first in the low half.
const char* pack16_function(bool bf16);

}  // namespace dccc::gpu
