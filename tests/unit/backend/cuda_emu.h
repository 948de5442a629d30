// A CPU stand-in for the CUDA runtime, just enough to run the CUDA source
// that backend/cuda emits (the kernels and their host launchers) with a
// C++ compiler, for cuda_emu_test.cpp: every CUDA thread of a block is a
// fiber (ucontext, then _setjmp / _longjmp) of the launching thread, blocks run one after another (so
// `__shared__` arrays can be function statics), `__syncthreads` is a
// block-wide barrier and `__shfl_xor_sync` exchanges through a warp-wide
// one; a fiber that waits at a barrier hands over to the next (fibers, not
// a std::thread each: 128 threads spinning at barriers on a two-core CI
// machine ran the tests several times slower than their CPU time and slowed
// every test beside them). Device memory is host
// memory; streams, events and memory pools do nothing. Launches are written
// `dcc_emu_launch(K, grid, block, args)` (the test rewrites `K<<<grid,
// block>>>(args)`). Not a model of the GPU's memory ordering or timing:
// it checks what the kernels compute, not how fast or whether they race.
//
// The tensor-core kernels of backend/gpu/print_cuda.cpp test DCC_EMU and
// call, instead of their inline PTX, dcc_emu_tf32 (cvt.rna.tf32.f32) and
// dcc_emu_mma_tiles (mma.sync m16n8k16 bf16 / f16, m16n8k8 tf32, over a
// warp's tiles): a warp-wide exchange of every lane's fragment registers, after which each lane
// computes the elements of D its own registers hold, reading A and B where
// the PTX ISA's fragment layouts put them (docs/cuda.md), and adding them
// up as the tensor core does (truncating; dcc_emu_fused_sum). cp.async is a
// plain copy there; mbarriers (the warp-specialized wgmma form) are counts
// in shared memory whose waiters yield (dcc_emu_mbar_*).
#pragma once

#define DCC_EMU 1

#include <sys/mman.h>
#include <setjmp.h>
#include <ucontext.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <cstdio>
#include <memory>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))

struct uint3 {
  unsigned x = 0, y = 0, z = 0;
};
struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
struct alignas(8) float2 {
  float x, y;
};
inline float2 make_float2(float x, float y) { return {x, y}; }
struct alignas(16) float4 {
  float x, y, z, w;
};
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
struct alignas(16) uint4 {
  unsigned x, y, z, w;
};

inline thread_local uint3 threadIdx, blockIdx;
inline thread_local dim3 blockDim, gridDim;

namespace dcc_emu {
constexpr unsigned kFragRegs = 64;  // a lane's A and B registers for one dcc_emu_mma_tiles

/// The fibers of one launch: all on the launching thread, run in turn by
/// `run_block`; `yield` goes back to it. A fiber's first entry is
/// makecontext / swapcontext; every later switch (a barrier's wait, a
/// fiber's end) is _setjmp / _longjmp, which save and restore only the
/// callee-saved registers: swapcontext also sets the signal mask, a system
/// call each switch (a third of the emulated attention kernels' run time).
/// A jmp_buf taken on a fiber's stack is only jumped to while that fiber
/// waits in `yield` (its frames live); the scheduler's is taken anew on
/// every resume.
struct Fibers {
  std::vector<ucontext_t> ctx;
  struct Regs {
    jmp_buf at;
  };
  std::vector<Regs> jb;  // a waiting fiber's registers
  std::vector<char*> stacks;
  std::vector<bool> done, started;
  ucontext_t scheduler;
  jmp_buf back;  // the scheduler's registers while a fiber runs
  unsigned current = 0;
  uint64_t progress = 0;  // barrier releases and finished fibers: a deadlock shows as none
};
inline thread_local Fibers* fibers = nullptr;
[[gnu::noinline]] inline void yield() {
  Fibers* f = fibers;
  if (_setjmp(f->jb[f->current].at) == 0) _longjmp(f->back, 1);
}
/// A finished fiber's last switch: its stack is not used again.
[[noreturn, gnu::noinline]] inline void finish() { _longjmp(fibers->back, 1); }
// getcontext returns twice: kept out of the launcher's loops (-Wclobbered).
[[gnu::noinline]] inline void start_fiber(Fibers& f, unsigned t, size_t stack_bytes, void (*body)()) {
  f.done[t] = false;
  f.started[t] = false;
  getcontext(&f.ctx[t]);
  f.ctx[t].uc_stack.ss_sp = f.stacks[t];
  f.ctx[t].uc_stack.ss_size = stack_bytes;
  f.ctx[t].uc_link = nullptr;  // a fiber never returns: it ends by finish()
  makecontext(&f.ctx[t], body, 0);
}
[[gnu::noinline]] inline void resume_fiber(Fibers& f, unsigned t) {
  f.current = t;
  if (_setjmp(f.back) != 0) return;  // the fiber yielded or finished
  if (f.started[t]) _longjmp(f.jb[t].at, 1);
  f.started[t] = true;
  swapcontext(&f.scheduler, &f.ctx[t]);
}

/// A barrier of `expected` fibers; one that returns early drops out.
struct Barrier {
  unsigned expected = 0, arrived = 0;
  uint64_t generation = 0;
  void release() {
    arrived = 0;
    ++generation;
    ++fibers->progress;
  }
  void arrive_and_wait() {
    uint64_t g = generation;
    if (++arrived == expected) {
      release();
      return;
    }
    while (generation == g) yield();
  }
  void arrive_and_drop() {
    --expected;
    if (arrived > 0 && arrived == expected) release();
  }
};

struct Block {
  Barrier all;
  std::vector<Barrier> warps;
  std::vector<Barrier> named = std::vector<Barrier>(16);  // bar.sync id, count (expected set at first use)
  std::vector<uint64_t> lanes;  // shuffle values, one per thread
  std::vector<uint32_t> frags;  // mma operand registers, kFragRegs per thread
  // wgmma's asynchrony, per thread: the issued operations not yet in a
  // group, and the committed groups not yet waited for (oldest first).
  struct Wgmma {
    std::vector<std::function<void()>> open;
    std::vector<std::vector<std::function<void()>>> groups;
  };
  std::vector<Wgmma> wgmma;
};
inline thread_local Block* block = nullptr;
}  // namespace dcc_emu

inline void __syncthreads() { dcc_emu::block->all.arrive_and_wait(); }
// __syncwarp: the warp's 32 threads (every mask the kernels pass is full).
inline void __syncwarp(unsigned = 0xffffffffu) { dcc_emu::block->warps[threadIdx.x / 32].arrive_and_wait(); }
// bar.sync id, count: the first `count` arrivals at barrier `id` release it.
inline void dcc_emu_named_barrier(int id, int count) {
  if (id <= 0 || id >= 16 || count <= 0) std::abort();
  dcc_emu::Barrier& b = dcc_emu::block->named[static_cast<size_t>(id)];
  if (b.expected == 0) b.expected = static_cast<unsigned>(count);
  if (b.expected != static_cast<unsigned>(count)) std::abort();
  b.arrive_and_wait();
}

template <typename T>
T __shfl_xor_sync(unsigned, T v, int off) {
  static_assert(sizeof(T) <= 8);
  auto& b = *dcc_emu::block;
  unsigned t = threadIdx.x, lane = t % 32, base = t - lane;
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  b.lanes[t] = bits;
  b.warps[t / 32].arrive_and_wait();
  uint64_t other = b.lanes[base + (lane ^ static_cast<unsigned>(off))];
  b.warps[t / 32].arrive_and_wait();
  T r;
  std::memcpy(&r, &other, sizeof(T));
  return r;
}

// f32 -> tf32 as cvt.rna.tf32.f32: round the low 13 mantissa bits to
// nearest, ties away from zero (sign-magnitude: adding half an ulp to the
// bits does it), then clear them; NaN and infinity pass through.
inline uint32_t dcc_emu_tf32(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  if ((bits & 0x7F800000u) == 0x7F800000u) return bits;
  return (bits + 0x1000u) & ~0x1FFFu;
}

enum class dcc_emu_mma_kind { bf16, f16, tf32 };

// One element of an mma operand from its register bits.
inline double dcc_emu_mma_value(dcc_emu_mma_kind k, uint32_t reg, int half) {
  if (k == dcc_emu_mma_kind::tf32) {
    uint32_t bits = reg & ~0x1FFFu;  // the tensor core reads only the tf32 bits
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  uint16_t h = static_cast<uint16_t>(half ? reg >> 16 : reg & 0xFFFF);
  if (k == dcc_emu_mma_kind::bf16) {
    uint32_t bits = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  _Float16 f;
  std::memcpy(&f, &h, 2);
  return static_cast<double>(f);
}

// The tensor core's f32 accumulation, as measured on the A100 by Fasi,
// Higham, Mikaitis and Pranesh ("Numerical behavior of NVIDIA tensor
// cores", PeerJ CS 7:e330, 2021; test suite
// github.com/north-numerical-computing/tensor-cores-numerical-behavior):
// D = C + A B is computed in fused steps of `block` products (8 for 16-bit
// operands, 4 for tf32) plus the running value: the products are exact, every
// term is aligned to the largest of them and truncated to the f32
// significand of that one (no guard bits), the aligned terms are added
// exactly (carry bits on the left) and the sum is normalised to f32 by
// truncation (round toward zero). This, not an exactly rounded sum, is what
// makes a long single accumulator lose accuracy: the truncations all point
// toward zero, so their errors add up linearly in K.
inline float dcc_emu_fused_sum(const double* t, int n) {
  double big = 0;
  for (int i = 0; i < n; ++i) big = std::max(big, std::fabs(t[i]));
  if (big == 0) return 0.0f;
  int e;
  std::frexp(big, &e);                       // big = m 2^e, m in [0.5, 1): its f32 ulp is 2^(e - 24)
  const double q = std::ldexp(1.0, e - 24);
  double s = 0;                              // exact: each term a multiple of q below 2^25 q
  for (int i = 0; i < n; ++i) s += std::trunc(t[i] / q) * q;
  float f = static_cast<float>(s);
  if (std::fabs(static_cast<double>(f)) > std::fabs(s)) f = std::nextafter(f, 0.0f);
  return f;
}

// d + sum over k < K of a(k) b(k), as the tensor core forms it: in fused
// steps of `block` products (at most 8), each dcc_emu_fused_sum'd with the
// running value.
template <class FA, class FB>
float dcc_emu_fused_dot(float d, int K, int block, FA a, FB b) {
  for (int k0 = 0; k0 < K; k0 += block) {
    double terms[9];  // the running value and the block's products (exact in double)
    terms[0] = d;
    for (int k = 0; k < block; ++k) terms[1 + k] = a(k0 + k) * b(k0 + k);
    d = dcc_emu_fused_sum(terms, block + 1);
  }
  return d;
}

// acc[i][j] += A_i * B_j for fm x fn tiles of 16 x 8 (m16n8k16 for bf16 /
// f16, m16n8k8 for tf32), every lane of the warp calling it with its own
// registers a[i][0..3], b[j][0..1] and accumulators acc[i][j][0..3]: the
// lanes' registers are exchanged once, then each lane computes the D
// elements it holds (in fused steps, dcc_emu_fused_sum). Fragment layouts (PTX ISA, "Matrix Fragments for
// mma.m16n8k16 / mma.m16n8k8"; groupID g = lane / 4, threadID_in_group
// t = lane % 4):
//   16-bit A: reg r holds row g + 8 (r & 1), k 2t + 8 (r >> 1) + {0 (low half), 1 (high half)}
//   16-bit B: reg r holds k 2t + 8 r + {0, 1}, column g
//   tf32 A:   reg r holds row g + 8 (r & 1), k t + 4 (r >> 1)
//   tf32 B:   reg r holds k t + 4 r, column g
//   C / D:    element e is row g + 8 (e >> 1), column 2t + (e & 1)
inline void dcc_emu_mma_tiles(dcc_emu_mma_kind kind, float* acc, const uint32_t* a, const uint32_t* b, int fm, int fn) {
  auto& blk = *dcc_emu::block;
  unsigned t = threadIdx.x, lane = t % 32, base = t - lane;
  const unsigned nregs = static_cast<unsigned>(4 * fm + 2 * fn);
  if (nregs > dcc_emu::kFragRegs) std::abort();
  for (unsigned r = 0; r < nregs; ++r) blk.frags[dcc_emu::kFragRegs * t + r] = r < 4u * fm ? a[r] : b[r - 4 * fm];
  blk.warps[t / 32].arrive_and_wait();
  const bool tf32 = kind == dcc_emu_mma_kind::tf32;
  const int K = tf32 ? 8 : 16, block = tf32 ? 4 : 8;
  auto reg = [&](unsigned l, unsigned r) { return blk.frags[dcc_emu::kFragRegs * (base + l) + r]; };
  auto A = [&](int i, int row, int k) {
    if (tf32) return dcc_emu_mma_value(kind, reg((row % 8) * 4 + (k % 4), 4 * i + (row >= 8) + 2 * (k >= 4)), 0);
    return dcc_emu_mma_value(kind, reg((row % 8) * 4 + (k % 8) / 2, 4 * i + (row >= 8) + 2 * (k >= 8)), k % 2);
  };
  auto B = [&](int j, int k, int col) {
    if (tf32) return dcc_emu_mma_value(kind, reg(col * 4 + (k % 4), 4 * fm + 2 * j + (k >= 4)), 0);
    return dcc_emu_mma_value(kind, reg(col * 4 + (k % 8) / 2, 4 * fm + 2 * j + (k >= 8)), k % 2);
  };
  std::vector<float> out(static_cast<size_t>(fm) * fn * 4);
  for (int i = 0; i < fm; ++i)
    for (int j = 0; j < fn; ++j)
      for (int e = 0; e < 4; ++e) {
        int row = static_cast<int>(lane / 4) + 8 * (e >> 1), col = 2 * static_cast<int>(lane % 4) + (e & 1);
        size_t at = (static_cast<size_t>(i) * fn + j) * 4 + e;
        out[at] = dcc_emu_fused_dot(acc[at], K, block, [&](int k) { return A(i, row, k); },
                                    [&](int k) { return B(j, k, col); });
      }
  blk.warps[t / 32].arrive_and_wait();
  for (size_t at = 0; at < out.size(); ++at) acc[at] = out[at];
}

// Shared memory as wgmma descriptors see it: the kernel's array (a
// function static, 1024-byte aligned) registered by its wrapper, addresses
// as offsets from it.
inline thread_local const char* dcc_emu_smem_base = nullptr;
inline void dcc_emu_shared(const char* base) { dcc_emu_smem_base = base; }
inline uint32_t dcc_emu_smem_u32(const void* p) {
  const char* c = static_cast<const char*>(p);
  if (!dcc_emu_smem_base || c < dcc_emu_smem_base || c - dcc_emu_smem_base >= (1 << 18)) std::abort();
  return static_cast<uint32_t>(c - dcc_emu_smem_base);
}

// mbarriers (the warp-specialized wgmma form): 8 bytes of shared memory
// holding the expected and pending arrival counts and the phase; a waiter
// yields until the phase of the parity it waits for completed. cp.async
// copies land at once here, so their arrivals are plain ones. Arrivals
// count as progress (the launcher's deadlock check).
struct DccEmuMbar {
  uint16_t expected, pending;
  uint32_t phase;
};
static_assert(sizeof(DccEmuMbar) == 8);
inline DccEmuMbar* dcc_emu_mbar(uint32_t bar) {
  if (!dcc_emu_smem_base || bar % 8 != 0 || bar >= (1u << 18)) std::abort();
  return reinterpret_cast<DccEmuMbar*>(const_cast<char*>(dcc_emu_smem_base) + bar);
}
inline void dcc_emu_mbar_init(uint32_t bar, unsigned count) {
  if (count == 0 || count > 0xFFFF) std::abort();
  *dcc_emu_mbar(bar) = DccEmuMbar{static_cast<uint16_t>(count), static_cast<uint16_t>(count), 0};
}
inline void dcc_emu_mbar_arrive(uint32_t bar) {
  DccEmuMbar* m = dcc_emu_mbar(bar);
  if (m->pending == 0) std::abort();
  if (--m->pending == 0) {
    m->pending = m->expected;
    ++m->phase;
  }
  ++dcc_emu::fibers->progress;
}
inline void dcc_emu_mbar_wait(uint32_t bar, uint32_t parity) {
  while ((dcc_emu_mbar(bar)->phase & 1) == (parity & 1)) dcc_emu::yield();
}

// The 16-bit element (mn, k) of a matrix in shared memory described by a
// wgmma descriptor with 128-byte swizzle, by the PTX ISA's canonical
// layouts: K-major at start + (mn / 8) SBO + (mn % 8) 128 + 2 k; MN-major at
// start + (mn / 64) LBO + (k / 8) SBO + (k % 8) 128 + 2 (mn % 64); then the
// 16-byte chunk bits [4, 7) XOR bits [7, 10).
// `bytes` = 4: a 32-bit (tf32) element, K-major only (start + (mn / 8) SBO +
// (mn % 8) 128 + 4 k). Swizzle mode 2 (64-byte lines, K-major 32-bit only:
// f32 attention's V transposed at 16 keys a tile): start + (mn / 8) SBO +
// (mn % 8) 64 + 4 k, then bits [4, 6) XOR bits [7, 9).
inline uint32_t dcc_emu_desc_elem(uint64_t desc, int mn, int k, bool mn_major, int bytes = 2) {
  const uint64_t mode = desc >> 62;
  if ((mode != 1 && !(mode == 2 && bytes == 4)) || ((desc >> 49) & 7) != 0 || (bytes == 4 && mn_major)) std::abort();
  const uint32_t start = static_cast<uint32_t>(desc & 0x3FFF) << 4, lbo = static_cast<uint32_t>((desc >> 16) & 0x3FFF) << 4,
                 sbo = static_cast<uint32_t>((desc >> 32) & 0x3FFF) << 4;
  const uint32_t line = mode == 1 ? 128 : 64;
  if (bytes * k >= static_cast<int>(line)) std::abort();
  uint32_t off = mn_major ? start + (mn / 64) * lbo + (k / 8) * sbo + (k % 8) * 128 + 2 * (mn % 64)
                          : start + (mn / 8) * sbo + (mn % 8) * line + bytes * k;
  off ^= mode == 1 ? ((off >> 7) & 7) << 4 : ((off >> 7) & 3) << 4;
  if (off + bytes > (1u << 18)) std::abort();
  if (bytes == 4) {
    uint32_t w;
    std::memcpy(&w, dcc_emu_smem_base + off, 4);
    return w;
  }
  uint16_t h;
  std::memcpy(&h, dcc_emu_smem_base + off, 2);
  return h;
}

// wgmma.mma_async.sync.aligned.m64nNk16.f32.{bf16,f16} (m64nNk8.f32.tf32.tf32
// for tf32: A's registers one value each, mma.sync m16n8k8's layout; B
// K-major, fused steps of 4) with A in registers
// (PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate"),
// computed at the call (the wait is then a no-op). Warp w % 4 of the
// warpgroup owns rows 16 (w % 4) ..; its lanes' A registers are mma.sync's
// m16n8k16 A layout, D element 4 j + e of a lane is row g + 8 (e >> 1),
// column 8 j + 2 t + (e & 1). B (16 x N) is read through the descriptor as
// the PTX ISA's canonical 128-byte-swizzle layouts define it
// (dcc_emu_desc_elem, K-major or trans_b MN-major), independently of the
// printer's own address arithmetic.
inline void dcc_emu_wgmma_now(dcc_emu_mma_kind kind, float* d, const uint32_t* a, uint64_t desc, int n, bool trans_b) {
  auto& blk = *dcc_emu::block;
  unsigned t = threadIdx.x, lane = t % 32, base = t - lane;
  if ((blockDim.x % 128) != 0 || n % 8 != 0 || n > 256) std::abort();
  for (unsigned r = 0; r < 4; ++r) blk.frags[dcc_emu::kFragRegs * t + r] = a[r];
  blk.warps[t / 32].arrive_and_wait();
  const bool tf32 = kind == dcc_emu_mma_kind::tf32;
  if (tf32 && trans_b) std::abort();  // tf32: K-major B only
  auto A = [&](int row, int k) {
    if (tf32)  // m64nNk8: mma.sync m16n8k8's tf32 A layout, one value a register
      return dcc_emu_mma_value(kind, blk.frags[dcc_emu::kFragRegs * (base + (row % 8) * 4 + k % 4) + (row >= 8) + 2 * (k >= 4)], 0);
    uint32_t reg = blk.frags[dcc_emu::kFragRegs * (base + (row % 8) * 4 + (k % 8) / 2) + (row >= 8) + 2 * (k >= 8)];
    return dcc_emu_mma_value(kind, reg, k % 2);
  };
  auto B = [&](int k, int col) { return dcc_emu_mma_value(kind, dcc_emu_desc_elem(desc, col, k, trans_b, tf32 ? 4 : 2), 0); };
  std::vector<float> out(static_cast<size_t>(n / 2));
  for (int j = 0; j < n / 8; ++j)
    for (int e = 0; e < 4; ++e) {
      int row = static_cast<int>(lane / 4) + 8 * (e >> 1), col = 8 * j + 2 * static_cast<int>(lane % 4) + (e & 1);
      out[4 * j + e] = dcc_emu_fused_dot(d[4 * j + e], tf32 ? 8 : 16, tf32 ? 4 : 8, [&](int k) { return A(row, k); },
                                         [&](int k) { return B(k, col); });
    }
  blk.warps[t / 32].arrive_and_wait();
  for (size_t x = 0; x < out.size(); ++x) d[x] = out[x];
}

// wgmma.mma_async.sync.aligned.m64nNk16.f32.{bf16,f16} (m64nNk8.f32.tf32.tf32
// for tf32: K-major only, fused steps of 4) with A and B both in shared
// memory by descriptor (trans_a / trans_b: MN-major), computed at the call:
// warp w % 4 of the warpgroup computes rows 16 (w % 4) .. of the 64, D as
// in dcc_emu_wgmma; without `scale_d` D starts from zero.
inline void dcc_emu_wgmma_ss_now(dcc_emu_mma_kind kind, float* d, uint64_t adesc, uint64_t bdesc, int n, bool trans_a,
                                 bool trans_b, bool scale_d) {
  auto& blk = *dcc_emu::block;
  unsigned t = threadIdx.x, lane = t % 32;
  if ((blockDim.x % 128) != 0 || n % 8 != 0 || n > 256) std::abort();
  const int r0 = 16 * static_cast<int>((t / 32) % 4);
  blk.warps[t / 32].arrive_and_wait();
  std::vector<float> out(static_cast<size_t>(n / 2));
  for (int j = 0; j < n / 8; ++j)
    for (int e = 0; e < 4; ++e) {
      int row = r0 + static_cast<int>(lane / 4) + 8 * (e >> 1), col = 8 * j + 2 * static_cast<int>(lane % 4) + (e & 1);
      const bool tf32 = kind == dcc_emu_mma_kind::tf32;
      const int bytes = tf32 ? 4 : 2;
      out[4 * j + e] = dcc_emu_fused_dot(
          scale_d ? d[4 * j + e] : 0.0f, tf32 ? 8 : 16, tf32 ? 4 : 8,
          [&](int k) { return dcc_emu_mma_value(kind, dcc_emu_desc_elem(adesc, row, k, trans_a, bytes), 0); },
          [&](int k) { return dcc_emu_mma_value(kind, dcc_emu_desc_elem(bdesc, col, k, trans_b, bytes), 0); });
    }
  blk.warps[t / 32].arrive_and_wait();
  for (size_t x = 0; x < out.size(); ++x) d[x] = out[x];
}

// wgmma is asynchronous: an issued operation reads its A registers, its
// accumulators and shared memory at some time before the wait_group that
// covers its group. The emulator computes it at that wait, so a program
// that changes any of them in between (undefined on the GPU) gets a wrong
// result here instead of a right one by luck. Issue: queued; commit: the
// queue becomes a group; wait N: all but the newest N groups computed, in
// order. A thread whose kernel returns with operations pending aborts.
inline void dcc_emu_wgmma(dcc_emu_mma_kind kind, float* d, const uint32_t* a, uint64_t desc, int n, bool trans_b) {
  dcc_emu::block->wgmma[threadIdx.x].open.push_back([=] { dcc_emu_wgmma_now(kind, d, a, desc, n, trans_b); });
}
inline void dcc_emu_wgmma_ss(dcc_emu_mma_kind kind, float* d, uint64_t adesc, uint64_t bdesc, int n, bool trans_a,
                             bool trans_b, bool scale_d = true) {
  dcc_emu::block->wgmma[threadIdx.x].open.push_back(
      [=] { dcc_emu_wgmma_ss_now(kind, d, adesc, bdesc, n, trans_a, trans_b, scale_d); });
}
inline void dcc_emu_wgmma_commit() {
  auto& w = dcc_emu::block->wgmma[threadIdx.x];
  w.groups.push_back(std::move(w.open));
  w.open.clear();
}
inline void dcc_emu_wgmma_wait(int n) {
  auto& w = dcc_emu::block->wgmma[threadIdx.x];
  while (static_cast<int>(w.groups.size()) > n) {
    std::vector<std::function<void()>> g = std::move(w.groups.front());
    w.groups.erase(w.groups.begin());
    for (auto& op : g) op();
  }
}

// ldmatrix.sync.aligned.m8n8.x4(.trans).shared.b16 (PTX ISA, "ldmatrix"):
// lane l gives the address of row l % 8 of matrix l / 8 (8 elements);
// register q of lane l receives, of matrix q, row l / 4, elements 2 (l % 4)
// and 2 (l % 4) + 1 (lower half: the first), or with `trans` the elements
// at rows 2 (l % 4) and 2 (l % 4) + 1 of column l / 4. The addresses are
// exchanged warp-wide, as __shfl_xor_sync exchanges values.
inline void dcc_emu_ldmatrix_x4(uint32_t* r, const uint16_t* p, bool trans) {
  auto& b = *dcc_emu::block;
  unsigned t = threadIdx.x, lane = t % 32, base = t - lane;
  if ((reinterpret_cast<uintptr_t>(p) & 15) != 0) std::abort();  // rows must be 16-byte aligned
  b.lanes[t] = reinterpret_cast<uintptr_t>(p);
  b.warps[t / 32].arrive_and_wait();
  auto row = [&](unsigned q, unsigned i) { return reinterpret_cast<const uint16_t*>(b.lanes[base + 8 * q + i]); };
  for (unsigned q = 0; q < 4; ++q) {
    uint16_t lo, hi;
    if (!trans) {
      lo = row(q, lane / 4)[2 * (lane % 4)];
      hi = row(q, lane / 4)[2 * (lane % 4) + 1];
    } else {
      lo = row(q, 2 * (lane % 4))[lane / 4];
      hi = row(q, 2 * (lane % 4) + 1)[lane / 4];
    }
    r[q] = static_cast<uint32_t>(lo) | (static_cast<uint32_t>(hi) << 16);
  }
  b.warps[t / 32].arrive_and_wait();
}

inline unsigned atomicAdd(unsigned* p, unsigned v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }

inline int atomicCAS(int* p, int cmp, int val) {
  __atomic_compare_exchange_n(p, &cmp, val, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return cmp;
}

inline int32_t __float_as_int(float f) { int32_t v; std::memcpy(&v, &f, 4); return v; }
inline long long __double_as_longlong(double d) { long long v; std::memcpy(&v, &d, 8); return v; }
inline float __int_as_float(int32_t v) { float f; std::memcpy(&f, &v, 4); return f; }
inline float __uint_as_float(uint32_t v) { float f; std::memcpy(&f, &v, 4); return f; }
inline uint32_t __float_as_uint(float f) { uint32_t v; std::memcpy(&v, &f, 4); return v; }
inline double __longlong_as_double(long long v) { double d; std::memcpy(&d, &v, 8); return d; }
inline int64_t __mul64hi(int64_t a, int64_t b) { return static_cast<int64_t>((static_cast<__int128>(a) * b) >> 64); }
inline int __float2int_rz(float f) {
  if (f != f) return 0;
  if (f >= 2147483648.0f) return INT32_MAX;
  if (f <= -2147483648.0f) return INT32_MIN;
  return static_cast<int>(f);
}
inline int __double2int_rz(double f) {
  if (f != f) return 0;
  if (f >= 2147483648.0) return INT32_MAX;
  if (f <= -2147483648.0) return INT32_MIN;
  return static_cast<int>(f);
}
inline long long __float2ll_rz(float f) {
  if (f != f) return 0;
  if (f >= 9223372036854775808.0f) return INT64_MAX;
  if (f <= -9223372036854775808.0f) return INT64_MIN;
  return static_cast<long long>(f);
}
inline long long __double2ll_rz(double f) {
  if (f != f) return 0;
  if (f >= 9223372036854775808.0) return INT64_MAX;
  if (f <= -9223372036854775808.0) return INT64_MIN;
  return static_cast<long long>(f);
}

// f16 through the compiler's _Float16 (round to nearest even).
struct __half {
  uint16_t bits;
};
inline float __half2float(__half h) { _Float16 f; std::memcpy(&f, &h.bits, 2); return static_cast<float>(f); }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline __half __float2half_rn(float f) { _Float16 x = static_cast<_Float16>(f); __half h; std::memcpy(&h.bits, &x, 2); return h; }
inline __half __ushort_as_half(uint16_t v) { return __half{v}; }
inline uint16_t __half_as_ushort(__half h) { return h.bits; }

// The runtime API, on host memory.
using cudaError_t = int;
constexpr cudaError_t cudaSuccess = 0;
enum cudaMemcpyKind { cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost, cudaMemcpyDeviceToDevice, cudaMemcpyHostToHost };
using cudaStream_t = void*;
using cudaEvent_t = void*;
using cudaMemPool_t = void*;
enum cudaMemPoolAttr { cudaMemPoolAttrReleaseThreshold };
inline const char* cudaGetErrorString(cudaError_t) { return "emulated CUDA error"; }
inline const char* cudaGetErrorName(cudaError_t) { return "cudaErrorEmulated"; }
inline cudaError_t cudaGetLastError() { return cudaSuccess; }
inline cudaError_t cudaGetDeviceCount(int* n) { *n = 1; return cudaSuccess; }
inline cudaError_t cudaGetDevice(int* d) { *d = 0; return cudaSuccess; }
// A persistent grid's size (the fused attention kernel's gpu::AttnGrid): an
// emulated device of 2 SMs holding one block each, so the grid is smaller
// than the tile list and every block loops over several entries.
enum cudaDeviceAttr { cudaDevAttrMultiProcessorCount, cudaDevAttrComputeCapabilityMajor };
// Two SMs of compute capability 9 (an H100's: the long-key attention
// instantiation is taken as there).
inline cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr a, int) {
  *v = a == cudaDevAttrComputeCapabilityMajor ? 9 : 2;
  return cudaSuccess;
}
template <typename K>
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* n, K, int, size_t) { *n = 1; return cudaSuccess; }
// A __device__ variable is a host one here.
template <typename T>
cudaError_t cudaMemcpyFromSymbol(void* dst, const T& symbol, size_t n, size_t offset = 0) {
  if (offset + n > sizeof(T)) return 1;
  std::memcpy(dst, reinterpret_cast<const char*>(&symbol) + offset, n);
  return cudaSuccess;
}
inline cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* p, int) { *p = nullptr; return cudaSuccess; }
inline cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t, cudaMemPoolAttr, void*) { return cudaSuccess; }
inline cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }
inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaMalloc(void** p, size_t n) { *p = std::malloc(n ? n : 1); return *p ? cudaSuccess : 2; }
template <typename T>
cudaError_t cudaMalloc(T** p, size_t n) { return cudaMalloc(reinterpret_cast<void**>(p), n); }
inline cudaError_t cudaMallocAsync(void** p, size_t n, cudaStream_t) { return cudaMalloc(p, n); }
inline cudaError_t cudaFree(void* p) { std::free(p); return cudaSuccess; }
inline cudaError_t cudaFreeAsync(void* p, cudaStream_t) { std::free(p); return cudaSuccess; }
inline cudaError_t cudaMemsetAsync(void* p, int v, size_t n, cudaStream_t) { std::memset(p, v, n); return cudaSuccess; }
inline cudaError_t cudaMemcpy(void* d, const void* s, size_t n, cudaMemcpyKind) { if (n) std::memmove(d, s, n); return cudaSuccess; }
enum cudaMemoryType { cudaMemoryTypeUnregistered, cudaMemoryTypeHost, cudaMemoryTypeDevice, cudaMemoryTypeManaged };
struct cudaPointerAttributes {
  cudaMemoryType type;
};
// Emulated device memory is host memory.
inline cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* a, const void*) { a->type = cudaMemoryTypeUnregistered; return cudaSuccess; }
inline cudaError_t cudaMemcpyAsync(void* d, const void* s, size_t n, cudaMemcpyKind k, cudaStream_t) { return cudaMemcpy(d, s, n, k); }
inline cudaError_t cudaEventCreate(cudaEvent_t* e) { *e = nullptr; return cudaSuccess; }
inline cudaError_t cudaEventDestroy(cudaEvent_t) { return cudaSuccess; }
inline cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
inline cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t, cudaEvent_t) { *ms = 0; return cudaSuccess; }
// Dynamic shared memory: the fused attention kernels declare a static array
// of their size under DCC_EMU, so the attribute has nothing to do.
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize };
template <typename F>
cudaError_t cudaFuncSetAttribute(F, cudaFuncAttribute, int) { return cudaSuccess; }

namespace dcc_emu {
/// The tile list of the last fused attention launch (its `tiles` and
/// `ntiles`): attention_emu_test reads the entries' order.
inline const int32_t* last_tiles = nullptr;
inline int64_t last_ntiles = 0;
}  // namespace dcc_emu
extern "C" __attribute__((used, visibility("default"))) inline const int32_t* dcc_emu_last_tiles(int64_t* n) {
  *n = dcc_emu::last_ntiles;
  return dcc_emu::last_tiles;
}

/// Runs `kernel` over `grid` x `block`: the blocks one after another, the
/// threads of a block concurrently, or (`serial`: a kernel without
/// __syncthreads and shuffles, whose threads cannot wait for each other)
/// one after another.
template <typename Args>
void dcc_emu_launch(void (*kernel)(Args), dim3 grid, dim3 block, Args a, bool serial) {
  const unsigned n = block.x * block.y * block.z;
  if constexpr (requires(Args x) { x.tiles; x.ntiles; }) {
    dcc_emu::last_tiles = a.tiles;
    dcc_emu::last_ntiles = a.ntiles;
  }
  if (serial) {
    blockDim = block;
    gridDim = grid;
    for (unsigned bz = 0; bz < grid.z; ++bz)
      for (unsigned by = 0; by < grid.y; ++by)
        for (unsigned bx = 0; bx < grid.x; ++bx) {
          blockIdx = uint3{bx, by, bz};
          for (unsigned t = 0; t < n; ++t) {
            threadIdx = uint3{t % block.x, (t / block.x) % block.y, t / (block.x * block.y)};
            kernel(a);
          }
        }
    return;
  }
  // One fiber per thread, on a stack of its own (mapped once per launch,
  // touched only as far as the kernel's frame goes); the blocks in turn.
  // Each fiber runs until it finishes or waits at a barrier, then the
  // next (one warp at a time: below); a round in which no barrier opens and
  // no fiber finishes is a deadlock (a barrier some thread never reaches),
  // reported, not hung.
  constexpr size_t kStack = 1 << 20;
  dcc_emu::Fibers f;
  f.ctx.resize(n);
  f.jb.resize(n);
  f.done.assign(n, false);
  f.started.assign(n, false);
  for (unsigned t = 0; t < n; ++t) {
    void* p = mmap(nullptr, kStack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) std::abort();
    f.stacks.push_back(static_cast<char*>(p));
  }
  dcc_emu::Fibers* saved = dcc_emu::fibers;
  dcc_emu::fibers = &f;
  blockDim = block;
  gridDim = grid;
  static thread_local void (*entry_kernel)(Args);
  static thread_local Args* entry_args;
  entry_kernel = kernel;
  entry_args = &a;
  auto body = +[] {
    dcc_emu::Fibers& fs = *dcc_emu::fibers;
    unsigned t = fs.current;
    entry_kernel(*entry_args);
    if (!dcc_emu::block->wgmma[t].open.empty() || !dcc_emu::block->wgmma[t].groups.empty()) {
      std::fprintf(stderr, "dcc_emu_launch: thread %u returned with wgmma operations not waited for\n", t);
      std::abort();
    }
    dcc_emu::block->warps[t / 32].arrive_and_drop();
    dcc_emu::block->all.arrive_and_drop();
    fs.done[t] = true;
    ++fs.progress;
    dcc_emu::finish();
  };
  for (unsigned bz = 0; bz < grid.z; ++bz)
    for (unsigned by = 0; by < grid.y; ++by)
      for (unsigned bx = 0; bx < grid.x; ++bx) {
        dcc_emu::Block b;
        b.all.expected = n;
        for (unsigned w = 0; w < (n + 31) / 32; ++w) b.warps.push_back(dcc_emu::Barrier{std::min(32u, n - 32 * w)});
        b.lanes.assign(n, 0);
        b.frags.assign(dcc_emu::kFragRegs * n, 0);
        b.wgmma.assign(n, {});
        dcc_emu::block = &b;
        blockIdx = uint3{bx, by, bz};
        for (unsigned t = 0; t < n; ++t) dcc_emu::start_fiber(f, t, kStack, body);
        // The warps in turn, each run as far as it goes (until each of its
        // threads waits at a barrier no thread of the warp opens, or has
        // finished) before the next: one warp runs ahead of the others as
        // far as the kernel's barriers let it, so a missing block barrier
        // (a warp reading shared memory the others have not written yet,
        // or overwriting what they still read) gives wrong results here
        // instead of right ones by luck. The first warp runs ahead in
        // blocks of even linear index, the last in odd ones.
        const unsigned nw = (n + 31) / 32;
        const bool last_first = ((bx + grid.x * (by + grid.y * bz)) & 1) != 0;
        for (unsigned left = n; left > 0;) {
          uint64_t before = f.progress;
          for (unsigned k = 0; k < nw; ++k) {
            const unsigned w = last_first ? nw - 1 - k : k;
            for (uint64_t warp_before = ~0ull; warp_before != f.progress;) {
              warp_before = f.progress;
              for (unsigned t = 32 * w; t < std::min(n, 32 * w + 32); ++t) {
                if (f.done[t]) continue;
                threadIdx = uint3{t % block.x, (t / block.x) % block.y, t / (block.x * block.y)};
                dcc_emu::resume_fiber(f, t);
                if (f.done[t]) --left;
              }
            }
          }
          if (left > 0 && f.progress == before) {
            std::fprintf(stderr, "dcc_emu_launch: deadlock: %u threads of block (%u, %u, %u) wait at a barrier\n", left,
                         bx, by, bz);
            std::abort();
          }
        }
      }
  for (char* p : f.stacks) munmap(p, kStack);
  dcc_emu::fibers = saved;
}
