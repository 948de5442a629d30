// Shared by the CUDA backend's tests (cuda_backend_test on a GPU,
// cuda_emu_test on the CPU): programs compiled with a schedule as
// `dccc --target=cuda` compiles them, and the schedule files they run
// (tests/cuda/schedules: EXAMPLE.VARIANT.schedule; tests/host:
// EXAMPLE_VARIANT.schedule; applied to examples/EXAMPLE.toy).
#pragma once

#include <dlfcn.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "backend/cuda/cuda_codegen.h"
#include "backend/llvm/jit.h"
#include "ir/schedule.h"
#include "tests/unit/backend/differential.h"

namespace dccc::backend::testing {

/// A fresh directory `<tmp>/dccc-WHAT-<pid>` for a test's generated sources
/// and libraries, removed when the test process exits (the libraries stay
/// open until then, so it cannot go sooner; without this every run left its
/// megabytes in /tmp).
inline std::filesystem::path scratch_dir(const std::string& what) {
  // Never destroyed: the exit handler reads it after static destructors may have run.
  static auto* made = new std::vector<std::filesystem::path>;
  static const bool registered = [] {
    std::atexit([] {
      std::error_code ec;
      for (const auto& d : *made) std::filesystem::remove_all(d, ec);
    });
    return true;
  }();
  (void)registered;
  auto dir = std::filesystem::temp_directory_path() / ("dccc-" + what + "-" + std::to_string(getpid()));
  if (std::find(made->begin(), made->end(), dir) == made->end()) made->push_back(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

/// Runs `cmd`, a compiler command that writes the shared library `so`,
/// appending its output to `log`; returns `so`'s dlopen handle, or null
/// (the reason in `log`).
inline void* build_and_open(const std::string& cmd, const std::filesystem::path& so, std::string& log) {
  FILE* p = popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  while (p && (n = fread(buf, 1, sizeof buf, p)) > 0) log.append(buf, n);
  if (!p || pclose(p) != 0) return nullptr;
  void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) log += dlerror();
  return h;
}

/// `text` with the schedule blocks `schedule` appended, through the CUDA
/// target's pipeline as `dccc --target=cuda` runs it (ir/pipeline.h).
inline Program compile_cuda_scheduled(const std::string& name, const std::string& text, const std::string& schedule) {
  Program p;
  if (!front_end(p, name, text + "\n" + schedule)) return p;
  ir::PipelineOptions o;
  o.target = ir::Target::Cuda;
  o.schedules = ir::schedules_from_ast(*p.ast, p.file.get(), *p.diags);
  run_passes(p, o);
  return p;
}

/// The *.schedule files of `dirs` (colon-separated folders), sorted.
inline std::vector<std::filesystem::path> schedule_files(const std::string& dirs) {
  std::vector<std::filesystem::path> out;
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::filesystem::path dir = dirs.substr(start, end - start);
    std::error_code ec;
    if (!dir.empty() && std::filesystem::is_directory(dir, ec))
      for (const auto& entry : std::filesystem::directory_iterator(dir))
        if (entry.path().extension() == ".schedule") out.push_back(entry.path());
    start = end + 1;
  }
  std::sort(out.begin(), out.end());
  return out;
}

inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The example a schedule file is for: `softmax` for
/// softmax.remap_split_op.schedule (before the first dot), `mha` for
/// mha_fused.schedule (no dot: before the first underscore).
inline std::string example_of(const std::filesystem::path& file) {
  std::string stem = file.stem().string();
  size_t dot = stem.find('.');
  return dot != std::string::npos ? stem.substr(0, dot) : stem.substr(0, stem.find('_'));
}

/// What `p`'s diagnostics say (for a failed compile).
inline std::string diagnostics(const Program& p) {
  std::ostringstream o;
  if (p.diags) p.diags->print(o);
  return o.str();
}

/// The example that schedule `file` is for (read from `examples`),
/// compiled as the unscheduled CPU reference (`cpu`) and for the CUDA target
/// with the schedule (`gpu`); adds the statements the schedule maps to the
/// grid or the threads to `mapped`. Call under ASSERT_NO_FATAL_FAILURE.
inline void compile_scheduled_pair(const std::filesystem::path& file, const std::string& examples, Program& cpu,
                                   Program& gpu, int& mapped) {
  std::string example = example_of(file);
  std::string text = read_text(std::filesystem::path(examples) / (example + ".toy"));
  ASSERT_FALSE(text.empty()) << example;
  cpu = compile(example + ".toy", text);
  ASSERT_TRUE(cpu.module) << example;
  gpu = compile_cuda_scheduled(example + ".toy", text, read_text(file));
  ASSERT_TRUE(gpu.module) << diagnostics(gpu);
  for (const auto& f : gpu.module->funcs) mapped += static_cast<int>(f.gpu_mappings.size());
}

}  // namespace dccc::backend::testing
