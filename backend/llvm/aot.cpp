#include "backend/llvm/aot.h"

#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

#include "backend/llvm/codegen.h"

namespace dccc::backend {

namespace {

/// The host's target machine (PIC, for shared libraries); null and `error`
/// on failure.
std::unique_ptr<llvm::TargetMachine> host_machine(std::string& error) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  std::string triple = llvm::sys::getProcessTriple();
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target) return nullptr;
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      triple, llvm::sys::getHostCPUName(), host_features(), options, llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
  if (!tm) error = "cannot create a target machine for " + triple;
  return tm;
}

}  // namespace

std::string host_cpu_name() { return llvm::sys::getHostCPUName().str(); }

std::string host_link_flags() {
  return uses_libmvec(llvm::Triple(llvm::sys::getProcessTriple())) ? "-lmvec" : "";
}

bool emit_object(const ir::Module& m, const std::string& path, std::string& error) {
  auto tm = host_machine(error);
  if (!tm) return false;
  llvm::LLVMContext ctx;
  auto mod = emit_llvm(m, ctx, error);
  if (!mod) return false;
  mod->setDataLayout(tm->createDataLayout());
  optimize(*mod, tm.get());
  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec, llvm::sys::fs::OF_None);
  if (ec) {
    error = "cannot write `" + path + "`: " + ec.message();
    return false;
  }
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, out, nullptr, llvm::CodeGenFileType::ObjectFile)) {
    error = "the target cannot emit object files";
    return false;
  }
  pm.run(*mod);
  out.flush();
  return true;
}

}  // namespace dccc::backend
