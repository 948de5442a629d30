#include "backend/llvm/target.h"

#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/CodeGen.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

#include "backend/llvm/codegen.h"

namespace dccc::backend {

std::string default_cpu() {
  llvm::Triple triple(llvm::sys::getProcessTriple());
  return triple.getArch() == llvm::Triple::x86_64 ? "x86-64-v2" : "generic";
}

bool valid_cpu(const std::string& name) {
  if (name == "native") return true;
  llvm::InitializeNativeTarget();
  std::string triple = llvm::sys::getProcessTriple(), error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target) return false;
  std::unique_ptr<llvm::MCSubtargetInfo> sti(target->createMCSubtargetInfo(triple, "", ""));
  return sti && sti->isCPUStringValid(name);
}

std::unique_ptr<llvm::TargetMachine> make_target_machine(const CpuTarget& t, std::string& error) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  std::string triple = llvm::sys::getProcessTriple();
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target) return nullptr;
  std::string cpu = t.cpu.empty() ? default_cpu() : t.cpu;
  if (!valid_cpu(cpu)) {
    error = "unknown CPU `" + cpu + "` for " + triple;
    return nullptr;
  }
  // A named CPU brings its own features; only `native` asks the host.
  std::string features;
  if (cpu == "native") {
    cpu = llvm::sys::getHostCPUName().str();
    features = host_features();
  }
  llvm::CodeGenOptLevel level = t.opt_level <= 0   ? llvm::CodeGenOptLevel::None
                                : t.opt_level == 1 ? llvm::CodeGenOptLevel::Less
                                : t.opt_level == 2 ? llvm::CodeGenOptLevel::Default
                                                   : llvm::CodeGenOptLevel::Aggressive;
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> tm(
      target->createTargetMachine(triple, cpu, features, options, llvm::Reloc::PIC_, std::nullopt, level));
  if (!tm) error = "cannot create a target machine for " + triple + " (" + cpu + ")";
  return tm;
}

}  // namespace dccc::backend
