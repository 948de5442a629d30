// The CUDA target's whole library -- the C wrapper (backend/abi) and the
// kernels with their launchers and prelude code (backend/cuda) -- built
// against cuda_emu.h and run on the CPU (label `unit`; no GPU, no nvcc),
// for what the stream entry point f_on_stream (docs/abi.md, "The CUDA
// target") promises that needs no GPU to check:
//  - mha_bf16_on_stream with host length arrays, NULL stream, the cache or a
//    held prelude, gives bit for bit what mha_bf16 gives (the emulator's
//    device memory is host memory, so mha_bf16 takes the same arrays as
//    device ones), within 0.02 of float64;
//  - a repeated call with the same lengths computes nothing: the prelude
//    cache's misses stay, its hits grow by the entries one call uses (the
//    prelude units with their device copies, the lengths' device copies and
//    the tile list);
//  - wrong host lengths (negative, disagreeing with data_len, a held prelude
//    made for others) and a result too small return the CPU target's
//    statuses and write nothing.
// The GPU half (a stream of its own, CUDA graph capture and replay) is
// examples/host/stream_cuda_host.cu, run by bench/cuda/run_gpu.sh.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>

#include "backend/abi/c_abi.h"
#include "backend/cuda/cuda_abi.h"
#include "dccrt.h"
#include "tests/unit/backend/cuda_emu_build.h"
#include "tests/unit/backend/half_bits.h"
#include "tests/unit/test_paths.h"

namespace dccc::backend {
namespace {

using testing::from_bf16;
using testing::to_bf16;
std::string read(const std::string& path) { return testing::read_text(path); }

// examples/mha_bf16.h's structs (the test checks the header declares them so).
struct PackedQueries {
  uint16_t* data;
  int64_t data_len;
  int32_t* seqlen;
  int64_t seqlen_len;
  int64_t B, H, D;
};
struct PackedKV {
  uint16_t* k;
  int64_t k_len;
  uint16_t* v;
  int64_t v_len;
  int32_t* seqlen;
  int64_t seqlen_len;
  int64_t B, H, D;
};
using Plain = int (*)(const PackedQueries*, const PackedKV*, PackedQueries*);
using OnStream = int (*)(const void*, const PackedQueries*, const PackedKV*, PackedQueries*, void*);
using MakePrelude = int (*)(const PackedQueries*, const PackedKV*, void**);
using DestroyPrelude = void (*)(void*);
using Stats = int (*)(void*, uint64_t*, uint64_t*, uint64_t*);
using Cache = void* (*)();
using LastError = const char* (*)();

struct Lib {
  testing::Program keep;
  std::string header;
  void* so = nullptr;
  Plain plain = nullptr;
  OnStream on_stream = nullptr;
  MakePrelude make_prelude = nullptr;
  DestroyPrelude destroy = nullptr;
  Stats stats = nullptr;
  Cache cache = nullptr;
  LastError last_error = nullptr;
};

/// examples/NAME.toy as `dccc --target=cuda -o` builds it, the kernels'
/// CUDA made C++ for cuda_emu.h, the wrapper compiled as C.
void build(Lib& l, const std::string& name = "mha_bf16") {
  testing::Program& p = l.keep;
  ASSERT_TRUE(testing::front_end(p, name + ".toy", read(test_paths::examples_dir() + "/" + name + ".toy"))) << testing::diagnostics(p);
  ir::PipelineOptions o;
  o.target = ir::Target::Cuda;
  o.online_reductions = true;
  testing::run_passes(p, o);
  ASSERT_TRUE(p.module) << testing::diagnostics(p);
  assign_c_names(*p.module, &cuda_device_abi());
  l.header = emit_header(*p.module, name + ".toy", "EXAMPLE_H", &cuda_device_abi());
  std::string cu = emit_cuda(*p.module, {}) + emit_cuda_prelude(*p.module);
  // The prelude units' GPU kernels (DCCC_CUDA_PRELUDE=gpu, not set here)
  // take three arguments: called directly, one thread.
  cu = std::regex_replace(cu, std::regex("(dcc_gpu_prelude::\\w+)<<<1, 1>>>"), "$1");
  auto dir = testing::scratch_dir("on-stream-emu-" + name);
  std::ofstream(dir / (name + ".h")) << l.header;
  std::ofstream(dir / "abi.c") << emit_wrapper(*p.module, name + ".h", &cuda_device_abi());
  std::ofstream(dir / "kernels.cpp") << testing::emulated(cu);
  const std::string so = (dir / (name + ".so")).string();
  std::string cmd = "cc -std=c11 -O1 -fPIC -w -c -I" + dir.string() + " -I" + test_paths::runtime_include() +
                    " -o " + (dir / "abi.o").string() + " " + (dir / "abi.c").string() + " 2>&1 && " +
                    testing::emulated_compile(dir, "kernels.cpp", "kernels.o", "-O1") + " && " + test_paths::cxx() +
                    " -shared -pthread -o " + so + " " + (dir / "kernels.o").string() + " " + (dir / "abi.o").string() +
                    " " + test_paths::runtime_lib() + " -lpthread 2>&1";
  std::string log;
  l.so = testing::build_and_open(cmd, so, log);
  ASSERT_NE(l.so, nullptr) << log;
  l.plain = reinterpret_cast<Plain>(dlsym(l.so, name.c_str()));
  l.on_stream = reinterpret_cast<OnStream>(dlsym(l.so, (name + "_on_stream").c_str()));
  l.make_prelude = reinterpret_cast<MakePrelude>(dlsym(l.so, (name + "_prelude").c_str()));
  l.destroy = reinterpret_cast<DestroyPrelude>(dlsym(l.so, "dcc_prelude_destroy"));
  l.stats = reinterpret_cast<Stats>(dlsym(l.so, "dcc_prelude_cache_stats"));
  l.cache = reinterpret_cast<Cache>(dlsym(l.so, "dcc_default_prelude_cache"));
  l.last_error = reinterpret_cast<LastError>(dlsym(l.so, "dcc_last_error"));
  // (plain, on_stream and make_prelude: a function named like the file.)
  ASSERT_TRUE(l.destroy && l.stats && l.cache && l.last_error);
}

struct Batch {
  std::vector<int32_t> ql, kl;
  int64_t H = 2, D = 64, nq = 0, nk = 0;
  std::vector<uint16_t> q, k, v, out;
  Batch(std::vector<int32_t> a, std::vector<int32_t> b, unsigned seed) : ql(std::move(a)), kl(std::move(b)) {
    for (int32_t n : ql) nq += n;
    for (int32_t n : kl) nk += n;
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    q.resize(std::max<int64_t>(1, nq * H * D));
    k.resize(std::max<int64_t>(1, nk * H * D));
    v.resize(std::max<int64_t>(1, nk * H * D));
    for (auto& x : q) x = to_bf16(2 * u(rng));
    for (auto& x : k) x = to_bf16(2 * u(rng));
    for (auto& x : v) x = to_bf16(u(rng));
    poison();
  }
  void poison() { out.assign(std::max<int64_t>(1, nq * H * D), 0x7FC0); }
  bool untouched() const {
    for (uint16_t h : out)
      if (h != 0x7FC0) return false;
    return true;
  }
  void args(PackedQueries* a, PackedKV* b, PackedQueries* r) {
    const int64_t B = static_cast<int64_t>(ql.size());
    *a = PackedQueries{q.data(), nq * H * D, ql.data(), B, B, H, D};
    *b = PackedKV{k.data(), nk * H * D, v.data(), nk * H * D, kl.data(), B, B, H, D};
    *r = PackedQueries{out.data(), nq * H * D, nullptr, 0, 0, 0, 0};
  }
  /// The largest error of `out` against float64.
  double error() const {
    double worst = 0;
    int64_t q0 = 0, k0 = 0;
    for (size_t b = 0; b < ql.size(); ++b) {
      for (int64_t i = 0; i < ql[b]; ++i)
        for (int64_t h = 0; h < H; ++h) {
          std::vector<double> s(kl[b]);
          double m = -INFINITY, sum = 0;
          for (int64_t j = 0; j < kl[b]; ++j) {
            double dot = 0;
            for (int64_t d = 0; d < D; ++d)
              dot += from_bf16(q[((q0 + i) * H + h) * D + d]) * from_bf16(k[((k0 + j) * H + h) * D + d]);
            s[j] = dot / std::sqrt(static_cast<double>(D));
            m = std::max(m, s[j]);
          }
          std::vector<double> ref(D, 0.0);
          for (int64_t j = 0; j < kl[b]; ++j) {
            const double p = std::exp(s[j] - m);
            sum += p;
            for (int64_t d = 0; d < D; ++d) ref[d] += p * from_bf16(v[((k0 + j) * H + h) * D + d]);
          }
          for (int64_t d = 0; d < D; ++d) {
            const double got = from_bf16(out[((q0 + i) * H + h) * D + d]);
            if (std::isnan(got)) return INFINITY;
            worst = std::max(worst, std::fabs(got - (sum == 0 ? 0 : ref[d] / sum)));
          }
        }
      q0 += ql[b];
      k0 += kl[b];
    }
    return worst;
  }
};

TEST(OnStreamEmu, MhaBf16) {
  Lib l;
  build(l);
  ASSERT_TRUE(l.so);
  ASSERT_TRUE(l.plain && l.on_stream && l.make_prelude);
  // The header declares it with the stream as cudaStream_t's struct.
  EXPECT_NE(l.header.find("dcc_status mha_bf16_on_stream(const dcc_prelude* prelude, const PackedQueries* q, "
                          "const PackedKV* kv, PackedQueries* result, struct CUstream_st* dcc_stream)"),
            std::string::npos)
      << l.header;
  EXPECT_NE(l.header.find("typedef struct PackedKV {\n  uint16_t* k;"), std::string::npos);
  std::vector<std::pair<std::vector<int32_t>, std::vector<int32_t>>> patterns = {
      {{0, 1, 17, 5, 3, 0}, {3, 0, 17, 9, 1, 0}}, {{1}, {1}}, {{70, 2}, {130, 9}}};
  unsigned seed = 1;
  for (const auto& [ql, kl] : patterns) {
    SCOPED_TRACE("B = " + std::to_string(ql.size()));
    Batch x(ql, kl, seed++);
    PackedQueries q, out;
    PackedKV kv;
    x.args(&q, &kv, &out);
    ASSERT_EQ(l.plain(&q, &kv, &out), DCC_OK) << l.last_error();
    const std::vector<uint16_t> plain = x.out;
    const double err = x.error();
    EXPECT_LE(err, 0.02);
    std::printf("B = %zu: mha_bf16 max |err| = %.4g\n", ql.size(), err);

    // The cache: the first call with host lengths may add the lengths'
    // device copies; the second computes nothing.
    x.poison();
    ASSERT_EQ(l.on_stream(nullptr, &q, &kv, &out, nullptr), DCC_OK) << l.last_error();
    EXPECT_EQ(x.out, plain) << "mha_bf16_on_stream equals mha_bf16";
    EXPECT_EQ(out.seqlen, x.ql.data()) << "the result's seqlen is the host array given";
    uint64_t h0, m0, b0, h1, m1, b1;
    l.stats(l.cache(), &h0, &m0, &b0);
    x.poison();
    ASSERT_EQ(l.on_stream(nullptr, &q, &kv, &out, nullptr), DCC_OK) << l.last_error();
    l.stats(l.cache(), &h1, &m1, &b1);
    EXPECT_EQ(x.out, plain);
    EXPECT_EQ(m1, m0) << "a repeated call computes nothing";
    // mha_bf16 looks up 2 prelude units (the query and key offsets: one
    // entry when the lengths are equal, looked up twice; the cache counts
    // each lookup), each with its device copy, 2 length arrays' device
    // copies and 1 tile list: 7 hits.
    EXPECT_EQ(h1 - h0, 2u * 2 + 2 + 1);

    // A held prelude (made from the same arrays as device ones).
    void* pre = nullptr;
    ASSERT_EQ(l.make_prelude(&q, &kv, &pre), DCC_OK) << l.last_error();
    x.poison();
    ASSERT_EQ(l.on_stream(pre, &q, &kv, &out, nullptr), DCC_OK) << l.last_error();
    EXPECT_EQ(x.out, plain);
    l.stats(l.cache(), &h0, &m0, &b0);
    x.poison();
    ASSERT_EQ(l.on_stream(pre, &q, &kv, &out, nullptr), DCC_OK) << l.last_error();
    l.stats(l.cache(), &h1, &m1, &b1);
    EXPECT_EQ(x.out, plain);
    EXPECT_EQ(h1, h0) << "a held prelude's call does not touch the cache";
    EXPECT_EQ(m1, m0);

    // Wrong lengths: the statuses of mha_bf16, nothing written.
    x.poison();
    std::vector<int32_t> bad = ql;
    bad.back() = -1;
    q.seqlen = bad.data();
    EXPECT_EQ(l.on_stream(nullptr, &q, &kv, &out, nullptr), DCC_ERR_NEGATIVE_LENGTH);
    EXPECT_NE(std::string(l.last_error()).find("lengths must be >= 0"), std::string::npos) << l.last_error();
    bad.back() = ql.back() + 1;
    EXPECT_EQ(l.on_stream(nullptr, &q, &kv, &out, nullptr), DCC_ERR_SIZE_MISMATCH) << "data_len disagrees";
    EXPECT_EQ(l.on_stream(pre, &q, &kv, &out, nullptr), DCC_ERR_SIZE_MISMATCH) << l.last_error();
    x.args(&q, &kv, &out);
    out.data_len = 0;
    if (x.nq > 0) {
      EXPECT_EQ(l.on_stream(nullptr, &q, &kv, &out, nullptr), DCC_ERR_SIZE_MISMATCH) << "a result too small";
    }
    EXPECT_EQ(l.on_stream(nullptr, nullptr, &kv, &out, nullptr), DCC_ERR_NULL_POINTER);
    EXPECT_TRUE(x.untouched()) << "a rejected call writes nothing";
    l.destroy(pre);
  }
}

// examples/where_layout.toy's scale(x, s): f_on_stream hands the scalar s
// to the device in a kernel's argument (dcc__set_bytes, what a graph
// replays) instead of a copy from the caller's memory; y must be x * s,
// as scale gives it.
TEST(OnStreamEmu, ScalarArgument) {
  Lib l;
  build(l, "where_layout");
  ASSERT_TRUE(l.so);
  struct PackedTensor {
    float* data;
    int64_t data_len;
    int32_t* seqlen;
    int64_t seqlen_len;
    int64_t B, H, D;
  };
  EXPECT_NE(l.header.find("typedef struct PackedTensor {\n  float* data;"), std::string::npos);
  using SPlain = int (*)(const PackedTensor*, float, PackedTensor*);
  using SOnStream = int (*)(const void*, const PackedTensor*, float, PackedTensor*, void*);
  auto plain = reinterpret_cast<SPlain>(dlsym(l.so, "scale"));
  auto on_stream = reinterpret_cast<SOnStream>(dlsym(l.so, "scale_on_stream"));
  ASSERT_TRUE(plain && on_stream);
  const int64_t H = 2, D = 3;
  std::vector<int32_t> sl = {5, 0, 17};
  const int64_t n = 22 * H * D;
  std::vector<float> x(n), y(n, NAN), want(n);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (auto& e : x) e = u(rng);
  for (int64_t k = 0; k < n; ++k) want[k] = x[k] * 2.5f;
  PackedTensor ax{x.data(), n, sl.data(), 3, 3, H, D}, ay{y.data(), n, nullptr, 0, 0, 0, 0};
  ASSERT_EQ(plain(&ax, 2.5f, &ay), DCC_OK) << l.last_error();
  EXPECT_EQ(y, want);
  y.assign(n, NAN);
  ASSERT_EQ(on_stream(nullptr, &ax, 2.5f, &ay, nullptr), DCC_OK) << l.last_error();
  EXPECT_EQ(y, want) << "scale_on_stream's s reached the device";
}

}  // namespace
}  // namespace dccc::backend
