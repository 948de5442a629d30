#if DCC_WGMMA
  // ---- warp-specialized: warps 0-7 two consumer warpgroups (wgmma), warps 8-11 one producer warpgroup (cp.async) ----
  extern __shared__ __align__(16) char smem[];
  char* sbase = smem + ((1024 - (dcc_smem_u32(smem) & 1023)) & 1023);
  uint16_t* A_s = reinterpret_cast<uint16_t*>(sbase + 0);
  const uint32_t A_s_u32 = dcc_smem_u32(A_s);
  uint16_t* B_s = reinterpret_cast<uint16_t*>(sbase + WS_S * 16384);
  const uint32_t B_s_u32 = dcc_smem_u32(B_s);
  const uint32_t full_u32 = dcc_smem_u32(sbase + WS_S * (16384 + 128 * WS_TN));   // full[s]: 8 bytes each
  const uint32_t empty_u32 = full_u32 + WS_S * 8;               // empty[s]
  if (threadIdx.x == 0) {
    for (int s = 0; s < WS_S; ++s) {
      asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(full_u32 + 8 * s), "r"(WS_PRODUCERS));
      asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(empty_u32 + 8 * s), "r"(8));
    }
  }
  __syncthreads();
  if (threadIdx.x >= 256) {
#if WS_PRODUCERS == 128
    // ---- producer ----
    WS_DEC;
#endif
    const int pt = threadIdx.x - 256;
    const uint16_t* Ag = (const uint16_t*)a.p[3];
    const uint16_t* Bg = (const uint16_t*)a.p[4];
    int st = 0;
    uint32_t ph = 0;
    int64_t fills = 0;
    for (int64_t t = blockIdx.x; t < launch.ntiles; t += gridDim.x) {
      const int32_t* entry = launch.tiles + t * 3;
      const int64_t v0_g = entry[0];
      const int64_t m0 = (int64_t)entry[1] * 128, n0 = (int64_t)entry[2] * WS_TN;
      const int64_t M = ((int64_t)(((int32_t*)a.p[0])[v0_g]));
      const int64_t N = ((int64_t)(((int32_t*)a.p[2])[v0_g]));
      const int64_t K = ((int64_t)(((int32_t*)a.p[1])[v0_g]));
      const int64_t A_base = ((int64_t*)a.p[7])[v0_g];
      const int64_t A_rs = K;
      const int64_t A_ks = 1;
      const int64_t B_base = ((int64_t*)a.p[8])[v0_g];
      const int64_t B_rs = 1;
      const int64_t B_ks = N;
      const int64_t nk = (K + 63) / 64;
      const bool A_vec = A_ks == 1 && A_rs % 8 == 0 && A_base % 8 == 0 && K % 8 == 0 && (uintptr_t)&Ag[A_base] % 16 == 0;
      const bool B_vec = B_rs == 1 && B_ks % 8 == 0 && B_base % 8 == 0 && N % 8 == 0 && (uintptr_t)&Bg[B_base] % 16 == 0;
      // A: chunk u of this thread: row pt/8 + 4u, k (pt%8)*8; B: k line pt/16 + 2u, n (pt%16)*8 (32 each).
      const int a_r0 = pt / 8, a_c = (pt % 8) * 8;
      const int b_k0 = pt / (WS_TN / 8), b_n = (pt % (WS_TN / 8)) * 8;
      const int64_t a_rows_left = M - m0 - a_r0;  // row 4u inside while 4u < this
      const bool b_row = n0 + b_n < N;
      const uint16_t* a_src = A_vec && a_rows_left > 0 ? &Ag[A_base + (m0 + a_r0) * A_rs + a_c] : Ag;
      const uint16_t* b_src = B_vec && b_row ? &Bg[B_base + (n0 + b_n) + (int64_t)b_k0 * B_ks] : Bg;
      const int64_t a_ustep = WS_AU * A_rs, b_ustep = WS_BU * B_ks;
      for (int64_t kt = 0; kt < nk; ++kt) {
        if (fills++ >= WS_S) {
          asm volatile("{\n.reg .pred p;\nWAIT%=:\nmbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n@!p bra WAIT%=;\n}\n"
                       ::"r"(empty_u32 + 8 * st), "r"(ph ^ 1) : "memory");
        }
        uint16_t* as = A_s + st * 8192;
        uint16_t* bs = B_s + st * 64 * WS_TN;
        const int64_t kr = K - kt * 64;
        if (A_vec) {
          const uint16_t* p = a_src + kt * 64;
          const bool kok = a_c < kr;
  #pragma unroll
          for (int u = 0; u < 1024 / WS_PRODUCERS; ++u) {
            const int row = a_r0 + WS_AU * u;
            const bool ok = WS_AU * u < a_rows_left && kok;
            dcc_cp_async16(&as[row * 64 + (((a_c / 8) ^ (row & 7)) * 8)], ok ? p : Ag, ok);
            p += a_ustep;
          }
        } else {
  #pragma unroll 4
          for (int u = 0; u < 8192 / WS_PRODUCERS; ++u) {
            const int e = pt + WS_PRODUCERS * u, in = e % 64, out = e / 64;
            const int64_t gr = m0 + out, gk = kt * 64 + in;
            const bool ok = gr < M && gk < K;
            const int si = out * 64 + ((((in) / 8) ^ ((out) & 7)) * 8) + ((in) % 8);
            as[si] = ok ? Ag[A_base + gr * A_rs + gk * A_ks] : (uint16_t)0;
          }
        }
        if (B_vec) {
          const uint16_t* p = b_src + kt * 64 * B_ks;
  #pragma unroll
          for (int u = 0; u < 8 * WS_TN / WS_PRODUCERS; ++u) {
            const int kl = b_k0 + WS_BU * u;
            const bool ok = b_row && kl < kr;
            dcc_cp_async16(&bs[(b_n / 64) * 4096 + kl * 64 + ((((b_n % 64) / 8) ^ (kl & 7)) * 8)], ok ? p : Bg, ok);
            p += b_ustep;
          }
        } else {
  #pragma unroll 4
          for (int u = 0; u < 64 * WS_TN / WS_PRODUCERS; ++u) {
            const int e = pt + WS_PRODUCERS * u, in = e % WS_TN, out = e / WS_TN;
            const int64_t gr = n0 + in, gk = kt * 64 + out;
            const bool ok = gr < N && gk < K;
            const int si = ((in) / 64) * 4096 + (out) * 64 + (((((in) % 64) / 8) ^ ((out) & 7)) * 8) + ((in) % 8);
            bs[si] = ok ? Bg[B_base + gr * B_rs + gk * B_ks] : (uint16_t)0;
          }
        }
        if (A_vec && B_vec)
          asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(full_u32 + 8 * st) : "memory");
        else {
          asm volatile("cp.async.wait_all;\n" ::: "memory");
          asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(full_u32 + 8 * st) : "memory");
        }
        if (++st == WS_S) { st = 0; ph ^= 1; }
      }
    }
    asm volatile("cp.async.wait_all;\n" ::: "memory");
    return;
  }
  // ---- consumers ----
  WS_INC;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, gid = lane >> 2, tig = lane & 3;
  (void)lane, (void)gid, (void)tig;
  const int wm0 = (warp / 1) * 16, wn0 = 0;
  int st = 0, pst = WS_S - 1;
  uint32_t ph = 0;
  for (int64_t t = blockIdx.x; t < launch.ntiles; t += gridDim.x) {
    const int32_t* entry = launch.tiles + t * 3;
    const int64_t v0_g = entry[0];
    const int64_t m0 = (int64_t)entry[1] * 128, n0 = (int64_t)entry[2] * WS_TN;
    const int64_t M = ((int64_t)(((int32_t*)a.p[0])[v0_g]));
    const int64_t N = ((int64_t)(((int32_t*)a.p[2])[v0_g]));
    const int64_t K = ((int64_t)(((int32_t*)a.p[1])[v0_g]));
    const int64_t A_base = ((int64_t*)a.p[7])[v0_g];
    const int64_t A_rs = K;
    const int64_t A_ks = 1;
    const int64_t B_base = ((int64_t*)a.p[8])[v0_g];
    const int64_t B_rs = 1;
    const int64_t B_ks = N;
    const int64_t nk = (K + 63) / 64;
  float acc[1][WS_TN / 8][4];
#pragma unroll
  for (int i = 0; i < 1; ++i)
#pragma unroll
    for (int j = 0; j < WS_TN / 8; ++j)
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;
  {
    for (int64_t kt = 0; kt < nk; ++kt) {
      asm volatile("{\n.reg .pred p;\nWAIT%=:\nmbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n@!p bra WAIT%=;\n}\n"
                   ::"r"(full_u32 + 8 * st), "r"(ph) : "memory");
      dcc_fence_proxy_async();
      {
        const uint32_t sa = A_s_u32 + (uint32_t)(st * 16384) + (uint32_t)(warp >> 2) * 8192;
        const uint32_t sb = B_s_u32 + (uint32_t)(st * 128 * WS_TN);
        const uint64_t ad = dcc_wgmma_desc(sa, 16, 1024), bd = dcc_wgmma_desc(sb, 8192, 1024);
        dcc_wgmma_keep<WS_TN / 2>(&acc[0][0][0]);
        dcc_wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < 4; ++kk)
          dcc_wgmma_ss_bf16<WS_TN, 0, 1>(&acc[0][0][0], dcc_wgmma_desc_at(ad, kk * 32), dcc_wgmma_desc_at(bd, kk * 2048));
        dcc_wgmma_commit();
      }
      dcc_wgmma_wait<WS_INFLIGHT>();
      dcc_wgmma_keep<WS_TN / 2>(&acc[0][0][0]);
#if WS_INFLIGHT == 1
      if (kt > 0 && lane == 0) asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(empty_u32 + 8 * pst) : "memory");
#else
      if (lane == 0) asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(empty_u32 + 8 * st) : "memory");
#endif
      pst = st;
      if (++st == WS_S) { st = 0; ph ^= 1; }
    }
  }
  dcc_wgmma_wait<0>();
  dcc_wgmma_keep<WS_TN / 2>(&acc[0][0][0]);
#if WS_INFLIGHT == 1
  if (nk > 0 && lane == 0) asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(empty_u32 + 8 * pst) : "memory");
#endif
#ifdef WS_SMEM_EPI
    {
      // the tile through shared memory: each consumer warpgroup its 64 rows (528-byte rows), then 16-byte stores
      const int wgi = warp >> 2, wl = warp & 3;
      uint32_t* stg = reinterpret_cast<uint32_t*>(sbase + WS_S * (16384 + 128 * WS_TN) + 128 + wgi * 64 * 528);
      asm volatile("bar.sync %0, 128;\n" :: "r"(1 + wgi) : "memory");
#pragma unroll
      for (int j = 0; j < WS_TN / 8; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int r = wl * 16 + gid + 8 * h, c = 8 * j + 2 * tig;
          stg[(r * 528 + c * 2) / 4] = dcc_pack_bf16x2(acc[0][j][2 * h], acc[0][j][2 * h + 1]);
        }
      asm volatile("bar.sync %0, 128;\n" :: "r"(1 + wgi) : "memory");
      const int t = threadIdx.x & 127;
      const int64_t obase = ((int64_t*)a.p[9])[v0_g];
      uint16_t* outp = (uint16_t*)a.p[5];
      const int64_t row0 = m0 + wgi * 64;
      const bool vec = N % 8 == 0 && obase % 8 == 0 && ((uintptr_t)outp % 16) == 0;
#pragma unroll 4
      for (int i = 0; i < 16; ++i) {
        const int ch = t + 128 * i, r = ch / 32, c8 = (ch % 32) * 8;
        const int64_t gr = row0 + r, gc = n0 + c8;
        if (gr >= M) continue;
        const char* sp = reinterpret_cast<const char*>(stg) + r * 528 + c8 * 2;
        if (vec && gc + 8 <= N) {
          *reinterpret_cast<uint4*>(&outp[obase + gr * N + gc]) = *reinterpret_cast<const uint4*>(sp);
        } else {
          for (int e = 0; e < 8; ++e)
            if (gc + e < N) outp[obase + gr * N + gc + e] = reinterpret_cast<const uint16_t*>(sp)[e];
        }
      }
    }
#else
//EPILOGUE

#endif
  }
