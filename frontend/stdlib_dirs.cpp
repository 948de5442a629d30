// stdlib_dirs() (frontend/imports.h), apart from imports.cpp: this file alone
// carries the checkout's absolute path (DCCC_SOURCE_STDLIB), so the rest of
// the front end compiles to the same objects in any checkout and a clean
// clone's build takes them from ccache (scripts/build.sh).
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "frontend/imports.h"

namespace dccc {

std::vector<std::string> stdlib_dirs() {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) out.push_back((exe.parent_path() / ".." / "share" / "dccc" / "std").lexically_normal().string());
#ifdef DCCC_SOURCE_STDLIB
  out.push_back(DCCC_SOURCE_STDLIB);
#endif
  return out;
}

}  // namespace dccc
