// DWARF line tables in `.toy` terms (`dccc -g`): every kernel and outlined
// parallel body gets a DISubprogram in the program's `.toy` file, and the
// code of each IR statement the source line of the `.toy` statement it came
// from, so gdb, perf annotate and llvm-dwarfdump --debug-line show `.toy`
// lines. Only line tables: there are no variable locations.
#pragma once

#include <memory>
#include <string>

#include "ir/ir.h"

namespace llvm {
class DIBuilder;
class DICompileUnit;
class DIFile;
class DISubprogram;
class Function;
class Module;
}  // namespace llvm

namespace dccc::backend {

/// The debug info of one LLVM module, for one `.toy` file.
class DebugInfo {
 public:
  /// `path`: the `.toy` file as the debugger should find it.
  DebugInfo(llvm::Module& m, const std::string& path);
  ~DebugInfo();
  /// A subprogram for `f` starting at `line`, attached to `f`.
  llvm::DISubprogram* subprogram(llvm::Function* f, int line);
  /// Resolves what the builder holds; call once, before verifying the module.
  void finalize();

 private:
  std::unique_ptr<llvm::DIBuilder> builder_;
  llvm::DICompileUnit* unit_ = nullptr;
  llvm::DIFile* file_ = nullptr;
};

}  // namespace dccc::backend
