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

#include <sys/wait.h>
#include <unistd.h>

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
#include "frontend/imports.h"
#include "frontend/parser.h"
#include "ir/interpreter.h"
#include "ir/ir_parser.h"
#include "ir/lower.h"
#include "ir/pipeline.h"
#include "ir/printer.h"
#include "ir/schedule.h"
#include "support/large_stack.h"
#include "tools/repl.h"
#include "typecheck/checker.h"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitErrors = 1;
constexpr int kExitUsage = 2;
constexpr int kExitRuntime = 3;
constexpr int kExitInternal = 70;

const char* kUsage = R"(usage: dccc [options] FILE.toy
       dccc FILE.toy -o PROG.so
       dccc run [options] FILE.toy
       dccc repl [options]
       dccc [--check | --emit=vloop | --emit=cuda | run] [options] FILE.vloop

Checks a DCC program (.toy) whose ragged tensors are `coupling` types.
`dccc run` JIT-compiles the program for this CPU (LLVM ORC) and calls its
`fn main()`; what `print` shows is documented in docs/language.md.
`dccc repl` evaluates declarations and expressions typed one at a time
(`dccc repl --help`; docs/repl.md).

A FILE.vloop holds vloop IR as --emit=vloop prints it (docs/vloop.md), for
example a reproducer edited by hand: dccc parses it instead of a program,
runs the IR passes it has not been through (storage lowering, unless it has
a `prelude` or --no-storage-lowering is given) and goes on as for a .toy
file. IR text has not been through the checker's proofs, so `dccc run`
executes it with the reference interpreter, which checks every access.

options:
  --check            check the program; exit 0 when it is valid (the default)
  --emit=ast         print the syntax tree
  --emit=typed       print each statement with its index variables, their
                     ranges and which are reduced
  --emit=vloop       print the vloop IR after storage lowering (flat offsets,
                     aux arrays and the prelude that fills them; loops run on
                     the thread pool print as `parallel`; for --target, which
                     changes it: the CPU's has its loops reordered)
  --emit=cuda        print the CUDA C++ that --target=cuda compiles
  --emit=llvm        print the LLVM IR after the O3 pipeline for this CPU
                     (what `run` and `-o` compile for the CPU)
  --emit=metadata    print the JSON description of the library that -o
                     writes for --target (functions, structs, fields, sizes;
                     docs/abi.md#metadata), also compiled into the library
                     as dccc_module_info()
  --interpret        dccc run: execute with the reference interpreter of the
                     storage-lowered vloop IR instead of the JIT
  --jit              dccc run FILE.vloop: JIT-compile the IR instead of
                     interpreting it (accesses are then not checked)
  --no-storage-lowering
                     stop before storage lowering (--emit=vloop shows the
                     multi-index IR; run uses the layout-free interpreter)
  -o PROG.so         compile into a shared library for the target, and write
                     PROG.h (the C ABI) and dccrt.h (the runtime's) beside it;
                     the C compiler used to link is $CC, default `cc`, with
                     extra flags from $DCCC_CFLAGS; $DCCC_RUNTIME_LIB and
                     $DCCC_RUNTIME_HEADER replace the libdccrt.a and dccrt.h
                     of the build (a driver moved to another machine)
  --target=cpu|cuda  what -o compiles for (default: cpu, LLVM for this CPU);
                     cuda: CUDA kernels built by nvcc ($DCCC_NVCC, else
                     /usr/local/cuda/bin/nvcc, else nvcc on PATH) for sm_80
                     and sm_90 plus PTX; the structs then hold device pointers
  --verify-each      run the IR verifier after every pass (always on in debug
                     builds); a violation is an internal error
  --list-passes      print the IR passes in order for --target, one line each
  --print-after=PASS print the vloop IR to stderr after PASS (may repeat)
  --print-after-all  print the vloop IR to stderr after every pass
  --passes=A,B,...   run exactly these IR passes, in this order, instead of
                     the target's list (for pass tests and bisecting)
  --summary          print what the checker inferred, one block per function
  --schedule=TEXT    schedule blocks as in the source (`schedule f { pad_loop(y.i, 4); }`,
                     docs/schedules.md), applied after the file's own; may repeat
  --explain          print, per assignment, the schedule choices made and why
                     (a directive, or the default)
  --no-default-schedule
                     no default padding (CPU target; docs/schedules.md#defaults)
  --default-pad=K    the CPU target's default padding factor (default 4; 0 or 1: none)
  --online-reductions
                     derive the one-pass (flash-attention) form of dependent
                     reductions: no O(s^2) scores in memory (docs/vloop.md;
                     off by default: not yet faster on the CPU)
  --online-block=N   keys a step of the fused loop (default: 32 on the CPU,
                     with query rows in tiles of 4; 1 on CUDA; 1: one key a step)
  --no-simplify      skip the Z3-backed index simplification, bound-check
                     elimination and load hoisting after storage lowering
                     (ir/simplify_indices.h)
  --explain-simplify print, per function, what that pass changed and why
  -DNAME=VALUE       fix size parameter NAME to an integer, like `const`
  -I DIR, -IDIR      look for imported files in DIR (after the importing
                     file's folder, before the standard library)
  --max-errors=N     stop listing errors after N (default 100)
  --help             show this help
  --version          show the version

exit status: 0 valid, 1 the program has errors, 2 bad usage, 3 run-time error
(dccc run), 70 internal error
)";

struct Options {
  std::string file;
  std::string emit;  // "", "ast", "typed", "vloop"
  bool run = false;
  bool storage = true;  // run storage-lowered IR (off: the layout-free oracle)
  bool interpret = false;  // run with the reference interpreter instead of the JIT
  bool jit = false;        // --jit: JIT-compile a .vloop file
  bool from_vloop = false;  // FILE.vloop: IR text
  std::string output;      // -o PROG.so
  dccc::ir::Target target = dccc::ir::Target::Cpu;  // --target=cpu|cuda
  bool list_passes = false;                         // --list-passes
  std::vector<std::string> print_after;             // --print-after=PASS
  bool print_after_all = false;
  std::optional<std::vector<std::string>> passes;   // --passes=a,b,c
#ifdef NDEBUG
  bool verify_each = false;  // run the IR verifier after every pass
#else
  bool verify_each = true;
#endif
  bool summary = false;
  std::vector<std::string> schedules;  // --schedule=TEXT
  bool explain = false;
  bool simplify = true;          // --no-simplify turns ir/simplify_indices off
  bool online_reductions = false;  // --online-reductions
  int64_t online_block = 0;        // --online-block=N (0: the target's)
  bool explain_simplify = false;
  int64_t default_pad = dccc::ir::kCpuDefaultPad;  // 0: --no-default-schedule
  bool default_pad_given = false;
  int max_errors = 100;
  dccc::CheckOptions check;
  dccc::ImportOptions imports;
};

int usage_error(const std::string& msg) {
  std::cerr << "dccc: error: " << msg << "\n" << "run `dccc --help` for usage\n";
  return kExitUsage;
}

int parse_args(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      return -1;
    } else if (a == "--version") {
      std::cout << "dccc " << DCCC_VERSION << "\n";
      return -1;
    } else if (a == "--check") {
      o.emit.clear();
    } else if (a.rfind("--emit=", 0) == 0) {
      o.emit = a.substr(7);
      if (o.emit != "ast" && o.emit != "typed" && o.emit != "vloop" && o.emit != "cuda" &&
          o.emit != "llvm" && o.emit != "metadata")
        return usage_error("unknown --emit stage `" + o.emit + "`; expected ast, typed, vloop, cuda, llvm or metadata");
    } else if (a.rfind("--target=", 0) == 0) {
      auto t = dccc::ir::parse_target(a.substr(9));
      if (!t) return usage_error("unknown --target `" + a.substr(9) + "`; expected cpu or cuda");
      o.target = *t;
    } else if (a == "--list-passes") {
      o.list_passes = true;
    } else if (a == "--print-after-all") {
      o.print_after_all = true;
    } else if (a.rfind("--print-after=", 0) == 0) {
      o.print_after.push_back(a.substr(14));
    } else if (a.rfind("--passes=", 0) == 0) {
      std::vector<std::string> names;
      std::stringstream list(a.substr(9));
      for (std::string n; std::getline(list, n, ',');)
        if (!n.empty()) names.push_back(n);
      o.passes = names;
    } else if (a == "--verify-each") {
      o.verify_each = true;
    } else if (a == "--interpret") {
      o.interpret = true;
    } else if (a == "--jit") {
      o.jit = true;
    } else if (a == "--no-storage-lowering") {
      o.storage = false;
      o.interpret = true;
    } else if (a == "-o") {
      if (i + 1 >= argc) return usage_error("-o needs a file name");
      o.output = argv[++i];
    } else if (a == "--summary") {
      o.summary = true;
    } else if (a.rfind("--schedule=", 0) == 0) {
      o.schedules.push_back(a.substr(11));
    } else if (a == "--explain") {
      o.explain = true;
    } else if (a == "--no-simplify") {
      o.simplify = false;
    } else if (a == "--online-reductions") {
      o.online_reductions = true;
    } else if (a.rfind("--online-block=", 0) == 0) {
      try {
        o.online_block = std::stoll(a.substr(15));
      } catch (...) {
        o.online_block = -1;
      }
      if (o.online_block < 1 || o.online_block > 1024)
        return usage_error("--online-block needs a number of keys from 1 to 1024");
    } else if (a == "--explain-simplify") {
      o.explain_simplify = true;
    } else if (a == "--no-default-schedule" || a == "--default-pad=0") {
      o.default_pad = 0;
      o.default_pad_given = true;
    } else if (a.rfind("--default-pad=", 0) == 0) {
      try {
        size_t used = 0;
        std::string v = a.substr(14);
        long long k = std::stoll(v, &used);
        if (used != v.size() || k < 0 || k > 1024) throw std::invalid_argument("range");
        o.default_pad = k;
        o.default_pad_given = true;
      } catch (...) {
        return usage_error("--default-pad takes an integer from 0 to 1024");
      }
    } else if (a.rfind("--max-errors=", 0) == 0) {
      try {
        o.max_errors = std::stoi(a.substr(13));
      } catch (...) {
        return usage_error("--max-errors takes a number");
      }
    } else if (a == "-I") {
      if (i + 1 >= argc) return usage_error("-I takes a directory");
      o.imports.include_dirs.push_back(argv[++i]);
    } else if (a.rfind("-I", 0) == 0) {
      o.imports.include_dirs.push_back(a.substr(2));
    } else if (a.rfind("-D", 0) == 0) {
      std::string def = a.substr(2);
      size_t eq = def.find('=');
      if (eq == std::string::npos || eq == 0) return usage_error("-D takes NAME=VALUE");
      try {
        size_t used = 0;
        long long v = std::stoll(def.substr(eq + 1), &used);
        if (used != def.size() - eq - 1) throw std::invalid_argument("trailing");
        o.check.defines[def.substr(0, eq)] = v;
      } catch (...) {
        return usage_error("-D" + def + ": VALUE must be an integer");
      }
    } else if (a == "run" && i == 1) {
      o.run = true;
    } else if (!a.empty() && a[0] == '-') {
      return usage_error("unknown option `" + a + "`");
    } else if (o.file.empty()) {
      o.file = a;
    } else {
      return usage_error("more than one input file");
    }
  }
  {
    dccc::ir::PipelineOptions check_names;
    check_names.passes = o.passes;
    check_names.print_after = o.print_after;
    if (auto bad = dccc::ir::unknown_pass_name(check_names))
      return usage_error("unknown pass `" + *bad + "`; `dccc --list-passes` lists them");
  }
  if (o.list_passes) return kExitOk;
  if (o.file.empty()) return usage_error("no input file");
  o.from_vloop = std::filesystem::path(o.file).extension() == ".vloop";
  if (o.jit && (!o.run || !o.from_vloop)) return usage_error("--jit applies to `dccc run FILE.vloop`");
  if (o.jit && o.interpret) return usage_error("--jit contradicts --interpret and --no-storage-lowering");
  if (o.from_vloop) {
    if (o.emit == "ast" || o.emit == "typed" || o.summary)
      return usage_error("--emit=ast, --emit=typed and --summary need a .toy program, not IR text");
    if (!o.output.empty()) return usage_error("-o needs a .toy program: IR text has not been checked");
    if (!o.check.defines.empty()) return usage_error("-D applies to .toy programs, not IR text");
    if (!o.imports.include_dirs.empty()) return usage_error("-I applies to .toy programs, not IR text");
    if (!o.schedules.empty() || o.explain)
      return usage_error("--schedule and --explain need a .toy program: IR text names no assignments");
    if (!o.jit) o.interpret = true;
  }
  return kExitOk;
}

int write_library(const Options& o, const dccc::ir::Module& full, dccc::DiagnosticEngine& diags);

/// libdccrt and its header as built with this driver, or $DCCC_RUNTIME_LIB
/// and $DCCC_RUNTIME_HEADER (a driver copied to another machine, as
/// scripts/gpu_bundle.sh does).
std::string runtime_lib() {
  const char* e = std::getenv("DCCC_RUNTIME_LIB");
  return e && *e ? e : DCCC_RUNTIME_LIB;
}
std::string runtime_header() {
  const char* e = std::getenv("DCCC_RUNTIME_HEADER");
  return e && *e ? e : DCCC_RUNTIME_HEADER;
}

/// The functions a library holds: every one but `main`.
dccc::ir::Module library_module(const dccc::ir::Module& full) {
  dccc::ir::Module m;
  // The compiled file's own functions: an imported one is named `stem.name`
  // (frontend/imports.h) and was inlined into its callers.
  for (const auto& f : full.funcs)
    if (f.name != "main" && f.name.find('.') == std::string::npos) m.funcs.push_back(f);
  return m;
}

/// The CUDA architectures link_cuda builds for.
const char* cuda_arch() {
  const char* arch = std::getenv("DCCC_CUDA_ARCH");  // e.g. "-arch=sm_90" for faster builds
  return arch && *arch ? arch
                       : "-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 "
                         "-gencode arch=compute_90,code=compute_90";
}

/// Where the library's metadata says it came from.
dccc::backend::MetadataContext metadata_context(const Options& o) {
  dccc::backend::MetadataContext c;
  c.source = std::filesystem::path(o.file).filename().string();
  c.compiler = std::string("dccc ") + DCCC_VERSION;
  c.target = o.target;
  c.arch = o.target == dccc::ir::Target::Cuda ? cuda_arch() : dccc::backend::host_cpu_name();
  return c;
}

/// The pipeline's options from the command line. `--emit=cuda` prints the
/// CUDA target's code, so it runs the CUDA target's passes.
dccc::ir::PipelineOptions pipeline_options(const Options& o, const std::vector<dccc::ir::Schedule>& schedules) {
  dccc::ir::PipelineOptions p;
  p.target = o.emit == "cuda" ? dccc::ir::Target::Cuda : o.target;
  p.storage_lowering = o.storage;
  p.simplify = o.simplify;
  p.online_reductions = o.online_reductions;
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
      std::cerr << diags.error_count() << " error(s) generated.\n";
      return kExitErrors;
    }
    if (o.emit != "vloop" && o.emit != "cuda" && o.emit != "llvm" && o.emit != "metadata" && !o.run) return kExitOk;
  } else {
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
    std::cerr << diags.error_count() << " error(s) generated.\n";
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
    std::cerr << diags.error_count() + cli_errors << " error(s) generated.\n";
    return kExitErrors;
  }
  if (o.emit != "vloop" && o.emit != "cuda" && o.emit != "llvm" && o.emit != "metadata" && !o.run &&
      o.output.empty() && !o.explain &&
      schedules.empty())
    return kExitOk;

  module = dccc::ir::lower(*checked, diags);
  if (!module) {
    diags.print(std::cerr);
    std::cerr << diags.error_count() << " error(s) generated.\n";
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
    std::cerr << diags.error_count() << " error(s) generated.\n";
    return kExitErrors;
  }
  std::cout << result.explain;
  if (o.explain && o.target == dccc::ir::Target::Cuda)
    std::cout << "library calls (--target=cuda): each function copies its length arrays to the host, runs its "
                 "kernels on the current device's default stream and returns after they finish, so a call "
                 "synchronises with the device (docs/abi.md, \"The CUDA target\"; docs/python.md, \"CUDA\")\n";
  if (o.explain_simplify)
    for (const auto& [name, report] : result.simplified) {
      std::cout << "fn " << name << ": " << report.indices << " index rewrite(s), " << report.checks
                << " bound check(s) removed, " << report.hoisted << " load(s) hoisted (" << report.queries
                << " Z3 queries)\n";
      for (const auto& n : report.notes) std::cout << "  " << n << "\n";
    }
  if (o.emit == "vloop") std::cout << dccc::ir::print(*module);
  if (o.emit == "cuda") {
    try {
      std::cout << dccc::backend::emit_cuda(*module);
    } catch (const dccc::backend::BackendUnsupported& e) {
      std::cerr << diags.render(diags.report(dccc::DiagKind::Unsupported, e.at, e.what()));
      std::cerr << diags.error_count() << " error(s) generated.\n";
      return kExitErrors;
    }
    if (o.output.empty()) return kExitOk;
  }
  if (o.emit == "llvm") {
    if (!o.storage) return usage_error("--emit=llvm needs storage lowering");
    std::string error;
    auto text = dccc::backend::llvm_ir_text(*module, error);
    if (!text) {
      std::cerr << "dccc: internal error: code generation failed: " << error << "\n";
      return kExitInternal;
    }
    std::cout << *text;
    if (o.output.empty() && !o.run) return kExitOk;
  }
  if (o.emit == "metadata") {
    dccc::ir::Module m = library_module(*module);
    try {
      dccc::backend::assign_c_names(m, o.target);
    } catch (const dccc::backend::BackendUnsupported& e) {
      std::cerr << diags.render(diags.report(dccc::DiagKind::Unsupported, e.at, e.what()));
      std::cerr << diags.error_count() << " error(s) generated.\n";
      return kExitErrors;
    }
    std::cout << dccc::backend::emit_metadata(m, metadata_context(o));
  }
  if (!o.output.empty()) return write_library(o, *module, diags);
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

/// Runs a command line; returns its exit status (or -1) and captures output.
int run_command(const std::string& cmd, std::string& output) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) output.append(buf, n);
  int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// nvcc for --target=cuda: $DCCC_NVCC, the toolkit in /usr/local/cuda, or PATH.
std::string find_nvcc() {
  if (const char* e = std::getenv("DCCC_NVCC"); e && *e) return e;
  if (access("/usr/local/cuda/bin/nvcc", X_OK) == 0) return "/usr/local/cuda/bin/nvcc";
  std::string out;
  if (run_command("command -v nvcc", out) == 0 && !out.empty()) return out.substr(0, out.find('\n'));
  return "";
}

/// --target=cuda: the wrapper compiled by the C compiler, the kernels by
/// nvcc (sm_80 and sm_90 machine code plus compute_90 PTX), linked into one
/// shared library with libdccrt and the static CUDA runtime.
int link_cuda(const Options& o, const std::filesystem::path& out, const std::filesystem::path& header,
              const std::filesystem::path& tmp, const char* cc, const char* cflags) {
  std::string nvcc = find_nvcc();
  if (nvcc.empty()) {
    std::cerr << "dccc: error: --target=cuda needs nvcc: set DCCC_NVCC or install the CUDA toolkit in /usr/local/cuda\n";
    return kExitErrors;
  }
  std::string dir = shell_quote(out.parent_path().string());
  std::string log;
  std::string cmd = std::string(cc && *cc ? cc : "cc") + " -std=c11 -O2 -fPIC -c -Wall -Wno-unused-label " +
                    (cflags ? cflags : "") + " -I" + dir + " -o " + shell_quote((tmp / "abi.o").string()) + " " +
                    shell_quote((tmp / "abi.c").string());
  if (run_command(cmd, log) != 0) {
    std::cerr << "dccc: error: compiling the C wrapper failed:\n" << cmd << "\n" << log;
    return kExitErrors;
  }
  std::string gencode = cuda_arch();
  cmd = shell_quote(nvcc) + " -O3 -std=c++17 -shared -Xcompiler -fPIC " + gencode + " -I" + dir + " -o " +
        shell_quote(out.string()) + " " + shell_quote((tmp / "kernels.cu").string()) + " " +
        shell_quote((tmp / "abi.o").string()) + " " + shell_quote(runtime_lib()) + " -lpthread";
  log.clear();
  if (run_command(cmd, log) != 0) {
    std::cerr << "dccc: error: nvcc failed on the generated CUDA code:\n" << cmd << "\n" << log;
    return kExitErrors;
  }
  std::cerr << "dccc: wrote " << out.string() << " and " << header.string() << " (target: cuda, sm_80 sm_90)\n";
  (void)o;
  return kExitOk;
}

/// `-o prog.so`: the kernels as an object file, the C wrapper and header,
/// linked with libdccrt into one shared library.
int write_library(const Options& o, const dccc::ir::Module& full, dccc::DiagnosticEngine& diags) {
  namespace fs = std::filesystem;
  fs::path out = fs::absolute(o.output);
  fs::path header = out;
  header.replace_extension(".h");
  dccc::ir::Module m = library_module(full);
  if (m.funcs.empty()) {
    std::cerr << "dccc: error: `" << o.file << "` has no function to put in a library (only `main`)\n";
    return kExitErrors;
  }
  std::error_code ec;
  fs::path tmp = fs::temp_directory_path(ec) / ("dccc-" + std::to_string(getpid()));
  fs::create_directories(tmp, ec);
  if (ec) {
    std::cerr << "dccc: error: cannot create a temporary directory: " << ec.message() << "\n";
    return kExitErrors;
  }
  struct Cleanup {
    fs::path p;
    ~Cleanup() {
      std::error_code e;
      fs::remove_all(p, e);
    }
  } cleanup{tmp};
  std::string error;
  fs::path obj = tmp / "kernels.o";
  const bool cuda = o.target == dccc::ir::Target::Cuda;
  try {
    // Valid, distinct C names for what the host sees, before any back end
    // prints one.
    dccc::backend::assign_c_names(m, o.target);
    if (cuda) {
      std::ofstream(tmp / "kernels.cu") << dccc::backend::emit_cuda(m) << dccc::backend::emit_cuda_prelude(m);
    } else if (!dccc::backend::emit_object(m, obj.string(), error)) {
      std::cerr << "dccc: internal error: code generation failed: " << error << "\n";
      return kExitInternal;
    }
    std::string guard = "DCCC_";
    for (char c : header.stem().string()) guard += std::isalnum(static_cast<unsigned char>(c)) ? std::toupper(c) : '_';
    guard += "_H";
    std::ofstream(header) << dccc::backend::emit_header(m, fs::path(o.file).filename().string(), guard);
    std::ofstream(tmp / "abi.c") << dccc::backend::emit_wrapper(m, header.filename().string(), o.target)
                                 << dccc::backend::emit_metadata_symbol(
                                        dccc::backend::emit_metadata(m, metadata_context(o)));
  } catch (const dccc::backend::BackendUnsupported& e) {
    std::cerr << diags.render(diags.report(dccc::DiagKind::Unsupported, e.at, e.what()));
    std::cerr << diags.error_count() << " error(s) generated.\n";
    return kExitErrors;
  }
  fs::copy_file(runtime_header(), out.parent_path() / "dccrt.h", fs::copy_options::overwrite_existing, ec);
  if (ec) {
    std::cerr << "dccc: error: cannot write `" << (out.parent_path() / "dccrt.h").string() << "`: " << ec.message() << "\n";
    return kExitErrors;
  }
  const char* cc = std::getenv("CC");
  const char* cflags = std::getenv("DCCC_CFLAGS");  // e.g. sanitizer flags matching libdccrt's build
  if (cuda) return link_cuda(o, out, header, tmp, cc, cflags);
  std::string cmd = std::string(cc && *cc ? cc : "cc") + " -std=c11 -O2 -fPIC -shared -Wall -Wno-unused-label " +
                    (cflags ? cflags : "") +
                    " -I" + shell_quote(out.parent_path().string()) + " -o " + shell_quote(out.string()) + " " +
                    shell_quote((tmp / "abi.c").string()) + " " + shell_quote(obj.string()) + " " +
                    shell_quote(runtime_lib()) + " " + dccc::backend::host_link_flags() + " -lstdc++ -lm -lpthread";
  std::string log;
  int rc = run_command(cmd, log);
  if (rc != 0) {
    std::cerr << "dccc: error: linking `" << out.string() << "` failed:\n" << cmd << "\n" << log;
    return kExitErrors;
  }
  std::cerr << "dccc: wrote " << out.string() << " and " << header.string() << " (target: host CPU, LLVM)\n";
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
  Options o;
  int rc = parse_args(argc, argv, o);
  if (rc == -1) return kExitOk;
  if (rc != kExitOk) return rc;
  if (o.list_passes) {
    for (const auto& p : dccc::ir::passes_for(pipeline_options(o, {})))
      std::cout << "  " << p.name << std::string(p.name.size() < 22 ? 22 - p.name.size() : 1, ' ') << p.summary << "\n";
    return kExitOk;
  }
  int result = dccc::run_on_large_stack([&] { return run_guarded(o); });
  std::cout.flush();
  return result;
}
