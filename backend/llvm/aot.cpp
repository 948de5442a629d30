#include "backend/llvm/aot.h"

#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

#include "backend/llvm/codegen.h"

namespace dccc::backend {

std::string host_cpu_name() { return llvm::sys::getHostCPUName().str(); }

std::string host_link_flags() {
  return uses_libmvec(llvm::Triple(llvm::sys::getProcessTriple())) ? "-lmvec" : "";
}

bool emit_object(const ir::Module& m, const std::string& path, const CpuTarget& target, std::string& error) {
  auto tm = make_target_machine(target, error);
  if (!tm) return false;
  llvm::LLVMContext ctx;
  auto mod = emit_llvm(m, ctx, error, target.debug_file);
  if (!mod) return false;
  mod->setDataLayout(tm->createDataLayout());
  optimize(*mod, tm.get(), target.opt_level);
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
