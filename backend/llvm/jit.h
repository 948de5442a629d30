// Running a program's `fn main()` with LLVM's ORC JIT (`dccc run`).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "ir/ir.h"

namespace dccc::backend {

/// A program JIT-compiled for the host CPU; kernels stay valid while it lives.
class JitProgram {
 public:
  using Kernel = int32_t (*)(const int64_t* sizes, void* const* buffers);
  /// Compiles every function of `m` (storage-lowered); null and `error` on failure.
  static std::unique_ptr<JitProgram> compile(const ir::Module& m, std::string& error);
  ~JitProgram();
  /// The kernel of function `name` (see codegen.h for its signature), or null.
  Kernel kernel(const std::string& name);

 private:
  struct Impl;
  explicit JitProgram(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// JIT-compiles `m` for the host CPU and calls `main`. Returns 0 on
/// success; otherwise the generated code's status, with `error` set.
int jit_run_main(const ir::Module& m, std::string& error);

}  // namespace dccc::backend
