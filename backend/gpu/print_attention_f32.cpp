// The f32 pieces of the fused attention kernel's device text
// (backend/gpu/print_attention_f32.h).
#include "backend/gpu/print_attention_f32.h"

#include <fmt/format.h>

namespace dccc::gpu::attn_f32 {

namespace {
// f32 operands on m16n8k8 tf32 MMAs (3xTF32: a = a_big + a_small with
// both parts tf32, a b ~ a_small b_big + a_big b_small + a_big b_big).
/// Fragment registers `big` (and `small`) of the f32 values `x` (n of them).
std::string split_regs(bool split, const std::string& big, const std::string& small, const std::string& x, int n,
                       const std::string& pad) {
  std::string o = fmt::format("{}uint32_t {}[1][{}]{};\n", pad, big, n, split ? fmt::format(", {}[1][{}]", small, n) : "");
  for (int r = 0; r < n; ++r) {
    o += fmt::format("{}{}[0][{}] = dcc_tf32({}[{}]);\n", pad, big, r, x, r);
    if (split) o += fmt::format("{}{}[0][{}] = dcc_tf32({}[{}] - __uint_as_float({}[0][{}]));\n", pad, small, r, x, r, big, r);
  }
  return o;
}
/// The tf32 MMAs of acc (FM x FN tiles) += A B, from the parts A_b / A_s, B_b / B_s.
std::string mmas_tf32(bool split, const std::string& fm, const std::string& fn, const std::string& acc, const std::string& ab,
                      const std::string& as, const std::string& bb, const std::string& bs, const std::string& pad) {
  std::string o;
  if (split) {
    o += fmt::format("{}dcc_mma_tiles_tf32<{}, {}>({}, {}, {});\n", pad, fm, fn, acc, as, bb);
    o += fmt::format("{}dcc_mma_tiles_tf32<{}, {}>({}, {}, {});\n", pad, fm, fn, acc, ab, bs);
  }
  return o + fmt::format("{}dcc_mma_tiles_tf32<{}, {}>({}, {}, {});\n", pad, fm, fn, acc, ab, bb);
}
}  // namespace

/// The lane's Q fragments (split into tf32 parts as used): reg r of k-step
/// kq holds row gid + 8 (r & 1), d 8 kq + tig + 4 (r >> 1); unchecked where
/// the warp's rows and the block's columns lie inside.
std::string q_frags(const std::string& q0, const std::string& pad) {
  const std::string at = q0.empty() ? "" : q0 + " + ";
  const std::string loops = "#pragma unroll\n" + pad + "for (int kq = 0; kq < KQ; ++kq)\n#pragma unroll\n" + pad +
                            "  for (int r = 0; r < 4; ++r) {\n" + pad + "    const int64_t row = m0 + wm0 + gid + 8 * (r & 1);\n" +
                            pad + "    const int64_t c = " + at + "8 * kq + tig + 4 * (r >> 1);\n";
  std::string o = pad + "if (m0 + wm0 + 16 <= t_M && " + at + "DP <= t_QD) {\n" + loops + pad +
                  "    qf[kq][r] = Qp[t_Q_base + row * t_Q_rs + c * t_Q_ds];\n" + pad + "  }\n" + pad + "} else {\n" + loops;
  o += pad + "    qf[kq][r] = row < t_M && c < t_QD ? Qp[t_Q_base + row * t_Q_rs + c * t_Q_ds] : 0.0f;\n" + pad + "  }\n" + pad + "}\n";
  return o;
}

/// S = Q K^T for f32: K-steps of 8 (d); B reg jj of key tile nt holds
/// K[key 8 nt + gid][d 8 kq + tig + 4 jj], read from shared memory (lines
/// of DP + 4 floats: the warp's 32 reads fall in 32 banks) and split just
/// before its MMAs (few registers live: Q's and S's fragments dominate).
/// Each K-step's three products go to a fresh fragment added to S with f32
/// adds (the tensor core truncates its sums; see pv_f32).
std::string s_sync(bool split) {
  std::string out;
  out += "#pragma unroll\n    for (int kq = 0; kq < KQ; ++kq) {\n";
  out += split_regs(split, "qb", "qs", "qf[kq]", 4, "      ");
  out += "#pragma unroll\n      for (int nt = 0; nt < NT; ++nt) {\n";
  out += "        const float k0 = ks[(8 * nt + gid) * LINE + 8 * kq + tig], k1 = ks[(8 * nt + gid) * LINE + 8 * kq + tig + 4];\n";
  out += "        const float kx[2] = {k0, k1};\n";
  out += split_regs(split, "kb", "kl", "kx", 2, "        ");
  out += "        float part[1][1][4] = {{{0.0f, 0.0f, 0.0f, 0.0f}}};\n";
  out += mmas_tf32(split, "1", "1", "part", "qb", "qs", "kb", "kl", "        ");
  out += "        for (int e = 0; e < 4; ++e) s[0][nt][e] += part[0][0][e];\n";
  out += "      }\n    }\n";
  return out;
}
/// O = O c + P V for f32, P's K-step kc being key tile kc of S: A reg r of
/// an m16n8k8 tile holds (row gid + 8 (r & 1), k tig + 4 (r >> 1)), and the
/// lane's S values are keys 2 tig, 2 tig + 1; so k slot tig stands for key
/// 2 tig and slot tig + 4 for key 2 tig + 1 (a sum over keys in any order),
/// and V's B reg jj holds V[key 8 kc + 2 tig + jj][column 8 dt + gid]. P's
/// tf32 parts are made once a tile; per output column tile dt the tile's
/// products are summed in a fresh fragment, then added to O in f32 (the
/// tensor core truncates its sums: one tile's worth of error, not N's).
std::string pv_sync(bool split, const std::string& vstage, const std::string& warp_cols) {
std::string out = fmt::format("    const float* vs = Vs + {} * (BN * LINE){};\n", vstage, warp_cols);
  out += "    uint32_t pb[NT][4]" + std::string(split ? ", ps[NT][4]" : "") + ";\n";
  out += "#pragma unroll\n    for (int kc = 0; kc < NT; ++kc) {\n";
  out += "      const float pr[4] = {p[0][kc][0], p[0][kc][2], p[0][kc][1], p[0][kc][3]};\n";
  out += "#pragma unroll\n      for (int r = 0; r < 4; ++r) {\n        pb[kc][r] = dcc_tf32(pr[r]);\n";
  if (split) out += "        ps[kc][r] = dcc_tf32(pr[r] - __uint_as_float(pb[kc][r]));\n";
  out += "      }\n    }\n";
  out += "#pragma unroll\n    for (int dt = 0; dt < DT; ++dt) {\n      float part[1][1][4] = {{{0.0f, 0.0f, 0.0f, 0.0f}}};\n";
  out += "#pragma unroll\n      for (int kc = 0; kc < NT; ++kc) {\n";
  out += "        const float vx[2] = {vs[(8 * kc + 2 * tig) * LINE + 8 * dt + gid], vs[(8 * kc + 2 * tig + 1) * LINE + 8 * dt + gid]};\n";
  out += split_regs(split, "vb", "vl", "vx", 2, "        ");
  out += mmas_tf32(split, "1", "1", "part", "&pb[kc]", "&ps[kc]", "vb", "vl", "        ");
  out += "      }\n";
  out += "      for (int e = 0; e < 4; ++e) o[0][dt][e] += part[0][0][e];\n    }\n";
  out += "    }\n";
  return out;
}

// f32 on tf32 wgmma (AttentionKernel::wgmma_dims): tf32 wgmma reads both
// operands K-major from shared memory (no transposed form), its A also
// from registers. 3xTF32's parts: big = x rounded to tf32 by two integer
// operations (dcc_tf32_big), small = x - big, exact, read by the tensor
// core truncated to tf32: three operations a value instead of two cvt.rna
// sequences, which were the kernel's largest cost (both parts by cvt.rna:
// the emulator's error 5.7e-7 against 6.3e-7; both parts truncated: 1.4e-6).
// One TF32 product (--fp32-math=tf32) rounds by cvt.rna (dcc_tf32).
// S = Q K^T: Q's and K's tiles [row][d] are K-major as they are. O += P V: A = P's fragments, B = V transposed (lines of d,
// keys along them), each 8 keys in the order 0 2 4 6 1 3 5 7: A reg r of
// a lane holds k slot tig + 4 (r >> 1), and the lane's S values are keys
// 2 tig and 2 tig + 1 (P's slot tig stands for key 2 tig, slot tig + 4 for
// key 2 tig + 1). The tensor core truncates its sums toward zero, so S
// is summed in partial sums of 32 columns of d each, and each tile's P V
// in a fresh fragment, added in f32 (round to nearest).

/// Q's tile as tf32 parts in shared memory (swizzled, TM lines), once a
/// block: rows m0 .., zeros past M and QD.
std::string q_tile(bool split) {
  // 16 bytes a load where Q's rows are contiguous and aligned: a thread
  // reads column c of rows r0, r0 + RS, .. (one address, then a pointer step
  // a row; a row's check one compare), all loaded before the first is split
  // and stored, so the block waits for one round trip to global memory (the
  // stores may alias the loads for all the compiler knows). The chunk loop
  // with its index arithmetic and checks a chunk was ~180 instructions a
  // warp of the ~1,840 a short sequence's block runs (ncu, session 33).
  std::string o = "    const bool qvec = t_Q_ds == 1 && t_Q_rs % 4 == 0 && t_Q_base % 4 == 0 && t_QD % 4 == 0 && (uintptr_t)Qp % 16 == 0;\n"
                  "    constexpr int CPL = DP / 4, THREADS = WARPS * 32, RS = THREADS / CPL, QC = TM / RS;  // chunks a line; rows a step; chunks a thread\n"
                  "    static_assert(THREADS % CPL == 0 && QC * RS == TM, \"whole lines a step\");\n"
                  "    const int r0 = (int)threadIdx.x / CPL, c = ((int)threadIdx.x % CPL) * 4;\n"
                  "    float4 qv[QC];\n    if (qvec) {\n"
                  "      const int64_t left = t_M - m0 - r0;  // rows from the thread's first on\n"
                  "      const bool cq = c < t_QD;\n      const int64_t qsp = RS * t_Q_rs;\n"
                  "      const float* qp = Qp + (t_Q_base + (m0 + r0) * t_Q_rs + c);\n"
                  "#pragma unroll\n      for (int it = 0; it < QC; ++it) {\n"
                  "        qv[it] = it * RS < left && cq ? *reinterpret_cast<const float4*>(qp) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);\n"
                  "        qp += qsp;\n      }\n    } else {\n"
                  "#pragma unroll\n      for (int it = 0; it < QC; ++it) {\n"
                  "        const int64_t row = m0 + r0 + it * RS;\n        float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};\n"
                  "#pragma unroll\n        for (int e = 0; e < 4; ++e)\n"
                  "          if (row < t_M && c + e < t_QD) v[e] = Qp[t_Q_base + row * t_Q_rs + (c + e) * t_Q_ds];\n"
                  "        qv[it] = make_float4(v[0], v[1], v[2], v[3]);\n      }\n    }\n"
                  "#pragma unroll\n    for (int it = 0; it < QC; ++it) {\n      const int r = r0 + it * RS;\n";
  o += split ? "      dcc_st_split_tf32x4_fast(&Qs[swz_at(TM, r, c)], &Qs[TM * DP + swz_at(TM, r, c)], qv[it]);\n"
               : "      dcc_st_tf32x4(&Qs[swz_at(TM, r, c)], qv[it]);\n";
  return o + "    }\n";
}
/// After the barrier that finds tile kt in its stage: K's small parts
/// (Kl; its big part is the stage) and V's transposed parts (Vb, Vl), made by the
/// block's threads (lanes along the keys: V's stores fill whole lines),
/// made visible to wgmma (async proxy) by a second barrier.
std::string convert(bool split) {
  std::string out;
  out += "    {\n    float* ks = Ks + stage * STAGE;\n    const float* vs = Vs + stage * STAGE;\n";
  // A fixed count of chunks a thread (BN x DP / 4 is a multiple of the
  // block's 128 threads): unrolled, the key r the same in every one (128 is
  // a multiple of BN), the address arithmetic mostly constants. Every
  // chunk is read before the first is written: K's big part goes back into
  // its stage, which the compiler cannot tell from the chunks still to be
  // read, so reads and writes interleaved wait for one read at a time.
  out += "    constexpr int CH = BN * (DP / 4) / (WARPS * 32);  // chunks a thread\n";
  out += "    static_assert(CH * WARPS * 32 == BN * (DP / 4) && (WARPS * 32) % BN == 0, \"whole chunks a thread\");\n";
  // The thread's key r and first column c0; chunk it's column c0 + it CS.
  // Where CS is a multiple of 8 (the swizzle's period), V's transposed
  // address of column c0 + it CS + e is that of c0 + e plus it CS lines:
  // four addresses a block, the rest immediate offsets (the sixteen
  // addresses computed from the chunk's column were ~150 instructions a
  // warp, once a block: a short sequence's block runs them for one tile).
  out += "    const int r = (int)threadIdx.x % BN, c0 = ((int)threadIdx.x / BN) * 4;  // the thread's key; its first column\n";
  out += "    constexpr int CS = (WARPS * 32 / BN) * 4;  // columns from one chunk of the thread to the next\n";
  out += "    float4 kx[CH], vx[CH];\n#pragma unroll\n    for (int it = 0; it < CH; ++it) {\n";
  out += "      const int at = swz_at(BN, r, c0 + it * CS);\n";
  out += "      kx[it] = *reinterpret_cast<const float4*>(&ks[at]);\n      vx[it] = *reinterpret_cast<const float4*>(&vs[at]);\n    }\n";
  out += "    const int slot = (r & ~7) | ((r & 7) >> 1) | ((r & 1) << 2);  // key r's place in its 8\n";
  // At 16 keys a tile (V transposed in 64-byte lines: an even line in banks
  // 0-15, an odd one in 16-31) a warp's halves store lines c0 + e and
  // c0 + 4 + e, in the same banks (2-way conflicts; ncu, session 37): the
  // second half stores its chunk's values in the order 1 0 3 2, on lines of
  // the other parity.
  out += "    const int hx = VW == 16 ? ((int)threadIdx.x / BN) & 1 : 0;  // the warp's second half (16 keys a tile)\n";
  out += "#pragma unroll\n    for (int it = 0; it < CH; ++it) {\n";
  out += "      const int c = c0 + it * CS, at = swz_at(BN, r, c);\n";
  out += split ? "      dcc_st_split_tf32x4_fast(&ks[at], &Kl[at], kx[it]);\n" : "      dcc_st_tf32x4(&ks[at], kx[it]);\n";
  out += "      const float v[4] = {vx[it].x, vx[it].y, vx[it].z, vx[it].w};\n";
  out += "#pragma unroll\n      for (int e = 0; e < 4; ++e) {\n"
         "        const int ee = e ^ hx;\n        const float x = hx ? v[e ^ 1] : v[e];  // column c + ee's value\n"
         "        const int vt = CS % 8 == 0 ? vt_at(c0 + ee, slot) + it * CS * VW : vt_at(c + ee, slot);\n";
  out += (split ? "        const float b = dcc_tf32_big(x);\n        Vb[vt] = b;\n        Vl[vt] = x - b;\n"
                  : "        Vb[vt] = __uint_as_float(dcc_tf32(x));\n");
  out += "      }\n    }\n    }\n    dcc_fence_proxy_async();\n    __syncthreads();  // the tile's tf32 parts are in\n";
  return out;
}
/// S = Q K^T on tf32 wgmma, both from shared memory: per 32 columns of d
/// (four k-steps) a partial sum (fresh: scale-d 0 at its first product),
/// the partial sums added in f32 after the wait. 3xTF32: each k-step
/// q_small k_big + q_big k_small + q_big k_big.
std::string wg_scores(bool split) {
  std::string out;
  out += "    float s[MT][NT][4];\n    {\n    constexpr int SG = (DP + 31) / 32;  // S's partial sums\n    float sp[SG][NT][4];\n";
  // Warpgroup g's rows from line 64 g of each 32-column part (128-byte
  // lines); no warp term with one warpgroup, so that the descriptors stay
  // uniform (session 28).
  out += "    const uint32_t qg = WARPS > 4 ? (uint32_t)(warp >> 2) * (64 * 128) : 0u;  // the warpgroup's rows\n";
  out += "    const uint64_t qd = dcc_wgmma_desc(qs_u32 + qg, 16, 1024), kd = dcc_wgmma_desc(ks_u32 + (uint32_t)(stage * STAGE * sizeof(*Ks)), 16, 1024);\n";
  if (split) out += "    const uint64_t qld = dcc_wgmma_desc(qs_u32 + (uint32_t)(TM * DP * sizeof(*Qs)) + qg, 16, 1024), kld = dcc_wgmma_desc(kl_u32, 16, 1024);\n";
  out += "    dcc_wgmma_keep<SG * NT * 4>(&sp[0][0][0]);\n    dcc_wgmma_fence();\n";
  out += "#pragma unroll\n    for (int kq = 0; kq < KQ; ++kq) {\n";
  out += "      const uint32_t oq = (kq >> 2) * (TM * 128) + (kq & 3) * 32, ok = (kq >> 2) * (BN * 128) + (kq & 3) * 32;\n";
  out += "      const int first = (kq & 3) == 0 ? 0 : 1;  // scale-d: a partial sum's first product starts it\n";
  if (split) {
    out += "      dcc_wgmma_ss_tf32<BN>(&sp[kq >> 2][0][0], dcc_wgmma_desc_at(qld, oq), dcc_wgmma_desc_at(kd, ok), first);\n";
    out += "      dcc_wgmma_ss_tf32<BN>(&sp[kq >> 2][0][0], dcc_wgmma_desc_at(qd, oq), dcc_wgmma_desc_at(kld, ok), 1);\n";
    out += "      dcc_wgmma_ss_tf32<BN>(&sp[kq >> 2][0][0], dcc_wgmma_desc_at(qd, oq), dcc_wgmma_desc_at(kd, ok), 1);\n";
  } else {
    out += "      dcc_wgmma_ss_tf32<BN>(&sp[kq >> 2][0][0], dcc_wgmma_desc_at(qd, oq), dcc_wgmma_desc_at(kd, ok), first);\n";
  }
  out += "    }\n    dcc_wgmma_commit();\n    dcc_wgmma_wait<0>();\n    dcc_wgmma_keep<SG * NT * 4>(&sp[0][0][0]);\n";
  out += "#pragma unroll\n    for (int nt = 0; nt < NT; ++nt)\n#pragma unroll\n      for (int e = 0; e < 4; ++e) {\n"
         "        float t = sp[0][nt][e];\n#pragma unroll\n        for (int g = 1; g < SG; ++g) t += sp[g][nt][e];\n"
         "        s[0][nt][e] = t;\n      }\n    }\n";
  return out;
}
/// O = O c + P V on tf32 wgmma: P's fragments (tf32 parts, keys paired
/// as V's transposed tile has them) from registers, V transposed from
/// shared memory; the tile's products in a fresh fragment added to O.
std::string pv_wg(bool split) {
  std::string out;
  out += "    {\n    uint32_t pb[NT][4]" + std::string(split ? ", ps[NT][4]" : "") + ";\n";
  out += "#pragma unroll\n    for (int kc = 0; kc < NT; ++kc) {\n";
  out += "      const float pr[4] = {p[0][kc][0], p[0][kc][2], p[0][kc][1], p[0][kc][3]};\n";
  out += split ? "#pragma unroll\n      for (int r = 0; r < 4; ++r) {\n        const float b = dcc_tf32_big(pr[r]);\n"
                   "        pb[kc][r] = __float_as_uint(b);\n        ps[kc][r] = __float_as_uint(pr[r] - b);\n"
                 : "#pragma unroll\n      for (int r = 0; r < 4; ++r) {\n        pb[kc][r] = dcc_tf32(pr[r]);\n";
  out += "      }\n    }\n";
  out += "    float part[DT][4];\n#pragma unroll\n    for (int dt = 0; dt < DT; ++dt)\n      for (int e = 0; e < 4; ++e) part[dt][e] = 0.0f;\n";
  // V transposed's lines: 128 bytes (8 of them 1024, the descriptor's
  // stride), or 64 at 16 keys a tile (64-byte swizzle, stride 512).
  out += "    const uint64_t vbd = VW == 32 ? dcc_wgmma_desc(vb_u32, 16, 1024) : dcc_wgmma_desc64(vb_u32, 16, 512);\n";
  if (split) out += "    const uint64_t vld = VW == 32 ? dcc_wgmma_desc(vl_u32, 16, 1024) : dcc_wgmma_desc64(vl_u32, 16, 512);\n";
  out += "    dcc_wgmma_keep<DT * 4>(&part[0][0]);\n    dcc_wgmma_fence();\n";
  out += "#pragma unroll\n    for (int kc = 0; kc < NT; ++kc) {\n      const uint32_t ov = (kc / (VW / 8)) * (DP * VW * 4) + (kc % (VW / 8)) * 32;\n";
  if (split) {
    out += "      dcc_wgmma_tf32<DP>(&part[0][0], ps[kc], dcc_wgmma_desc_at(vbd, ov));\n";
    out += "      dcc_wgmma_tf32<DP>(&part[0][0], pb[kc], dcc_wgmma_desc_at(vld, ov));\n";
  }
  out += "      dcc_wgmma_tf32<DP>(&part[0][0], pb[kc], dcc_wgmma_desc_at(vbd, ov));\n    }\n";
  out += "    dcc_wgmma_commit();\n    dcc_wgmma_wait<0>();\n    dcc_wgmma_keep<DT * 4>(&part[0][0]);\n";
  out += "#pragma unroll\n    for (int dt = 0; dt < DT; ++dt)\n      for (int e = 0; e < 4; ++e) o[0][dt][e] += part[dt][e];\n    }\n    }\n";
  return out;
}

}  // namespace dccc::gpu::attn_f32
