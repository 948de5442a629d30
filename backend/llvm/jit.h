// Running a program's `fn main()` with LLVM's ORC JIT (`dccc run`).
#pragma once

#include <string>

#include "ir/ir.h"

namespace dccc::backend {

/// JIT-compiles `m` for the host CPU and calls `main`. Returns 0 on
/// success; otherwise the generated code's status, with `error` set.
int jit_run_main(const ir::Module& m, std::string& error);

}  // namespace dccc::backend
