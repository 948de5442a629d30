// The LLVM IR of a lowered program as text (`dccc --emit=llvm`, `:emit llvm`
// in `dccc repl`).
//
// The module is generated and optimized exactly as the ORC JIT compiles it
// (codegen.h's emit_llvm, then optimize(): the O3 pipeline with the host
// CPU's cost model), so what is shown is what runs.
#pragma once

#include <optional>
#include <string>

#include "backend/llvm/target.h"
#include "ir/ir.h"

namespace dccc::backend {

/// The optimized LLVM IR of every function of `m` (storage-lowered) for the
/// host CPU; nullopt and `error` set when code generation fails.
std::optional<std::string> llvm_ir_text(const ir::Module& m, std::string& error);

}  // namespace dccc::backend

namespace dccc::backend {

/// The same for `target` (`dccc --emit=llvm --cpu=... -O... -g`): the code
/// `dccc -o` compiles with those options.
std::optional<std::string> llvm_ir_text(const ir::Module& m, const CpuTarget& target, std::string& error);

}  // namespace dccc::backend
