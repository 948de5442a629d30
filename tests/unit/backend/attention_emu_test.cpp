// The fused attention kernel (backend/gpu/plan_attention.h, print_attention.h)
// run on the CPU through cuda_emu.h (mma.sync, shuffles and barriers
// emulated) against a float64 reference computed here from the same bf16
// inputs (label `unit`; no GPU, no nvcc). Programs: examples/mha_bf16.toy
// and bf16 versions of mha_causal, mha_window and mha_softcap (every
// tensor's element type bf16, as mha_bf16 is mha's), through the CUDA
// target's passes with online reductions. Length patterns: zero-length
// query and key sequences (a query row with no key gives 0, never NaN),
// B = 1, lengths 1..17, ~300 (several query and key tiles, ragged edges),
// head dims 64, 128 and 20 (the element-by-element copies, padded to 32).
//
// Tolerance: the programs round the scores, the exponentials, the row sums
// and the output to bf16 (relative 2^-9 each) and the kernel rounds P to
// bf16 for the tensor core; with values in [-1, 1] an output element is
// within 0.02 of the float64 result (a wrong mask, scale or rescale is off
// by 0.1 or more on these patterns).
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <regex>
#include <sstream>

#include "tests/unit/backend/cuda_emu_build.h"
#include "tests/unit/backend/half_bits.h"
#include "tests/unit/test_paths.h"

namespace dccc::backend {
namespace {

using testing::Program;

using testing::from_bf16;
using testing::to_bf16;
std::string read(const std::string& path) { return testing::read_text(path); }

using Entry = int32_t (*)(const int64_t*, void* const*);

struct Built {
  Program keep;
  const ir::Func* func = nullptr;
  std::string cu;
  Entry entry = nullptr;
  void* lib = nullptr;
};

/// `fn` of `source` through the CUDA passes with online reductions, emitted
/// and built against cuda_emu.h.
void build(const std::string& name, const std::string& source, const std::string& fn, Built& b,
           gpu::Fp32Math fp32 = gpu::Fp32Math::Split3xTf32, gpu::AttentionTuning tune = {}, bool sm90a = false) {
  Program& p = b.keep;
  ASSERT_TRUE(testing::front_end(p, name, source)) << testing::diagnostics(p);
  ir::PipelineOptions o;
  o.target = ir::Target::Cuda;
  o.online_reductions = true;
  o.simplify = false;
  testing::run_passes(p, o);
  ASSERT_TRUE(p.module) << testing::diagnostics(p);
  for (const auto& f : p.module->funcs)
    if (f.name == fn) b.func = &f;
  ASSERT_NE(b.func, nullptr);
  CudaOptions co;
  co.fp32 = fp32;
  co.attention = tune;
  b.cu = emit_cuda(*p.module, co);
  auto dir = testing::scratch_dir("attn-emu");
  static int serial = 0;
  std::string log;
  // sm90a: compiled as for sm_90a (DCC_WGMMA: the wgmma instantiations, emulated).
  const std::string emu_source = (sm90a ? "#define DCC_EMU_SM90A 1\n" : "") + testing::emulated(b.cu);
  // A test that runs a program and then reads its CUDA (or runs it on more
  // cases) builds the same source twice: the library of the first build is
  // reused (CI time; what a launch computes does not depend on earlier
  // launches: the prelude cache is keyed by the lengths).
  static std::map<std::string, void*> built;
  void*& lib = built[emu_source];
  if (!lib) lib = testing::build_emulated(emu_source, dir, fn + std::to_string(serial++), log, testing::kEmuCompileBound);
  ASSERT_NE(lib, nullptr) << log;
  b.lib = lib;
  b.entry = reinterpret_cast<Entry>(dlsym(lib, (fn + "__cuda_host").c_str()));
  ASSERT_NE(b.entry, nullptr);
}

/// What each program computes from a score s (already scaled) at (i, j):
/// the masked value (-inf) or the modified score.
using Mod = std::function<double(double s, int i, int j)>;

struct Case {
  std::vector<int32_t> ql, kl;
  int H, D;
  int G = 1;  // query heads per K/V head (GQA): K/V have H / G heads, head h reads h / G
  double qscale = 1;  // Q's values times this (a power of two: exact)
};

std::vector<Case> cases(int groups = 0, bool few = false) {
  std::vector<Case> out;
  if (groups > 0) {
    // GQA / MQA: H = 4 query heads over 4 / G K/V heads.
    std::vector<int32_t> small, smallk;
    for (int n = 1; n <= 17; ++n) {
      small.push_back(n);
      smallk.push_back(18 - n);
    }
    out.push_back({{0, 1, 17, 5, 3, 0}, {3, 0, 17, 9, 1, 0}, 4, 64, groups});
    out.push_back({{1}, {1}, 4, 64, groups});
    out.push_back({small, smallk, 4, 64, groups});
    out.push_back({{70, 0}, {130, 5}, 4, 64, groups});
    return out;
  }
  out.push_back({{0, 1, 17, 5, 3, 0}, {3, 0, 17, 9, 1, 0}, 2, 64});   // empty sequences, a query with no keys
  out.push_back({{1}, {1}, 1, 64});                                  // B = 1, one key
  if (few) {
    out.push_back({{70, 0, 19}, {130, 5, 19}, 1, 128});
    return out;
  }
  std::vector<int32_t> small, smallk;
  for (int n = 1; n <= 17; ++n) {
    small.push_back(n);
    smallk.push_back(18 - n);
  }
  out.push_back({small, smallk, 1, 64});
  out.push_back({{300, 2}, {290, 70}, 2, 64});                       // several query and key tiles
  out.push_back({{70, 0, 19}, {130, 5, 19}, 1, 128});
  out.push_back({{33, 65}, {40, 64}, 2, 20});                        // head dim 20: element copies, dims padded to 32
  return out;
}

/// A tensor of bf16 or f16 (16-bit storage) or f32 elements.
struct Data {
  bool f32 = false, f16 = false;
  std::vector<uint16_t> h;
  std::vector<float> f;
  Data(bool is_f32, size_t n, uint16_t fill16, float fill32, bool is_f16 = false) : f32(is_f32), f16(is_f16) {
    if (f32) f.assign(std::max<size_t>(n, 1), fill32);
    else h.assign(std::max<size_t>(n, 1), fill16);
  }
  void* ptr() { return f32 ? static_cast<void*>(f.data()) : static_cast<void*>(h.data()); }
  size_t size() const { return f32 ? f.size() : h.size(); }
  void set(size_t i, double v) {
    if (f32) f[i] = static_cast<float>(v);
    else h[i] = f16 ? testing::to_f16(static_cast<float>(v)) : to_bf16(v);
  }
  double operator[](size_t i) const { return f32 ? f[i] : f16 ? testing::from_f16(h[i]) : from_bf16(h[i]); }
};

/// Runs every case; returns the largest error. `tol`: the bound on an
/// output's error (bf16 programs 0.02, see the top; f32 ones tighter).
/// `ramp`: key j's values scaled by 1 + j / 4 (scores that grow along the
/// keys, so a row's maximum moves by more than the deferred rescaling's
/// slack after the first key tile); `extra(l)`: added to every output of a
/// row whose exponentials (relative to its maximum) sum to l.
double run(const Built& b, const Mod& mod, int& checked, int groups = 0, bool f32 = false, double tol = 0.02,
           bool few = false, const std::vector<Case>* only = nullptr, bool f16 = false, bool ramp = false,
           const std::function<double(double)>& extra = nullptr) {
  double worst = 0;
  for (const Case& c : only ? *only : cases(groups, few)) {
    const size_t Bn = c.ql.size();
    const int H = c.H, D = c.D, G = c.G, KH = c.H / c.G;
    std::vector<size_t> qo{0}, ko{0};
    for (size_t x = 0; x < Bn; ++x) {
      qo.push_back(qo.back() + static_cast<size_t>(c.ql[x]) * H * D);
      ko.push_back(ko.back() + static_cast<size_t>(c.kl[x]) * KH * D);
    }
    std::mt19937 rng(static_cast<unsigned>(Bn * 31 + D));
    std::uniform_real_distribution<double> dist(-1.0, 1.0);
    Data q(f32, qo.back(), 0, 0, f16), k(f32, ko.back(), 0, 0, f16), v(f32, ko.back(), 0, 0, f16),
        out(f32, qo.back(), f16 ? 0x7E00 : 0x7FC0, NAN, f16);  // NaN until written
    for (size_t x = 0; x < q.size(); ++x) q.set(x, 2 * dist(rng) * c.qscale);
    for (size_t x = 0; x < k.size(); ++x) k.set(x, 2 * dist(rng));
    if (ramp)
      for (size_t x = 0; x < Bn; ++x)
        for (size_t e = ko[x]; e < ko[x + 1]; ++e) k.set(e, k[e] * (1 + static_cast<double>((e - ko[x]) / (KH * D)) / 4));
    for (size_t x = 0; x < v.size(); ++x) v.set(x, dist(rng));
    std::vector<int32_t> ql = c.ql, kl = c.kl;
    std::map<std::string, void*> bufs{{"q.seqlen", ql.data()}, {"kv.seqlen", kl.data()}, {"q.data", q.ptr()},
                                      {"kv.k", k.ptr()},      {"kv.v", v.ptr()},       {"out.data", out.ptr()}};
    std::vector<void*> ptrs;
    for (const auto& buf : b.func->buffers) {
      if (buf->kind != ir::BufferKind::Input && buf->kind != ir::BufferKind::Output) continue;
      EXPECT_TRUE(bufs.count(buf->name)) << buf->name;
      if (!bufs.count(buf->name)) return worst;
      ptrs.push_back(bufs[buf->name]);
    }
    ptrs.push_back(nullptr);
    std::vector<int64_t> sizes;
    for (const auto& sz : b.func->sizes)
      sizes.push_back(sz.name == "B" ? static_cast<int64_t>(Bn) : sz.name == "H" ? H : sz.name == "KH" ? KH : D);
    sizes.push_back(0);
    EXPECT_EQ(b.entry(sizes.data(), ptrs.data()), 0);
    for (size_t x = 0; x < Bn; ++x)
      for (int i = 0; i < c.ql[x]; ++i)
        for (int h = 0; h < H; ++h) {
          std::vector<double> s(c.kl[x]);
          double m = -INFINITY;
          for (int j = 0; j < c.kl[x]; ++j) {
            double dot = 0;
            for (int d = 0; d < D; ++d)
              dot += q[qo[x] + (static_cast<size_t>(i) * H + h) * D + d] * k[ko[x] + (static_cast<size_t>(j) * KH + h / G) * D + d];
            s[j] = mod(dot / std::sqrt(static_cast<double>(D)), i, j);
            m = std::max(m, s[j]);
          }
          double sum = 0;
          std::vector<double> ref(D, 0.0);
          for (int j = 0; j < c.kl[x]; ++j) {
            double p = m == -INFINITY ? 0 : std::exp(s[j] - m);
            sum += p;
            for (int d = 0; d < D; ++d) ref[d] += p * v[ko[x] + (static_cast<size_t>(j) * KH + h / G) * D + d];
          }
          for (int d = 0; d < D; ++d) {
            double r = (sum == 0 ? 0 : ref[d] / sum) + (extra ? extra(sum) : 0.0);
            double got = out[qo[x] + (static_cast<size_t>(i) * H + h) * D + d];
            EXPECT_FALSE(std::isnan(got)) << "b " << x << " i " << i << " h " << h << " d " << d;
            if (sum == 0) {
              EXPECT_EQ(got, 0.0) << "a row with no unmasked key gives 0";
            }
            EXPECT_LE(std::fabs(got - r), tol) << "b " << x << " (q " << c.ql[x] << ", kv " << c.kl[x] << ", D " << D
                                                << ") i " << i << " h " << h << " d " << d << ": " << got << " vs " << r;
            worst = std::max(worst, std::fabs(got - r));
            ++checked;
          }
        }
  }
  return worst;
}

struct Program_ {
  const char* name;
  std::string source;
  Mod mod;
};

std::string bf16_version(const std::string& path) {
  std::string s = read(path);
  s = std::regex_replace(s, std::regex("\\]f32"), "]bf16");
  return std::regex_replace(s, std::regex("f32\\(D\\)"), "bf16(D)");
}

void check(const std::string& file, const std::string& source, const std::string& fn, const Mod& mod,
           bool skips_tiles, gpu::AttentionTuning tune = {}, bool sm90a = false, bool f16 = false) {
  SCOPED_TRACE(fn);
  Built b;
  build(file, source, fn, b, gpu::Fp32Math::Split3xTf32, tune, sm90a);
  ASSERT_TRUE(b.entry);
  EXPECT_NE(b.cu.find(fn + "__k0__d64("), std::string::npos) << "not the fused kernel";
  EXPECT_NE(b.cu.find(f16 ? "dcc_mma_tiles_f16<1, 2>" : "dcc_mma_tiles_bf16<1, 2>"), std::string::npos)
      << "P V is not on the tensor cores";
  EXPECT_NE(b.cu.find("dcc_ldmatrix_x4_trans(r, &vs["), std::string::npos) << "V fragments not by ldmatrix.trans";
  // mha's body reads no memory: full key tiles run it unchecked.
  EXPECT_NE(b.cu.find("if (n0 + BN <= t_N) {"), std::string::npos) << "no full-tile body";
  EXPECT_EQ(b.cu.find("if (!any) return false;") != std::string::npos, skips_tiles);
  int checked = 0;
  double worst = run(b, mod, checked, 0, false, 0.02, false, nullptr, f16);
  std::printf("%s: %d outputs, max |err| = %.4g\n", fn.c_str(), checked, worst);
  EXPECT_GT(checked, 10000);
}

TEST(AttentionEmu, MhaBf16) {
  check("mha_bf16.toy", read(test_paths::examples_dir() + "/mha_bf16.toy"), "mha_bf16", [](double s, int, int) { return s; }, false);
}

// 16-bit outputs through shared memory (AttentionKernel::PairStore::staged;
// the checks above run it on every case, head dim 20 by each lane's stores:
// its rows are not DP columns wide): staged rows beside rows past the end
// of a sequence in the same warp, at head dims 64 and 128, and with
// --attention-staged-stores=off the 4-byte pairs, on the same cases.
TEST(AttentionEmu, StagedStoresBf16) {
  for (const bool staged : {true, false}) {
    SCOPED_TRACE(staged ? "staged" : "off");
    Built b;
    gpu::AttentionTuning tune;
    tune.staged_stores = staged;
    build("mha_bf16.toy", read(test_paths::examples_dir() + "/mha_bf16.toy"), "mha_bf16", b, gpu::Fp32Math::Split3xTf32, tune, true);
    ASSERT_TRUE(b.entry);
    EXPECT_EQ(b.cu.find("so_ob[gid + 8 * rr] = ob;") != std::string::npos, staged);
    EXPECT_EQ(b.cu.find("ob % SOV == 0 && (uintptr_t)") != std::string::npos, staged);
    const std::vector<Case> only{{{70, 0, 19}, {130, 5, 19}, 2, 64}, {{33, 65}, {40, 64}, 1, 128}};
    int checked = 0;
    const double worst = run(b, [](double s, int, int) { return s; }, checked, 0, false, 0.02, false, &only);
    std::printf("mha_bf16 (%s stores): %d outputs, max |err| = %.4g\n", staged ? "staged" : "paired", checked, worst);
    EXPECT_GT(checked, 20000);
  }
}

// FlashAttention-2's precision (examples/mha_bf16_f32_scores.toy: f32
// scores and sums, P rounded to the 16-bit type for P V, the output's
// division cast to 16 bits): P is packed from its f32 value (the pack's
// rounding is the program's, AttentionKernel::pv_rounded_by_pack) and the
// division by the row sum is one multiply (gpu::rounded16_division). bf16 on
// mma.sync; an f16 version of the causal function on wgmma (the f16 pack).
TEST(AttentionEmu, F32ScoresBf16AndF16) {
  const std::string src = read(test_paths::examples_dir() + "/mha_bf16_f32_scores.toy");
  // (The file's causal function skips tiles: its CUDA holds both.)
  check("mha_bf16_f32_scores.toy", src, "mha_bf16_f32_scores", [](double s, int, int) { return s; }, true);
  check("mha_f16_f32_scores.toy", std::regex_replace(src, std::regex("bf16"), "f16"), "mha_causal_f16_f32_scores",
        [](double s, int i, int j) { return j <= i ? s : -INFINITY; }, true, {}, true, true);
}

// Two m16 tiles of query rows a warp (--attention-tiles=2,2,32,2: 2 warps
// of 32 rows, 32 keys a tile): each K and V fragment feeds two MMAs; the
// row slots, folds, rescale and output loops run over both tiles.
TEST(AttentionEmu, TwoTilesAWarpBf16) {
  const gpu::AttentionTuning two{2, 2, 32, 2};
  check("mha_bf16.toy", read(test_paths::examples_dir() + "/mha_bf16.toy"), "mha_bf16", [](double s, int, int) { return s; }, false,
        two);
  check("mha_causal.toy", bf16_version(test_paths::examples_dir() + "/mha_causal.toy"), "mha_causal",
        [](double s, int i, int j) { return j <= i ? s : -INFINITY; }, true, two);
  Built b;
  build("mha_bf16.toy", read(test_paths::examples_dir() + "/mha_bf16.toy"), "mha_bf16", b, gpu::Fp32Math::Split3xTf32, two);
  EXPECT_NE(b.cu.find("mha_bf16__k0__body<64, 32, 2, 2, false, 2>"), std::string::npos) << "not two m16 tiles a warp";
}

// Persistent grids (--attention-grid=static|atomic, gpu::AttnGrid): the
// emulated device has 2 SMs of one block, so two blocks loop over every
// tile-list entry (striding, or taking the next from the counter); each
// entry's rows must come out once and right, empty sequences included.
TEST(AttentionEmu, PersistentGridsBf16) {
  for (auto g : {gpu::AttnGrid::Static, gpu::AttnGrid::Atomic}) {
    SCOPED_TRACE(gpu::attn_grid_name(g));
    gpu::AttentionTuning t;
    t.grid = g;
    check("mha_bf16.toy", read(test_paths::examples_dir() + "/mha_bf16.toy"), "mha_bf16", [](double s, int, int) { return s; },
          false, t);
    check("mha_causal.toy", bf16_version(test_paths::examples_dir() + "/mha_causal.toy"), "mha_causal",
          [](double s, int i, int j) { return j <= i ? s : -INFINITY; }, true, t);
    Built b;
    build("mha_bf16.toy", read(test_paths::examples_dir() + "/mha_bf16.toy"), "mha_bf16", b, gpu::Fp32Math::Split3xTf32, t);
    EXPECT_NE(b.cu.find(g == gpu::AttnGrid::Static ? "t += gridDim.x" : "atomicAdd(launch.counter, 1u)"),
              std::string::npos)
        << "not the persistent loop";
    EXPECT_NE(b.cu.find("cudaOccupancyMaxActiveBlocksPerMultiprocessor"), std::string::npos) << "grid not sized";
  }
}

// As compiled for sm_90a: head dims 64 and 128 run S = Q K^T and O += P V
// on wgmma (emulated from the PTX ISA's canonical 128-byte-swizzle layouts
// and descriptor fields, not from the printer's address arithmetic), K and V
// in swizzled stages; head dim 20 (padded to 32) keeps mma.sync. Zero-length
// sequences, a partial last key tile, skipped causal tiles and rows past a
// sequence's end (every warp of the warpgroup issues the MMAs) included.
// Also an f16 version of mha_bf16 (the f16 wgmma shapes).
TEST(AttentionEmu, WgmmaBf16) {
  check("mha_bf16.toy", read(test_paths::examples_dir() + "/mha_bf16.toy"), "mha_bf16", [](double s, int, int) { return s; }, false,
        {}, true);
  check("mha_causal.toy", bf16_version(test_paths::examples_dir() + "/mha_causal.toy"), "mha_causal",
        [](double s, int i, int j) { return j <= i ? s : -INFINITY; }, true, {}, true);
  check("mha_softcap.toy", bf16_version(test_paths::examples_dir() + "/mha_softcap.toy"), "mha_softcap",
        [](double s, int, int) { return 30 * std::tanh(s / 30); }, false, {}, true);
  // Two warpgroups a block (--attention-tiles=1,8,64,1: 128 rows), each
  // issuing its own MMAs on its 64 rows from the shared K and V stages.
  const gpu::AttentionTuning two_groups{1, 8, 64, 1};
  check("mha_causal.toy", bf16_version(test_paths::examples_dir() + "/mha_causal.toy"), "mha_causal",
        [](double s, int i, int j) { return j <= i ? s : -INFINITY; }, true, two_groups, true);
  // f16 operands (mha_bf16 with every bf16 made f16): the f16 wgmma shapes.
  const std::string f16_source =
      std::regex_replace(read(test_paths::examples_dir() + "/mha_bf16.toy"), std::regex("\\]bf16"), "]f16");
  check("mha_f16.toy", f16_source, "mha_bf16", [](double s, int, int) { return s; }, false, {}, true, true);
  {
    Built f;
    build("mha_f16.toy", f16_source, "mha_bf16", f, gpu::Fp32Math::Split3xTf32, {}, true);
    EXPECT_NE(f.cu.find("dcc_wgmma_f16<64, 0>"), std::string::npos) << "f16 not on wgmma";
  }
  Built b;
  build("mha_bf16.toy", read(test_paths::examples_dir() + "/mha_bf16.toy"), "mha_bf16", b, gpu::Fp32Math::Split3xTf32, {}, true);
  // S with Q from shared memory where that buys a block an SM (head dims 64
  // and 128's short-key tiles: AttentionKernel::q_smem, the planner's rule),
  // from registers for head dim 128's long-key tiles; P V with P from registers.
  for (const char* shape : {"dcc_wgmma_ss_bf16<64, 0, 0>", "dcc_wgmma_ss_bf16<32, 0, 0>", "dcc_wgmma_bf16<64, 0>",
                            "dcc_wgmma_bf16<64, 1>", "dcc_wgmma_bf16<128, 1>"})
    EXPECT_NE(b.cu.find(shape), std::string::npos) << shape;
  EXPECT_EQ(b.cu.find("dcc_wgmma_bf16<32, 0>"), std::string::npos) << "head dim 128's short-key S with Q in registers";
  EXPECT_NE(b.cu.find("mha_bf16__k0__body<64, 64, 1, 4, DCC_WGMMA != 0, 2, DCC_WGMMA != 0>"), std::string::npos)
      << "head dim 64 not on wgmma with Q in shared memory";
  EXPECT_NE(b.cu.find("mha_bf16__k0__body<32, 64, 1, 4, false, 2, false>"), std::string::npos) << "head dim 32 on wgmma";
  for (const char* bounds : {"__launch_bounds__(128, (DCC_WGMMA != 0 ? 4 : 3)) mha_bf16__k0__d64(",
                             "__launch_bounds__(128, (DCC_WGMMA != 0 ? 4 : 3)) mha_bf16__k0__d128(",
                             "__launch_bounds__(128, 3) mha_bf16__k0__d128L("})
    EXPECT_NE(b.cu.find(bounds), std::string::npos) << bounds;
  // Head dim 128's long-key instantiation: 64 keys a tile with wgmma, taken by
  // launches whose entries average 192 keys or more (the 300/280-key case).
  EXPECT_NE(b.cu.find("mha_bf16__k0__body<128, (DCC_WGMMA != 0 ? 64 : 32), 1, 4, DCC_WGMMA != 0, 2, false>"), std::string::npos);
  EXPECT_NE(b.cu.find("tv->kmean >= 192 && dcc__cc_major() == 9"), std::string::npos);
  // ... and run by a launch of entries of 290 keys on average.
  const std::vector<Case> long_keys{{{40, 3}, {300, 280}, 1, 128}};
  int checked = 0;
  EXPECT_LE(run(b, [](double s, int, int) { return s; }, checked, 0, false, 0.02, false, &long_keys), 0.02);
  EXPECT_GT(checked, 5000);
  // Head dim 64's: 128 keys a tile with wgmma (its S m64n128k16, Q from
  // registers: Q's tile in shared memory buys no block there), taken by
  // launches whose entries average 768 keys or more, run on entries of 950.
  EXPECT_NE(b.cu.find("mha_bf16__k0__body<64, (DCC_WGMMA != 0 ? 128 : 64), 1, 4, DCC_WGMMA != 0, 2, false>"), std::string::npos);
  EXPECT_NE(b.cu.find("dmax <= 64 && tv->kmean >= 768 && dcc__cc_major() == 9"), std::string::npos);
  EXPECT_NE(b.cu.find("dcc_wgmma_bf16<128, 0>"), std::string::npos);
  const std::vector<Case> long64{{{40, 3}, {1000, 900}, 1, 64}};
  checked = 0;
  EXPECT_LE(run(b, [](double s, int, int) { return s; }, checked, 0, false, 0.02, false, &long64), 0.02);
  EXPECT_GT(checked, 2500);
}

// Three and four shared-memory stages of K and V (--attention-stages): the
// key loop's copies run two or three tiles ahead, the stages reused in
// turn; causal skips tiles between copies (next_needed), and sequences of
// fewer tiles than stages leave commit groups empty. mma.sync and wgmma.
// Q from shared memory in the wgmma form (--attention-q=smem,
// AttentionKernel::q_smem): S's A by descriptor from Q's tile, stored as
// K's stages are (128-byte swizzled, 64 columns a part) and copied with the
// first K and V tile; the sm_90a build's registers capped for 4 blocks an
// SM. mha_bf16 and causal bf16 on every length pattern (rows past the end
// read zero-filled Q lines), and the long-key instantiation.
TEST(AttentionEmu, WgmmaQInSharedMemory) {
  gpu::AttentionTuning q;
  q.q = gpu::AttnQ::Smem;
  check("mha_bf16.toy", read(test_paths::examples_dir() + "/mha_bf16.toy"), "mha_bf16", [](double s, int, int) { return s; }, false,
        q, true);
  check("mha_causal.toy", bf16_version(test_paths::examples_dir() + "/mha_causal.toy"), "mha_causal",
        [](double s, int i, int j) { return j <= i ? s : -INFINITY; }, true, q, true);
  Built b;
  build("mha_bf16.toy", read(test_paths::examples_dir() + "/mha_bf16.toy"), "mha_bf16", b, gpu::Fp32Math::Split3xTf32, q, true);
  for (const char* text : {"dcc_wgmma_ss_bf16<64, 0, 0>", "dcc_wgmma_ss_bf16<32, 0, 0>", "mha_bf16__k0__body<128, 32, 1, 4, DCC_WGMMA != 0, 2, DCC_WGMMA != 0>",
                           "mha_bf16__k0__body<128, (DCC_WGMMA != 0 ? 64 : 32), 1, 4, DCC_WGMMA != 0, 2, DCC_WGMMA != 0>",
                           "__launch_bounds__(128, (DCC_WGMMA != 0 ? 4 : 3)) mha_bf16__k0__d128("})
    EXPECT_NE(b.cu.find(text), std::string::npos) << text;
  EXPECT_EQ(b.cu.find("dcc_wgmma_bf16<64, 0>"), std::string::npos) << "S's A still from registers";
  const std::vector<Case> long_keys{{{40, 3}, {300, 280}, 1, 128}};
  int checked = 0;
  EXPECT_LE(run(b, [](double s, int, int) { return s; }, checked, 0, false, 0.02, false, &long_keys), 0.02);
  EXPECT_GT(checked, 5000);
  // --attention-q=registers: Q's fragments everywhere, the bodies without QS.
  gpu::AttentionTuning r;
  r.q = gpu::AttnQ::Registers;
  Built br;
  build("mha_bf16.toy", read(test_paths::examples_dir() + "/mha_bf16.toy"), "mha_bf16", br, gpu::Fp32Math::Split3xTf32, r, true);
  EXPECT_EQ(br.cu.find("dcc_wgmma_ss_bf16<"), std::string::npos);
  EXPECT_EQ(br.cu.find("int NS, bool QS>"), std::string::npos);
  EXPECT_NE(br.cu.find("constexpr bool QS = false;"), std::string::npos);
  EXPECT_NE(br.cu.find("__launch_bounds__(128, 3) mha_bf16__k0__d128("), std::string::npos);
  // Two warpgroups a block (128 query rows): each reads its own 64 lines of
  // Q's tile (a descriptor without the warpgroup's offset gave every
  // warpgroup rows 0-63: wrong results on an H200, session 27).
  gpu::AttentionTuning q8 = q;
  q8.warps = 8;
  q8.key_tile = 32;
  q8.min_blocks = 1;
  check("mha_bf16.toy", read(test_paths::examples_dir() + "/mha_bf16.toy"), "mha_bf16", [](double s, int, int) { return s; }, false,
        q8, true);
  check("mha_causal.toy", bf16_version(test_paths::examples_dir() + "/mha_causal.toy"), "mha_causal",
        [](double s, int i, int j) { return j <= i ? s : -INFINITY; }, true, q8, true);
}

TEST(AttentionEmu, DeeperStagesBf16) {
  for (int stages : {3, 4}) {
    SCOPED_TRACE(stages);
    gpu::AttentionTuning t;
    t.stages = stages;
    for (bool sm90a : {false, true}) {
      if (stages == 4 && !sm90a) continue;  // (CI time: one program at 4 stages)
      check("mha_causal.toy", bf16_version(test_paths::examples_dir() + "/mha_causal.toy"), "mha_causal",
            [](double s, int i, int j) { return j <= i ? s : -INFINITY; }, true, t, sm90a);
    }
    if (stages == 4) continue;
    check("mha_bf16.toy", read(test_paths::examples_dir() + "/mha_bf16.toy"), "mha_bf16", [](double s, int, int) { return s; },
          false, t, true);
    Built b;
    build("mha_bf16.toy", read(test_paths::examples_dir() + "/mha_bf16.toy"), "mha_bf16", b, gpu::Fp32Math::Split3xTf32, t, true);
    EXPECT_NE(b.cu.find("mha_bf16__k0__body<64, 64, 1, 4, DCC_WGMMA != 0, " + std::to_string(stages) + ">"), std::string::npos);
    EXPECT_NE(b.cu.find("dcc_cp_async_wait<NS - 2>()"), std::string::npos);
  }
}

TEST(AttentionEmu, CausalBf16) {
  check("mha_causal.toy", bf16_version(test_paths::examples_dir() + "/mha_causal.toy"), "mha_causal",
        [](double s, int i, int j) { return j <= i ? s : -INFINITY; }, true);
}

// The tile list's order (the launch's, read back from the emulator; the
// planner's rule, gpu::AttnOrder), on mha_causal: bf16 by key count with a
// sequence's query tiles together, the one running more key tiles (under
// the causal mask a sequence's last query tile runs all its keys, its first
// only the first 64) first; f32 by the key tiles run over all entries, then
// key count. Lengths multiples of 64 (and 1), so that key tiles counted in
// any tile size dividing 64 order the entries as their keys do; the
// expected orders are sorted here from the mask's live keys, min(keys, the
// tile's last row + 1). By key count alone (the order before session 37)
// the 192-token sequence's first query tile would come first in both.
TEST(AttentionEmu, CausalTileListOrder) {
  const std::vector<Case> only{{{192, 128, 64, 0, 1}, {192, 128, 64, 0, 1}, 2, 64}};
  const Case& c = only[0];
  for (bool f32 : {false, true}) {
    SCOPED_TRACE(f32 ? "f32: key tiles first" : "bf16: sequences");
    Built b;
    const std::string path = test_paths::examples_dir() + "/mha_causal.toy";
    build("mha_causal.toy", f32 ? read(path) : bf16_version(path), "mha_causal", b);
    ASSERT_TRUE(b.entry);
    std::smatch m;
    ASSERT_TRUE(std::regex_search(b.cu, m, std::regex("dcc__tiles_upload\\(tl, (\\d+), t\\)"))) << "no tile list";
    const int width = std::stoi(m[1]);
    int checked = 0;
    run(b, [](double s, int i, int j) { return j <= i ? s : -INFINITY; }, checked, 0, f32, f32 ? 1e-6 : 0.02, false, &only);
    EXPECT_GT(checked, 0);
    using Fn = const int32_t* (*)(int64_t*);
    auto last = reinterpret_cast<Fn>(dlsym(b.lib, "dcc_emu_last_tiles"));
    ASSERT_NE(last, nullptr);
    int64_t n = 0;
    const int32_t* tiles = last(&n);
    ASSERT_NE(tiles, nullptr);
    struct E {
      int b, h, mt;
      int64_t live, keys;
    };
    std::vector<E> want;
    for (int x = 0; x < static_cast<int>(c.ql.size()); ++x)
      for (int h = 0; h < c.H; ++h)
        for (int mt = 0; mt * 64 < c.ql[x]; ++mt)
          want.push_back({x, h, mt, std::min<int64_t>(c.kl[x], std::min(mt * 64 + 64, c.ql[x])), c.kl[x]});
    std::stable_sort(want.begin(), want.end(), [&](const E& p, const E& q) {
      if (f32) return p.live != q.live ? p.live > q.live : p.keys > q.keys;
      if (p.keys != q.keys) return p.keys > q.keys;
      if (p.b != q.b || p.h != q.h) return p.b != q.b ? p.b < q.b : p.h < q.h;
      return p.live > q.live;
    });
    ASSERT_EQ(n, static_cast<int64_t>(want.size()));
    for (size_t t = 0; t < want.size(); ++t) {
      const int32_t* e = tiles + t * width;
      EXPECT_EQ((std::vector<int>{e[0], e[1], e[2]}), (std::vector<int>{want[t].b, want[t].h, want[t].mt})) << "entry " << t;
    }
  }
}

TEST(AttentionEmu, WindowBf16) {
  check("mha_window.toy", bf16_version(test_paths::examples_dir() + "/mha_window.toy"), "mha_window",
        [](double s, int i, int j) { return j <= i && i - j < 4 ? s : -INFINITY; }, true);
}

TEST(AttentionEmu, SoftcapBf16) {
  check("mha_softcap.toy", bf16_version(test_paths::examples_dir() + "/mha_softcap.toy"), "mha_softcap",
        [](double s, int, int) { return 30 * std::tanh(s / 30); }, false);
}

// f32 inputs (examples/mha.toy and mha_causal.toy as written): the same
// fused kernel on m16n8k8 tf32 MMAs. 3xTF32 (the default) is within 1e-6 of
// float64 on these outputs (measured 4.8e-7 and 5.9e-7: f32 level; the
// emulator truncates the tensor core's sums as the hardware does, and with
// one accumulator over all of d instead of a fresh fragment a K-step the
// error was 1.5e-6, which this bound rejects); one TF32 product
// (--fp32-math=tf32) within 5e-3 (measured 5.5e-4).
void check_f32(const std::string& file, const std::string& fn, const Mod& mod, bool skips_tiles,
               gpu::Fp32Math fp32, double tol, bool few = false, bool sm90a = false) {
  SCOPED_TRACE(fn + " " + gpu::fp32_math_name(fp32) + (sm90a ? " sm_90a" : ""));
  Built b;
  gpu::AttentionTuning tune;
  build(file, read(std::string(test_paths::examples_dir() + "/") + file), fn, b, fp32, tune, sm90a);
  ASSERT_TRUE(b.entry);
  EXPECT_NE(b.cu.find(fn + "__k0__d64("), std::string::npos) << "not the fused kernel";
  EXPECT_NE(b.cu.find("dcc_mma_tiles_tf32<1, 1>(part, &pb[kc], vb);"), std::string::npos) << "P V is not on the tensor cores";
  EXPECT_EQ(b.cu.find("dcc_mma_tiles_tf32<1, 1>(part, qs, kb);") != std::string::npos, fp32 == gpu::Fp32Math::Split3xTf32)
      << "3xTF32 products exactly when asked";
  // The wgmma form (head dims 64 and 128; what an sm_90a build runs).
  // 3xTF32's wgmma builds at one K/V stage (head dim 64: 16 keys a tile, 4
  // blocks an SM, and 32 keys, 3 blocks, for entries of 32 keys or more on
  // average; 128: 16 keys, V transposed in 64-byte lines, 2 blocks); one
  // TF32 product fits as many blocks at two stages.
  const bool split = fp32 == gpu::Fp32Math::Split3xTf32;
  const char* d64 = split ? "__body<64, (DCC_WGMMA != 0 ? 16 : 32), 1, 4, DCC_WGMMA != 0, (DCC_WGMMA != 0 ? 1 : 2)>(launch"
                          : "__body<64, (DCC_WGMMA != 0 ? 16 : 32), 1, 4, DCC_WGMMA != 0, 2>(launch";
  const char* d128 = split ? "__body<128, 16, 1, 4, DCC_WGMMA != 0, (DCC_WGMMA != 0 ? 1 : 2)>(launch"
                           : "__body<128, 16, 1, 4, DCC_WGMMA != 0, 2>(launch";
  for (const char* text : {"dcc_wgmma_tf32<DP>(&part[0][0], pb[kc], dcc_wgmma_desc_at(vbd, ov));", d64, d128,
                           "void dcc_wgmma_tf32<128>(", "void dcc_wgmma_ss_tf32<32>(", "void dcc_wgmma_ss_tf32<16>(",
                           "dcc_wgmma_desc64(vb_u32, 16, 512)"})
    EXPECT_NE(b.cu.find(text), std::string::npos) << text;
  EXPECT_NE(b.cu.find("__launch_bounds__(128, 2) " + fn + "__k0__d128("), std::string::npos);
  EXPECT_EQ(b.cu.find("dcc_wgmma_ss_tf32<BN>(&sp[kq >> 2][0][0], dcc_wgmma_desc_at(qld, oq)") != std::string::npos,
            fp32 == gpu::Fp32Math::Split3xTf32);
  EXPECT_EQ(b.cu.find("if (!any) return false;") != std::string::npos, skips_tiles);
  int checked = 0;
  double worst = run(b, mod, checked, 0, true, tol, few);
  std::printf("%s (f32, %s): %d outputs, max |err| = %.4g\n", fn.c_str(), gpu::fp32_math_name(fp32), checked, worst);
  EXPECT_GT(checked, few ? 5000 : 10000);
}

TEST(AttentionEmu, MhaF32) {
  check_f32("mha.toy", "mha", [](double s, int, int) { return s; }, false, gpu::Fp32Math::Split3xTf32, 1e-6);
  check_f32("mha.toy", "mha", [](double s, int, int) { return s; }, false, gpu::Fp32Math::Tf32, 5e-3, true);
}

// f32 on tf32 wgmma (sm_90a; head dims 64 and 128): Q's and K's tf32 parts
// from shared memory, P from registers against V transposed with its keys
// paired as P's fragments hold them.
TEST(AttentionEmu, MhaF32Wgmma) {
  check_f32("mha.toy", "mha", [](double s, int, int) { return s; }, false, gpu::Fp32Math::Split3xTf32, 1e-6, false, true);
  check_f32("mha.toy", "mha", [](double s, int, int) { return s; }, false, gpu::Fp32Math::Tf32, 5e-3, true, true);
  check_f32("mha_causal.toy", "mha_causal", [](double s, int i, int j) { return j <= i ? s : -INFINITY; }, true,
            gpu::Fp32Math::Split3xTf32, 1e-6, true, true);
  // The planner's defaults: head dim 128's wgmma form (16 keys a tile) for
  // every launch, no long-key instantiation; here 19 key tiles a sequence.
  Built b;
  build("mha.toy", read(test_paths::examples_dir() + "/mha.toy"), "mha", b, gpu::Fp32Math::Split3xTf32, {}, true);
  ASSERT_TRUE(b.entry);
  EXPECT_EQ(b.cu.find("d128L"), std::string::npos);
  const std::vector<Case> long_keys{{{40, 3}, {300, 280}, 1, 128}};
  int checked = 0;
  const double worst = run(b, [](double s, int, int) { return s; }, checked, 0, true, 1e-6, false, &long_keys);
  std::printf("mha (f32, 3xtf32, head dim 128's wgmma form, long keys): %d outputs, max |err| = %.4g\n", checked, worst);
  EXPECT_GT(checked, 5000);
  // Head dim 62 in the head-dim-64 wgmma form: Q's tile read element by
  // element (rows not 16-byte aligned) and the output stored by column
  // (the tile's last two columns outside).
  const std::vector<Case> odd{{{70, 0, 19}, {65, 5, 19}, 2, 62}};
  checked = 0;
  const double worst_odd = run(b, [](double s, int, int) { return s; }, checked, 0, true, 1e-6, false, &odd);
  std::printf("mha (f32, 3xtf32, head dim 62 in the wgmma form): %d outputs, max |err| = %.4g\n", checked, worst_odd);
  EXPECT_GT(checked, 10000);  // (70 + 19) x 2 heads x 62 outputs
}

// Two warpgroups a block (--attention-tiles=1,8,32,1: 128 query rows
// sharing each key tile's tf32 parts; warpgroup g's S reads Q's lines from
// 64 g): causal, so that the warpgroups' rows meet the mask differently.
TEST(AttentionEmu, F32WgmmaTwoWarpgroups) {
  Built b;
  gpu::AttentionTuning tune;
  tune.warps = 8;
  tune.key_tile = 32;
  tune.min_blocks = 1;
  build("mha_causal.toy", read(test_paths::examples_dir() + "/mha_causal.toy"), "mha_causal", b, gpu::Fp32Math::Split3xTf32, tune, true);
  ASSERT_TRUE(b.entry);
  for (const char* text : {"__body<64, 32, 1, 8, DCC_WGMMA != 0, 2>(launch", "(uint32_t)(warp >> 2) * (64 * 128)"})
    EXPECT_NE(b.cu.find(text), std::string::npos) << text;
  const std::vector<Case> only{{{0, 1, 17, 5, 3, 0}, {3, 0, 17, 9, 1, 0}, 2, 64}, {{300, 130, 70}, {290, 130, 75}, 1, 64}};
  int checked = 0;
  const double worst = run(b, [](double s, int i, int j) { return j <= i ? s : -INFINITY; }, checked, 0, true, 1e-6, false, &only);
  std::printf("mha_causal (f32, 3xtf32, two warpgroups a block): %d outputs, max |err| = %.4g\n", checked, worst);
  EXPECT_GT(checked, 30000);
}

// One K/V stage in f32's wgmma form (--attention-stages=1, 3 blocks an SM
// at head dim 64): the next tile's copy goes into the stage S has just
// read, after a barrier; causal with sequences of 1 to 10 key tiles (and a
// query tile with no needed key tile skipped), so that a copy issued too
// early or a missing barrier shows as a wrong tile.
TEST(AttentionEmu, F32WgmmaOneStage) {
  Built b;
  gpu::AttentionTuning tune;
  tune.stages = 1;
  build("mha_causal.toy", read(test_paths::examples_dir() + "/mha_causal.toy"), "mha_causal", b, gpu::Fp32Math::Split3xTf32, tune, true);
  ASSERT_TRUE(b.entry);
  // Head dim 64's two wgmma instantiations: 16 keys a tile, 4 blocks an SM
  // (entries under 32 keys on average: the first case), and 32 keys, 3
  // blocks (the second).
  for (const char* text : {"__body<64, (DCC_WGMMA != 0 ? 16 : 32), 1, 4, DCC_WGMMA != 0, (DCC_WGMMA != 0 ? 1 : 2)>(launch",
                           "__launch_bounds__(128, (DCC_WGMMA != 0 ? 4 : 3)) mha_causal__k0__d64(",
                           "__body<64, (DCC_WGMMA != 0 ? 32 : 32), 1, 4, DCC_WGMMA != 0, (DCC_WGMMA != 0 ? 1 : 2)>(launch",
                           "__launch_bounds__(128, 3) mha_causal__k0__d64L(",
                           "__syncthreads();  // every warp's S has read K's parts in the stage"})
    EXPECT_NE(b.cu.find(text), std::string::npos) << text;
  const std::vector<Case> only{{{0, 1, 17, 5, 3, 0}, {3, 0, 17, 9, 1, 0}, 2, 64}, {{300, 130, 70}, {290, 130, 75}, 1, 64}};
  int checked = 0;
  const double worst = run(b, [](double s, int i, int j) { return j <= i ? s : -INFINITY; }, checked, 0, true, 1e-6, false, &only);
  std::printf("mha_causal (f32, 3xtf32, one K/V stage): %d outputs, max |err| = %.4g\n", checked, worst);
  EXPECT_GT(checked, 30000);
}

// f32 divisions by the block's sqrt(D) are corrected from its reciprocal
// (dcc_fdiv_pre) where the scores lie in [2^-100, 2^100] and divided again
// where one does not: Q times 2^100 (scores near 2^103: every tile's step
// runs again with a / b; the softmax one-hot) and times 2^-130 (scores near
// 2^-127, subnormal quotients: uniform weights), in both f32 forms and with
// the causal mask, against float64.
TEST(AttentionEmu, F32DivisionOutOfRange) {
  for (const bool sm90a : {false, true}) {
    Built b;
    build("mha_causal.toy", read(test_paths::examples_dir() + "/mha_causal.toy"), "mha_causal", b, gpu::Fp32Math::Split3xTf32, {}, sm90a);
    ASSERT_TRUE(b.entry);
    ASSERT_NE(b.cu.find("dcc_fdiv_pre(r_acc0, u0, u0_q, dq)"), std::string::npos);
    ASSERT_NE(b.cu.find("if (!dq) {  // an operand out of that range: IEEE division"), std::string::npos);
    for (const double scale : {0x1p100, 0x1p-130}) {
      SCOPED_TRACE(std::to_string(scale) + (sm90a ? " sm_90a" : ""));
      const std::vector<Case> only{{{70, 0, 5}, {70, 3, 5}, 1, 64, 1, scale}};
      int checked = 0;
      const double worst = run(b, [](double s, int i, int j) { return j <= i ? s : -INFINITY; }, checked, 0, true, 1e-6, false, &only);
      std::printf("mha_causal (f32, Q x %g%s): %d outputs, max |err| = %.4g\n", scale, sm90a ? ", sm_90a" : "", checked, worst);
      EXPECT_GT(checked, 4000);
    }
  }
}

// The masks and the soft cap run through the same element steps as in bf16
// (WindowBf16, SoftcapBf16); causal here covers skipped tiles with f32 MMAs
// (the few-cases set: empty sequences, B = 1, and 70 queries x 130 keys at
// head dim 128, several query and key tiles).
TEST(AttentionEmu, CausalF32) {
  check_f32("mha_causal.toy", "mha_causal", [](double s, int i, int j) { return j <= i ? s : -INFINITY; }, true,
            gpu::Fp32Math::Split3xTf32, 1e-6, true);
}

// Deferred rescaling (backend/gpu/plan_lazy_rescale.h): keys whose scores
// grow along the sequence (key j's values scaled by 1 + j / 4: the row
// maximum moves by tens after the first tile, past the slack, and would
// overflow exp if the reference stayed behind), in f32 (mha.toy) and with
// FlashAttention-2's precision (which declines it: P rounded to bf16, run
// eagerly on the same case); and a version of mha.toy whose output also
// reads the row sum after the key loop (+ 0.01 log(row_sum + 1)): the sum is
// relative to the running maximum only after the catch-up, so without it
// the output is off by up to 0.01 x the slack.
TEST(AttentionEmu, DeferredRescale) {
  const std::vector<Case> only{{{300, 2}, {290, 70}, 2, 64}, {{70, 0, 19}, {130, 5, 19}, 1, 128}};
  const Mod plain = [](double s, int, int) { return s; };
  std::string mha = read(test_paths::examples_dir() + "/mha.toy");
  const std::string lse = std::regex_replace(mha, std::regex("/ row_sum\\[b\\]\\[i, h\\];"),
                                             "/ row_sum[b][i, h] + 0.01 * log(row_sum[b][i, h] + 1.0);");
  ASSERT_NE(lse, mha);
  struct Variant {
    const char* file;
    std::string source;
    std::string fn;
    bool f32;
    double tol;
    std::function<double(double)> extra;
    bool defers = true;
  };
  const std::vector<Variant> variants{
      {"mha.toy", mha, "mha", true, 2e-5, nullptr},
      {"mha_lse.toy", lse, "mha", true, 2e-5, [](double l) { return 0.01 * std::log(l + 1); }},
      {"mha_bf16_f32_scores.toy", read(test_paths::examples_dir() + "/mha_bf16_f32_scores.toy"), "mha_bf16_f32_scores", false, 0.02,
       nullptr, false}};
  for (const auto& v : variants) {
    SCOPED_TRACE(v.file);
    Built b;
    build(v.file, v.source, v.fn, b);
    ASSERT_TRUE(b.entry);
    EXPECT_EQ(b.cu.find("bool stale = false;") != std::string::npos, v.defers) << "deferred rescaling: " << v.defers;
    int checked = 0;
    double worst = run(b, plain, checked, 0, v.f32, v.tol, false, &only, false, true, v.extra);
    std::printf("%s (scores growing along the keys): %d outputs, max |err| = %.4g\n", v.file, checked, worst);
    EXPECT_GT(checked, 10000);
  }
}

// Grouped-query attention (examples/gqa_bf16.toy): K/V head h / G for
// query head h, G = H / KH; G = 1 (KH = H: multi-head), 2 (GQA, 2 K/V heads
// for 4 query heads) and 4 (MQA, one K/V head), the same fused kernel.
TEST(AttentionEmu, GqaBf16) {
  Built b;
  build("gqa_bf16.toy", read(test_paths::examples_dir() + "/gqa_bf16.toy"), "gqa_bf16", b);
  ASSERT_TRUE(b.entry);
  EXPECT_NE(b.cu.find("gqa_bf16__k0__d64("), std::string::npos) << "not the fused kernel";
  for (int g : {1, 2, 4}) {
    SCOPED_TRACE("G = " + std::to_string(g));
    int checked = 0;
    double worst = run(b, [](double s, int, int) { return s; }, checked, g);
    std::printf("gqa_bf16, G = %d: %d outputs, max |err| = %.4g\n", g, checked, worst);
    EXPECT_GT(checked, 5000);
  }
}

// Head dims over 256: up to 512 the split instantiation (AttentionKernel::
// split, `__dx`: 8 warps share 16 rows, 64 columns each, partial scores
// added through shared memory), beyond it the streaming one (`__dw`: the
// score in chunks of 64 columns, Q loaded a chunk at a time, the output
// columns over blockIdx.y). mha_bf16 at head dims 320 and 600 (16-byte
// copies), 300 and 516 (element copies, a partial last chunk), with empty
// sequences, a query with no keys, and several key tiles.
TEST(AttentionEmu, WideHeadDimBf16) {
  Built b;
  build("mha_bf16.toy", read(test_paths::examples_dir() + "/mha_bf16.toy"), "mha_bf16", b);
  ASSERT_TRUE(b.entry);
  EXPECT_NE(b.cu.find("mha_bf16__k0__dx("), std::string::npos) << "no split instantiation";
  EXPECT_NE(b.cu.find("mha_bf16__k0__dw("), std::string::npos) << "no streaming instantiation";
  const std::vector<Case> wide{{{0, 1, 17, 5, 3, 0}, {3, 0, 17, 9, 1, 0}, 1, 320},
                               {{70, 19}, {130, 19}, 1, 300},
                               {{0, 17, 3}, {3, 17, 0}, 1, 600},
                               {{40}, {70}, 1, 516}};
  int checked = 0;
  double worst = run(b, [](double s, int, int) { return s; }, checked, 0, false, 0.02, false, &wide);
  std::printf("mha_bf16, head dims 300 to 600: %d outputs, max |err| = %.4g\n", checked, worst);
  EXPECT_GT(checked, 50000);
}

// The seed's examples/flash_attention.toy: one score per (i, j) summed over
// every head and head dim, one K/V tensor (its keys are its values). Its
// (h, d) loops collapse to one contraction index and one column index
// (ir/collapse_loops.h), so it is one fused kernel: at H x D = 128 the
// head-dim-128 instantiation, at 4 x 80 = 320 and 7 x 42 = 294 (element
// copies) the split one, at 9 x 64 = 576 the streaming one, at 3 x 30 = 90
// the element copies. Against float64 computed here; 3xTF32 keeps f32
// accuracy (bound 1e-5: sums over up to 576 products of values up to 2).
TEST(AttentionEmu, FlashAttentionF32) {
  Built b;
  build("flash_attention.toy", read(test_paths::examples_dir() + "/flash_attention.toy"), "flash_attention", b);
  ASSERT_TRUE(b.entry);
  EXPECT_NE(b.cu.find("flash_attention__k0__d128("), std::string::npos) << "not the fused kernel";
  EXPECT_NE(b.cu.find("flash_attention__k0__dx("), std::string::npos) << "no split instantiation";
  EXPECT_NE(b.cu.find("flash_attention__k0__dw("), std::string::npos) << "no streaming instantiation";
  const std::vector<Case> all{{{0, 1, 17, 5, 3, 0}, {3, 0, 17, 9, 1, 0}, 4, 80},
                              {{1}, {1}, 4, 80},
                              {{40, 3}, {35, 0}, 7, 42},
                              {{0, 20}, {5, 33}, 9, 64},
                              {{70, 19}, {130, 19}, 2, 64},
                              {{33, 2}, {40, 64}, 3, 30}};
  double worst = 0;
  int checked = 0;
  for (const Case& c : all) {
    const size_t Bn = c.ql.size();
    const int H = c.H, D = c.D, W = H * D;
    std::vector<size_t> qo{0}, ko{0};
    for (size_t x = 0; x < Bn; ++x) {
      qo.push_back(qo.back() + static_cast<size_t>(c.ql[x]) * W);
      ko.push_back(ko.back() + static_cast<size_t>(c.kl[x]) * W);
    }
    std::mt19937 rng(static_cast<unsigned>(Bn * 17 + W));
    std::uniform_real_distribution<double> dist(-1.0, 1.0);
    std::vector<float> q(std::max<size_t>(qo.back(), 1)), kv(std::max<size_t>(ko.back(), 1)),
        out(std::max<size_t>(qo.back(), 1), NAN);
    for (auto& x : q) x = static_cast<float>(2 * dist(rng));
    for (auto& x : kv) x = static_cast<float>(2 * dist(rng));
    std::vector<int32_t> ql = c.ql, kl = c.kl;
    std::map<std::string, void*> bufs{{"q.seqlen", ql.data()}, {"kv.seqlen", kl.data()}, {"q.data", q.data()},
                                      {"kv.data", kv.data()},  {"output.data", out.data()}};
    std::vector<void*> ptrs;
    for (const auto& buf : b.func->buffers) {
      if (buf->kind != ir::BufferKind::Input && buf->kind != ir::BufferKind::Output) continue;
      ASSERT_TRUE(bufs.count(buf->name)) << buf->name;
      ptrs.push_back(bufs[buf->name]);
    }
    ptrs.push_back(nullptr);
    std::vector<int64_t> sizes;
    for (const auto& sz : b.func->sizes) sizes.push_back(sz.name == "B" ? static_cast<int64_t>(Bn) : sz.name == "H" ? H : D);
    sizes.push_back(0);
    ASSERT_EQ(b.entry(sizes.data(), ptrs.data()), 0);
    for (size_t x = 0; x < Bn; ++x)
      for (int i = 0; i < c.ql[x]; ++i) {
        std::vector<double> s(c.kl[x]);
        double m = -INFINITY;
        for (int j = 0; j < c.kl[x]; ++j) {
          double dot = 0;
          for (int r = 0; r < W; ++r) dot += double(q[qo[x] + static_cast<size_t>(i) * W + r]) * kv[ko[x] + static_cast<size_t>(j) * W + r];
          s[j] = dot / std::sqrt(static_cast<double>(D));
          m = std::max(m, s[j]);
        }
        double sum = 0;
        std::vector<double> ref(W, 0.0);
        for (int j = 0; j < c.kl[x]; ++j) {
          const double p = std::exp(s[j] - m);
          sum += p;
          for (int r = 0; r < W; ++r) ref[r] += p * kv[ko[x] + static_cast<size_t>(j) * W + r];
        }
        for (int r = 0; r < W; ++r) {
          const double want = sum == 0 ? 0 : ref[r] / sum;
          const double got = out[qo[x] + static_cast<size_t>(i) * W + r];
          EXPECT_LE(std::fabs(got - want), 1e-5) << "H " << H << " D " << D << " b " << x << " i " << i << " column " << r
                                                 << ": " << got << " vs " << want;
          if (!(std::fabs(got - want) <= 1e-5)) return;
          worst = std::max(worst, std::fabs(got - want));
          ++checked;
        }
      }
  }
  std::printf("flash_attention (f32): %d outputs, max |err| = %.4g\n", checked, worst);
  EXPECT_GT(checked, 20000);
}

}  // namespace
}  // namespace dccc::backend
