// The device helpers every tensor-core kernel calls (backend/gpu/print_cuda.h,
// kMmaPrologue): cp.async, ldmatrix, mma.sync and wgmma wrappers, mbarriers,
// with their CPU-emulation branches (DCC_EMU). Printed once a module.
#include "backend/gpu/print_cuda.h"

namespace dccc::gpu {

const char* const kMmaPrologue = R"CU(
#include <atomic>
// ---- tensor-core helpers (backend/gpu/mma_prologue.cpp; layouts: docs/cuda.md) ----
__device__ __forceinline__ uint32_t dcc_pack16(uint16_t lo, uint16_t hi) { return (uint32_t)lo | ((uint32_t)hi << 16); }
// 4 bytes global -> shared, asynchronously; `full` false: 4 zero bytes.
__device__ __forceinline__ void dcc_cp_async4(void* smem, const void* gmem, bool full) {
#ifdef DCC_EMU
  if (full) std::memcpy(smem, gmem, 4); else std::memset(smem, 0, 4);
#else
  unsigned s = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(s), "l"(gmem), "r"(full ? 4 : 0));
#endif
}
__device__ __forceinline__ void dcc_cp_async_commit() {
#ifndef DCC_EMU
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}
// 16 bytes global -> shared (both 16-byte aligned), asynchronously; `full` false: zeros.
__device__ __forceinline__ void dcc_cp_async16(void* smem, const void* gmem, bool full) {
#ifdef DCC_EMU
  if (full) std::memcpy(smem, gmem, 16); else std::memset(smem, 0, 16);
#else
  unsigned s = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(full ? 16 : 0));
#endif
}
// Two adjacent 16-bit elements (4-byte aligned) as one register.
__device__ __forceinline__ uint32_t dcc_ld32(const uint16_t* p) {
#ifdef DCC_EMU
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
#else
  return *reinterpret_cast<const uint32_t*>(p);
#endif
}
// Four 8 x 8 matrices of 16-bit elements (ldmatrix.sync.aligned.m8n8.x4):
// lane l gives the address of row l % 8 of matrix l / 8 (16 bytes,
// 16-byte aligned); register q of a lane receives row lane / 4, elements
// 2 (lane % 4) and + 1 of matrix q, or with .trans the elements at rows
// 2 (lane % 4) and + 1 of column lane / 4 (lower half: the first).
__device__ __forceinline__ void dcc_ldmatrix_x4(uint32_t* r, const uint16_t* p) {
#ifdef DCC_EMU
  dcc_emu_ldmatrix_x4(r, p, false);
#else
  unsigned s = (unsigned)__cvta_generic_to_shared(p);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(s));
#endif
}
__device__ __forceinline__ void dcc_ldmatrix_x4_trans(uint32_t* r, const uint16_t* p) {
#ifdef DCC_EMU
  dcc_emu_ldmatrix_x4(r, p, true);
#else
  unsigned s = (unsigned)__cvta_generic_to_shared(p);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(s));
#endif
}
template <int N>
__device__ __forceinline__ void dcc_cp_async_wait() {
#ifndef DCC_EMU
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}
// f32 -> tf32 (round to nearest, ties away; the low 13 bits zero).
__device__ __forceinline__ uint32_t dcc_tf32(float x) {
#ifdef DCC_EMU
  return dcc_emu_tf32(x);
#else
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
  return r;
#endif
}
// The big part of 3xTF32 (the fused f32 attention's wgmma form): x rounded
// to tf32 by two integer operations (half of tf32's ulp added to the
// magnitude's bits, the low 13 cleared; cvt.rna.tf32.f32 is a
// compare-and-select sequence in SASS): cvt.rna's value for every finite x
// and the infinities. The small part is x - big, exact and left unrounded
// (the tensor core reads its tf32 truncation), which carries a NaN x to the
// products whatever its big part became.
__device__ __forceinline__ float dcc_tf32_big(float x) { return __uint_as_float((__float_as_uint(x) + 0x1000u) & 0xFFFFE000u); }
// One 16-byte store to shared memory at `p` (16-byte aligned): st.shared.v4
// whatever the compiler makes of a float4 store (NVVM split the tf32
// parts' stores below into four 4-byte stores where it could not prove the
// swizzled address aligned: each a 4-way bank conflict where lanes step by
// a 16-byte chunk, ncu session 37: 23% of the f32 kernel's shared-memory
// wavefronts excessive).
__device__ __forceinline__ uint32_t dcc_smem_u32(const void* p);
__device__ __forceinline__ void dcc_st_shared_v4(float* p, float a, float b, float c, float d) {
#ifdef DCC_EMU
  p[0] = a;
  p[1] = b;
  p[2] = c;
  p[3] = d;
#else
  asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"r"(dcc_smem_u32(p)), "f"(a), "f"(b), "f"(c), "f"(d) : "memory");
#endif
}
// Four f32 values rounded to tf32 and stored as one 16-byte chunk at `big`
// (the wgmma tf32 form's producers, gpu::CopyMode::SplitTf32); with `small`
// also their remainders tf32(x - big) there (3xTF32).
// (in shared memory, 16-byte aligned).
__device__ __forceinline__ void dcc_st_tf32x4(float* big, float4 v) {
  dcc_st_shared_v4(big, __uint_as_float(dcc_tf32(v.x)), __uint_as_float(dcc_tf32(v.y)), __uint_as_float(dcc_tf32(v.z)),
                   __uint_as_float(dcc_tf32(v.w)));
}
__device__ __forceinline__ void dcc_st_split_tf32x4(float* big, float* small, float4 v) {
  const float b0 = __uint_as_float(dcc_tf32(v.x)), b1 = __uint_as_float(dcc_tf32(v.y)),
              b2 = __uint_as_float(dcc_tf32(v.z)), b3 = __uint_as_float(dcc_tf32(v.w));
  dcc_st_shared_v4(big, b0, b1, b2, b3);
  dcc_st_shared_v4(small, __uint_as_float(dcc_tf32(v.x - b0)), __uint_as_float(dcc_tf32(v.y - b1)),
                   __uint_as_float(dcc_tf32(v.z - b2)), __uint_as_float(dcc_tf32(v.w - b3)));
}
// The same with dcc_tf32_big's parts (small = x - big, unrounded).
__device__ __forceinline__ void dcc_st_split_tf32x4_fast(float* big, float* small, float4 v) {
  const float b0 = dcc_tf32_big(v.x), b1 = dcc_tf32_big(v.y), b2 = dcc_tf32_big(v.z), b3 = dcc_tf32_big(v.w);
  dcc_st_shared_v4(big, b0, b1, b2, b3);
  dcc_st_shared_v4(small, v.x - b0, v.y - b1, v.z - b2, v.w - b3);
}
// d = a * b + d on one 16 x 8 tile of the warp (every lane calls it).
__device__ __forceinline__ void dcc_mma_bf16(float* d, const uint32_t* a, const uint32_t* b) {
#ifndef DCC_EMU
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}
__device__ __forceinline__ void dcc_mma_f16(float* d, const uint32_t* a, const uint32_t* b) {
#ifndef DCC_EMU
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}
__device__ __forceinline__ void dcc_mma_tf32(float* d, const uint32_t* a, const uint32_t* b) {
#ifndef DCC_EMU
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}
// acc[i][j] += a[i] * b[j] for the warp's FM x FN tiles (every lane calls it);
// the CPU emulation exchanges the warp's registers once for all tiles.
#ifdef DCC_EMU
#define DCC_MMA_TILES(NAME, KIND)                                                                      \
  template <int FM, int FN>                                                                           \
  __device__ __forceinline__ void NAME(float (*acc)[FN][4], uint32_t (*a)[4], uint32_t (*b)[2]) { \
    dcc_emu_mma_tiles(dcc_emu_mma_kind::KIND, &acc[0][0][0], &a[0][0], &b[0][0], FM, FN);             \
  }
#else
#define DCC_MMA_TILES(NAME, KIND)                                                                      \
  template <int FM, int FN>                                                                           \
  __device__ __forceinline__ void NAME(float (*acc)[FN][4], uint32_t (*a)[4], uint32_t (*b)[2]) { \
    _Pragma("unroll") for (int i = 0; i < FM; ++i)                                                    \
      _Pragma("unroll") for (int j = 0; j < FN; ++j) dcc_mma_##KIND(acc[i][j], a[i], b[j]);          \
  }
#endif
DCC_MMA_TILES(dcc_mma_tiles_bf16, bf16)
DCC_MMA_TILES(dcc_mma_tiles_f16, f16)
DCC_MMA_TILES(dcc_mma_tiles_tf32, tf32)
// ---- warpgroup MMAs (wgmma, sm_90a only; docs/cuda.md "wgmma") ----
// DCC_WGMMA: this compilation targets sm_90a (nvcc defines
// __CUDA_ARCH_FEAT_SM90_ALL there; the CPU emulation when a test asks).
#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || defined(DCC_EMU_SM90A)
#define DCC_WGMMA 1
#else
#define DCC_WGMMA 0
#endif
// A shared-memory address (the shared window's offset) of a generic pointer.
__device__ __forceinline__ uint32_t dcc_smem_u32(const void* p) {
#ifdef DCC_EMU
  return dcc_emu_smem_u32(p);
#else
  return (uint32_t)__cvta_generic_to_shared(p);
#endif
}
// A matrix descriptor (PTX ISA, "Matrix Descriptor Format"): start address,
// leading and stride byte offsets (each >> 4, 14 bits), base offset 0 (the
// tile starts at a 1024-byte boundary), the swizzle mode in bits 62-63
// (1: 128-byte, the default; 2: 64-byte).
__device__ __forceinline__ uint64_t dcc_wgmma_desc(uint32_t addr, uint32_t lbo, uint32_t sbo, uint64_t swizzle = 1) {
  return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)((lbo & 0x3FFFF) >> 4) << 16) |
         ((uint64_t)((sbo & 0x3FFFF) >> 4) << 32) | (swizzle << 62);
}
// The same with 64-byte swizzle (mode 2: 64-byte lines, eight of them the
// swizzle's period; f32 attention's V transposed at 16 keys a tile).
__device__ __forceinline__ uint64_t dcc_wgmma_desc64(uint32_t addr, uint32_t lbo, uint32_t sbo) { return dcc_wgmma_desc(addr, lbo, sbo, 2); }
// The descriptor of the matrix `bytes` further on: the start address field
// is the low 14 bits (address >> 4); a shared address stays below 2^18
// (the 256 KB window), so the sum cannot carry out of the field. One add
// where building a descriptor takes several uniform-datapath operations.
__device__ __forceinline__ uint64_t dcc_wgmma_desc_at(uint64_t desc, uint32_t bytes) { return desc + (bytes >> 4); }
__device__ __forceinline__ void dcc_wgmma_fence() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL) && !defined(DCC_EMU)
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void dcc_wgmma_commit() {
#if defined(DCC_EMU)
  dcc_emu_wgmma_commit();
#elif defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
template <int N>
__device__ __forceinline__ void dcc_wgmma_wait() {
#if defined(DCC_EMU)
  dcc_emu_wgmma_wait(N);  // the emulator computes the groups here
#elif defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}
// The accumulators an in-flight wgmma writes: the compiler moves no access
// to them across this point (before the fence, after the wait).
template <int N>
__device__ __forceinline__ void dcc_wgmma_keep(float* d) {
#if !defined(DCC_EMU)
  _Pragma("unroll") for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
#else
  (void)d;
#endif
}
// The block's generic-proxy writes to shared memory (cp.async copies)
// visible to the async proxy that wgmma reads through.
__device__ __forceinline__ void dcc_fence_proxy_async() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL) && !defined(DCC_EMU)
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}
// ---- mbarriers (the warp-specialized wgmma form; docs/cuda.md "wgmma GEMM") ----
// `bar`: a shared-memory address of 8 bytes (dcc_smem_u32).
__device__ __forceinline__ void dcc_mbar_init(uint32_t bar, unsigned count) {
#ifdef DCC_EMU
  dcc_emu_mbar_init(bar, count);
#elif defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
#endif
}
__device__ __forceinline__ void dcc_mbar_arrive(uint32_t bar) {
#ifdef DCC_EMU
  dcc_emu_mbar_arrive(bar);
#elif defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
#endif
}
// An arrival once every cp.async this thread issued so far has landed (the
// count was set for it: .noinc).
__device__ __forceinline__ void dcc_mbar_arrive_cp_async(uint32_t bar) {
#ifdef DCC_EMU
  dcc_emu_mbar_arrive(bar);
#elif defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
#endif
}
// Until the phase of parity `parity` completed.
__device__ __forceinline__ void dcc_mbar_wait(uint32_t bar, uint32_t parity) {
#ifdef DCC_EMU
  dcc_emu_mbar_wait(bar, parity);
#elif defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("{\n.reg .pred p;\nDCC_MBAR_WAIT_%=:\nmbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
               "@!p bra DCC_MBAR_WAIT_%=;\n}\n" ::"r"(bar), "r"(parity) : "memory");
#endif
}
// Named barrier `id` of `count` threads (whole warps).
__device__ __forceinline__ void dcc_bar_sync(int id, int count) {
#ifdef DCC_EMU
  dcc_emu_named_barrier(id, count);
#else
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
#endif
}
__device__ __forceinline__ void dcc_cp_async_wait_all() {
#ifndef DCC_EMU
  asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}
// Which compilation of this module the device runs (1: sm_90a, with the
// wgmma forms), read by the launchers once a device (dcc__wgmma_form): the
// forms differ in tile width, threads and grid.
__device__ int dcc__wgmma_module = DCC_WGMMA;
static int dcc__wgmma_form() {
  static std::atomic<int> known[64];  // 0: not read yet, else 1 + the value
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0) {
    cudaGetLastError();
    return -1;
  }
  if (dev < 64 && known[dev].load() != 0) return known[dev].load() - 1;
  int v = 0;
  if (cudaMemcpyFromSymbol(&v, dcc__wgmma_module, sizeof v) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  if (dev < 64) known[dev].store(1 + v);
  return v;
}
// d (m64nN, f32) += a b: specialised per shape and B layout by the kernels
// that use them (gpu::wgmma_function).
template <int N, int TRANS_B>
__device__ void dcc_wgmma_bf16(float* d, const uint32_t* a, uint64_t desc);
template <int N, int TRANS_B>
__device__ void dcc_wgmma_f16(float* d, const uint32_t* a, uint64_t desc);
// d (m64nN, f32) += a b with A and B both in shared memory by descriptor
// (TRANS_A / TRANS_B: MN-major), specialised per use (gpu::wgmma_function).
template <int N, int TRANS_A, int TRANS_B>
__device__ void dcc_wgmma_ss_bf16(float* d, uint64_t adesc, uint64_t bdesc);
template <int N, int TRANS_A, int TRANS_B>
__device__ void dcc_wgmma_ss_f16(float* d, uint64_t adesc, uint64_t bdesc);
// d (m64nN, f32) += a b, m64nNk8 on tf32 values, A's fragments in registers
// (mma.sync m16n8k8's tf32 layout), B K-major by descriptor (gpu::wgmma_function).
template <int N>
__device__ void dcc_wgmma_tf32(float* d, const uint32_t* a, uint64_t desc);
// d (m64nN, f32) = (scale_d ? d : 0) + a b, m64nNk8 on tf32 values, A and B
// K-major in shared memory by descriptor (gpu::wgmma_function).
template <int N>
__device__ void dcc_wgmma_ss_tf32(float* d, uint64_t adesc, uint64_t bdesc, int scale_d);
)CU";

}  // namespace dccc::gpu
