#include "backend/llvm/llvm_text.h"

#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include "backend/llvm/codegen.h"

namespace dccc::backend {

std::optional<std::string> llvm_ir_text(const ir::Module& m, std::string& error) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::LLVMContext ctx;
  auto mod = emit_llvm(m, ctx, error);
  if (!mod) return std::nullopt;
  // The same target machine as the JIT's (jit.cpp), so the optimizer makes
  // the same choices.
  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb) {
    error = llvm::toString(jtmb.takeError());
    return std::nullopt;
  }
  jtmb->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  auto tm = jtmb->createTargetMachine();
  if (!tm) {
    error = llvm::toString(tm.takeError());
    return std::nullopt;
  }
  mod->setDataLayout((*tm)->createDataLayout());
  mod->setTargetTriple((*tm)->getTargetTriple().str());
  optimize(*mod, tm->get());
  std::string text;
  llvm::raw_string_ostream os(text);
  mod->print(os, nullptr);
  os.flush();
  return text;
}

std::optional<std::string> llvm_ir_text(const ir::Module& m, const CpuTarget& target, std::string& error) {
  auto tm = make_target_machine(target, error);
  if (!tm) return std::nullopt;
  llvm::LLVMContext ctx;
  auto mod = emit_llvm(m, ctx, error, target.debug_file);
  if (!mod) return std::nullopt;
  mod->setDataLayout(tm->createDataLayout());
  optimize(*mod, tm.get(), target.opt_level);
  std::string text;
  llvm::raw_string_ostream os(text);
  mod->print(os, nullptr);
  os.flush();
  return text;
}

}  // namespace dccc::backend
