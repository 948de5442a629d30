// `dccc prog.toy -o prog.so`: the kernels (an LLVM object for the CPU, or
// CUDA C++ built by nvcc), the generated C wrapper and header, linked with
// the runtime (tools/runtime_paths.h) into one shared library; and the
// Make-style dependency file of `-MD -MF`.
#pragma once

#include <string>
#include <vector>

#include "backend/abi/device_abi.h"
#include "backend/abi/metadata.h"
#include "backend/cuda/cuda_codegen.h"
#include "backend/llvm/target.h"
#include "ir/ir.h"
#include "ir/pipeline.h"
#include "support/diagnostics.h"

namespace dccc::tools {

constexpr int kExitOk = 0;
constexpr int kExitErrors = 1;
constexpr int kExitUsage = 2;
constexpr int kExitRuntime = 3;
constexpr int kExitInternal = 70;

struct LibraryOptions {
  std::string source;  // the program's file
  std::string output;  // PROG.so; PROG.h and dccrt.h go beside it
  ir::Target target = ir::Target::Cpu;
  backend::CpuTarget cpu;  // --cpu, -O, -g (CPU target)
  /// --cuda-arch: the real architectures to build (`sm_80`); the PTX of the
  /// last is embedded too. Empty: default_cuda_archs().
  std::vector<std::string> cuda_archs;
  int cuda_opt_level = 3;  // -O for nvcc's host and device code
  bool lineinfo = false;   // -lineinfo: nvcc -lineinfo over `#line`s of the .toy file
  backend::CudaOptions cuda;  // --fp32-math (line_file is set from lineinfo)
  /// --runtime=shared: link libdccrt.so (found through an absolute RUNPATH)
  /// instead of copying libdccrt.a into the library.
  bool shared_runtime = false;
};

/// The functions a library holds: the compiled file's own, but not `main`
/// (an imported function is named `stem.name`, frontend/imports.h, and was
/// inlined into its callers).
ir::Module library_module(const ir::Module& full);

/// What the library's metadata (dccc_module_info, `--emit=metadata`) says
/// it was built from and for: `arch` is the CPU the kernels were compiled
/// for (--cpu, `native` resolved to this machine's CPU name) or nvcc's
/// architecture flags.
backend::MetadataContext metadata_context(const LibraryOptions& o);

/// What the C ABI writer (backend/abi/c_abi.h) is given for `target`: the
/// CUDA backend's DeviceAbi (backend/cuda/cuda_abi.h), or nullptr (CPU).
const backend::DeviceAbi* device_abi(ir::Target target);

/// sm_80 and sm_90a: the data-centre GPUs the CUDA target is tested on
/// (sm_90a: wgmma on H100 / H200).
std::vector<std::string> default_cuda_archs();

/// True when `arch` is `sm_NN` or `sm_NNa` (NN from 50 to 129).
bool valid_cuda_arch(const std::string& arch);

/// Writes the library; prints what went wrong and returns kExitErrors or
/// kExitInternal on failure.
int write_library(const LibraryOptions& o, const ir::Module& full, DiagnosticEngine& diags);

/// Writes `depfile`: `TARGETS: DEPS` in Make syntax (what Ninja's and
/// CMake's depfile support reads); false and a message on stderr on failure.
bool write_depfile(const std::string& depfile, const std::vector<std::string>& targets,
                   const std::vector<std::string>& deps);

}  // namespace dccc::tools
