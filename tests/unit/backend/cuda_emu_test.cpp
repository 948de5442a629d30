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

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <cctype>
#include <regex>

#include "tests/unit/backend/cuda_scheduled.h"

namespace dccc::backend {
namespace {

using testing::compile;
using testing::Engine;
using testing::Program;

/// The emitted source made plain C++: cuda_emu.h for the CUDA headers,
/// dcc_emu_launch(K, grid, block, args) for K<<<grid, block>>>(args).
std::string emulated(const std::string& cu) {
  std::string s = std::regex_replace(cu, std::regex("#include <cuda_runtime.h>\n#include <cuda_fp16.h>\n"),
                                     "#include \"tests/unit/backend/cuda_emu.h\"\n");
  std::string out;
  size_t at = 0;
  for (size_t open; (open = s.find("<<<", at)) != std::string::npos;) {
    size_t name = open;
    while (name > 0 && (std::isalnum(static_cast<unsigned char>(s[name - 1])) || s[name - 1] == '_')) --name;
    size_t close = s.find(">>>(", open);
    size_t end = s.find(')', close);
    std::string config = s.substr(open + 3, close - open - 3);
    int depth = 0;
    size_t comma = std::string::npos;
    for (size_t k = 0; k < config.size(); ++k) {
      if (config[k] == '(') ++depth;
      if (config[k] == ')') --depth;
      if (config[k] == ',' && depth == 0) comma = k;
    }
    // A kernel with no barrier and no shuffle runs its threads one after
    // another in one host thread (much faster than a thread each).
    std::string kernel = s.substr(name, open - name);
    size_t def = s.find(" " + kernel + "(" + kernel.substr(0, kernel.find("__")) + "__args a) {");
    size_t def_end = s.find("\n}\n", def);
    std::string body = def == std::string::npos ? "__syncthreads" : s.substr(def, def_end - def);
    bool serial = body.find("__syncthreads") == std::string::npos && body.find("__shfl") == std::string::npos;
    out += s.substr(at, name - at);
    out += "dcc_emu_launch(" + kernel + ", dim3(" + config.substr(0, comma) + "), dim3(" + config.substr(comma + 1) +
           "), " + s.substr(close + 4, end - close - 4) + (serial ? ", true)" : ", false)");
    at = end + 1;
  }
  return out + s.substr(at);
}

void* build(const std::string& source, const std::filesystem::path& dir, const std::string& stem, std::string& log) {
  std::filesystem::path cc = dir / (stem + ".cpp"), so = dir / (stem + ".so");
  std::ofstream(cc) << source;
  std::string cmd = std::string(DCCC_CXX) + " -O1 -std=c++20 -shared -fPIC -w -pthread -I" DCCC_SOURCE_DIR " -I" +
                    DCCC_RUNTIME_INCLUDE + " -o " + so.string() + " " + cc.string() + " " + DCCC_RUNTIME_LIB +
                    " -lpthread 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  while (p && (n = fread(buf, 1, sizeof buf, p)) > 0) log.append(buf, n);
  if (!p || pclose(p) != 0) return nullptr;
  void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) log += dlerror();
  return h;
}

/// Runs every function of `gpu` (emulated) and `cpu` (LLVM JIT) on the
/// differential patterns.
void compare(const Program& cpu, const Program& gpu, const std::filesystem::path& dir, const std::string& stem,
             int& functions, int& compared) {
  std::string error;
  auto jit = JitProgram::compile(*cpu.module, error);
  ASSERT_TRUE(jit) << error;
  std::string log;
  void* lib = build(emulated(emit_cuda(*gpu.module)), dir, stem, log);
  ASSERT_NE(lib, nullptr) << log;
  for (const auto& f : cpu.module->funcs) {
    if (f.name == "main") continue;
    auto run = reinterpret_cast<int32_t (*)(const int64_t*, void* const*)>(dlsym(lib, (f.name + "__cuda_host").c_str()));
    ASSERT_NE(run, nullptr) << f.name;
    testing::run_differential(f, {Engine{"llvm", jit->kernel(f.name)}, Engine{"cuda-emu", run}}, stem, compared);
    ++functions;
  }
}

std::filesystem::path temp_dir(const std::string& what) {
  auto dir = std::filesystem::temp_directory_path() / ("dccc-cuda-emu-" + what + "-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(CudaEmu, ExamplesMatchCpuBackend) {
  auto dir = temp_dir("examples");
  auto cpu_side = testing::compile_examples(DCCC_EXAMPLES_DIR);
  auto gpu_side = testing::compile_examples(DCCC_EXAMPLES_DIR, /*cuda_passes=*/true);
  ASSERT_EQ(cpu_side.size(), gpu_side.size());
  int functions = 0, compared = 0;
  for (size_t k = 0; k < cpu_side.size(); ++k) {
    const auto& [name, stem, p] = cpu_side[k];
    if (!p.module) continue;
    ASSERT_TRUE(gpu_side[k].program.module) << name;
    compare(p, gpu_side[k].program, dir, stem, functions, compared);
  }
  std::filesystem::remove_all(dir);
  EXPECT_GE(functions, 8);
  EXPECT_GT(compared, 10000);
}

TEST(CudaEmu, ScheduledMatchCpuBackend) {
  auto dir = temp_dir("scheduled");
  auto files = testing::schedule_files(DCCC_CUDA_SCHEDULES_DIRS);
  ASSERT_GE(files.size(), 4u);
  int functions = 0, compared = 0, mapped = 0;
  for (const auto& file : files) {
    std::string stem = file.stem().string();
    std::string example = stem.substr(0, stem.find_first_of("._"));
    SCOPED_TRACE(file.string());
    std::string text = testing::read_text(std::filesystem::path(DCCC_EXAMPLES_DIR) / (example + ".toy"));
    Program cpu = compile(example + ".toy", text);
    ASSERT_TRUE(cpu.module) << example;
    Program gpu = testing::compile_cuda_scheduled(example + ".toy", text, testing::read_text(file));
    ASSERT_TRUE(gpu.module) << testing::diagnostics(gpu);
    for (const auto& f : gpu.module->funcs) mapped += static_cast<int>(f.gpu_mappings.size());
    compare(cpu, gpu, dir, stem, functions, compared);
  }
  std::filesystem::remove_all(dir);
  EXPECT_GE(functions, 4);
  EXPECT_GE(mapped, 4) << "statements mapped by gpu_blocks / gpu_threads";
  EXPECT_GT(compared, 1000);
}

}  // namespace
}  // namespace dccc::backend
