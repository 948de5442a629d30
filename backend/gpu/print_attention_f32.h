// The f32 pieces of the fused attention kernel's device text
// (backend/gpu/print_attention.h prints the rest and calls these): S = Q K^T
// and O += P V on m16n8k8 tf32 mma.sync, and the sm_90a form on tf32 wgmma
// (docs/cuda.md, "f32 operands" and "f32 on tf32 wgmma"). `split`: 3xTF32
// (big and small tf32 parts), else one TF32 product. Each returns the text
// of its place in the key-tile body, over the body's names (DP, BN, NT, KQ,
// DT, LINE, Qs, Ks, Vs, Kl, Vb, Vl, stage, s, p, o, qf, gid, tig).
#pragma once

#include <string>

namespace dccc::gpu::attn_f32 {

/// The lane's Q fragments qf for the score's columns q0 + 0 .. DP - 1 (q0
/// empty: 0), from global memory (mma.sync; `pad`: the indent).
std::string q_frags(const std::string& q0, const std::string& pad);
std::string s_sync(bool split);  // S += Q K^T from the stage `ks` (mma.sync)
/// O += P V from V's stage (`vstage`: its index; `warp_cols`: the split
/// body's column offset), a fresh fragment a column tile (mma.sync).
std::string pv_sync(bool split, const std::string& vstage, const std::string& warp_cols);
std::string q_tile(bool split);     // Q's tf32 parts in shared memory, once a block (wgmma)
std::string convert(bool split);    // a key tile's K small and V transposed parts, then the barrier (wgmma)
std::string wg_scores(bool split);  // S = Q K^T on tf32 wgmma (declares s)
std::string pv_wg(bool split);      // O += P V on tf32 wgmma

}  // namespace dccc::gpu::attn_f32
