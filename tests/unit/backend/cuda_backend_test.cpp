// GPU tests of the CUDA backend (CTest label `cuda`): every function of
// every example is emitted as CUDA, built by nvcc for this machine's GPU,
// and run on the random length patterns of differential.h next to the LLVM
// CPU backend; both must match the float64 reference within 1e-5 relative
// error and each other. ScheduledMatchCpuBackend does the same for the
// examples compiled with the schedules of tests/cuda/schedules and
// tests/host (EXAMPLE.VARIANT.schedule, EXAMPLE_VARIANT.schedule), as
// `dccc --target=cuda --schedule=...` compiles them, against the
// unscheduled CPU backend. Without nvcc or without a GPU the tests report
// SKIPPED (CTest shows them as skipped, never as passed).
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <set>
#include <sstream>

#include "backend/cuda/cuda_codegen.h"
#include "backend/cuda/cuda_prologue.h"
#include "backend/llvm/jit.h"
#include "tests/unit/backend/cuda_scheduled.h"
#include "tests/unit/backend/grouped_gemm_check.h"
#include "tests/unit/backend/half_bits.h"
#include "tests/unit/test_paths.h"

namespace dccc::backend {
namespace {

using testing::compile;
using testing::Engine;
using testing::Program;

/// nvcc: $DCCC_NVCC, else the toolkit in /usr/local/cuda. (The checkout's
/// paths, overridable from the environment for a GPU machine whose checkout
/// lives elsewhere, are tests/unit/test_paths.h's.)
std::string find_nvcc() {
  if (const char* e = std::getenv("DCCC_NVCC"); e && *e) return e;
  if (access("/usr/local/cuda/bin/nvcc", X_OK) == 0) return "/usr/local/cuda/bin/nvcc";
  return "";
}

/// nvcc's architecture flags for this machine's GPU: sm_90a on an H100 /
/// H200 (compute capability 9.0), as dccc's default fatbinary runs there
/// (the fused attention's wgmma instantiations), else -arch=native.
std::string arch_flags() {
  static const std::string flags = [] {
    std::string cap;
    if (FILE* p = popen("nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null", "r")) {
      char line[64] = {};
      if (std::fgets(line, sizeof line, p)) cap = line;
      pclose(p);
    }
    return cap.rfind("9.0", 0) == 0 ? std::string("-gencode arch=compute_90a,code=sm_90a") : std::string("-arch=native");
  }();
  return flags;
}

/// Builds `source` into a shared library with nvcc; returns its dlopen handle.
void* build(const std::string& nvcc, const std::string& source, const std::filesystem::path& dir,
            const std::string& stem, std::string& log) {
  std::filesystem::path cu = dir / (stem + ".cu"), so = dir / (stem + ".so");
  std::ofstream(cu) << source;
  std::string cmd = nvcc + " --threads 0 -O3 -std=c++17 -shared -Xcompiler -fPIC " + arch_flags() + " -I" +
                    test_paths::runtime_include() + " -o " + so.string() + " " +
                    cu.string() + " " + test_paths::runtime_lib() + " -lpthread 2>&1";
  return testing::build_and_open(cmd, so, log);
}

TEST(CudaBackend, ExamplesMatchCpuBackendAndFloat64Reference) {
  if (access("/dev/nvidiactl", F_OK) != 0) GTEST_SKIP() << "no NVIDIA GPU on this machine (/dev/nvidiactl)";
  std::string nvcc = find_nvcc();
  if (nvcc.empty()) GTEST_SKIP() << "no nvcc (set DCCC_NVCC or install CUDA in /usr/local/cuda)";
  std::filesystem::path dir = std::filesystem::temp_directory_path() / ("dccc-cuda-test-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  int compared = 0, functions = 0;
  bool checked_gpu = false;
  // The CPU side as the CPU target compiles it, the GPU side as the CUDA
  // target does (with element-wise producers fused into their readers).
  std::string examples = test_paths::examples_dir();
  auto cpu_side = testing::compile_examples(examples);
  auto gpu_side = testing::compile_examples(examples, /*cuda_passes=*/true);
  ASSERT_EQ(cpu_side.size(), gpu_side.size());
  int fused = 0;
  std::set<std::string> ran;
  // DCCC_EXAMPLES_ONLY=stem[,stem...]: only those examples (compute-sanitizer
  // runs over one kernel's examples); the counts below are then not checked.
  const char* only_env = std::getenv("DCCC_EXAMPLES_ONLY");
  const std::string only = only_env ? only_env : "";
  auto wanted = [&](const std::string& stem) {
    return only.empty() || ("," + only + ",").find("," + stem + ",") != std::string::npos;
  };
  for (size_t k = 0; k < cpu_side.size(); ++k) {
    auto& [name, stem, p] = cpu_side[k];
    const auto& g = gpu_side[k].program;
    if (!p.module || !wanted(stem)) continue;  // !module: uses something the code generators do not handle yet
    ASSERT_TRUE(g.module) << name;
    for (size_t fi = 0; fi < p.module->funcs.size(); ++fi)
      fused += p.module->funcs[fi].buffers.size() != g.module->funcs[fi].buffers.size();
    std::string error;
    auto jit = JitProgram::compile(*p.module, error);
    ASSERT_TRUE(jit) << name << ": " << error;
    std::string log;
    void* lib = build(nvcc, emit_cuda(*g.module), dir, stem, log);
    ASSERT_NE(lib, nullptr) << name << ": " << log;
    if (!checked_gpu) {
      auto count = reinterpret_cast<int (*)()>(dlsym(lib, "dcc_cuda_device_count"));
      ASSERT_NE(count, nullptr);
      if (count() == 0) {
        std::filesystem::remove_all(dir);
        GTEST_SKIP() << "no CUDA GPU on this machine";
      }
      checked_gpu = true;
    }
    // transformer_block's `where`: E == 2 * K (RoPE's half-split heads),
    // every length <= P (the patterns' longest is 70).
    std::map<std::string, int64_t> fixed;
    if (stem == "transformer_block") fixed = {{"E", 4}, {"K", 2}, {"P", 80}};
    int before = compared;
    for (const auto& f : p.module->funcs) {
      // (An imported file's functions are inlined, not exported: `stem.name`.)
      if (f.name == "main" || f.name.find('.') != std::string::npos) continue;
      auto gpu = reinterpret_cast<int32_t (*)(const int64_t*, void* const*)>(dlsym(lib, (f.name + "__cuda_host").c_str()));
      ASSERT_NE(gpu, nullptr) << f.name;
      testing::run_differential(f, {Engine{"llvm", jit->kernel(f.name)}, Engine{"cuda", gpu}}, name, compared, fixed);
      ++functions;
    }
    if (compared > before) ran.insert(stem);
  }
  std::filesystem::remove_all(dir);
  if (!only.empty()) {
    EXPECT_GT(compared, 0) << "DCCC_EXAMPLES_ONLY=" << only << " ran nothing";
    return;
  }
  // Nested raggedness (examples/causal_attention.toy, examples/documents.toy)
  // must run on the GPU, not be skipped.
  EXPECT_TRUE(ran.count("causal_attention") && ran.count("documents"));
  // The examples built from std/ imports (run_gpu.sh puts stdlib/ where
  // this binary looks for it: <its folder>/../share/dccc/std).
  EXPECT_TRUE(ran.count("transformer_block") && ran.count("mha_generic") && ran.count("ragged_pool"));
  EXPECT_GE(functions, 8);
  EXPECT_GE(fused, 2) << "functions with fused tensors (mha's p, softmax's)";
  EXPECT_GT(compared, 10000);
}

TEST(CudaBackend, ScheduledMatchCpuBackend) {
  if (access("/dev/nvidiactl", F_OK) != 0) GTEST_SKIP() << "no NVIDIA GPU on this machine (/dev/nvidiactl)";
  std::string nvcc = find_nvcc();
  if (nvcc.empty()) GTEST_SKIP() << "no nvcc (set DCCC_NVCC or install CUDA in /usr/local/cuda)";
  std::filesystem::path dir = std::filesystem::temp_directory_path() / ("dccc-cuda-sched-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::string examples = test_paths::examples_dir();
  auto files = testing::schedule_files(test_paths::cuda_schedules_dirs());
  ASSERT_GE(files.size(), 4u) << "schedule files in " << test_paths::cuda_schedules_dirs();
  int compared = 0, functions = 0, mapped = 0;
  for (const auto& file : files) {
    std::string stem = file.stem().string();
    SCOPED_TRACE(file.string());
    Program cpu, gpu;
    ASSERT_NO_FATAL_FAILURE(testing::compile_scheduled_pair(file, examples, cpu, gpu, mapped));
    std::string error;
    auto jit = JitProgram::compile(*cpu.module, error);
    ASSERT_TRUE(jit) << error;
    std::string log;
    void* lib = build(nvcc, emit_cuda(*gpu.module), dir, stem, log);
    ASSERT_NE(lib, nullptr) << log;
    auto count = reinterpret_cast<int (*)()>(dlsym(lib, "dcc_cuda_device_count"));
    ASSERT_NE(count, nullptr);
    if (count() == 0) {
      std::filesystem::remove_all(dir);
      GTEST_SKIP() << "no CUDA GPU on this machine";
    }
    for (const auto& f : cpu.module->funcs) {
      if (f.name == "main") continue;
      auto run = reinterpret_cast<int32_t (*)(const int64_t*, void* const*)>(dlsym(lib, (f.name + "__cuda_host").c_str()));
      ASSERT_NE(run, nullptr) << f.name;
      testing::run_differential(f, {Engine{"llvm", jit->kernel(f.name)}, Engine{"cuda", run}}, stem, compared);
      ++functions;
    }
  }
  std::filesystem::remove_all(dir);
  EXPECT_GE(functions, 4);
  EXPECT_GE(mapped, 4) << "statements mapped by gpu_blocks / gpu_threads";
  EXPECT_GT(compared, 1000);
}

// Every tensor-core GEMM path on the GPU against float64: bf16 and f16
// operands (m16n8k16, ldmatrix), f32 as 3xTF32 and as TF32 (m16n8k8), and
// --fp32-math=ieee (the FMA kernel); groups with M, N and K of 0, 1, 15,
// 16, 17 and 4,096 (each length in each dimension), and B = 1 with
// K = 4,096 and with M = 4,096. Tolerances per output element as in
// mma_emu_test.cpp, with S = sum |a b|: 1e-5 S (bf16 output: + 2^-8 |ref|;
// TF32: 2^-10 S).
// The device's exp and division with 16-bit results (dcc_exp16, dcc_fdiv16;
// docs/cuda.md "16-bit results") on every bf16 and every f16 input (exp)
// and on 2^20 random pairs plus zeros, infinities and NaN (division): the
// rounded result is the correctly rounded one of the float64 value or a
// neighbour in the 16-bit type, 0 / 0 is 0, and NaN stays NaN. And bf16
// rounding itself (dcc_rbf16, one cvt.rn.bf16x2) on 2^22 random f32 bit
// patterns: exactly the host's round-to-nearest-even (half_bits.h).
/// An element-wise test kernel over f32 arrays: `body` sets y[i] from x[i],
/// b[i] and `mode`, built with the CUDA prologue (the device functions under
/// test); `run(x, b, y, n, mode)` copies in, launches, copies out (0: ok).
/// `skip` says why it cannot run on this machine, `error` why it did not build.
struct ElementKernel {
  std::filesystem::path dir;
  int (*run)(const float*, const float*, float*, int, int) = nullptr;
  std::string skip, error;
  ElementKernel(const std::string& name, const std::string& body) {
    if (access("/dev/nvidiactl", F_OK) != 0) {
      skip = "no NVIDIA GPU on this machine (/dev/nvidiactl)";
      return;
    }
    const std::string nvcc = find_nvcc();
    if (nvcc.empty()) {
      skip = "no nvcc (set DCCC_NVCC or install CUDA in /usr/local/cuda)";
      return;
    }
    dir = std::filesystem::temp_directory_path() / ("dccc-cuda-" + name + "-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    const std::string cu = std::string(kCudaPrologue) + "__global__ void " + name +
                           "(const float* x, const float* b, float* y, int n, int mode) {\n"
                           "  const int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i >= n) return;\n" +
                           body + "\n}\n" + R"CU(extern "C" int element_run(const float* x, const float* b, float* y, int n, int mode) {
  float *dx = nullptr, *db = nullptr, *dy = nullptr;
  const size_t bytes = sizeof(float) * (size_t)n;
  if (cudaMalloc(&dx, bytes) || cudaMalloc(&db, bytes) || cudaMalloc(&dy, bytes)) return 1;
  cudaMemcpy(dx, x, bytes, cudaMemcpyHostToDevice);
  cudaMemcpy(db, b, bytes, cudaMemcpyHostToDevice);
  )CU" + name + R"CU(<<<(n + 255) / 256, 256>>>(dx, db, dy, n, mode);
  cudaMemcpy(y, dy, bytes, cudaMemcpyDeviceToHost);
  cudaFree(dx), cudaFree(db), cudaFree(dy);
  return cudaGetLastError() != cudaSuccess;
}
)CU";
    void* lib = build(nvcc, cu, dir, name, error);
    if (!lib) return;
    auto count = reinterpret_cast<int (*)()>(dlsym(lib, "dcc_cuda_device_count"));
    run = reinterpret_cast<int (*)(const float*, const float*, float*, int, int)>(dlsym(lib, "element_run"));
    if (!count || !run) {
      const char* e = dlerror();
      error = std::string("dlsym: ") + (e ? e : "?"), run = nullptr;
      return;
    }
    if (count() == 0) skip = "no CUDA GPU on this machine";
  }
  ~ElementKernel() {
    if (!dir.empty()) std::filesystem::remove_all(dir);
  }
};

TEST(CudaBackend, Exp16AndDiv16WithinOneUnitOnEveryInput) {
  ElementKernel k("math16",
                  "  if (mode == 0) y[i] = dcc_rbf16(dcc_exp16(x[i]));\n"
                  "  if (mode == 1) y[i] = dcc_rf16(dcc_exp16(x[i]));\n"
                  "  if (mode == 2) y[i] = dcc_rbf16(dcc_fdiv16(x[i], b[i]));\n"
                  "  if (mode == 3) y[i] = dcc_rf16(dcc_fdiv16(x[i], b[i]));\n"
                  "  if (mode == 4) y[i] = dcc_rbf16(x[i]);");
  if (!k.skip.empty()) GTEST_SKIP() << k.skip;
  ASSERT_NE(k.run, nullptr) << k.error;
  auto run = k.run;
  {
    std::mt19937 gen(3);
    const int n = 1 << 22;
    std::vector<float> x(n), b(n, 1.0f), y(n);
    for (int i = 0; i < n; ++i) {
      const uint32_t u = static_cast<uint32_t>(gen());
      std::memcpy(&x[i], &u, 4);
    }
    ASSERT_EQ(run(x.data(), b.data(), y.data(), n, 4), 0);
    int bad = 0;
    for (int i = 0; i < n; ++i) {
      const double want = testing::from_bf16(testing::to_bf16(x[i]));
      const bool ok = std::isnan(want) ? std::isnan(y[i]) : static_cast<double>(y[i]) == want;
      if (!ok && bad++ < 5) ADD_FAILURE() << "bf16(" << x[i] << ") = " << y[i] << ", host " << want;
    }
    EXPECT_EQ(bad, 0);
  }
  for (int bf = 1; bf >= 0; --bf) {
    SCOPED_TRACE(bf ? "bf16" : "f16");
    auto bits = [&](double v) { return bf ? testing::to_bf16(static_cast<float>(v)) : testing::to_f16(static_cast<float>(v)); };
    auto value = [&](uint16_t h) { return bf ? testing::from_bf16(h) : testing::from_f16(h); };
    // Within one unit of the correctly rounded 16-bit value of r (the
    // float64 result rounded once to f32 first: a double rounding is
    // itself within one unit).
    auto within = [&](double got, double r) {
      if (std::isnan(r)) return std::isnan(got);
      const uint16_t c = bits(r);
      if (got == value(c)) return true;
      const uint16_t mag = c & 0x7fff, sign = c & 0x8000;
      for (int d : {-1, 1}) {
        int m = mag + d;
        if (m < 0) m = 1, d = 0;  // below +-0: the smallest subnormal of the other sign
        const uint16_t n = static_cast<uint16_t>(m | (d == 0 ? sign ^ 0x8000 : sign));
        if (got == value(n)) return true;
      }
      return false;
    };
    // exp of every 16-bit value.
    std::vector<float> x(65536), b(65536, 1.0f), y(65536);
    for (int h = 0; h < 65536; ++h) x[h] = static_cast<float>(value(static_cast<uint16_t>(h)));
    ASSERT_EQ(run(x.data(), b.data(), y.data(), 65536, bf ? 0 : 1), 0);
    int bad = 0;
    for (int h = 0; h < 65536; ++h) {
      const double r = std::exp(static_cast<double>(x[h]));
      if (!within(y[h], r) && bad++ < 5) ADD_FAILURE() << "exp(" << x[h] << ") = " << y[h] << ", float64 " << r;
    }
    EXPECT_EQ(bad, 0);
    // Division: random pairs over the whole range, then the special operands.
    std::mt19937 gen(7);
    const int n = 1 << 20;
    std::vector<float> a(n), d(n), q(n);
    const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1.0f, -3.0f};
    for (int i = 0; i < n; ++i) {
      a[i] = static_cast<float>(value(static_cast<uint16_t>(gen())));
      d[i] = static_cast<float>(value(static_cast<uint16_t>(gen())));
      if (i % 64 == 0) a[i] = special[(i / 64) % 7];
      if (i % 64 == 1) d[i] = special[(i / 64) % 7];
      if (i % 64 == 2) a[i] = d[i] = 0.0f;
    }
    ASSERT_EQ(run(a.data(), d.data(), q.data(), n, bf ? 2 : 3), 0);
    bad = 0;
    for (int i = 0; i < n; ++i) {
      const double r = a[i] == 0 && d[i] == 0 ? 0.0 : static_cast<double>(a[i]) / static_cast<double>(d[i]);
      if (!within(q[i], r) && bad++ < 5) ADD_FAILURE() << a[i] << " / " << d[i] << " = " << q[i] << ", float64 " << r;
    }
    EXPECT_EQ(bad, 0);
  }
}

// dcc_fdiv_pre on the GPU (the fused attention's f32 division by a block
// value; CudaEmu.FdivPreIsTheIeeeQuotient runs the same on the host): with
// the block's __frcp_rn, the quotient, or where it clears `fast` the
// division again, is the IEEE one bit for bit on 2^22 random pairs with
// the divisor in [2^-20, 2^20], all of a's mantissas at two exponents
// over sqrt(128), and zeros, infinities, NaN, tiny and huge a; `fast`
// stays set for every a in the stated range.
TEST(CudaBackend, FdivPreOnTheGpu) {
  ElementKernel k("fdiv_pre",
                  "  bool fast = true;\n  const float q = dcc_fdiv_pre(x[i], b[i], __frcp_rn(b[i]), fast);\n"
                  "  y[i] = mode == 0 ? (fast ? q : x[i] / b[i]) : (fast ? 1.0f : 0.0f);");
  if (!k.skip.empty()) GTEST_SKIP() << k.skip;
  ASSERT_NE(k.run, nullptr) << k.error;
  std::mt19937 gen(13);
  std::vector<float> a, b;
  const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 0x1p-101f, 0x1.fffffep100f, 0x1p-100f, 0x1p100f};
  for (int x = 0; x < (1 << 22); ++x) {
    const uint32_t u = static_cast<uint32_t>(gen());
    float av;
    std::memcpy(&av, &u, 4);
    a.push_back(x % 97 == 0 ? special[(x / 97) % 9] : av);
    b.push_back(std::ldexp(1.0f + static_cast<float>(gen() >> 9) * 0x1p-23f, static_cast<int>(gen() % 41) - 20) *
                (gen() % 2 ? 1.0f : -1.0f));
  }
  for (int e : {-100, 0})
    for (uint32_t m = 0; m < (1u << 23); ++m) {
      a.push_back(std::ldexp(1.0f + static_cast<float>(m) * 0x1p-23f, e));
      b.push_back(std::sqrt(128.0f));
    }
  const int n = static_cast<int>(a.size());
  std::vector<float> q(n), fast(n);
  ASSERT_EQ(k.run(a.data(), b.data(), q.data(), n, 0), 0);
  ASSERT_EQ(k.run(a.data(), b.data(), fast.data(), n, 1), 0);
  int bad = 0;
  for (int x = 0; x < n; ++x) {
    const float want = static_cast<float>(static_cast<double>(a[x]) / static_cast<double>(b[x]));
    const float m = std::fabs(a[x]);
    const bool in_range = (m >= 0x1p-100f && m <= 0x1p100f) || m == 0.0f;
    const bool same = std::isnan(want) ? std::isnan(q[x]) : std::memcmp(&q[x], &want, 4) == 0;
    if ((!same || (fast[x] != 0.0f) != in_range) && bad++ < 5)
      ADD_FAILURE() << std::hexfloat << a[x] << " / " << b[x] << " = " << q[x] << ", IEEE " << want << ", fast " << fast[x];
  }
  EXPECT_EQ(bad, 0);
}

// --fast-math's exp (docs/cuda.md "Fast math"): dcc_exp_fast within its
// stated bound, 2^-21 + |x| 2^-23 relative to float64, on 2^22 arguments
// over the range where exp is a normal f32, and dcc_exp_fast_sub(a, b)
// within 2^-21 + (|a| + 2 |b|) 2^-23 of exp(a - b) on softmax-like pairs
// (b >= a by up to 100; a few with b < a); flushed, overflowing and special
// arguments as stated (a result above the f32 range is inf).
TEST(CudaBackend, FastExpWithinItsBound) {
  ElementKernel k("fastexp", "  y[i] = mode == 0 ? dcc_exp_fast(x[i]) : dcc_exp_fast_sub(x[i], b[i]);");
  if (!k.skip.empty()) GTEST_SKIP() << k.skip;
  ASSERT_NE(k.run, nullptr) << k.error;
  auto run = k.run;
  const double normal = std::ldexp(1.0, -126);
  // got against float64's r with the relative bound; a result exp would make
  // subnormal (or within the bound of it) may be flushed to 0.
  auto ok = [&](float got, double r, double bound) {
    if (std::isnan(r)) return std::isnan(got);
    if (r > std::numeric_limits<float>::max()) return std::isinf(got) && got > 0;
    if (r < normal * (1 + bound)) return got == 0.0f || std::fabs(got - r) <= bound * r;
    return std::fabs(static_cast<double>(got) - r) <= bound * r;
  };
  const double u21 = std::ldexp(1.0, -21), u23 = std::ldexp(1.0, -23);
  std::mt19937 gen(11);
  const int n = 1 << 22;
  std::vector<float> x(n), b(n, 0.0f), y(n);
  std::uniform_real_distribution<float> range(-87.3f, 88.7f), small(-1.0f, 1.0f);
  const float special[] = {-INFINITY, INFINITY, NAN, 0.0f, -0.0f, 89.0f, -88.0f, -104.0f, -200.0f, 1e-30f};
  for (int i = 0; i < n; ++i) x[i] = i % 4 == 0 ? small(gen) : range(gen);
  for (int i = 0; i < 10; ++i) x[i] = special[i];
  ASSERT_EQ(run(x.data(), b.data(), y.data(), n, 0), 0);
  int bad = 0;
  double worst = 0;  // the largest error in units of the bound, printed
  for (int i = 0; i < n; ++i) {
    const double r = std::exp(static_cast<double>(x[i]));
    const double bound = u21 + std::fabs(x[i]) * u23;
    if (!ok(y[i], r, bound) && bad++ < 5) ADD_FAILURE() << "exp_fast(" << x[i] << ") = " << y[i] << ", float64 " << r;
    if (r <= std::numeric_limits<float>::max() && r >= normal * 2) worst = std::max(worst, std::fabs(y[i] - r) / r / bound);
  }
  EXPECT_EQ(bad, 0);
  std::printf("dcc_exp_fast: largest error %.3f of the bound\n", worst);
  // exp(a - b): b the row's maximum, a score up to 100 below it.
  std::uniform_real_distribution<float> score(-200.0f, 200.0f), gap(0.0f, 100.0f);
  for (int i = 0; i < n; ++i) {
    x[i] = score(gen);
    b[i] = i % 16 == 0 ? x[i] - gap(gen) / 50 : i % 16 == 1 ? x[i] : x[i] + gap(gen);
  }
  x[2] = -INFINITY, b[2] = 3.0f;
  x[3] = NAN, b[3] = 0.0f;
  ASSERT_EQ(run(x.data(), b.data(), y.data(), n, 1), 0);
  bad = 0, worst = 0;
  for (int i = 0; i < n; ++i) {
    const double r = std::exp(static_cast<double>(x[i]) - static_cast<double>(b[i]));
    const double bound = u21 + (std::fabs(x[i]) + 2 * std::fabs(b[i])) * u23;
    if (!ok(y[i], r, bound) && bad++ < 5)
      ADD_FAILURE() << "exp_fast_sub(" << x[i] << ", " << b[i] << ") = " << y[i] << ", float64 " << r;
    if (r <= std::numeric_limits<float>::max() && r >= normal * 2) worst = std::max(worst, std::fabs(y[i] - r) / r / bound);
  }
  EXPECT_EQ(bad, 0);
  std::printf("dcc_exp_fast_sub: largest error %.3f of the bound\n", worst);
}

TEST(CudaBackend, MmaGemmRaggedLengthsTo4096) {
  if (access("/dev/nvidiactl", F_OK) != 0) GTEST_SKIP() << "no NVIDIA GPU on this machine (/dev/nvidiactl)";
  std::string nvcc = find_nvcc();
  if (nvcc.empty()) GTEST_SKIP() << "no nvcc (set DCCC_NVCC or install CUDA in /usr/local/cuda)";
  std::filesystem::path dir = std::filesystem::temp_directory_path() / ("dccc-cuda-mma-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::vector<testing::Lengths> patterns = {
      {{4096, 1, 16, 15, 0, 17}, {17, 4096, 15, 16, 4096, 0}, {15, 16, 4096, 1, 17, 4096}},
      {{64}, {4096}, {64}},
      {{4096}, {16}, {17}},
  };
  struct Case {
    const char* file;
    const char* fn;
    gpu::Fp32Math fp32;
    Scalar in, out;
    testing::Tolerance tol;
    const char* mma;  // the tensor-core call the CUDA must hold ("" for none)
    int gemm_stages = 0;  // --gemm-stages: the sm_90a (wgmma) form, run on an H100 / H200
  };
  const Case cases[] = {
      {"batched_gemm_bf16.toy", "grouped_gemm_bf16", gpu::Fp32Math::Split3xTf32, Scalar::BF16, Scalar::BF16, {1e-5, 1.0 / 256}, "dcc_mma_tiles_bf16<"},
      {"batched_gemm_bf16.toy", "grouped_gemm_f16", gpu::Fp32Math::Split3xTf32, Scalar::F16, Scalar::F32, {1e-5, 0}, "dcc_mma_tiles_f16<"},
      {"batched_gemm.toy", "grouped_gemm", gpu::Fp32Math::Split3xTf32, Scalar::F32, Scalar::F32, {1e-5, 0}, "(part, as2, bb);"},
      {"batched_gemm.toy", "grouped_gemm", gpu::Fp32Math::Tf32, Scalar::F32, Scalar::F32, {1.0 / 1024, 0}, "dcc_mma_tiles_tf32<"},
      {"batched_gemm.toy", "grouped_gemm", gpu::Fp32Math::Ieee, Scalar::F32, Scalar::F32, {1e-5, 0}, ""},
      {"batched_gemm_bf16.toy", "grouped_gemm_bf16", gpu::Fp32Math::Split3xTf32, Scalar::BF16, Scalar::BF16, {1e-5, 1.0 / 256}, "dcc_wgmma_ss_bf16<256, 0, 1>(", 3},
      {"batched_gemm_bf16.toy", "grouped_gemm_f16", gpu::Fp32Math::Split3xTf32, Scalar::F16, Scalar::F32, {1e-5, 0}, "dcc_wgmma_ss_f16<256, 0, 1>(", 2},
      // f32 on the sm_90a tf32 wgmma form (both operands split by the producers).
      {"batched_gemm.toy", "grouped_gemm", gpu::Fp32Math::Split3xTf32, Scalar::F32, Scalar::F32, {1e-5, 0}, "dcc_wgmma_ss_tf32<128>(&part[0][0][0]", 3},
      {"batched_gemm.toy", "grouped_gemm", gpu::Fp32Math::Tf32, Scalar::F32, Scalar::F32, {1.0 / 1024, 0}, "dcc_wgmma_ss_tf32<128>(&acc[0][0][0]", 2},
  };
  std::string examples = test_paths::examples_dir();
  int checked = 0, serial = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.fn) + " --fp32-math=" + gpu::fp32_math_name(c.fp32) + " --gemm-stages=" + std::to_string(c.gemm_stages));
    std::ifstream in(examples + "/" + c.file);
    std::stringstream text;
    text << in.rdbuf();
    Program p = compile(c.file, text.str(), false, /*cuda_passes=*/true);
    ASSERT_TRUE(p.module) << testing::diagnostics(p);
    const ir::Func* f = nullptr;
    for (const auto& fn : p.module->funcs)
      if (fn.name == c.fn) f = &fn;
    ASSERT_NE(f, nullptr);
    CudaOptions o;
    o.fp32 = c.fp32;
    o.gemm_stages = c.gemm_stages;
    std::string cu = emit_cuda(*p.module, o), log;
    if (*c.mma) EXPECT_NE(cu.find(c.mma), std::string::npos) << "not on the tensor-core path";
    else EXPECT_EQ(cu.find("dcc_mma_"), std::string::npos) << "ieee must not use tensor cores";
    void* lib = build(nvcc, cu, dir, std::string(c.fn) + std::to_string(serial++), log);
    ASSERT_NE(lib, nullptr) << log;
    auto count = reinterpret_cast<int (*)()>(dlsym(lib, "dcc_cuda_device_count"));
    ASSERT_NE(count, nullptr);
    if (count() == 0) {
      std::filesystem::remove_all(dir);
      GTEST_SKIP() << "no CUDA GPU on this machine";
    }
    auto entry = reinterpret_cast<testing::Entry>(dlsym(lib, (std::string(c.fn) + "__cuda_host").c_str()));
    ASSERT_NE(entry, nullptr);
    double worst = testing::run_grouped(entry, *f, c.in, c.out, c.tol, checked, patterns);
    std::printf("%s --fp32-math=%s --gemm-stages=%d: max |err| / sum|ab| = %.3g\n", c.fn, gpu::fp32_math_name(c.fp32),
                c.gemm_stages, worst);
  }
  std::filesystem::remove_all(dir);
  EXPECT_GT(checked, 500000);
}

}  // namespace
}  // namespace dccc::backend
