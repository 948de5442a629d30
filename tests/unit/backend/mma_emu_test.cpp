// The tensor-core kernels of backend/gpu (kernel IR -> print_cuda) run on
// the CPU through cuda_emu.h, whose dcc_emu_mma computes each lane's
// registers from the PTX ISA's fragment layouts, against a float64
// reference computed here (label `unit`; no GPU, no nvcc). Every MMA path:
// bf16 and f16 operands (m16n8k16), f32 operands as 3xTF32 and as TF32
// (m16n8k8), and --fp32-math=ieee (no tensor cores: backend/cuda's FMA
// kernel); ragged M, N and K of lengths 0, 1, 15, 16, 17 and 64-136, one
// group (B = 1), groups whose rows are 16-byte aligned (the cp.async 16
// path) next to ones that are not, and a contraction with two batch loops
// (sequences and heads: QK^T of attention).
//
// Tolerances, per output element, with S = sum_p |a_p b_p| (the products'
// magnitudes; a bound that does not depend on cancellation):
//   bf16 / f16 operands, f32 sums     1e-5 S (products are exact in f32)
//     + a bf16 result's rounding      + 2^-8 |ref|
//   f32, 3xTF32                        1e-5 S (f32-level; measured max below)
//   f32, TF32                          2^-10 S (each operand rounded to 11 bits)
//   f32, ieee                          1e-5 S
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "tests/unit/backend/cuda_emu_build.h"
#include "tests/unit/backend/grouped_gemm_check.h"
#include "tests/unit/backend/cuda_emu.h"
#include "tests/unit/test_paths.h"

namespace dccc::backend {
namespace {

using testing::Buf;
using testing::Entry;
using testing::Lengths;
using testing::Program;
using testing::Tolerance;
using testing::run_grouped;

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}


/// `fn` of `source` through the CUDA target's passes and emit_cuda with
/// `options`, built against cuda_emu.h (`sm90a`: compiled as for sm_90a,
/// the wgmma form emulated). `cu` receives the CUDA source.
Entry build(const std::string& name, const std::string& source, const std::string& fn, const CudaOptions& options,
            const ir::Func*& func, Program& keep, std::string& cu, bool sm90a = false) {
  keep = testing::compile(name, source, false, /*cuda_passes=*/true);
  EXPECT_TRUE(keep.module) << testing::diagnostics(keep);
  if (!keep.module) return nullptr;
  func = nullptr;
  for (const auto& f : keep.module->funcs)
    if (f.name == fn) func = &f;
  EXPECT_NE(func, nullptr) << fn;
  cu = emit_cuda(*keep.module, options);
  auto dir = testing::scratch_dir("mma-emu");
  static int serial = 0;
  std::string log;
  void* lib = testing::build_emulated((sm90a ? "#define DCC_EMU_SM90A 1\n" : "") + testing::emulated(cu), dir,
                                      fn + std::to_string(serial++), log);
  EXPECT_NE(lib, nullptr) << log;
  if (!lib) return nullptr;
  auto entry = reinterpret_cast<Entry>(dlsym(lib, (fn + "__cuda_host").c_str()));
  EXPECT_NE(entry, nullptr);
  return entry;
}

/// The length patterns: every one of 0, 1, 15, 16, 17 in each of M, N, K,
/// sizes of 64-130 (several block tiles and K-steps, ragged edges), one
/// group alone (B = 1), and random groups.
std::vector<Lengths> patterns() {
  std::vector<Lengths> out;
  out.push_back({{0, 1, 15, 16, 17, 64, 100, 130}, {17, 16, 1, 15, 0, 130, 64, 77}, {16, 1, 130, 17, 15, 0, 99, 64}});
  out.push_back({{130}, {100}, {77}});
  out.push_back({{1}, {1}, {1}});
  // Multiples of 8: every block takes the 16-byte cp.async path; then a
  // group with K = 15 between aligned ones (its A rows are copied element
  // by element, the next group's base is aligned again).
  out.push_back({{16, 64, 136, 0, 8}, {64, 8, 128, 16, 24}, {24, 64, 136, 8, 0}});
  out.push_back({{64, 16, 32}, {32, 15, 48}, {16, 40, 8}});
  std::mt19937 rng(16);
  Lengths r;
  for (int g = 0; g < 5; ++g) {
    r.m.push_back(std::uniform_int_distribution<int>(0, 130)(rng));
    r.k.push_back(std::uniform_int_distribution<int>(0, 130)(rng));
    r.n.push_back(std::uniform_int_distribution<int>(0, 130)(rng));
  }
  out.push_back(r);
  return out;
}


const ir::Func* g_unused = nullptr;

TEST(MmaEmu, Bf16AndF16GroupedGemm) {
  std::string src = read(test_paths::examples_dir() + "/batched_gemm_bf16.toy");
  int checked = 0;
  for (auto [fn, in, out, mma, tol] :
       {std::tuple{"grouped_gemm_bf16", Scalar::BF16, Scalar::BF16, "dcc_mma_tiles_bf16<", Tolerance{1e-5, 1.0 / 256}},
        std::tuple{"grouped_gemm_f16", Scalar::F16, Scalar::F32, "dcc_mma_tiles_f16<", Tolerance{1e-5, 0}}}) {
    SCOPED_TRACE(fn);
    Program keep;
    const ir::Func* f = g_unused;
    std::string cu;
    Entry e = build("batched_gemm_bf16.toy", src, fn, {}, f, keep, cu);
    ASSERT_TRUE(e && f);
    EXPECT_NE(cu.find(mma), std::string::npos) << "the contraction is not on the tensor-core path";
    // B is stored [k][n]: its fragments come by ldmatrix.trans.
    EXPECT_NE(cu.find("dcc_ldmatrix_x4(af[i]"), std::string::npos);
    EXPECT_NE(cu.find("dcc_ldmatrix_x4_trans(r, &bs["), std::string::npos);
    double worst = run_grouped(e, *f, in, out, tol, checked, patterns());
    std::printf("%s: max |err| / sum|ab| = %.3g\n", fn, worst);
  }
  EXPECT_GT(checked, 20000);
}

/// Patterns for the wgmma form's K-steps of 64 in 2-4 stages: the above
/// with K over several steps (the stages wrapped around several times),
/// unaligned and aligned, and N over several 256-column tiles.
std::vector<Lengths> wgmma_patterns() {
  std::vector<Lengths> out = patterns();
  out.push_back({{130, 0, 17}, {136, 5, 64}, {520, 64, 1}});
  out.push_back({{64, 129}, {24, 130}, {704, 463}});
  // 16-byte copies (K and N multiples of 8) whose last K-step has 56 of its
  // 64 k: only that step checks k (Copy::linear_addresses).
  out.push_back({{70, 33}, {120, 184}, {136, 72}});
  // N over two and three 256-column tiles of the persistent grid.
  out.push_back({{40, 3}, {72, 64}, {520, 700}});
  return out;
}

// The sm_90a form (gpu::Kernel::sm90a): warp-specialized, a producer
// warpgroup copying K-steps into 3 stages handed over by mbarriers (the
// emulator's: cuda_emu.h), two consumer warpgroups of m64n256k16 wgmmas
// reading A and B from 128-byte swizzled shared memory by descriptor, the
// emulator reading that memory by the PTX ISA's canonical layouts
// (dcc_emu_desc_elem), independently of the printer's own addressing; on a
// persistent grid of two blocks (the emulated device's SMs), each looping
// over many tile-list entries; the bf16 output staged in shared memory
// between named barriers and stored 16 bytes at a time (the f16 one, f32,
// from registers).
TEST(MmaEmu, WgmmaGroupedGemm) {
  std::string src = read(test_paths::examples_dir() + "/batched_gemm_bf16.toy");
  int checked = 0;
  for (auto [fn, in, out, mma, tol] :
       {std::tuple{"grouped_gemm_bf16", Scalar::BF16, Scalar::BF16, "dcc_wgmma_ss_bf16<256, 0, 1>(", Tolerance{1e-5, 1.0 / 256}},
        std::tuple{"grouped_gemm_f16", Scalar::F16, Scalar::F32, "dcc_wgmma_ss_f16<256, 0, 1>(", Tolerance{1e-5, 0}}}) {
    SCOPED_TRACE(fn);
    Program keep;
    const ir::Func* f = g_unused;
    std::string cu;
    CudaOptions o;  // the default: 3 stages
    Entry e = build("batched_gemm_bf16.toy", src, fn, o, f, keep, cu, /*sm90a=*/true);
    ASSERT_TRUE(e && f);
    EXPECT_NE(cu.find(mma), std::string::npos) << "no wgmma form (A K-major, B MN-major)";
    double worst = run_grouped(e, *f, in, out, tol, checked, wgmma_patterns());
    std::printf("%s (wgmma): max |err| / sum|ab| = %.3g\n", fn, worst);
  }
  EXPECT_GT(checked, 20000);
}

// The other two staging layouts: A stored [k][m] (its fragments by
// ldmatrix.trans from a [k][row] tile) and B stored [n][k] (plain ldmatrix
// from a [row][k] tile).
const char* kTransposed = R"(
type T = coupling { a: [g: G][k[g], m[g]]bf16, b: [g: G][n[g], k[g]]bf16, m: [G]i32, k: [G]i32, n: [G]i32 }
type O = coupling { c: [g: G][m[g], n[g]]f32, m: [G]i32, n: [G]i32 }
fn tt(x: T) O {
    let out = O { c: [g: G][x.m[g], x.n[g]]f32, m: x.m, n: x.n };
    out.c[g][i, j] = reduce(+, f32(x.a[g][p, i]) * f32(x.b[g][j, p]));
    return out;
}
)";

TEST(MmaEmu, Bf16TransposedOperands) {
  Program keep;
  const ir::Func* f = g_unused;
  std::string cu;
  Entry e = build("tt.toy", kTransposed, "tt", {}, f, keep, cu);
  ASSERT_TRUE(e && f);
  EXPECT_NE(cu.find("dcc_ldmatrix_x4_trans(af[i]"), std::string::npos);
  EXPECT_NE(cu.find("dcc_ldmatrix_x4(r, &bs["), std::string::npos);
  int checked = 0;
  run_grouped(e, *f, Scalar::BF16, Scalar::F32, {1e-5, 0}, checked, patterns(), /*a_km=*/true, /*b_nk=*/true);
  EXPECT_GT(checked, 20000);
}

// The same on the wgmma form: A MN-major (trans-a), B K-major.
TEST(MmaEmu, WgmmaTransposedOperands) {
  Program keep;
  const ir::Func* f = g_unused;
  std::string cu;
  CudaOptions o;
  o.gemm_stages = 2;  // the fewest: the producer waits for a stage to be read every other step
  Entry e = build("tt.toy", kTransposed, "tt", o, f, keep, cu, /*sm90a=*/true);
  ASSERT_TRUE(e && f);
  EXPECT_NE(cu.find("dcc_wgmma_ss_bf16<256, 1, 0>("), std::string::npos);
  int checked = 0;
  run_grouped(e, *f, Scalar::BF16, Scalar::F32, {1e-5, 0}, checked, wgmma_patterns(), /*a_km=*/true, /*b_nk=*/true);
  EXPECT_GT(checked, 20000);
}

// ldmatrix.x4 as the emulator does it, against the PTX ISA's description
// restated here: four 8 x 8 matrices, element (row, col) of matrix q
// holding q * 64 + row * 8 + col; lane l points at row l % 8 of matrix
// l / 8.
struct LdmArgs {
  uint32_t* out;
  bool trans;
};
void ldmatrix_kernel(LdmArgs a) {
  __shared__ __align__(16) uint16_t m[4 * 64];
  const unsigned l = threadIdx.x;
  for (unsigned e = 0; e < 8; ++e) m[l * 8 + e] = static_cast<uint16_t>(l * 8 + e);  // row l % 8 of matrix l / 8
  __syncthreads();
  uint32_t r[4];
  dcc_emu_ldmatrix_x4(r, &m[(l / 8) * 64 + (l % 8) * 8], a.trans);
  for (int q = 0; q < 4; ++q) a.out[l * 4 + q] = r[q];
}

TEST(MmaEmu, LdmatrixFragments) {
  for (bool trans : {false, true}) {
    std::vector<uint32_t> out(32 * 4, 0xFFFFFFFFu);
    dcc_emu_launch(ldmatrix_kernel, dim3(1), dim3(32), LdmArgs{out.data(), trans}, false);
    for (unsigned l = 0; l < 32; ++l)
      for (unsigned q = 0; q < 4; ++q) {
        // Without .trans: row l / 4, columns 2 (l % 4) and + 1; with it:
        // rows 2 (l % 4) and + 1 of column l / 4.
        unsigned lo = trans ? q * 64 + (2 * (l % 4)) * 8 + l / 4 : q * 64 + (l / 4) * 8 + 2 * (l % 4);
        unsigned hi = trans ? lo + 8 : lo + 1;
        EXPECT_EQ(out[l * 4 + q], lo | (hi << 16)) << "lane " << l << " matrix " << q << (trans ? " .trans" : "");
      }
  }
}

// The emulator's schedule (dcc_emu_launch): each warp runs as far as the
// block's barriers let it before the next, the first warp ahead in blocks
// of even index, the last in odd ones, so a missing __syncthreads between
// one warp's write and another's read shows as a wrong value (the kernels'
// barriers are checked by every emulated test, not by luck of a lockstep
// schedule). Each thread writes its slot, then reads the other warp's.
struct SkewArgs {
  int* slots;  // 64 a block, zeroed
  int* out;
  bool barrier;
};
void skew_kernel(SkewArgs a) {
  const unsigned t = threadIdx.x, b = blockIdx.x;
  a.slots[64 * b + t] = static_cast<int>(t) + 1;
  if (a.barrier) __syncthreads();
  a.out[64 * b + t] = a.slots[64 * b + (t + 32) % 64];
}

TEST(MmaEmu, WarpsRunAheadToTheBarrier) {
  for (bool barrier : {true, false}) {
    std::vector<int> slots(128, 0), out(128, -1);
    dcc_emu_launch(skew_kernel, dim3(2), dim3(64), SkewArgs{slots.data(), out.data(), barrier}, false);
    for (unsigned b = 0; b < 2; ++b)
      for (unsigned t = 0; t < 64; ++t) {
        const int written = static_cast<int>((t + 32) % 64) + 1;
        // Without the barrier the warp that runs ahead (warp 0 in block 0,
        // warp 1 in block 1) reads the other's slots before they are written.
        const bool ahead = t / 32 == b;
        EXPECT_EQ(out[64 * b + t], barrier || !ahead ? written : 0)
            << "block " << b << " thread " << t << (barrier ? "" : " (no barrier)");
      }
  }
}

TEST(MmaEmu, F32GroupedGemmEveryMode) {
  std::string src = read(test_paths::examples_dir() + "/batched_gemm.toy");
  int checked = 0;
  double worst[3] = {0, 0, 0};
  const gpu::Fp32Math modes[3] = {gpu::Fp32Math::Split3xTf32, gpu::Fp32Math::Tf32, gpu::Fp32Math::Ieee};
  const Tolerance tols[3] = {{1e-5, 0}, {1.0 / 1024, 0}, {1e-5, 0}};
  for (int m = 0; m < 3; ++m) {
    SCOPED_TRACE(gpu::fp32_math_name(modes[m]));
    CudaOptions o;
    o.fp32 = modes[m];
    Program keep;
    const ir::Func* f = g_unused;
    std::string cu;
    Entry e = build("batched_gemm.toy", src, "grouped_gemm", o, f, keep, cu);
    ASSERT_TRUE(e && f);
    if (modes[m] == gpu::Fp32Math::Ieee) {
      EXPECT_EQ(cu.find("dcc_mma_"), std::string::npos) << "ieee must not use tensor cores";
    } else {
      EXPECT_NE(cu.find("dcc_mma_tiles_tf32<"), std::string::npos);
      // 3xTF32: three MMAs per tile, the small cross terms first, into a
      // K-step's partial sums.
      bool split = cu.find("(part, as2, bb);") != std::string::npos;
      EXPECT_EQ(split, modes[m] == gpu::Fp32Math::Split3xTf32);
    }
    worst[m] = run_grouped(e, *f, Scalar::F32, Scalar::F32, tols[m], checked, patterns());
    std::printf("grouped_gemm --fp32-math=%s: max |err| / sum|ab| = %.3g\n", gpu::fp32_math_name(modes[m]), worst[m]);
  }
  // The split recovers f32 accuracy that one TF32 product loses.
  EXPECT_LT(worst[0] * 50, worst[1]);
  EXPECT_GT(worst[1], 1e-5) << "tf32 inputs were not rounded";
  EXPECT_GT(checked, 30000);
}

// The f32 sm_90a form (gpu::MmaShape::WGMMA_TF32): the producers load each
// K-step of 32 into registers, round (3xTF32: and split) every value once
// and store K-major tf32 tiles -- B (stored [k][n]) transposed 4 x 4 in
// registers, A ([m][k]) as loaded, 16 bytes at a time where the group is
// aligned, else element by element; two consumer warpgroups of m64n128k8
// tf32 wgmmas (three a k8 for 3xTF32, into partial sums started by scale-d
// 0 and added to the accumulators a step). The emulator reads the tiles by
// the PTX ISA's K-major layout of 4-byte elements; same tolerances as the
// mma.sync form.
TEST(MmaEmu, WgmmaF32GroupedGemm) {
  std::string src = read(test_paths::examples_dir() + "/batched_gemm.toy");
  int checked = 0;
  double worst[2] = {0, 0};
  const gpu::Fp32Math modes[2] = {gpu::Fp32Math::Split3xTf32, gpu::Fp32Math::Tf32};
  const Tolerance tols[2] = {{1e-5, 0}, {1.0 / 1024, 0}};
  for (int m = 0; m < 2; ++m) {
    SCOPED_TRACE(gpu::fp32_math_name(modes[m]));
    CudaOptions o;
    o.fp32 = modes[m];
    Program keep;
    const ir::Func* f = g_unused;
    std::string cu;
    Entry e = build("batched_gemm.toy", src, "grouped_gemm", o, f, keep, cu, /*sm90a=*/true);
    ASSERT_TRUE(e && f);
    EXPECT_NE(cu.find("dcc_wgmma_ss_tf32<128>(float* d"), std::string::npos) << "no tf32 wgmma form";
    const bool split = cu.find("dcc_st_split_tf32x4(&st[") != std::string::npos;
    EXPECT_EQ(split, modes[m] == gpu::Fp32Math::Split3xTf32);
    EXPECT_NE(cu.find("make_float4(v[4 * u].x, v[4 * u + 1].x"), std::string::npos) << "B is not transposed in registers";
    worst[m] = run_grouped(e, *f, Scalar::F32, Scalar::F32, tols[m], checked, wgmma_patterns());
    std::printf("grouped_gemm (tf32 wgmma) --fp32-math=%s: max |err| / sum|ab| = %.3g\n", gpu::fp32_math_name(modes[m]),
                worst[m]);
  }
  EXPECT_LT(worst[0] * 50, worst[1]);
  EXPECT_GT(worst[1], 1e-5) << "tf32 inputs were not rounded";
  EXPECT_GT(checked, 30000);
}

// The other transposition: A stored [k][m] (transposed by the producers),
// B [n][k] (as loaded), 2 stages.
const char* kTransposedF32 = R"(
type T = coupling { a: [g: G][k[g], m[g]]f32, b: [g: G][n[g], k[g]]f32, m: [G]i32, k: [G]i32, n: [G]i32 }
type O = coupling { c: [g: G][m[g], n[g]]f32, m: [G]i32, n: [G]i32 }
fn tt(x: T) O {
    let out = O { c: [g: G][x.m[g], x.n[g]]f32, m: x.m, n: x.n };
    out.c[g][i, j] = reduce(+, x.a[g][p, i] * x.b[g][j, p]);
    return out;
}
)";

TEST(MmaEmu, WgmmaF32TransposedOperands) {
  Program keep;
  const ir::Func* f = g_unused;
  std::string cu;
  CudaOptions o;
  o.gemm_stages = 2;
  Entry e = build("tt.toy", kTransposedF32, "tt", o, f, keep, cu, /*sm90a=*/true);
  ASSERT_TRUE(e && f);
  EXPECT_NE(cu.find("dcc_wgmma_ss_tf32<128>(float* d"), std::string::npos);
  int checked = 0;
  run_grouped(e, *f, Scalar::F32, Scalar::F32, {1e-5, 0}, checked, wgmma_patterns(), /*a_km=*/true, /*b_nk=*/true);
  EXPECT_GT(checked, 20000);
}

// The emulated tensor core's fused sums (cuda_emu.h), on cases worked by
// hand: terms aligned to the largest and truncated there (no guard bits),
// the exact sum of the aligned terms truncated to f32 (toward zero).
TEST(MmaEmu, FusedSumTruncatesLikeTheTensorCore) {
  const double u = std::ldexp(1.0, -23);  // f32's ulp of 1
  auto sum = [](std::initializer_list<double> t) { return static_cast<double>(dcc_emu_fused_sum(t.begin(), static_cast<int>(t.size()))); };
  EXPECT_EQ(sum({1.0, -std::ldexp(1.0, -30)}), 1.0);          // the small term is shifted out (exact RZ: 1 - u/2)
  EXPECT_EQ(sum({1.0, 1.5 * u}), 1.0 + u);                     // 1.5 ulp truncated to 1 (round to nearest: 1 + 2u)
  EXPECT_EQ(sum({1.0 + u, 1.0}), 2.0);                         // 2 + u: the carry's bit is truncated
  EXPECT_EQ(sum({1.0 + u, 1.0 + u, 1.0 + u}), 3.0 + 2 * u);    // 3 + 3u -> 3 + 2u (nearest: 3 + 4u)
  EXPECT_EQ(sum({-1.0 - u, -1.0 - u, -1.0 - u}), -3.0 - 2 * u);  // toward zero for negative sums too
  EXPECT_EQ(sum({1.0, -1.0 + u}), u);                          // cancellation of aligned terms is exact
  EXPECT_EQ(sum({1.0, -1.0 + u / 2}), u);                      // but -1 + u/2 loses its last bit to 1's alignment
  EXPECT_EQ(sum({0.0, 0.0}), 0.0);
}

/// One group of grouped_gemm (M x K times K x N, f32) on values drawn
/// uniformly from [lo, hi]; returns the result and fills `a`, `b`.
std::vector<float> run_one_group(Entry entry, const ir::Func& f, int M, int K, int N, double lo, double hi,
                                 std::vector<float>& a, std::vector<float>& b) {
  std::mt19937 rng(4096);
  std::uniform_real_distribution<double> dist(lo, hi);
  a.resize(static_cast<size_t>(M) * K);
  b.resize(static_cast<size_t>(K) * N);
  for (auto& x : a) x = static_cast<float>(dist(rng));
  for (auto& x : b) x = static_cast<float>(dist(rng));
  std::vector<float> c(static_cast<size_t>(M) * N, 0.0f);
  int32_t m = M, k = K, n = N;
  std::map<std::string, void*> bufs{{"x.m", &m}, {"x.k", &k}, {"x.n", &n}, {"x.a", a.data()}, {"x.b", b.data()}, {"out.c", c.data()}};
  std::vector<void*> ptrs;
  for (const auto& buf : f.buffers)
    if (buf->kind == ir::BufferKind::Input || buf->kind == ir::BufferKind::Output) ptrs.push_back(bufs.at(buf->name));
  ptrs.push_back(nullptr);
  int64_t sizes[2] = {1, 0};
  EXPECT_EQ(entry(sizes, ptrs.data()), 0);
  return c;
}

// 3xTF32 is f32-level at K = 4,096: its largest error against float64 is
// within 2x of that of f32 IEEE FMA (fmaf in k order, computed here) on the
// same inputs -- centred values, and positive ones, whose partial sums grow
// with K, so that an error with one sign (the tensor core's truncation, see
// cuda_emu.h) shows up.
// Both forms: mma.sync (partial sums a K-step of 16) and sm_90a's tf32
// wgmma (a K-step of 32).
TEST(MmaEmu, Split3xTf32AtK4096IsF32Level) {
  std::string src = read(test_paths::examples_dir() + "/batched_gemm.toy");
  for (bool sm90a : {false, true}) {
  SCOPED_TRACE(sm90a ? "wgmma" : "mma.sync");
  Program keep;
  const ir::Func* f = g_unused;
  std::string cu;
  Entry e = build("batched_gemm.toy", src, "grouped_gemm", {}, f, keep, cu, sm90a);
  ASSERT_TRUE(e && f);
  const int M = 32, N = 32, K = 4096;
  for (auto [lo, hi] : {std::pair{-1.0, 1.0}, std::pair{0.0, 1.0}}) {
    std::vector<float> a, b;
    std::vector<float> c = run_one_group(e, *f, M, K, N, lo, hi, a, b);
    double err_mma = 0, err_fma = 0;
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        double ref = 0;
        float fma = 0;
        for (int p = 0; p < K; ++p) {
          ref += static_cast<double>(a[static_cast<size_t>(i) * K + p]) * b[static_cast<size_t>(p) * N + j];
          fma = std::fmaf(a[static_cast<size_t>(i) * K + p], b[static_cast<size_t>(p) * N + j], fma);
        }
        err_mma = std::max(err_mma, std::fabs(c[static_cast<size_t>(i) * N + j] - ref));
        err_fma = std::max(err_fma, std::fabs(fma - ref));
      }
    std::printf("%s: K = %d, values in [%g, %g]: max |err| 3xTF32 %.3g, f32 FMA %.3g (ratio %.2f)\n",
                sm90a ? "wgmma" : "mma.sync", K, lo, hi, err_mma, err_fma, err_mma / err_fma);
    EXPECT_GT(err_fma, 0);
    EXPECT_LE(err_mma, 2 * err_fma) << "values in [" << lo << ", " << hi << "]";
  }
  }
}

// QK^T of attention with its own batch of heads: two batch loops (b and h,
// h between the rows i and the columns j), a row stride of H * D, the
// reduction over D, bf16 operands.
const char* kScores = R"(
type Q = coupling { data: [b: B][seqlen[b], H, D]bf16, seqlen: [B]i32 }
type KV = coupling { k: [b: B][seqlen[b], H, D]bf16, seqlen: [B]i32 }
type Scores = coupling { s: [b: B][ql[b], H, kl[b]]f32, ql: [B]i32, kl: [B]i32 }
fn scores(q: Q, kv: KV) Scores {
    let out = Scores { s: [b: B][q.seqlen[b], H, kv.seqlen[b]]f32, ql: q.seqlen, kl: kv.seqlen };
    out.s[b][i, h, j] = reduce(+, f32(q.data[b][i, h, d]) * f32(kv.k[b][j, h, d])) * 0.125;
    return out;
}
)";

// bf16 on mma.sync, and the same in f32 on the sm_90a tf32 wgmma form
// (materialised mha's scores: row strides of H x D, a partial K-step).
TEST(MmaEmu, ScoresWithHeads) {
  for (bool f32 : {false, true}) {
  SCOPED_TRACE(f32 ? "f32, tf32 wgmma" : "bf16, mma.sync");
  std::string text = kScores;
  if (f32)
    for (size_t at = text.find("]bf16"); at != std::string::npos; at = text.find("]bf16", at)) text.replace(at, 5, "]f32");
  Program keep;
  const ir::Func* f = g_unused;
  std::string cu;
  Entry e = build("scores.toy", text, "scores", {}, f, keep, cu, /*sm90a=*/f32);
  ASSERT_TRUE(e && f);
  EXPECT_NE(cu.find(f32 ? "dcc_wgmma_ss_tf32<128>(&part" : "dcc_mma_tiles_bf16<"), std::string::npos);
  const Scalar elem = f32 ? Scalar::F32 : Scalar::BF16;
  const int H = 3, D = 40;
  int checked = 0;
  for (const auto& [ql, kl] : {std::pair{std::vector<int32_t>{0, 17, 70, 1}, std::vector<int32_t>{5, 16, 66, 0}},
                              std::pair{std::vector<int32_t>{65}, std::vector<int32_t>{129}}}) {
    const size_t Bn = ql.size();
    std::map<std::string, Buf> bufs;
    Buf qs{Scalar::I32, {}}, ks{Scalar::I32, {}};
    qs.resize(Bn);
    ks.resize(Bn);
    std::vector<size_t> qo{0}, ko{0}, so{0};
    for (size_t b = 0; b < Bn; ++b) {
      qs.set(b, ql[b]);
      ks.set(b, kl[b]);
      qo.push_back(qo.back() + static_cast<size_t>(ql[b]) * H * D);
      ko.push_back(ko.back() + static_cast<size_t>(kl[b]) * H * D);
      so.push_back(so.back() + static_cast<size_t>(ql[b]) * H * kl[b]);
    }
    Buf q{elem, {}}, k{elem, {}}, s{Scalar::F32, {}};
    q.resize(qo.back());
    k.resize(ko.back());
    s.resize(so.back());
    std::mt19937 rng(5);
    std::uniform_real_distribution<double> dist(-1.0, 1.0);
    for (size_t i = 0; i < q.size(); ++i) q.set(i, dist(rng));
    for (size_t i = 0; i < k.size(); ++i) k.set(i, dist(rng));
    bufs = {{"q.seqlen", qs}, {"kv.seqlen", ks}, {"q.data", q}, {"kv.k", k}, {"out.s", s}};
    std::vector<void*> ptrs;
    for (const auto& buf : f->buffers) {
      if (buf->kind != ir::BufferKind::Input && buf->kind != ir::BufferKind::Output) continue;
      ASSERT_TRUE(bufs.count(buf->name)) << buf->name;
      ptrs.push_back(bufs[buf->name].bytes.data());
    }
    ptrs.push_back(nullptr);
    std::vector<int64_t> sizes;
    for (const auto& sz : f->sizes) sizes.push_back(sz.name == "B" ? static_cast<int64_t>(Bn) : sz.name == "H" ? H : D);
    sizes.push_back(0);
    ASSERT_EQ(e(sizes.data(), ptrs.data()), 0);
    const Buf& got = bufs["out.s"];
    for (size_t b = 0; b < Bn; ++b)
      for (int i = 0; i < ql[b]; ++i)
        for (int h = 0; h < H; ++h)
          for (int j = 0; j < kl[b]; ++j) {
            double ref = 0, mag = 0;
            for (int d = 0; d < D; ++d) {
              double x = q.get(qo[b] + (static_cast<size_t>(i) * H + h) * D + d);
              double y = k.get(ko[b] + (static_cast<size_t>(j) * H + h) * D + d);
              ref += x * y;
              mag += std::fabs(x * y);
            }
            double v = got.get(so[b] + (static_cast<size_t>(i) * H + h) * kl[b] + j);
            EXPECT_LE(std::fabs(v - ref * 0.125), 1e-5 * mag) << "b " << b << " i " << i << " h " << h << " j " << j;
            ++checked;
          }
  }
  EXPECT_GT(checked, 20000);
  }
}

}  // namespace
}  // namespace dccc::backend
