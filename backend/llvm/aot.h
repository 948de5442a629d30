// Ahead-of-time compilation: a position-independent object file for the
// host CPU, to be linked into the program's shared library.
#pragma once

#include <string>

#include "ir/ir.h"

namespace dccc::backend {

/// Writes `path` (an ELF object) with every function's kernel; false and
/// `error` on failure.
bool emit_object(const ir::Module& m, const std::string& path, std::string& error);

}  // namespace dccc::backend
