// Where dccc finds the runtime it links into the libraries it writes
// (libdccrt.a) and the runtime header it copies beside them (dccrt.h).
//
// An installed dccc is relocatable: it looks beside its own executable,
// `<bin>/../lib/dccc/libdccrt.a` and `<bin>/../include/dccc/dccrt.h`, so a
// prefix copied or moved elsewhere keeps working. A dccc run from its build
// tree has no such layout around it and uses the build tree's paths, fixed
// at compile time. $DCCC_RUNTIME_LIB and $DCCC_RUNTIME_HEADER replace
// either (a driver copied to another machine without its prefix, as
// scripts/gpu_bundle.sh does). `dccc --print-runtime` prints what was chosen.
//
// `dccc -o --runtime=shared` links the shared runtime instead
// (`<prefix>/LIBDIR/libdccrt.so.X.Y`, or the build tree's).
#pragma once

#include <string>

namespace dccc::tools {

struct RuntimePaths {
  std::string library;  // libdccrt.a, linked into every generated library
  std::string header;   // dccrt.h, copied beside the generated header
  std::string include;  // the directory holding dccrt.h
  std::string shared_library;  // libdccrt.so.X.Y (--runtime=shared)
  bool installed = false;  // found relative to the executable
};

/// The runtime of this dccc: the installed layout beside the executable when
/// present, else the build tree's.
RuntimePaths find_runtime();

/// The directory of the running executable (/proc/self/exe), or "".
std::string executable_dir();

}  // namespace dccc::tools
