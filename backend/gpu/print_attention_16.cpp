// The 16-bit pieces of the fused attention kernel's device text
// (backend/gpu/print_attention_16.h).
#include "backend/gpu/print_attention_16.h"

#include <fmt/format.h>

#include "backend/gpu/print_cuda.h"

namespace dccc::gpu::attn16 {

namespace {
const char* mma_fn(Elem e) { return e == Elem::BF16 ? "dcc_mma_tiles_bf16" : "dcc_mma_tiles_f16"; }
}  // namespace

std::string q_frags(const std::string& q0, const std::string& pad) {
  const std::string at = q0.empty() ? "" : q0 + " + ";
  // Reg r of k-step kq, m16 tile mt holds row 16 mt + gid + 8 (r & 1),
  // d 16 kq + 2 tig + 8 (r >> 1) + {0, 1}.
  const std::string loops = "#pragma unroll\n" + pad + "for (int kq = 0; kq < KQ; ++kq)\n#pragma unroll\n" + pad +
                            "for (int mt = 0; mt < MT; ++mt)\n#pragma unroll\n" + pad + "  for (int r = 0; r < 4; ++r) {\n" + pad +
                            "    const int64_t row = m0 + wm0 + 16 * mt + gid + 8 * (r & 1);\n" + pad +
                            "    const int64_t c = " + at + "16 * kq + 2 * tig + 8 * (r >> 1);\n";
  // The warp's rows and the block's columns all inside, pairs aligned:
  // 4-byte loads with no check (a branch a load kept nvcc from issuing
  // them together); else each checked.
  std::string o = pad + "if (q32 && m0 + wm0 + 16 * MT <= t_M && " + at + "DP <= t_QD) {\n" + loops + pad +
                  "    qf[kq][mt][r] = dcc_ld32(&Qp[t_Q_base + row * t_Q_rs + c]);\n" + pad + "  }\n" + pad + "} else {\n";
  o += loops;
  // Both elements in one 4-byte load where Q's columns are contiguous and
  // the pair 4-byte aligned (c is even), else one by one.
  o += pad + "    if (q32 && row < t_M && c + 1 < t_QD) {\n" + pad +
       "      qf[kq][mt][r] = dcc_ld32(&Qp[t_Q_base + row * t_Q_rs + c]);\n" + pad + "      continue;\n" + pad + "    }\n";
  o += pad + "    const uint16_t lo = row < t_M && c < t_QD ? Qp[t_Q_base + row * t_Q_rs + c * t_Q_ds] : (uint16_t)0;\n";
  o += pad + "    const uint16_t hi = row < t_M && c + 1 < t_QD ? Qp[t_Q_base + row * t_Q_rs + (c + 1) * t_Q_ds] : (uint16_t)0;\n";
  o += pad + "    qf[kq][mt][r] = dcc_pack16(lo, hi);\n" + pad + "  }\n" + pad + "}\n";
  return "  const bool q32 = t_Q_ds == 1 && (t_Q_base & 1) == 0 && (t_Q_rs & 1) == 0 && (uintptr_t)Qp % 4 == 0;\n" + o;
}

std::string pack_p(Elem elem, const std::string& dst, const std::string& mt) {
  return fmt::format("        {0}[0] = {1}(p[{2}][2 * kc][0], p[{2}][2 * kc][1]);\n"
                     "        {0}[1] = {1}(p[{2}][2 * kc][2], p[{2}][2 * kc][3]);\n"
                     "        {0}[2] = {1}(p[{2}][2 * kc + 1][0], p[{2}][2 * kc + 1][1]);\n"
                     "        {0}[3] = {1}(p[{2}][2 * kc + 1][2], p[{2}][2 * kc + 1][3]);\n",
                     dst, pack16_function(elem == Elem::BF16), mt);
}
/// O += P V on mma.sync: the key-step loop (the caller closes the P V block).
std::string pv_sync(Elem elem) {
  std::string out;
  out += "#pragma unroll\n    for (int kc = 0; kc < NT / 2; ++kc) {\n";
  out += "      uint32_t pa[MT][4];\n#pragma unroll\n      for (int mt = 0; mt < MT; ++mt) {\n" + pack_p(elem, "pa[mt]", "mt") +
         "      }\n";
  // V's B fragments, two column tiles an ldmatrix.x4.trans: matrix q
  // is keys 16 kc + 8 (q & 1) .. + 7, columns 16 j2 + 8 (q >> 1) .. + 7.
  out += "#pragma unroll\n      for (int j2 = 0; j2 < DT / 2; ++j2) {\n        uint32_t r[4];\n";
  out += "        dcc_ldmatrix_x4_trans(r, &vs[(16 * kc + (lane & 7) + 8 * ((lane >> 3) & 1)) * LINE + 16 * j2 + 8 * (lane >> 4)]);\n";
  out += "        uint32_t vf[2][2] = {{r[0], r[1]}, {r[2], r[3]}};\n";
  out += fmt::format("#pragma unroll\n        for (int mt = 0; mt < MT; ++mt)\n"
                     "          {}<1, 2>(reinterpret_cast<float (*)[2][4]>(&o[mt][2 * j2][0]), &pa[mt], vf);\n"
                     "      }}\n    }}\n",
                     mma_fn(elem));
  return out;
}

/// O += P V on wgmma: V MN-major (transposed B) from the stage: k-step kc
/// is lines 16 kc .. (2048 bytes a step), its 64-column parts BN lines apart
/// (the leading byte offset), 8-line groups 1024 bytes (the stride byte
/// offset); A = P's fragments, packed before the fence (registers an
/// in-flight wgmma reads stay unchanged).
std::string pv_wg(Elem elem) {
  std::string out = "    {\n      uint32_t pa[NT / 2][4];\n#pragma unroll\n      for (int kc = 0; kc < NT / 2; ++kc) {\n" +
                    pack_p(elem, "pa[kc]", "0") + "      }\n";
  out += "      const uint64_t vd = dcc_wgmma_desc(vs_u32 + (uint32_t)((vs - Vs) * sizeof(*vs)), BN * 128, 1024);\n"
         "      dcc_wgmma_keep<DT * 4>(&o[0][0][0]);\n      dcc_wgmma_fence();\n";
  out += fmt::format("#pragma unroll\n      for (int kc = 0; kc < NT / 2; ++kc)\n"
                     "        dcc_wgmma_{}<DP, 1>(&o[0][0][0], pa[kc], dcc_wgmma_desc_at(vd, kc * 2048));\n",
                     elem_name(elem));
  return out + "      dcc_wgmma_commit();\n      dcc_wgmma_wait<0>();\n      dcc_wgmma_keep<DT * 4>(&o[0][0][0]);\n    }\n";
}

/// S += Q K^T from the stage `ks`: K's B fragments,
/// two key tiles an ldmatrix.x4 (matrix q is keys 16 j2 + 8 (q >> 1) ..
/// + 7, d 16 kq + 8 (q & 1) .. + 7); B reg jj of n-tile nt holds
/// K[key 8 nt + gid][d 16 kq + 2 tig + 8 jj + {0, 1}].
std::string s_sync(Elem elem) {
  std::string out;
  out += "#pragma unroll\n    for (int kq = 0; kq < KQ; ++kq) {\n      uint32_t kf[NT][2];\n";
  out += "#pragma unroll\n      for (int j2 = 0; j2 < NT / 2; ++j2) {\n        uint32_t r[4];\n";
  out += "        dcc_ldmatrix_x4(r, &ks[(16 * j2 + (lane & 7) + 8 * (lane >> 4)) * LINE + 16 * kq + 8 * ((lane >> 3) & 1)]);\n";
  out += "        kf[2 * j2][0] = r[0];\n        kf[2 * j2][1] = r[1];\n        kf[2 * j2 + 1][0] = r[2];\n        kf[2 * j2 + 1][1] = r[3];\n      }\n";
  out += fmt::format("      {}<MT, NT>(s, qf[kq], kf);\n    }}\n", mma_fn(elem));
  return out;
}

/// The wgmma form's S (zeroed here) = Q K^T from the current K stage
/// (K-major B: the part of k-step kq, + 32 bytes a k-step inside its
/// 128-byte line; 8-line groups 1024 bytes apart), A = Q's fragments;
/// waited for. Pipelining S of the next tile under this tile's element
/// work (three stages, a second S in registers) was measured slower on an
/// H200: 0.75-0.90x (spills at 3 blocks an SM, or 2 blocks;
/// bench/RESULTS.md, session 18).
std::string wg_scores(Elem elem, bool any_q) {
  std::string out;
  out += "    float s[MT][NT][4];\n#pragma unroll\n    for (int nt = 0; nt < NT; ++nt)\n      for (int e = 0; e < 4; ++e) s[0][nt][e] = 0.0f;\n";
  // The stage's descriptor once, each k-step's by an add (dcc_wgmma_desc_at).
  out += "    {\n    const uint64_t kd = dcc_wgmma_desc(ks_u32 + (uint32_t)(stage * STAGE * sizeof(*Ks)), 16, 1024);\n"
         "    dcc_wgmma_keep<NT * 4>(&s[0][0][0]);\n    dcc_wgmma_fence();\n";
  const std::string kd = "dcc_wgmma_desc_at(kd, (kq >> 2) * (BN * 128) + (kq & 3) * 32)";
  // A: Q's fragments, or (QS) Q's tile by descriptor (K-major, laid out
  // as K's stage with TM lines; warpgroup g's 64 rows from line 64 g: 8 KB on).
  const std::string regs = fmt::format("#pragma unroll\n    for (int kq = 0; kq < KQ; ++kq)\n      "
                                       "dcc_wgmma_{}<BN, 0>(&s[0][0][0], qf[kq][0], {});\n",
                                       elem_name(elem), kd);
  if (!any_q) {
    out += regs;
  } else {
    // One warpgroup: no warp term, so that the descriptors are uniform
    // (computed in uniform registers, not moved there a k-step at a time).
    out += "    if constexpr (QS) {\n    const uint64_t qd = dcc_wgmma_desc(qs_u32 + (WARPS > 4 ? (uint32_t)(warp >> 2) * (64 * 128) : 0u), 16, 1024);\n";
    out += fmt::format("#pragma unroll\n    for (int kq = 0; kq < KQ; ++kq)\n      dcc_wgmma_ss_{}<BN, 0, 0>(&s[0][0][0], "
                       "dcc_wgmma_desc_at(qd, (kq >> 2) * (TM * 128) + (kq & 3) * 32), {});\n",
                       elem_name(elem), kd);
    out += "    } else {\n" + regs + "    }\n";
  }
  out += "    dcc_wgmma_commit();\n    dcc_wgmma_wait<0>();\n    dcc_wgmma_keep<NT * 4>(&s[0][0][0]);\n    }\n";
  return out;
}

}  // namespace dccc::gpu::attn16
