// The CUDA printer of the fused attention kernel (gpu::AttentionKernel in
// backend/gpu/kernel_ir.h, planned by backend/gpu/plan_attention.h): CUDA
// C++ over the tensor-core helpers of print_cuda.h (kMmaPrologue), one
// `__device__` template per head dim and key tile, one `__global__` wrapper
// per instantiated head dim. Decides nothing the kernel IR does not say;
// the vloop pieces (the key loop's body, the statements before and after
// it) are printed by the CUDA backend's expression printer with the loop
// variables bound per accumulator element.
//
// Fragment layouts (docs/cuda.md, "MMA fragment layouts"): element e of the
// m16n8 tile nt of a lane is row gid + 8 (e >> 1), key 8 nt + 2 tig + (e & 1);
// the C fragments of n-tiles 2c and 2c + 1 are, as they stand, the A
// fragment of the k16 step c of P V (regs: (nt 2c, e 0 1), (2c, e 2 3),
// (2c + 1, e 0 1), (2c + 1, e 2 3)).
#pragma once

#include <string>

#include "backend/gpu/kernel_ir.h"
#include "backend/gpu/print_cuda.h"

namespace dccc::gpu {

/// DeviceText that can also print a given expression node as given text
/// (an accumulator element in registers) and declare a private scalar.
struct AttnDeviceText : DeviceText {
  virtual void bind(const ir::ExprNode* e, const std::string& text) = 0;
  /// A 16-bit division by `divisor` multiplies by NAME_r after scaling by
  /// NAME_k (dcc_fdiv16_pre; declared by the printer once a block).
  virtual void bind_divisor(const ir::ExprNode* divisor, const std::string& name) = 0;
  /// An f32 division by `divisor` (Invariant::divisor32) is corrected from
  /// NAME_q while fdiv_flag names a bool in scope (dcc_fdiv_pre clears it
  /// for an operand outside the range where that is exact); "" : a / b.
  virtual void bind_divisor32(const ir::ExprNode* divisor, const std::string& name) = 0;
  virtual void fdiv_flag(const std::string& flag) = 0;
  /// A float subtraction one of whose operands is known finite: printed as
  /// the IEEE difference, without the masked-value rule's -inf - -inf check.
  virtual void bind_finite_sub(const ir::ExprNode* sub) = 0;
  virtual void unbind_all() = 0;  // every kind
  virtual std::string value_type(const ir::BufferNode* b) = 0;  // `float`, `int64_t`, ...
};

/// `k` as CUDA C++: `struct NAME__launch { ARGS a; const int32_t* tiles; }`
/// and `__global__ void NAME__dDP(NAME__launch)` for every DP of
/// k.head_dims, launched with attention_warps(k, DP) * 32 threads and
/// attention_smem_bytes(k, DP) bytes of dynamic shared memory per tile-list
/// entry (batch indices, then the query tile).
std::string print_attention(const AttentionKernel& k, AttnDeviceText& d);


}  // namespace dccc::gpu
