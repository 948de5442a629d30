#include "tools/runtime_paths.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace dccc::tools {

namespace fs = std::filesystem;

std::string executable_dir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  return exe.parent_path().string();
}

namespace {

/// $DCCC_RUNTIME_LIB and $DCCC_RUNTIME_HEADER, when set, replace what was
/// found (a driver copied to another machine, as scripts/gpu_bundle.sh does).
RuntimePaths with_overrides(RuntimePaths p) {
  if (const char* e = std::getenv("DCCC_RUNTIME_LIB"); e && *e) p.library = e;
  if (const char* e = std::getenv("DCCC_RUNTIME_HEADER"); e && *e) {
    p.header = e;
    p.include = fs::path(e).parent_path().string();
  }
  return p;
}

RuntimePaths find_layout() {
  RuntimePaths p;
  std::string bin = executable_dir();
  if (!bin.empty()) {
    // The install layout (CMakeLists.txt's install rules): bin/dccc,
    // lib/dccc/libdccrt.a, include/dccc/dccrt.h.
    fs::path prefix = fs::path(bin).parent_path();
    fs::path lib = prefix / "lib" / "dccc" / "libdccrt.a";
    fs::path inc = prefix / "include" / "dccc";
    std::error_code ec;
    if (fs::exists(lib, ec) && fs::exists(inc / "dccrt.h", ec)) {
      p.library = lib.lexically_normal().string();
      p.include = inc.lexically_normal().string();
      p.header = (inc / "dccrt.h").lexically_normal().string();
      p.shared_library = (prefix / DCCC_INSTALL_LIBDIR / DCCC_RUNTIME_SONAME).lexically_normal().string();
      p.installed = true;
      return p;
    }
  }
  p.library = DCCC_RUNTIME_LIB;
  p.header = DCCC_RUNTIME_HEADER;
  p.include = fs::path(DCCC_RUNTIME_HEADER).parent_path().string();
  p.shared_library = DCCC_RUNTIME_SHARED_LIB;
  return p;
}

}  // namespace

RuntimePaths find_runtime() { return with_overrides(find_layout()); }

}  // namespace dccc::tools
