// The CUDA backend's output run on the CPU (label `unit`; no GPU, no nvcc):
// the CUDA source of every example, and of mha with each schedule of
// tests/cuda/schedules and tests/host, is compiled by the C++ compiler
// against cuda_emu.h (a stand-in for the CUDA runtime that runs each CUDA
// thread as a std::thread) and run on the random length patterns of
// differential.h next to the LLVM CPU backend: both must match the float64
// reference and each other. It checks what the kernels and launchers
// compute (grid and thread mapping, guards, fusion maps and permutations
// read on the device) where no GPU is at hand; the GPU itself is tested by
// cuda_backend_test.cpp.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <cctype>
#include <random>
#include <regex>
#include <set>

#include "backend/cuda/cuda_prologue.h"
#include "runtime/include/dccrt.h"
#include "tests/unit/backend/cuda_emu_build.h"
#include "tests/unit/backend/cuda_scheduled.h"
#include "tests/unit/backend/schedule_support.h"
#include "tests/unit/test_paths.h"

namespace dccc::backend {
namespace {

using testing::compile;
using testing::Engine;
using testing::Program;

/// Runs every function of `gpu` (emulated) and `cpu` (LLVM JIT) on the
/// differential patterns.
void compare(const Program& cpu, const Program& gpu, const std::filesystem::path& dir, const std::string& stem,
             int& functions, int& compared, const std::map<std::string, int64_t>& fixed = {},
             const std::function<bool(const std::string&)>& keep = nullptr) {
  std::string error;
  auto jit = JitProgram::compile(*cpu.module, error);
  ASSERT_TRUE(jit) << error;
  std::string log;
  void* lib = testing::build_emulated(testing::emulated(emit_cuda(*gpu.module)), dir, stem, log, testing::kEmuCompileBound);
  ASSERT_NE(lib, nullptr) << log;
  for (const auto& f : cpu.module->funcs) {
    // (An imported file's functions are inlined, not exported: `stem.name`.)
    if (f.name == "main" || f.name.find('.') != std::string::npos || (keep && !keep(f.name))) continue;
    auto run = reinterpret_cast<int32_t (*)(const int64_t*, void* const*)>(dlsym(lib, (f.name + "__cuda_host").c_str()));
    ASSERT_NE(run, nullptr) << f.name;
    testing::run_differential(f, {Engine{"llvm", jit->kernel(f.name)}, Engine{"cuda-emu", run}}, stem, compared, fixed);
    ++functions;
  }
}

/// Removed by the test body when it finishes, at exit when an assertion ends it first.
std::filesystem::path temp_dir(const std::string& what) { return testing::scratch_dir("cuda-emu-" + what); }

TEST(CudaEmu, ExamplesMatchCpuBackend) {
  auto dir = temp_dir("examples");
  auto cpu_side = testing::compile_examples(test_paths::examples_dir());
  auto gpu_side = testing::compile_examples(test_paths::examples_dir(), /*cuda_passes=*/true);
  ASSERT_EQ(cpu_side.size(), gpu_side.size());
  int functions = 0, compared = 0;
  std::set<std::string> ran;
  for (size_t k = 0; k < cpu_side.size(); ++k) {
    const auto& [name, stem, p] = cpu_side[k];
    if (!p.module) continue;
    ASSERT_TRUE(gpu_side[k].program.module) << name;
    int before = compared;
    // transformer_block's `where`: E == 2 * K (RoPE's half-split heads),
    // every length <= P (its cos/sin tables; the patterns' longest is 70).
    std::map<std::string, int64_t> fixed;
    if (stem == "transformer_block") fixed = {{"E", 4}, {"K", 2}, {"P", 80}};
    compare(p, gpu_side[k].program, dir, stem, functions, compared, fixed);
    if (compared > before) ran.insert(stem);  // some pattern kept the `where`s
  }
  std::filesystem::remove_all(dir);
  // Nested raggedness (a triangle inside a ragged range; documents ->
  // sentences -> tokens) must be compiled and compared, not skipped, and so
  // must the examples built from std/ imports.
  EXPECT_TRUE(ran.count("causal_attention") && ran.count("documents"));
  EXPECT_TRUE(ran.count("transformer_block") && ran.count("mha_generic") && ran.count("ragged_pool"));
  EXPECT_GE(functions, 8);
  EXPECT_GT(compared, 10000);
}

// tests/abi's programs, whose names are C keywords and the names generated
// code uses, and whose functions inline one function several times: the
// CUDA code names them apart (c_emit.h's CNames) and computes what the CPU
// backend does.
TEST(CudaEmu, AbiProgramsMatchCpuBackend) {
  auto dir = temp_dir("abi");
  auto cpu_side = testing::compile_examples(test_paths::source_dir() + "/tests/abi");
  auto gpu_side = testing::compile_examples(test_paths::source_dir() + "/tests/abi", /*cuda_passes=*/true);
  ASSERT_EQ(cpu_side.size(), gpu_side.size());
  int functions = 0, compared = 0;
  for (size_t k = 0; k < cpu_side.size(); ++k) {
    const auto& [name, stem, p] = cpu_side[k];
    if (stem != "c_names" && stem != "call_counts") continue;  // body_sized_result: refused by -o
    ASSERT_TRUE(p.module) << name;
    ASSERT_TRUE(gpu_side[k].program.module) << name;
    compare(p, gpu_side[k].program, dir, stem, functions, compared);
  }
  std::filesystem::remove_all(dir);
  EXPECT_GE(functions, 9);
  EXPECT_GT(compared, 100);
}

TEST(CudaEmu, ScheduledMatchCpuBackend) {
  auto dir = temp_dir("scheduled");
  auto files = testing::schedule_files(test_paths::cuda_schedules_dirs());
  ASSERT_GE(files.size(), 4u);
  int functions = 0, compared = 0, mapped = 0;
  for (const auto& file : files) {
    std::string stem = file.stem().string();
    SCOPED_TRACE(file.string());
    Program cpu, gpu;
    ASSERT_NO_FATAL_FAILURE(testing::compile_scheduled_pair(file, test_paths::examples_dir(), cpu, gpu, mapped));
    compare(cpu, gpu, dir, stem, functions, compared);
  }
  std::filesystem::remove_all(dir);
  EXPECT_GE(functions, 4);
  EXPECT_GE(mapped, 4) << "statements mapped by gpu_blocks / gpu_threads";
  EXPECT_GT(compared, 1000);
}

/// The directives of schedule_test.cpp and split_op_test.cpp (and GPU
/// mappings) on testing::kSeqsProgram (t a contraction, u and y
/// element-wise), compiled for the CUDA target.
TEST(CudaEmu, DirectivesOnSeqsMatchCpuBackend) {
  auto dir = temp_dir("directives");
  const char* schedules[] = {
      "pad_loop(y.data.i, 4);",
      "pad_storage(u.data.i, 8); pad_loop(u.data.i, 4);",
      "pad_loop(t.data.k, 4); pad_loop(t.data.i, 2);",
      "split(y.data.i, 3); split(t.data.k, 2);",
      "split(u.data.h, 2); reorder(u.data.h_o, u.data.i);",
      "tile(u.data.i, u.data.h, 4, 2);",
      "fuse(y.data.b, y.data.i); fuse(t.data.b, t.data.i);",
      "fuse(u.data.b, u.data.i); split(u.data.b_i, 4);",
      "fuse(y.data.b, y.data.i); pad_loop(y.data.b_i, 8);",
      "remap(y.data.b, longest_first); remap(t.data.b, x.seqlen[b]); remap(u.data.b, B - b);",
      "remap(u.data.b, longest_first); split(u.data.b, 2);",
      "inline(u.data); pad_loop(y.data.i, 4);",
      "fuse(u.data.b, u.data.i); fuse_dims(u.data.b, u.data.i); fuse(y.data.b, y.data.i); split(y.data.b_i, 3); "
      "fuse_dims(y.data.b, y.data.i);",
      "pad_storage(u.data.h, 4); fuse(u.data.b, u.data.i); fuse_dims(u.data.b, u.data.i);",
      "split_op(u.data.i, 4); split_op(t.data.i, 3);",
      "split_op(u.data.i, 4); tile(u.data.i, u.data.h, 4, 3); hfuse(u.data.b, u.data.b_rest); split(u.data.h_rest, 2);",
      "split_op(u.data.i, 4); split_op(u.data.h, 2); hfuse(u.data.b, u.data.b_rest2, u.data.b_rest);",
      // (u is computed in its reader y by the CUDA target: not mappable.)
      "gpu_blocks(t.data.b); gpu_threads(t.data.i, t.data.h); split(y.data.i, 2); gpu_blocks(y.data.b, y.data.i_o); "
      "gpu_threads(y.data.i_i, y.data.h);",
      "fuse(t.data.b, t.data.i); pad_loop(t.data.b_i, 4); gpu_blocks(t.data.b_i); gpu_threads(t.data.h); "
      "remap(y.data.b, longest_first); split(y.data.h, 2); gpu_threads(y.data.i, y.data.h_o, y.data.h_i);",
      "split(t.data.i, 3); gpu_blocks(t.data.b, t.data.i_o); fuse(y.data.b, y.data.i); gpu_blocks(y.data.b_i);",
  };
  int functions = 0, compared = 0, mapped = 0, k = 0;
  for (const char* sched : schedules) {
    SCOPED_TRACE(sched);
    Program cpu = compile("seqs.toy", testing::kSeqsProgram);
    ASSERT_TRUE(cpu.module);
    Program gpu = testing::compile_cuda_scheduled("seqs.toy", testing::kSeqsProgram,
                                                  std::string("schedule f { ") + sched + " }");
    ASSERT_TRUE(gpu.module) << testing::diagnostics(gpu);
    for (const auto& f : gpu.module->funcs) mapped += static_cast<int>(f.gpu_mappings.size());
    compare(cpu, gpu, dir, "seqs" + std::to_string(k++), functions, compared);
  }
  std::filesystem::remove_all(dir);
  EXPECT_EQ(functions, static_cast<int>(std::size(schedules)));
  EXPECT_GE(mapped, 6) << "statements mapped by gpu_blocks / gpu_threads";
  EXPECT_GT(compared, 1000);
}


// mha and mha_bf16 with their scores stored (--materialize: no online
// reductions, so no fused attention kernel): the chain as written, a kernel
// per statement -- for f32, QK^T and PV on the tensor cores (3xTF32), the
// row maximum and the row sum row kernels of their own; for bf16,
// backend/cuda's kernels throughout -- against the LLVM backend and the
// float64 reference interpreter on the differential patterns.
TEST(CudaEmu, MaterialisedAttentionMatchesCpuBackend) {
  auto dir = temp_dir("materialised");
  int functions = 0, compared = 0;
  for (const char* stem : {"mha", "mha_bf16"}) {
    SCOPED_TRACE(stem);
    std::ifstream in(test_paths::examples_dir() + "/" + stem + ".toy");
    std::stringstream text;
    text << in.rdbuf();
    const std::string name = std::string(stem) + ".toy";
    Program cpu = compile(name, text.str());
    ASSERT_TRUE(cpu.module) << testing::diagnostics(cpu);
    Program gpu;
    ASSERT_TRUE(testing::front_end(gpu, name, text.str()));
    ir::PipelineOptions o;
    o.default_pad = 0;
    o.simplify = false;
    o.target = ir::Target::Cuda;
    o.materialize = true;
    testing::run_passes(gpu, o);
    ASSERT_TRUE(gpu.module) << testing::diagnostics(gpu);
    std::string cu = emit_cuda(*gpu.module);
    EXPECT_EQ(cu.find(": fused attention (dccc --emit=kernel"), std::string::npos);  // print_attention.cpp's header
    // scores, row_max, row_sum, out (p is computed in its readers), and the prologue's dcc__set_bytes.
    // (A kernel with an sm_90a form of other threads -- mha's scores, on tf32
    // wgmma -- declares its function twice, under #if DCC_WGMMA and #else.)
    size_t kernels = 0;
    for (size_t at = cu.find("__global__ void"); at != std::string::npos; at = cu.find("__global__ void", at + 1))
      kernels += at < 6 || cu.compare(at - 6, 6, "#else\n") != 0;
    EXPECT_EQ(kernels, 5u);
    EXPECT_EQ(cu.find("dcc_mma_tiles_tf32<") != std::string::npos, std::string(stem) == "mha");
    compare(cpu, gpu, dir, stem, functions, compared);
  }
  std::filesystem::remove_all(dir);
  EXPECT_EQ(functions, 2);
  EXPECT_GT(compared, 1000);
}

/// A library source file compiled for the CPU and for the CUDA target
/// (imports resolved against its folder).
std::pair<Program, Program> compile_both(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  std::string root = file.parent_path().string();
  return {testing::compile(file.filename().string(), text.str(), false, false, root),
          testing::compile(file.filename().string(), text.str(), false, true, root)};
}

// The standard library on the CUDA target: std/nn.toy and std/attention.toy
// compiled as libraries (every instance exported), and std/ragged.toy
// through tests/stdlib/ragged_lib.toy (all but the slicing functions and
// concat_rows: RaggedSlicesMatchCpuBackend), each function against the LLVM backend
// and the float64 reference interpreter on the differential patterns
// (zero lengths, B = 1, one long sequence). The f32 and f64 instances: the
// 16-bit ones round every intermediate value, beyond this harness's
// few-ulp tolerance; tests/stdlib/*_diff.py --target=cuda checks them on a
// GPU with the tolerances of their types.
TEST(CudaEmu, StdlibMatchesCpuBackend) {
  auto dir = temp_dir("stdlib");
  int functions = 0, compared = 0;
  std::set<std::string> ran;
  for (const std::string& path : {test_paths::source_dir() + "/stdlib/nn.toy", test_paths::source_dir() + "/stdlib/attention.toy",
                           test_paths::source_dir() + "/tests/stdlib/ragged_lib.toy"}) {
    SCOPED_TRACE(path);
    std::filesystem::path file(path);
    auto [cpu, gpu] = compile_both(file);
    ASSERT_TRUE(cpu.module) << testing::diagnostics(cpu);
    ASSERT_TRUE(gpu.module) << testing::diagnostics(gpu);
    auto keep = [&](const std::string& name) {
      bool wide = name.size() > 5 && (name.substr(name.size() - 5) == "__f32" || name.substr(name.size() - 5) == "__f64");
      return wide && name[0] != '_';
    };
    int before = compared;
    // rope's `where`: every length <= P (the patterns' longest is 70).
    compare(cpu, gpu, dir, file.stem().string(), functions, compared, {{"P", 80}}, keep);
    if (compared > before) ran.insert(file.stem().string());
  }
  std::filesystem::remove_all(dir);
  EXPECT_EQ(ran.size(), 3u);
  // nn: 11 public functions, attention 5, ragged_lib 6, in f32 and f64
  // (attention has no f64).
  EXPECT_EQ(functions, 11 * 2 + 5 + 6 * 2);
  EXPECT_GT(compared, 10000);
}

// std/ragged.toy's take_rows, slice_rows, slice_rows_each and concat_rows
// through tests/stdlib/ragged_slices_lib.toy: their lengths are computed by
// a kernel, and the launcher copies them to the host, computes the offsets
// of the tensor they shape there and allocates it (backend/cuda/host_steps.h).
// Each wrapper (rows inside x's extents, and `_len`: the lengths) against
// the float64 interpreter and the LLVM backend, on hand-picked arguments:
// empty sequences, B = 1, counts and starts negative, zero and past the end.
TEST(CudaEmu, RaggedSlicesMatchCpuBackend) {
  auto dir = temp_dir("slices");
  std::filesystem::path file(test_paths::source_dir() + "/tests/stdlib/ragged_slices_lib.toy");
  auto [cpu, gpu] = compile_both(file);
  ASSERT_TRUE(cpu.module) << testing::diagnostics(cpu);
  ASSERT_TRUE(gpu.module) << testing::diagnostics(gpu);
  std::string cu = emit_cuda(*gpu.module);
  // slice_rows keeps its sliced rows in a tensor shaped by the lengths a
  // kernel computed: the launcher waits for them (the others need no wait).
  EXPECT_NE(cu.find("copying `ragged.slice_rows__f32.n` to the host"), std::string::npos);
  std::string error, log;
  auto jit = JitProgram::compile(*cpu.module, error);
  ASSERT_TRUE(jit) << error;
  void* lib = testing::build_emulated(testing::emulated(cu), dir, "slices", log, testing::kEmuCompileBound);
  ASSERT_NE(lib, nullptr) << log;
  auto last_error = reinterpret_cast<const char* (*)()>(dlsym(lib, "dcc_last_error"));
  ASSERT_NE(last_error, nullptr);
  struct Case {
    std::vector<int> lens, zlens;
    int k, start, count;
    std::vector<int> starts, counts;
  };
  const Case cases[] = {
      {{3, 0, 5, 2}, {1, 0, 0, 4}, 2, 1, 3, {0, 2, 7, -1}, {2, 9, 1, 1}},
      {{4}, {3}, -3, -2, 10, {5}, {-1}},
      {{6}, {0}, 100, 4, -5, {2}, {3}},
      {{0, 0, 0}, {0, 2, 0}, 7, 0, 0, {0, 1, -4}, {3, 0, 2}},
      {{6, 1, 0, 3, 2}, {0, 0, 5, 1, 0}, 0, 9, 2, {1, 0, 0, 3, 9}, {2, 5, 1, -2, 1}},
      {{2, 7, 1}, {2, 0, 3}, 5, 6, 1, {-3, 6, 0}, {4, 1, 0}},
  };
  int functions = 0, compared = 0;
  for (const auto& f : cpu.module->funcs) {
    const std::string& n = f.name;
    if (n.find('.') != std::string::npos || n == "main") continue;
    if (n.size() < 5 || (n.substr(n.size() - 5) != "__f32" && n.substr(n.size() - 5) != "__f64")) continue;
    auto run = reinterpret_cast<int32_t (*)(const int64_t*, void* const*)>(dlsym(lib, (n + "__cuda_host").c_str()));
    ASSERT_NE(run, nullptr) << n;
    testing::Kernel llvm = jit->kernel(n);
    ++functions;
    for (size_t c = 0; c < std::size(cases); ++c) {
      const Case& cs = cases[c];
      SCOPED_TRACE(n + " case " + std::to_string(c));
      std::map<std::string, int64_t> sizes{{"B", static_cast<int64_t>(cs.lens.size())}, {"D", 3}};
      std::mt19937 rng(7 + static_cast<unsigned>(c));
      auto inputs = ir::Interpreter::make_inputs(f, sizes, [&](const ir::BufferNode* b, int64_t k) -> double {
        const std::string& bn = b->name;
        if (bn == "x.seqlen") return cs.lens.at(k);
        if (bn == "z.seqlen") return cs.zlens.at(k);
        if (bn == "k") return cs.k;
        if (bn == "start") return b->dims.empty() ? cs.start : cs.starts.at(k);
        if (bn == "count") return b->dims.empty() ? cs.count : cs.counts.at(k);
        EXPECT_TRUE(is_float(b->type)) << bn;
        return static_cast<float>(std::uniform_real_distribution<double>(-2.0, 2.0)(rng));
      });
      std::ostringstream sink;
      ir::Interpreter ref(sink);
      ref.set_float64_reference(true);
      ref.run(f, sizes, inputs);
      std::vector<int64_t> size_values;
      for (const auto& sz : f.sizes) size_values.push_back(sizes.at(sz.name));
      size_values.push_back(0);
      std::vector<void*> p1, p2;
      std::vector<testing::HostBuffer> h1 = testing::host_buffers(f, inputs, ref, p1);
      std::vector<testing::HostBuffer> h2 = testing::host_buffers(f, inputs, ref, p2);
      ASSERT_EQ(llvm(size_values.data(), p1.data()), 0);
      ASSERT_EQ(run(size_values.data(), p2.data()), 0) << last_error();
      size_t slot = 0;
      for (const auto& b : f.buffers) {
        if (b->kind != ir::BufferKind::Input && b->kind != ir::BufferKind::Output) continue;
        size_t this_slot = slot++;
        if (b->kind != ir::BufferKind::Output) continue;
        std::vector<double> want = ref.packed(b.get());
        for (size_t k = 0; k < want.size(); ++k, ++compared) {
          EXPECT_NEAR(h1[this_slot].get(k), want[k], 1e-6) << "llvm " << b->name << "[" << k << "]";
          EXPECT_NEAR(h2[this_slot].get(k), want[k], 1e-6) << "cuda-emu " << b->name << "[" << k << "]";
        }
      }
    }
  }
  std::filesystem::remove_all(dir);
  // take_rows, slice_rows, slice_rows_each, concat_rows and their `_len`,
  // in f32 and f64.
  EXPECT_EQ(functions, 8 * 2);
  EXPECT_GT(compared, 1000);
}

// A length the function computes that comes out negative (here n[b] =
// x.seqlen[b] - max(k, 0) with k past a sequence's end): its offsets would
// overlap, so the launcher, which copies n to the host to size y, fails the
// call with the error a negative argument length gets, before the kernels
// that write y and the result run (the result keeps what it held).
TEST(CudaEmu, NegativeComputedLengthIsAnError) {
  const char* text =
      "type Seqs = coupling { data: [b: B][seqlen[b], D]f32, seqlen: [B]i32 }\n"
      "fn f(x: Seqs, k: i32) [B, D]f32 {\n"
      "    let s: i32 = max(k, 0);\n"
      "    let n: [B]i32;\n"
      "    n[b] = x.seqlen[b] - s;\n"
      "    let y: [b: B][n[b], D]f32;\n"
      "    y[b][i, d] = x.data[b][i + s, d];\n"
      "    let r: [B, D]f32;\n"
      "    r[b, d] = reduce(+, select(j == 0, y[b][j, d], 0.0));\n"
      "    return r;\n"
      "}\n";
  auto dir = temp_dir("negative");
  Program gpu = compile("negative.toy", text, false, /*cuda_passes=*/true);
  ASSERT_TRUE(gpu.module) << testing::diagnostics(gpu);
  std::string log;
  void* lib = testing::build_emulated(testing::emulated(emit_cuda(*gpu.module)), dir, "negative", log, testing::kEmuCompileBound);
  ASSERT_NE(lib, nullptr) << log;
  auto run = reinterpret_cast<int32_t (*)(const int64_t*, void* const*)>(dlsym(lib, "f__cuda_host"));
  auto last_error = reinterpret_cast<const char* (*)()>(dlsym(lib, "dcc_last_error"));
  ASSERT_TRUE(run && last_error);
  // B = 2, D = 1: sequences of 3 and 1 rows; buffers x.seqlen, x.data, k, r.
  int32_t seqlen[] = {3, 1};
  float data[] = {1, 2, 3, 4};
  for (int32_t k : {1, 2}) {
    SCOPED_TRACE("k = " + std::to_string(k));
    float r[] = {7, 7};
    void* bufs[] = {seqlen, data, &k, r, nullptr};
    const int64_t sizes[] = {2, 1, 0};
    int32_t st = run(sizes, bufs);
    if (k == 1) {  // n = [2, 0]: y = [[2, 3], []]
      ASSERT_EQ(st, 0) << last_error();
      EXPECT_EQ(r[0], 2.0f);
      EXPECT_EQ(r[1], 0.0f);
      continue;
    }
    // n = [1, -1]
    EXPECT_EQ(st, DCC_ERR_NEGATIVE_LENGTH);
    EXPECT_NE(std::string(last_error()).find("f: `n`[1] is -1, a length the function computes; lengths must be >= 0"),
              std::string::npos)
        << last_error();
    EXPECT_EQ(r[0], 7.0f);
    EXPECT_EQ(r[1], 7.0f);
  }
  std::filesystem::remove_all(dir);
}

// An inlined call's `where` on the CUDA target: a kernel of checks alone
// that the launcher waits for. Within the constraint, g's table read
// t[i, d] (i < x.seqlen[b] <= P) gives the CPU backend's values; past it
// (a sequence longer than P), the call fails with the CPU target's
// message before the kernel that would read t out of bounds runs.
TEST(CudaEmu, InlinedWhereIsChecked) {
  const char* text =
      "type Seqs = coupling { data: [b: B][seqlen[b], D]f32, seqlen: [B]i32 }\n"
      "fn g(x: Seqs, t: [P, D]f32) [b: B][x.seqlen[b], D]f32 where { all(x.seqlen[b] <= P) } {\n"
      "    let y: [b: B][x.seqlen[b], D]f32;\n"
      "    y[b][i, d] = x.data[b][i, d] * t[i, d];\n"
      "    return y;\n"
      "}\n"
      "fn f(x: Seqs, t: [P, D]f32) [b: B][x.seqlen[b], D]f32 { return g(x, t); }\n";
  auto dir = temp_dir("where");
  Program cpu = compile("where.toy", text);
  Program gpu = compile("where.toy", text, false, /*cuda_passes=*/true);
  ASSERT_TRUE(cpu.module && gpu.module) << testing::diagnostics(gpu);
  std::string cu = emit_cuda(*gpu.module);
  EXPECT_NE(cu.find("`where` constraint violated: x.seqlen[b] <= P (calling `g`)"), std::string::npos);
  std::string log;
  void* lib = testing::build_emulated(testing::emulated(cu), dir, "where", log, testing::kEmuCompileBound);
  ASSERT_NE(lib, nullptr) << log;
  auto run = reinterpret_cast<int32_t (*)(const int64_t*, void* const*)>(dlsym(lib, "f__cuda_host"));
  auto last_error = reinterpret_cast<const char* (*)()>(dlsym(lib, "dcc_last_error"));
  ASSERT_TRUE(run && last_error);
  const ir::Func* f = nullptr;
  for (const auto& fn : gpu.module->funcs)
    if (fn.name == "f") f = &fn;
  ASSERT_NE(f, nullptr);
  int compared = 0;
  for (int longest : {3, 4, 5}) {  // P = 4: the last breaks the constraint
    SCOPED_TRACE("longest sequence " + std::to_string(longest));
    std::map<std::string, int64_t> sizes{{"B", 3}, {"D", 2}, {"P", 4}};
    const int lens[] = {longest, 0, 2};
    auto inputs = ir::Interpreter::make_inputs(*f, sizes, [&](const ir::BufferNode* b, int64_t k) -> double {
      return is_int(b->type) ? lens[k] : 0.25 * static_cast<double>(k % 7) - 0.5;
    });
    std::vector<int64_t> size_values;
    for (const auto& s : f->sizes) size_values.push_back(sizes.at(s.name));
    size_values.push_back(0);
    std::ostringstream sink;
    ir::Interpreter ref(sink);
    ref.set_float64_reference(true);
    bool holds = longest <= 4;
    if (!holds) {
      EXPECT_THROW(ref.run(*f, sizes, inputs), ir::InterpError);
      // Outputs sized as if it held (the check fails before any is written).
      std::map<std::string, int64_t> ok_sizes = sizes;
      std::vector<void*> ptrs;
      std::vector<testing::HostBuffer> host;
      for (const auto& b : f->buffers) {
        if (b->kind != ir::BufferKind::Input && b->kind != ir::BufferKind::Output) continue;
        testing::HostBuffer h{b->type, {}};
        size_t n = b->kind == ir::BufferKind::Input ? inputs.at(b.get()).size() : 2 * 7;
        h.bytes.assign(std::max<size_t>(1, n) * testing::HostBuffer::elem(b->type), 0);
        if (b->kind == ir::BufferKind::Input)
          for (size_t k = 0; k < n; ++k) h.set(k, inputs.at(b.get())[k]);
        host.push_back(std::move(h));
      }
      for (auto& h : host) ptrs.push_back(h.bytes.data());
      ptrs.push_back(nullptr);
      EXPECT_NE(run(size_values.data(), ptrs.data()), 0);
      EXPECT_NE(std::string(last_error()).find("`where` constraint violated: x.seqlen[b] <= P (calling `g`)"),
                std::string::npos)
          << last_error();
      continue;
    }
    ref.run(*f, sizes, inputs);
    std::vector<void*> ptrs;
    std::vector<testing::HostBuffer> host = testing::host_buffers(*f, inputs, ref, ptrs);
    ASSERT_EQ(run(size_values.data(), ptrs.data()), 0) << last_error();
    size_t slot = 0;
    for (const auto& b : f->buffers) {
      if (b->kind != ir::BufferKind::Input && b->kind != ir::BufferKind::Output) continue;
      size_t this_slot = slot++;
      if (b->kind != ir::BufferKind::Output) continue;
      std::vector<double> want = ref.packed(b.get());
      for (size_t k = 0; k < want.size(); ++k, ++compared) EXPECT_NEAR(host[this_slot].get(k), want[k], 1e-6) << k;
    }
  }
  std::filesystem::remove_all(dir);
  EXPECT_EQ(compared, 2 * (3 + 4 + 2 + 2));
}

// dcc_fdiv_pre (the fused attention's f32 division by a block value,
// backend/cuda/cuda_prologue.cpp): wherever it keeps `fast` set, its
// quotient is the IEEE one bit for bit -- float64's quotient rounded to f32
// (a double rounding that is innocuous for division) -- on every mantissa
// of a at the range's ends and in its middle, 2^22 random a a divisor and
// random divisors in range; it keeps `fast` for every a in its stated range
// (the fast path is taken), clears it for a out of the range, infinities
// and NaN, and gives a zero a's sign. The same arithmetic runs on the GPU
// (fmaf, copysignf; CudaBackend.FdivPreOnTheGpu).
TEST(CudaEmu, FdivPreIsTheIeeeQuotient) {
  auto dir = temp_dir("fdiv_pre");
  std::string log;
  const std::string src = std::string(backend::kCudaPrologue) +
                          "extern \"C\" float dcc_test_fdiv_pre(float a, float b, int* fast) {\n"
                          "  bool f = *fast != 0;\n  const float q = dcc_fdiv_pre(a, b, __frcp_rn(b), f);\n"
                          "  *fast = f;\n  return q;\n}\n";
  void* lib = testing::build_emulated(testing::emulated(src), dir, "fdiv_pre", log, "-O1");
  ASSERT_NE(lib, nullptr) << log;
  auto fdiv = reinterpret_cast<float (*)(float, float, int*)>(dlsym(lib, "dcc_test_fdiv_pre"));
  ASSERT_NE(fdiv, nullptr);
  long checked = 0, bad = 0;
  auto check = [&](float a, float b) {
    int fast = 1;
    const float q = fdiv(a, b, &fast);
    const float m = std::fabs(a);
    const bool in_range = (m >= 0x1p-100f && m <= 0x1p100f) || m == 0.0f;
    if ((fast != 0) != in_range && bad++ < 5) ADD_FAILURE() << a << " / " << b << ": fast " << fast;
    if (!fast) return;
    const float want = static_cast<float>(static_cast<double>(a) / static_cast<double>(b));
    ++checked;
    if (std::memcmp(&q, &want, 4) != 0 && bad++ < 5)
      ADD_FAILURE() << std::hexfloat << a << " / " << b << " = " << q << ", IEEE " << want;
  };
  std::mt19937 gen(11);
  std::vector<float> divisors{8.0f, std::sqrt(128.0f), std::sqrt(96.0f), std::sqrt(32.0f), 3.0f, 0.7f, -11.3f,
                              1.0f - 0x1p-24f, 0x1.fffffep0f, 0x1p-20f, 0x1p20f, -0x1.fffffep19f};
  for (int x = 0; x < 8; ++x)
    divisors.push_back(std::ldexp(1.0f + static_cast<float>(gen() >> 9) * 0x1p-23f, static_cast<int>(gen() % 41) - 20));
  for (float b : divisors) {
    for (int e : {-100, 99})
      for (uint32_t mant = 0; mant < (1u << 23); mant += (b == 8.0f || b == divisors[1]) ? 1 : 61) {
        const float a = std::ldexp(1.0f + static_cast<float>(mant) * 0x1p-23f, e);
        check(a, b), check(-a, b);
      }
    for (int x = 0; x < (1 << 18); ++x) {
      const uint32_t u = static_cast<uint32_t>(gen());
      float a;
      std::memcpy(&a, &u, 4);
      check(a, b);
    }
    for (float a : {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 0x1p-101f, 0x1.fffffep100f, 1.0f, -1.0f}) check(a, b);
  }
  EXPECT_EQ(bad, 0);
  EXPECT_GT(checked, 20000000);
  int fast = 1;
  const float z = fdiv(-0.0f, 8.0f, &fast), zn = fdiv(0.0f, -3.0f, &fast);
  EXPECT_TRUE(fast && std::signbit(z) && z == 0.0f && std::signbit(zn)) << "zero's sign";
}

}  // namespace
}  // namespace dccc::backend
