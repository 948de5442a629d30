// dccc: the DCC coupling compiler driver.
//
// The pipeline, one stage per line (each stage hands the next a finished
// data structure; --emit= stops after any of them):
//   read + validate  -> SourceFile
//   parse            -> ast::Program          (--emit=ast)
//   check            -> CheckedProgram        (--emit=typed, --check)
//   lower            -> ir::Module
//   IR passes        -> the list in ir/pipeline.cpp, the one place that says
//                       which passes run for which target (`--list-passes`;
//                       --print-after, --passes, --verify-each)
//                                              (--emit=vloop)
//   LLVM codegen     -> O3 for the host CPU (--emit=llvm); the JIT runs
//                       `fn main()` (`dccc run`), or
//   CUDA codegen     -> the CUDA C++ of --target=cuda (--emit=cuda), or
//   AOT + C ABI      -> prog.so and prog.h (`dccc prog.toy -o prog.so`)
// A FILE.vloop is IR text as --emit=vloop prints it: it is parsed
// (ir/ir_parser.h) instead of the first four stages, and the IR passes it
// has not been through run on it.

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "backend/abi/c_abi.h"
#include "backend/abi/metadata.h"
#include "backend/cuda/cuda_codegen.h"
#include "backend/llvm/aot.h"
#include "backend/llvm/jit.h"
#include "backend/llvm/llvm_text.h"
#include "frontend/docs.h"
#include "frontend/imports.h"
#include "frontend/parser.h"
#include "ir/interpreter.h"
#include "ir/ir_parser.h"
#include "ir/lower.h"
#include "ir/pipeline.h"
#include "ir/printer.h"
#include "ir/schedule.h"
#include "support/large_stack.h"
#include "support/diagnostic_format.h"
#include "tools/driver_options.h"
#include "tools/link_library.h"
#include "tools/repl.h"
#include "tools/runtime_paths.h"
#include "typecheck/checker.h"

namespace {

using dccc::tools::kExitErrors;
using dccc::tools::kExitInternal;
using dccc::tools::kExitOk;
using dccc::tools::kExitRuntime;
using dccc::tools::kExitUsage;
using dccc::tools::Options;
using dccc::tools::parse_args;
using dccc::tools::usage_error;

/// The summary line after errors (text diagnostics only: JSON and SARIF
/// readers get the diagnostics alone).
void errors_generated(int n) {
  if (dccc::diagnostic_style().format == dccc::DiagnosticFormat::Text) std::cerr << n << " error(s) generated.\n";
}

/// The CPU code's options: --cpu (empty: the caller's default), -O, -g.
dccc::backend::CpuTarget cpu_target(const Options& o, const std::string& default_cpu) {
  dccc::backend::CpuTarget t;
  t.cpu = o.cpu.empty() ? default_cpu : o.cpu;
  t.opt_level = o.opt_level;
  if (o.debug) t.debug_file = std::filesystem::absolute(o.file).lexically_normal().string();
  return t;
}

/// What -o writes and for which target (tools/link_library.h).
dccc::tools::LibraryOptions library_options(const Options& o) {
  dccc::tools::LibraryOptions lib;
  lib.source = o.file;
  lib.output = o.output;
  lib.target = o.target;
  lib.cpu = cpu_target(o, "");
  lib.cuda_archs = o.cuda_archs;
  lib.cuda = o.cuda;
  lib.cuda_opt_level = o.opt_level;
  lib.lineinfo = o.lineinfo;
  lib.shared_runtime = o.shared_runtime;
  return lib;
}

/// `-o`: the library, then the dependency file of -MD, which lists every
/// file the compilation read (`read`: the program's file and every file it
/// imports, frontend/imports.h), so a build system recompiles when any of
/// them changes (a --schedule is on the command line).
int write_library(const Options& o, const dccc::ir::Module& module, const std::vector<std::string>& read,
                  dccc::DiagnosticEngine& diags) {
  int rc = dccc::tools::write_library(library_options(o), module, diags);
  if (rc != kExitOk || !o.depfile) return rc;
  namespace fs = std::filesystem;
  fs::path out = fs::absolute(o.output), header = out;
  header.replace_extension(".h");
  fs::path dep = o.depfile_path.empty() ? fs::path(out).replace_extension(".d") : fs::path(o.depfile_path);
  std::vector<std::string> deps;
  for (const auto& f : read.empty() ? std::vector<std::string>{o.file} : read) {
    std::string path = fs::absolute(f).lexically_normal().string();
    if (std::find(deps.begin(), deps.end(), path) == deps.end()) deps.push_back(path);
  }
  return dccc::tools::write_depfile(dep.string(), {o.output, header.string()}, deps) ? kExitOk : kExitErrors;
}

/// The pipeline's options from the command line. `--emit=cuda` prints the
/// CUDA target's code, so it runs the CUDA target's passes.
dccc::ir::PipelineOptions pipeline_options(const Options& o, const std::vector<dccc::ir::Schedule>& schedules) {
  dccc::ir::PipelineOptions p;
  p.target = o.emit == "cuda" || o.emit == "kernel" ? dccc::ir::Target::Cuda : o.target;
  p.storage_lowering = o.storage;
  p.simplify = o.simplify;
  p.online_reductions = o.online_reductions;
  p.materialize = o.materialize;
  p.cuda_fp32_tensor_cores = o.cuda.fp32 != dccc::gpu::Fp32Math::Ieee;
  p.online_block = o.online_block;
  p.from_ir_text = o.from_vloop;
  p.default_pad = o.default_pad;
  if (o.default_pad_given)
    p.default_pad_reason = o.default_pad == 0 ? "--no-default-schedule" : "--default-pad=" + std::to_string(o.default_pad);
  p.schedules = schedules;
  p.explain = o.explain;
  p.verify_each = o.verify_each;
  p.print_after = o.print_after;
  p.print_after_all = o.print_after_all;
  p.passes = o.passes;
  return p;
}

int run(const Options& o) {
  std::ifstream in(o.file, std::ios::binary);
  if (!in) {
    std::cerr << "dccc: error: cannot read `" << o.file << "`: " << std::strerror(errno) << "\n";
    return kExitErrors;
  }
  std::stringstream buf;
  buf << in.rdbuf();
  dccc::SourceFile file(o.file, buf.str());
  dccc::DiagnosticEngine diags(&file);
  diags.set_error_limit(o.max_errors);

  std::optional<dccc::ir::Module> module;
  std::vector<dccc::ir::Schedule> schedules;
  std::vector<std::unique_ptr<dccc::SourceFile>> cli_files;  // --schedule texts
  // The files the program imports (diagnostics point into them until the
  // end); loaded.paths lists every file the compilation read.
  dccc::LoadedFiles loaded;
  int cli_errors = 0;
  if (o.from_vloop) {
    module = dccc::ir::parse_vloop(file, diags);
    diags.print(std::cerr);
    if (!module || diags.has_errors()) {
      errors_generated(diags.shown_error_count());
      return kExitErrors;
    }
    if (o.emit != "vloop" && o.emit != "cuda" && o.emit != "kernel" && o.emit != "llvm" && o.emit != "metadata" && !o.run)
      return kExitOk;
  } else {
  if (o.emit == "docs") {
    // The file's own declarations and doc comments (frontend/docs.h); the
    // file must check, imports included.
    auto merged = dccc::parse_with_imports(file, diags, o.imports, loaded);
    if (merged) dccc::check(*merged, diags, o.check);
    dccc::DiagnosticEngine own_diags(&file);
    auto own = merged && !diags.has_errors() ? dccc::parse(file, own_diags) : nullptr;
    diags.print(std::cerr);
    if (!own) {
      errors_generated(diags.shown_error_count());
      return kExitErrors;
    }
    std::string shown = o.docs_name.empty() ? o.file : o.docs_name;
    std::cout << dccc::emit_docs(file, *own, shown);
    return kExitOk;
  }
  auto program = dccc::parse_with_imports(file, diags, o.imports, loaded);
  if (program && o.emit == "ast") {
    diags.print(std::cerr);
    std::cout << dccc::ast::dump(*program);
    return diags.has_errors() ? kExitErrors : kExitOk;
  }
  std::unique_ptr<dccc::CheckedProgram> checked;
  if (program) checked = dccc::check(*program, diags, o.check);
  if (diags.has_errors() || !checked) {
    diags.print(std::cerr);
    errors_generated(diags.shown_error_count());
    return kExitErrors;
  }
  if (o.emit == "typed") std::cout << dccc::dump_typed(*checked);
  if (o.summary) std::cout << dccc::summarize(*checked);
  // Schedules: the file's blocks, then each --schedule text (its own
  // "file" for diagnostics), in that order.
  schedules = dccc::ir::schedules_from_ast(*program, &file, diags);
  for (size_t k = 0; k < o.schedules.size(); ++k) {
    auto& text = cli_files.emplace_back(std::make_unique<dccc::SourceFile>(
        o.schedules.size() == 1 ? "<--schedule>" : "<--schedule #" + std::to_string(k + 1) + ">", o.schedules[k]));
    dccc::DiagnosticEngine cli_diags(text.get());
    auto parsed = dccc::parse(*text, cli_diags);
    if (parsed && (!parsed->types.empty() || !parsed->consts.empty() || !parsed->fns.empty() || parsed->schedules.empty()))
      cli_diags.report(dccc::DiagKind::Schedule, dccc::SourceRange{}, "--schedule takes `schedule f { ... }` blocks only");
    if (parsed) {
      auto more = dccc::ir::schedules_from_ast(*parsed, text.get(), cli_diags);
      schedules.insert(schedules.end(), more.begin(), more.end());
    }
    cli_diags.print(std::cerr);
    cli_errors += cli_diags.error_count();
  }
  diags.print(std::cerr);
  if (cli_errors || diags.has_errors()) {
    errors_generated(diags.shown_error_count() + cli_errors);
    return kExitErrors;
  }
  if (o.emit != "vloop" && o.emit != "cuda" && o.emit != "kernel" && o.emit != "llvm" && o.emit != "metadata" && !o.run &&
      o.output.empty() && !o.explain &&
      schedules.empty())
    return kExitOk;

  module = dccc::ir::lower(*checked, diags);
  if (!module) {
    diags.print(std::cerr);
    errors_generated(diags.shown_error_count());
    return kExitErrors;
  }
  }
  // The IR passes: the one list in ir/pipeline.cpp.
  size_t reported = diags.diagnostics().size();
  auto result = dccc::ir::run_pipeline(*module, pipeline_options(o, schedules), diags);
  if (result.status == dccc::ir::PipelineResult::Status::Internal) {
    std::cerr << "dccc: internal error: " << result.internal_error << "\n";
    return kExitInternal;
  }
  if (!result.ok()) {
    // Only what the passes reported: earlier stages printed theirs.
    for (size_t k = reported; k < diags.diagnostics().size(); ++k) std::cerr << diags.render(diags.diagnostics()[k]);
    errors_generated(diags.shown_error_count());
    return kExitErrors;
  }
  std::cout << result.explain;
  if (o.explain && o.target == dccc::ir::Target::Cuda)
    std::cout << "library calls (--target=cuda): each function copies its length arrays to the host, runs its "
                 "kernels on the current device's default stream and returns after they finish, so a call "
                 "synchronises with the device (docs/abi.md, \"The CUDA target\"; docs/python.md, \"CUDA\"); "
                 "FN_on_stream takes the length arrays on the host and a stream, and does not wait (a CUDA graph "
                 "can capture it: docs/abi.md, \"Without waiting: f_on_stream\")\n";
  if (o.explain && o.target == dccc::ir::Target::Cuda) {
    bool lowered = true;
    for (const auto& f : module->funcs) lowered = lowered && (f.name == "main" || f.storage_lowered);
    try {
      if (lowered) std::cout << dccc::backend::explain_kernels(*module, o.cuda);
    } catch (const dccc::backend::BackendUnsupported&) {
      // Reported where the CUDA source is written (-o, --emit=cuda).
    }
  }
  if (o.explain_simplify)
    for (const auto& [name, report] : result.simplified) {
      std::cout << "fn " << name << ": " << report.indices << " index rewrite(s), " << report.checks
                << " bound check(s) removed, " << report.hoisted << " load(s) hoisted (" << report.queries
                << " Z3 queries)\n";
      for (const auto& n : report.notes) std::cout << "  " << n << "\n";
    }
  if (o.emit == "vloop") std::cout << dccc::ir::print(*module);
  if (o.emit == "kernel") {
    try {
      std::cout << dccc::backend::emit_kernel_ir(*module, o.cuda);
    } catch (const dccc::backend::BackendUnsupported& e) {
      std::cerr << diags.render(diags.report(dccc::DiagKind::Unsupported, e.at, e.what()));
      errors_generated(diags.shown_error_count());
      return kExitErrors;
    }
    return kExitOk;
  }
  if (o.emit == "cuda") {
    try {
      std::cout << dccc::backend::emit_cuda(*module, o.cuda);
    } catch (const dccc::backend::BackendUnsupported& e) {
      std::cerr << diags.render(diags.report(dccc::DiagKind::Unsupported, e.at, e.what()));
      errors_generated(diags.shown_error_count());
      return kExitErrors;
    }
    if (o.output.empty()) return kExitOk;
  }
  if (o.emit == "llvm") {
    if (!o.storage) return usage_error("--emit=llvm needs storage lowering");
    std::string error;
    auto text = dccc::backend::llvm_ir_text(*module, cpu_target(o, "native"), error);
    if (!text) {
      std::cerr << "dccc: internal error: code generation failed: " << error << "\n";
      return kExitInternal;
    }
    std::cout << *text;
    if (o.output.empty() && !o.run) return kExitOk;
  }
  if (o.emit == "metadata") {
    dccc::ir::Module m = dccc::tools::library_module(*module);
    try {
      dccc::backend::assign_c_names(m, dccc::tools::device_abi(o.target));
    } catch (const dccc::backend::BackendUnsupported& e) {
      std::cerr << diags.render(diags.report(dccc::DiagKind::Unsupported, e.at, e.what()));
      errors_generated(diags.shown_error_count());
      return kExitErrors;
    }
    std::cout << dccc::backend::emit_metadata(m, dccc::tools::metadata_context(library_options(o)));
  }
  if (!o.output.empty()) return write_library(o, *module, loaded.paths, diags);
  if (!o.run) return kExitOk;
  const dccc::ir::Func* main_fn = nullptr;
  for (const auto& f : module->funcs)
    if (f.name == "main") main_fn = &f;
  if (!main_fn) {
    std::cerr << "dccc: error: `" << o.file << "` has no `fn main()` to run\n";
    return kExitErrors;
  }
  if (!o.interpret) {
    if (o.from_vloop && (!main_fn->params.empty() || !main_fn->results.empty() || !dccc::ir::input_buffers(*main_fn).empty())) {
      std::cerr << "dccc: error: `main` in `" << o.file << "` takes parameters or returns a value; the JIT runs only a "
                   "`main` without either\n";
      return kExitErrors;
    }
    std::cout.flush();
    std::string error;
    int status = dccc::backend::jit_run_main(*module, error);
    if (status < 0 && o.from_vloop) {
      // Hand-written IR may hold what the code generator does not handle.
      std::cerr << "dccc: error: the LLVM backend cannot compile `" << o.file << "`: " << error << "\n";
      return kExitErrors;
    }
    if (status < 0) {
      std::cerr << "dccc: internal error: code generation failed: " << error << "\n";
      return kExitInternal;
    }
    if (status > 0) {
      std::cerr << "dccc: run-time error: " << error << "\n";
      return kExitRuntime;
    }
    return kExitOk;
  }
  try {
    dccc::ir::Interpreter interp(std::cout);
    interp.run(*main_fn, {}, {});
  } catch (const dccc::ir::InterpError& e) {
    std::cout.flush();
    std::cerr << "dccc: run-time error: " << e.what() << "\n";
    return kExitRuntime;
  }
  return kExitOk;
}

int run_guarded(const Options& o) {
  try {
    return run(o);
  } catch (const std::exception& e) {
    std::cerr << "dccc: internal error: " << e.what() << "\n";
  } catch (...) {
    std::cerr << "dccc: internal error: unknown exception\n";
  }
  return kExitInternal;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "repl") == 0) {
    std::vector<std::string> args(argv + 2, argv + argc);
    return dccc::run_on_large_stack([&] { return dccc::repl::main(args); });
  }
  {
    // --color=auto unless the command line says otherwise.
    dccc::DiagnosticStyle style;
    style.color = dccc::color_auto(2);
    dccc::set_diagnostic_style(style);
  }
  Options o;
  int rc = parse_args(argc, argv, o);
  if (rc == -1) return kExitOk;
  if (rc != kExitOk) return rc;
  if (o.print_runtime) {
    auto rt = dccc::tools::find_runtime();
    std::cout << "library: " << rt.library << "\nheader: " << rt.header << "\nshared: " << rt.shared_library << "\n"
              << "layout: " << (rt.installed ? "installed" : "build tree") << "\n";
    return kExitOk;
  }
  if (o.list_passes) {
    for (const auto& p : dccc::ir::passes_for(pipeline_options(o, {})))
      std::cout << "  " << p.name << std::string(p.name.size() < 22 ? 22 - p.name.size() : 1, ' ') << p.summary << "\n";
    return kExitOk;
  }
  int result = dccc::run_on_large_stack([&] { return run_guarded(o); });
  std::cout.flush();
  if (dccc::diagnostic_style().format == dccc::DiagnosticFormat::Sarif) std::cerr << dccc::sarif_log(DCCC_VERSION);
  return result;
}
