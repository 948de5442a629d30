// DWARF line tables in `.toy` terms (`dccc -g`): every kernel and outlined
// parallel body gets a DISubprogram in the program's `.toy` file, and the
// code of each IR statement the source line of the `.toy` statement it came
// from, so gdb, perf annotate and llvm-dwarfdump --debug-line show `.toy`
// lines. A statement of an imported file (inlined into the root's
// functions) is attributed to that file's lines through a lexical block
// file. Only line tables: there are no variable locations.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>

#include "ir/ir.h"

namespace llvm {
class DIBuilder;
class DICompileUnit;
class DIFile;
class DILocalScope;
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
  /// The scope of a location in `sp` from `file` (a SourceRange's): `sp`
  /// itself for the root file (null, or a file of the root's path), else a
  /// lexical block file naming the imported file.
  llvm::DILocalScope* scope(llvm::DISubprogram* sp, const SourceFile* file);
  /// Resolves what the builder holds; call once, before verifying the module.
  void finalize();

 private:
  std::unique_ptr<llvm::DIBuilder> builder_;
  llvm::DICompileUnit* unit_ = nullptr;
  llvm::DIFile* file_ = nullptr;
  std::string root_;  // the root file's absolute path
  std::map<std::string, llvm::DIFile*> files_;  // imported files by absolute path
  std::map<std::pair<llvm::DISubprogram*, llvm::DIFile*>, llvm::DILocalScope*> blocks_;
};

}  // namespace dccc::backend
