#include "backend/llvm/debug_info.h"

#include <llvm/BinaryFormat/Dwarf.h>
#include <llvm/IR/DIBuilder.h>
#include <llvm/IR/DebugInfoMetadata.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/Module.h>

#include <filesystem>

namespace dccc::backend {

DebugInfo::DebugInfo(llvm::Module& m, const std::string& path) : builder_(std::make_unique<llvm::DIBuilder>(m)) {
  m.addModuleFlag(llvm::Module::Warning, "Debug Info Version", llvm::DEBUG_METADATA_VERSION);
  m.addModuleFlag(llvm::Module::Warning, "Dwarf Version", 5);
  std::filesystem::path p = std::filesystem::absolute(path).lexically_normal();
  root_ = p.string();
  file_ = builder_->createFile(p.filename().string(), p.parent_path().string());
  // DWARF has no language code for DCC; C is what debuggers handle best for
  // code with C linkage and no variable info.
  unit_ = builder_->createCompileUnit(llvm::dwarf::DW_LANG_C11, file_, "dccc", /*isOptimized=*/true, "", 0, "",
                                      llvm::DICompileUnit::DebugEmissionKind::LineTablesOnly);
}

DebugInfo::~DebugInfo() = default;

llvm::DISubprogram* DebugInfo::subprogram(llvm::Function* f, int line) {
  auto* type = builder_->createSubroutineType(builder_->getOrCreateTypeArray({}));
  auto* sp = builder_->createFunction(unit_, f->getName(), f->getName(), file_, line, type, line,
                                      llvm::DINode::FlagZero, llvm::DISubprogram::SPFlagDefinition |
                                                                  llvm::DISubprogram::SPFlagOptimized);
  f->setSubprogram(sp);
  return sp;
}

llvm::DILocalScope* DebugInfo::scope(llvm::DISubprogram* sp, const SourceFile* file) {
  if (!file || !sp) return sp;
  std::filesystem::path p = std::filesystem::absolute(file->name()).lexically_normal();
  if (p.string() == root_) return sp;
  llvm::DIFile*& f = files_[p.string()];
  if (!f) f = builder_->createFile(p.filename().string(), p.parent_path().string());
  llvm::DILocalScope*& block = blocks_[{sp, f}];
  if (!block) block = builder_->createLexicalBlockFile(sp, f);
  return block;
}

void DebugInfo::finalize() { builder_->finalize(); }

}  // namespace dccc::backend
