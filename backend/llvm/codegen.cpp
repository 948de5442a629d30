#include "backend/llvm/codegen.h"

#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>

#include <deque>
#include <string>
#include <vector>

// The per-function emitter (its members are in emit_*.cpp, reduction_nests.cpp
// and vector_idioms.cpp); this file holds the module-level entry points.
#include "backend/llvm/func_emitter.h"

#include "backend/llvm/debug_info.h"

namespace dccc::backend {

using llvmgen::EmitError;
using llvmgen::FuncEmitter;

std::unique_ptr<llvm::Module> emit_llvm(const ir::Module& m, llvm::LLVMContext& ctx, std::string& error,
                                        const std::string& debug_file) {
  auto mod = std::make_unique<llvm::Module>("dccc", ctx);
  mod->setTargetTriple(llvm::sys::getProcessTriple());
  std::unique_ptr<DebugInfo> dbg;
  if (!debug_file.empty()) dbg = std::make_unique<DebugInfo>(*mod, debug_file);
  try {
    for (const auto& f : m.funcs) {
      if (!f.storage_lowered) throw EmitError{"function `" + f.name + "` is not storage-lowered"};
      FuncEmitter(*mod, f, dbg.get()).run();
    }
  } catch (const EmitError& e) {
    error = e.what;
    return nullptr;
  }
  if (dbg) dbg->finalize();
  std::string verify;
  llvm::raw_string_ostream os(verify);
  if (llvm::verifyModule(*mod, &os)) {
    error = "generated LLVM IR is invalid: " + os.str();
    return nullptr;
  }
  return mod;
}

namespace {
/// glibc libmvec's SSE (`b`: every x86-64 CPU) and AVX2 (`d`) entry points
/// for what LLVM's own table (VecFuncs.def, LIBMVEC_X86) lists: sin, cos,
/// tan, pow, exp, log and their llvm.* intrinsics and __*_finite forms.
/// That table hands the vectorizer the AVX2 ones whatever the CPU, so code
/// for a CPU without AVX2 (`--cpu=x86-64-v2`, -o's default) called
/// _ZGVdN8v_expf with its eight floats in two xmm registers (mha_bf16 was
/// wrong by 0.2; on a CPU without AVX2 it would be an illegal instruction).
/// optimize() offers the AVX2 half only to CPUs that have AVX2.
struct LibmvecTables {
  std::deque<std::string> names;  // what the descriptions' StringRefs point into
  std::vector<llvm::VecDesc> sse, avx2;
};
const LibmvecTables& libmvec_tables() {
  static const LibmvecTables tables = [] {
    LibmvecTables t;
    auto keep = [&t](std::string s) -> llvm::StringRef { return t.names.emplace_back(std::move(s)); };
    struct Fn {
      std::string name;
      bool binary, finite;
    };
    const Fn fns[] = {{"sin", false, false}, {"cos", false, false}, {"tan", false, false},
                      {"pow", true, true},   {"exp", false, true},  {"log", false, true}};
    for (const Fn& f : fns)
      for (bool single : {false, true})
        for (char isa : {'b', 'd'}) {
          const unsigned lanes = (isa == 'b' ? 2 : 4) * (single ? 2 : 1);
          const std::string suffix = single ? "f" : "", args = f.binary ? "vv" : "v";
          const std::string prefix = std::string("_ZGV") + isa + "N" + std::to_string(lanes) + args + "_";
          const llvm::StringRef abi = keep("_ZGV_LLVM_N" + std::to_string(lanes) + args);
          std::vector<llvm::VecDesc>& out = isa == 'b' ? t.sse : t.avx2;
          auto add = [&](const std::string& scalar, const std::string& vector) {
            out.push_back({keep(scalar), keep(vector), llvm::ElementCount::getFixed(lanes), false, abi});
          };
          add(f.name + suffix, prefix + f.name + suffix);
          add("llvm." + f.name + (single ? ".f32" : ".f64"), prefix + f.name + suffix);
          if (f.finite) add("__" + f.name + suffix + "_finite", prefix + "_" + "_" + f.name + suffix + "_finite");
        }
    return t;
  }();
  return tables;
}

/// glibc libmvec's AVX-512 entry points for the math functions codegen emits.
llvm::ArrayRef<llvm::VecDesc> avx512_libmvec() {
  static const llvm::VecDesc fns[] = {
      {"expf", "_ZGVeN16v_expf", llvm::ElementCount::getFixed(16), false, "_ZGV_LLVM_N16v"},
      {"llvm.exp.f32", "_ZGVeN16v_expf", llvm::ElementCount::getFixed(16), false, "_ZGV_LLVM_N16v"},
      {"exp", "_ZGVeN8v_exp", llvm::ElementCount::getFixed(8), false, "_ZGV_LLVM_N8v"},
      {"llvm.exp.f64", "_ZGVeN8v_exp", llvm::ElementCount::getFixed(8), false, "_ZGV_LLVM_N8v"},
      {"logf", "_ZGVeN16v_logf", llvm::ElementCount::getFixed(16), false, "_ZGV_LLVM_N16v"},
      {"llvm.log.f32", "_ZGVeN16v_logf", llvm::ElementCount::getFixed(16), false, "_ZGV_LLVM_N16v"},
      {"log", "_ZGVeN8v_log", llvm::ElementCount::getFixed(8), false, "_ZGV_LLVM_N8v"},
      {"llvm.log.f64", "_ZGVeN8v_log", llvm::ElementCount::getFixed(8), false, "_ZGV_LLVM_N8v"},
      {"tanhf", "_ZGVeN16v_tanhf", llvm::ElementCount::getFixed(16), false, "_ZGV_LLVM_N16v"},
      {"tanh", "_ZGVeN8v_tanh", llvm::ElementCount::getFixed(8), false, "_ZGV_LLVM_N8v"},
      {"erff", "_ZGVeN16v_erff", llvm::ElementCount::getFixed(16), false, "_ZGV_LLVM_N16v"},
      {"erf", "_ZGVeN8v_erf", llvm::ElementCount::getFixed(8), false, "_ZGV_LLVM_N8v"},
  };
  return fns;
}
}  // namespace

void optimize(llvm::Module& m, llvm::TargetMachine* tm, int opt_level) {
  // Every function names the CPU and features it is optimized for, so the
  // module means the same wherever it is compiled: without them, the
  // `--emit=llvm` text compiled by llc without -mcpu passed the vector
  // arguments of the AVX-512 libmvec calls (`_ZGVeN16v_expf`) in the generic
  // ABI's registers, and mha gave wrong results.
  if (tm)
    for (llvm::Function& f : m)
      if (!f.isDeclaration()) {
        f.addFnAttr("target-cpu", tm->getTargetCPU());
        f.addFnAttr("target-features", tm->getTargetFeatureString());
      }
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  // glibc's vector math library (libmvec) gives the loop vectorizer vector
  // exp, log, sin, ... (the .so links -lmvec; the JIT loads libmvec.so.1).
  llvm::Triple triple(m.getTargetTriple());
  llvm::TargetLibraryInfoImpl tlii(triple);
  if (uses_libmvec(triple)) {
    auto has = [&](const char* feature) { return tm && tm->getMCSubtargetInfo()->checkFeatures(feature); };
    tlii.addVectorizableFunctions(libmvec_tables().sse);
    if (has("+avx2")) tlii.addVectorizableFunctions(libmvec_tables().avx2);
    // LLVM's libmvec table stops at 256-bit vectors; glibc also has the
    // AVX-512 variants (`e` ISA), one call per 16 floats or 8 doubles.
    // (The CPU's features, not only the explicit feature string: `--cpu=x86-64-v4`
    // names none.)
    if (has("+avx512f")) tlii.addVectorizableFunctions(avx512_libmvec());
  }
  fam.registerPass([&] { return llvm::TargetLibraryAnalysis(tlii); });
  llvm::PassBuilder pb(tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  if (opt_level <= 0) {
    pb.buildO0DefaultPipeline(llvm::OptimizationLevel::O0).run(m, mam);
    return;
  }
  const llvm::OptimizationLevel level = opt_level == 1   ? llvm::OptimizationLevel::O1
                                        : opt_level == 2 ? llvm::OptimizationLevel::O2
                                                         : llvm::OptimizationLevel::O3;
  pb.buildPerModuleDefaultPipeline(level).run(m, mam);
}

bool uses_libmvec(const llvm::Triple& triple) {
  return triple.getArch() == llvm::Triple::x86_64 && triple.isOSLinux() && triple.isGNUEnvironment();
}

std::string host_features() {
  std::string out;
  for (const auto& f : llvm::sys::getHostCPUFeatures()) {
    if (!out.empty()) out += ',';
    out += (f.second ? "+" : "-") + f.first().str();
  }
  return out;
}

}  // namespace dccc::backend
