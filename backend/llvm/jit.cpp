#include "backend/llvm/jit.h"

#include <dccrt.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Target/TargetMachine.h>

#include <cstdio>

#include "backend/llvm/codegen.h"
#include "backend/llvm/hooks.h"

namespace dccc::backend {

int jit_run_main(const ir::Module& m, std::string& error) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  auto ctx = std::make_unique<llvm::LLVMContext>();
  auto mod = emit_llvm(m, *ctx, error);
  if (!mod) return -1;

  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb) {
    error = llvm::toString(jtmb.takeError());
    return -1;
  }
  jtmb->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  auto tm = jtmb->createTargetMachine();
  if (!tm) {
    error = llvm::toString(tm.takeError());
    return -1;
  }
  mod->setDataLayout((*tm)->createDataLayout());
  optimize(*mod, tm->get());

  auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(*jtmb)).create();
  if (!jit) {
    error = llvm::toString(jit.takeError());
    return -1;
  }
  auto& jd = (*jit)->getMainJITDylib();
  // The runtime and print hooks by address; libm from the process.
  llvm::orc::SymbolMap symbols;
  auto add = [&](const char* name, auto* fn) {
    symbols[(*jit)->mangleAndIntern(name)] = {llvm::orc::ExecutorAddr::fromPtr(fn), llvm::JITSymbolFlags::Exported};
  };
  add("dcc_alloc", &dcc_alloc);
  add("dcc_free", &dcc_free);
  add("dcc_set_error", &dcc_set_error);
  add("dccc_print_text", &dccc_print_text);
  add("dccc_print_f32", &dccc_print_f32);
  add("dccc_print_f64", &dccc_print_f64);
  add("dccc_print_i64", &dccc_print_i64);
  add("dccc_print_bool", &dccc_print_bool);
  if (auto err = jd.define(llvm::orc::absoluteSymbols(std::move(symbols)))) {
    error = llvm::toString(std::move(err));
    return -1;
  }
  auto gen = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess((*jit)->getDataLayout().getGlobalPrefix());
  if (!gen) {
    error = llvm::toString(gen.takeError());
    return -1;
  }
  jd.addGenerator(std::move(*gen));
  if (auto err = (*jit)->addIRModule(llvm::orc::ThreadSafeModule(std::move(mod), std::move(ctx)))) {
    error = llvm::toString(std::move(err));
    return -1;
  }
  auto sym = (*jit)->lookup("main__kernel");
  if (!sym) {
    error = llvm::toString(sym.takeError());
    return -1;
  }
  auto* fn = sym->toPtr<int32_t (*)(const int64_t*, void* const*)>();
  dcc_clear_error();
  int32_t status = fn(nullptr, nullptr);
  std::fflush(stdout);
  if (status != 0) error = dcc_last_error();
  return status;
}

}  // namespace dccc::backend
