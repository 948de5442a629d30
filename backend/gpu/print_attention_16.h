// The 16-bit (bf16, f16) pieces of the fused attention kernel's device text
// (backend/gpu/print_attention.h prints the rest and calls these): S = Q K^T
// and O += P V on mma.sync (ldmatrix) and on wgmma. Each returns the text of
// its place in the key-tile body, over the body's names (DP, BN, MT, NT, KQ,
// DT, LINE, Ks, Vs, vs, ks, stage, s, p, o, qf, lane, ks_u32, vs_u32, qs_u32,
// QS, TM, WARPS, warp).
#pragma once

#include <string>

#include "backend/gpu/kernel_ir.h"

namespace dccc::gpu::attn16 {

/// The lane's Q fragments qf for the score's columns q0 + 0 .. DP - 1 (q0
/// empty: 0), from global memory, 4 bytes a pair where aligned (`pad`: the
/// indent; declares q32 first).
std::string q_frags(const std::string& q0, const std::string& pad);
/// P's A fragment `dst` of k-step kc (m16 tile `mt`) packed from the S
/// tiles 2 kc and 2 kc + 1 of the lane.
std::string pack_p(Elem elem, const std::string& dst, const std::string& mt);
std::string pv_sync(Elem elem);                // O += P V on mma.sync from V's stage `vs`
std::string pv_wg(Elem elem);                  // O += P V on wgmma (V MN-major from `vs`), waited for
std::string s_sync(Elem elem);                 // S += Q K^T on mma.sync from the stage `ks`
std::string wg_scores(Elem elem, bool any_q);  // S = Q K^T on wgmma (declares s); any_q: QS decides Q's source

}  // namespace dccc::gpu::attn16
