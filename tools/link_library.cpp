#include "tools/link_library.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "backend/abi/c_abi.h"
#include "backend/abi/metadata.h"
#include "backend/cuda/cuda_abi.h"
#include "backend/cuda/cuda_codegen.h"
#include "backend/llvm/aot.h"
#include "support/diagnostic_format.h"
#include "tools/runtime_paths.h"

namespace dccc::tools {

namespace fs = std::filesystem;

namespace {

/// Runs a command line; returns its exit status (or -1) and captures output.
int run_command(const std::string& cmd, std::string& output) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) output.append(buf, n);
  int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// nvcc for --target=cuda: $DCCC_NVCC, the toolkit in /usr/local/cuda, or PATH.
std::string find_nvcc() {
  if (const char* e = std::getenv("DCCC_NVCC"); e && *e) return e;
  if (access("/usr/local/cuda/bin/nvcc", X_OK) == 0) return "/usr/local/cuda/bin/nvcc";
  std::string out;
  if (run_command("command -v nvcc", out) == 0 && !out.empty()) return out.substr(0, out.find('\n'));
  return "";
}

/// nvcc's -gencode flags: machine code for each architecture, and the PTX
/// of the last (newest) one for GPUs that come later -- without its `a`
/// (sm_90a's PTX, with wgmma, loads on sm_90 only; compute_90's on any
/// newer GPU). DCCC_CUDA_ARCH, when set, replaces them (raw nvcc flags such
/// as `-arch=sm_90`).
std::string gencode_flags(const std::vector<std::string>& archs) {
  if (const char* env = std::getenv("DCCC_CUDA_ARCH"); env && *env) return env;
  std::string out;
  for (const auto& a : archs) {
    std::string num = a.substr(3);
    out += "-gencode arch=compute_" + num + ",code=sm_" + num + " ";
  }
  std::string last = archs.back().substr(3);
  if (!last.empty() && last.back() == 'a') last.pop_back();
  return out + "-gencode arch=compute_" + last + ",code=compute_" + last;
}

/// --target=cuda: the wrapper compiled by the C compiler, the kernels by
/// nvcc, linked into one shared library with libdccrt and the static CUDA
/// runtime.
int link_cuda(const LibraryOptions& o, const fs::path& out, const fs::path& header, const fs::path& tmp,
              const RuntimePaths& rt, const char* cc, const char* cflags) {
  std::string nvcc = find_nvcc();
  if (nvcc.empty()) {
    std::cerr << "dccc: error: --target=cuda needs nvcc: set DCCC_NVCC or install the CUDA toolkit in /usr/local/cuda\n";
    return kExitErrors;
  }
  std::string dir = shell_quote(out.parent_path().string());
  std::string log;
  std::string cmd = std::string(cc && *cc ? cc : "cc") + " -std=c11 -O2 -fPIC -c -Wall -Wno-unused-label " +
                    (cflags ? cflags : "") + " -I" + dir + " -o " + shell_quote((tmp / "abi.o").string()) + " " +
                    shell_quote((tmp / "abi.c").string());
  if (run_command(cmd, log) != 0) {
    std::cerr << "dccc: error: compiling the C wrapper failed:\n" << cmd << "\n" << log;
    return kExitErrors;
  }
  std::vector<std::string> archs = o.cuda_archs.empty() ? default_cuda_archs() : o.cuda_archs;
  // The kernels are compiled apart from the link, in the temporary folder
  // with relative paths only (kernels.cu and a copy of dccrt.h beside it),
  // so that a compiler cache in $DCCC_COMPILER_LAUNCHER (ccache) finds the
  // same command for the same source whatever folder dccc ran in: nvcc takes
  // seconds a kernel, and a cache hit milliseconds.
  std::error_code ec;
  fs::copy_file(rt.header, tmp / "dccrt.h", fs::copy_options::overwrite_existing, ec);
  if (ec) {
    std::cerr << "dccc: error: cannot copy `" << rt.header << "` to " << tmp.string() << ": " << ec.message() << "\n";
    return kExitErrors;
  }
  std::string launcher;
  if (const char* e = std::getenv("DCCC_COMPILER_LAUNCHER"); e && *e) launcher = shell_quote(e) + " ";
  // --threads 0: nvcc compiles the targets (each SASS and the PTX) in
  // parallel, one a CPU: 46 -> 28 s for mha_bf16.toy's three on 2 cores.
  cmd = "cd " + shell_quote(tmp.string()) + " && " + launcher + shell_quote(nvcc) + " --threads 0 -O" +
        std::to_string(o.cuda_opt_level) + " -std=c++17 -Xcompiler -fPIC " + (o.lineinfo ? "-lineinfo " : "") +
        gencode_flags(archs) + " -I. -c kernels.cu -o kernels_cuda.o";
  std::string names;
  for (const auto& a : archs) names += " " + a;
  // Progress where someone watches: nvcc takes seconds a kernel and minutes
  // for a file of many fused attention kernels (std/attention.toy).
  if (isatty(STDERR_FILENO)) std::cerr << "dccc: nvcc is compiling the CUDA kernels for" << names << "...\n";
  log.clear();
  if (run_command(cmd, log) != 0) {
    std::cerr << "dccc: error: nvcc failed on the generated CUDA code:\n" << cmd << "\n" << log;
    return kExitErrors;
  }
  cmd = shell_quote(nvcc) + " -shared -Xlinker " + shell_quote("-soname=" + out.filename().string()) + " -o " +
        shell_quote(out.string()) + " " + shell_quote((tmp / "kernels_cuda.o").string()) + " " +
        shell_quote((tmp / "abi.o").string()) + " " +
        (o.shared_runtime ? shell_quote(rt.shared_library) + " -Xlinker " +
                                shell_quote("-rpath=" + fs::path(rt.shared_library).parent_path().string())
                          : shell_quote(rt.library)) +
        " -lpthread";
  log.clear();
  if (run_command(cmd, log) != 0) {
    std::cerr << "dccc: error: linking `" << out.string() << "` failed:\n" << cmd << "\n" << log;
    return kExitErrors;
  }
  std::cerr << "dccc: wrote " << out.string() << " and " << header.string() << " (target: cuda," << names << ")\n";
  return kExitOk;
}

}  // namespace

const backend::DeviceAbi* device_abi(ir::Target target) {
  return target == ir::Target::Cuda ? &backend::cuda_device_abi() : nullptr;
}

ir::Module library_module(const ir::Module& full) {
  ir::Module m;
  for (const auto& f : full.funcs)
    if (f.name != "main" && f.name.find('.') == std::string::npos) m.funcs.push_back(f);
  return m;
}

backend::MetadataContext metadata_context(const LibraryOptions& o) {
  backend::MetadataContext c;
  c.source = fs::path(o.source).filename().string();
  c.compiler = std::string("dccc ") + DCCC_VERSION;
  c.target = o.target;
  if (o.target == ir::Target::Cuda) {
    c.arch = gencode_flags(o.cuda_archs.empty() ? default_cuda_archs() : o.cuda_archs);
  } else {
    c.arch = o.cpu.cpu.empty() ? backend::default_cpu() : o.cpu.cpu;
    if (c.arch == "native") c.arch = backend::host_cpu_name();
  }
  return c;
}

// sm_90a, not sm_90: the H100 / H200 code with wgmma (the fused attention's
// head dims 64 and 128); compute_90 PTX for newer GPUs (gencode_flags).
std::vector<std::string> default_cuda_archs() { return {"sm_80", "sm_90a"}; }

bool valid_cuda_arch(const std::string& arch) {
  if (arch.size() < 5 || arch.rfind("sm_", 0) != 0) return false;
  std::string digits = arch.substr(3);
  if (!digits.empty() && digits.back() == 'a') digits.pop_back();
  if (digits.size() < 2 || digits.size() > 3) return false;
  for (char c : digits)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  int n = std::stoi(digits);
  return n >= 80 && n <= 129;  // the tensor-core kernels need sm_80 (cp.async, bf16 mma.sync)
}

int write_library(const LibraryOptions& o, const ir::Module& full, DiagnosticEngine& diags) {
  fs::path out = fs::absolute(o.output);
  fs::path header = out;
  header.replace_extension(".h");
  ir::Module m = library_module(full);
  if (m.funcs.empty()) {
    std::cerr << "dccc: error: `" << o.source << "` has no function to put in a library (only `main`)\n";
    return kExitErrors;
  }
  RuntimePaths rt = find_runtime();
  std::error_code ec;
  fs::path tmp = fs::temp_directory_path(ec) / ("dccc-" + std::to_string(getpid()));
  fs::create_directories(tmp, ec);
  if (ec) {
    std::cerr << "dccc: error: cannot create a temporary directory: " << ec.message() << "\n";
    return kExitErrors;
  }
  struct Cleanup {
    fs::path p;
    ~Cleanup() {
      std::error_code e;
      fs::remove_all(p, e);
    }
  } cleanup{tmp};
  std::string error;
  fs::path obj = tmp / "kernels.o";
  const bool cuda = o.target == ir::Target::Cuda;
  try {
    // Valid, distinct C names for what the host sees, before any back end
    // prints one.
    const backend::DeviceAbi* device = device_abi(o.target);
    backend::assign_c_names(m, device);
    if (cuda) {
      backend::CudaOptions kernels = o.cuda;
      kernels.line_file = o.lineinfo ? fs::absolute(o.source).lexically_normal().string() : "";
      std::ofstream(tmp / "kernels.cu") << backend::emit_cuda(m, kernels) << backend::emit_cuda_prelude(m);
    } else if (!backend::emit_object(m, obj.string(), o.cpu, error)) {
      std::cerr << "dccc: internal error: code generation failed: " << error << "\n";
      return kExitInternal;
    }
    std::string guard = "DCCC_";
    for (char c : header.stem().string()) guard += std::isalnum(static_cast<unsigned char>(c)) ? std::toupper(c) : '_';
    guard += "_H";
    std::ofstream(header) << backend::emit_header(m, fs::path(o.source).filename().string(), guard, device);
    std::ofstream(tmp / "abi.c") << backend::emit_wrapper(m, header.filename().string(), device)
                                 << backend::emit_metadata_symbol(backend::emit_metadata(m, metadata_context(o)));
  } catch (const backend::BackendUnsupported& e) {
    std::cerr << diags.render(diags.report(DiagKind::Unsupported, e.at, e.what()));
    if (diagnostic_style().format == DiagnosticFormat::Text)
      std::cerr << diags.shown_error_count() << " error(s) generated.\n";
    return kExitErrors;
  }
  // Copied under a name of this process and renamed into place (atomic):
  // several dccc writing libraries into one folder at once (make -j) must
  // never let one's C compile read another's half-written dccrt.h.
  {
    const fs::path part = out.parent_path() / (".dccrt.h." + std::to_string(getpid()));
    fs::copy_file(rt.header, part, fs::copy_options::overwrite_existing, ec);
    if (!ec) fs::rename(part, out.parent_path() / "dccrt.h", ec);
    if (ec) {
      std::error_code ignored;
      fs::remove(part, ignored);
    }
  }
  if (ec) {
    std::cerr << "dccc: error: cannot write `" << (out.parent_path() / "dccrt.h").string() << "`: " << ec.message()
              << "\n";
    return kExitErrors;
  }
  const char* cc = std::getenv("CC");
  const char* cflags = std::getenv("DCCC_CFLAGS");  // e.g. sanitizer flags matching libdccrt's build
  if (cuda) return link_cuda(o, out, header, tmp, rt, cc, cflags);
  // The wrapper is plain C for the baseline of the architecture (the C
  // compiler's default), whatever --cpu says; it gets no -g: its lines
  // would name a temporary file. The SONAME is the file's name, so a host
  // linked against it (CMake's dccc_add_library) records that, not a path.
  // The runtime: libdccrt.a copied in, or (--runtime=shared) libdccrt.so
  // recorded by its SONAME and found through the RUNPATH of its folder.
  std::string runtime = o.shared_runtime ? shell_quote(rt.shared_library) + " " +
                                               shell_quote("-Wl,-rpath," +
                                                           fs::path(rt.shared_library).parent_path().string())
                                         : shell_quote(rt.library);
  std::string cmd = std::string(cc && *cc ? cc : "cc") + " -std=c11 -O2 -fPIC -shared -Wall -Wno-unused-label " +
                    (cflags ? cflags : "") + " -I" + shell_quote(out.parent_path().string()) + " " +
                    shell_quote("-Wl,-soname," + out.filename().string()) + " -o " +
                    shell_quote(out.string()) + " " + shell_quote((tmp / "abi.c").string()) + " " +
                    shell_quote(obj.string()) + " " + runtime + " " + backend::host_link_flags() +
                    " -lstdc++ -lm -lpthread";
  std::string log;
  int rc = run_command(cmd, log);
  if (rc != 0) {
    std::cerr << "dccc: error: linking `" << out.string() << "` failed:\n" << cmd << "\n" << log;
    return kExitErrors;
  }
  std::cerr << "dccc: wrote " << out.string() << " and " << header.string() << " (target: CPU "
            << (o.cpu.cpu.empty() ? backend::default_cpu() : o.cpu.cpu) << ", LLVM)\n";
  return kExitOk;
}

bool write_depfile(const std::string& depfile, const std::vector<std::string>& targets,
                   const std::vector<std::string>& deps) {
  auto escape = [](const std::string& path) {
    std::string out;
    for (char c : path) {
      if (c == ' ' || c == '#' || c == '\\') out += '\\';
      if (c == '$') out += '$';
      out += c;
    }
    return out;
  };
  std::string text;
  for (size_t k = 0; k < targets.size(); ++k) text += (k ? " " : "") + escape(targets[k]);
  text += ":";
  for (const auto& d : deps) text += " \\\n  " + escape(d);
  text += "\n";
  std::ofstream f(depfile);
  f << text;
  if (!f) {
    std::cerr << "dccc: error: cannot write the dependency file `" << depfile << "`\n";
    return false;
  }
  return true;
}

}  // namespace dccc::tools
