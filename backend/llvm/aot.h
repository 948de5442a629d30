// Ahead-of-time compilation: a position-independent object file for the
// CPU of `--cpu` (backend/llvm/target.h), to be linked into the program's
// shared library.
#pragma once

#include <string>

#include "backend/llvm/target.h"
#include "ir/ir.h"

namespace dccc::backend {

/// Writes `path` (an ELF object) with every function's kernel, compiled for
/// `target` (CPU, optimization level, line tables); false and `error` on
/// failure.
bool emit_object(const ir::Module& m, const std::string& path, const CpuTarget& target, std::string& error);

/// Libraries an object from emit_object needs besides libdccrt, libm and
/// libpthread, as linker flags ("-lmvec" on x86-64 GNU/Linux; may be empty).
std::string host_link_flags();

/// The CPU emit_object compiles for (LLVM's name of the host CPU, e.g.
/// "sapphirerapids"), for the library's metadata.
std::string host_cpu_name();

}  // namespace dccc::backend
