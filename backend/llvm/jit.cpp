#include "backend/llvm/jit.h"

#include <dccrt.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/DynamicLibrary.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>
#include <llvm/Target/TargetMachine.h>

#include <cstdio>

#include "backend/llvm/codegen.h"
#include "backend/llvm/hooks.h"

namespace dccc::backend {

struct JitProgram::Impl {
  std::unique_ptr<llvm::orc::LLJIT> jit;
};

JitProgram::JitProgram(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
JitProgram::~JitProgram() = default;

std::unique_ptr<JitProgram> JitProgram::compile(const ir::Module& m, std::string& error) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  auto ctx = std::make_unique<llvm::LLVMContext>();
  auto mod = emit_llvm(m, *ctx, error);
  if (!mod) return nullptr;
  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb) {
    error = llvm::toString(jtmb.takeError());
    return nullptr;
  }
  jtmb->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  auto tm = jtmb->createTargetMachine();
  if (!tm) {
    error = llvm::toString(tm.takeError());
    return nullptr;
  }
  mod->setDataLayout((*tm)->createDataLayout());
  optimize(*mod, tm->get());
  auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(*jtmb)).create();
  if (!jit) {
    error = llvm::toString(jit.takeError());
    return nullptr;
  }
  auto& jd = (*jit)->getMainJITDylib();
  // The runtime and print hooks by address; libm from the process.
  llvm::orc::SymbolMap symbols;
  auto add = [&](const char* name, auto* fn) {
    symbols[(*jit)->mangleAndIntern(name)] = {llvm::orc::ExecutorAddr::fromPtr(fn), llvm::JITSymbolFlags::Exported};
  };
  add("dcc_alloc", &dcc_alloc);
  add("dcc_free", &dcc_free);
  add("dcc_fill_uninit", &dcc_fill_uninit);
  add("dcc_set_error", &dcc_set_error);
  add("dcc_parallel_for", &dcc_parallel_for);
  add("dccc_print_text", &dccc_print_text);
  add("dccc_print_f32", &dccc_print_f32);
  add("dccc_print_f64", &dccc_print_f64);
  add("dccc_print_i64", &dccc_print_i64);
  add("dccc_print_bool", &dccc_print_bool);
  if (auto err = jd.define(llvm::orc::absoluteSymbols(std::move(symbols)))) {
    error = llvm::toString(std::move(err));
    return nullptr;
  }
  if (uses_libmvec(llvm::Triple(llvm::sys::getProcessTriple()))) {
    std::string why;
    if (llvm::sys::DynamicLibrary::LoadLibraryPermanently("libmvec.so.1", &why)) {
      error = "cannot load glibc's vector math library libmvec.so.1: " + why;
      return nullptr;
    }
  }
  auto gen = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess((*jit)->getDataLayout().getGlobalPrefix());
  if (!gen) {
    error = llvm::toString(gen.takeError());
    return nullptr;
  }
  jd.addGenerator(std::move(*gen));
  if (auto err = (*jit)->addIRModule(llvm::orc::ThreadSafeModule(std::move(mod), std::move(ctx)))) {
    error = llvm::toString(std::move(err));
    return nullptr;
  }
  auto impl = std::make_unique<Impl>();
  impl->jit = std::move(*jit);
  return std::unique_ptr<JitProgram>(new JitProgram(std::move(impl)));
}

JitProgram::Kernel JitProgram::kernel(const std::string& name) {
  auto sym = impl_->jit->lookup(name + "__kernel");
  if (!sym) {
    llvm::consumeError(sym.takeError());
    return nullptr;
  }
  return sym->toPtr<Kernel>();
}

int jit_run_main(const ir::Module& m, std::string& error) {
  auto program = JitProgram::compile(m, error);
  if (!program) return -1;
  JitProgram::Kernel main_kernel = program->kernel("main");
  if (!main_kernel) {
    error = "no `main` in the compiled program";
    return -1;
  }
  dcc_clear_error();
  int32_t status = main_kernel(nullptr, nullptr);
  std::fflush(stdout);
  if (status != 0) error = dcc_last_error();
  return status;
}

}  // namespace dccc::backend
