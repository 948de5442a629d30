// dccc: the DCC coupling compiler driver.
//
// The pipeline, one stage per line (each stage hands the next a finished
// data structure; --emit= stops after any of them):
//   read + validate  -> SourceFile
//   parse            -> ast::Program          (--emit=ast)
//   check            -> CheckedProgram        (--emit=typed, --check)
//   lower            -> ir::Module            (--emit=vloop)
//   run              -> the reference interpreter executes `fn main()` (`dccc run`)
// Later stages (schedules, storage lowering, LLVM and CUDA backends) extend this list.
#include <pthread.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "backend/llvm/jit.h"
#include "frontend/parser.h"
#include "ir/expand_prints.h"
#include "ir/interpreter.h"
#include "ir/lower.h"
#include "ir/printer.h"
#include "ir/storage_lowering.h"
#include "typecheck/checker.h"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitErrors = 1;
constexpr int kExitUsage = 2;
constexpr int kExitRuntime = 3;
constexpr int kExitInternal = 70;

const char* kUsage = R"(usage: dccc [options] FILE.toy
       dccc run [options] FILE.toy

Checks a DCC program (.toy) whose ragged tensors are `coupling` types.
`dccc run` JIT-compiles the program for this CPU (LLVM ORC) and calls its
`fn main()`; what `print` shows is documented in docs/language.md.

options:
  --check            check the program; exit 0 when it is valid (the default)
  --emit=ast         print the syntax tree
  --emit=typed       print each statement with its index variables, their
                     ranges and which are reduced
  --emit=vloop       print the vloop IR after storage lowering (flat offsets,
                     aux arrays and the prelude that fills them)
  --interpret        dccc run: execute with the reference interpreter of the
                     storage-lowered vloop IR instead of the JIT
  --no-storage-lowering
                     stop before storage lowering (--emit=vloop shows the
                     multi-index IR; run uses the layout-free interpreter)
  --summary          print what the checker inferred, one block per function
  -DNAME=VALUE       fix size parameter NAME to an integer, like `const`
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
  bool summary = false;
  int max_errors = 100;
  dccc::CheckOptions check;
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
      if (o.emit != "ast" && o.emit != "typed" && o.emit != "vloop")
        return usage_error("unknown --emit stage `" + o.emit + "`; expected ast, typed or vloop");
    } else if (a == "--interpret") {
      o.interpret = true;
    } else if (a == "--no-storage-lowering") {
      o.storage = false;
      o.interpret = true;
    } else if (a == "--summary") {
      o.summary = true;
    } else if (a.rfind("--max-errors=", 0) == 0) {
      try {
        o.max_errors = std::stoi(a.substr(13));
      } catch (...) {
        return usage_error("--max-errors takes a number");
      }
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
  if (o.file.empty()) return usage_error("no input file");
  return kExitOk;
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

  auto program = dccc::parse(file, diags);
  if (program && o.emit == "ast") {
    diags.print(std::cerr);
    std::cout << dccc::ast::dump(*program);
    return diags.has_errors() ? kExitErrors : kExitOk;
  }
  std::unique_ptr<dccc::CheckedProgram> checked;
  if (program) checked = dccc::check(*program, diags, o.check);
  diags.print(std::cerr);
  if (diags.has_errors() || !checked) {
    std::cerr << diags.error_count() << " error(s) generated.\n";
    return kExitErrors;
  }
  if (o.emit == "typed") std::cout << dccc::dump_typed(*checked);
  if (o.summary) std::cout << dccc::summarize(*checked);
  if (o.emit != "vloop" && !o.run) return kExitOk;

  auto module = dccc::ir::lower(*checked, diags);
  if (!module) {
    diags.print(std::cerr);
    std::cerr << diags.error_count() << " error(s) generated.\n";
    return kExitErrors;
  }
  for (auto& f : module->funcs) dccc::ir::expand_prints(f);
  if (o.storage) {
    for (auto& f : module->funcs)
      if (!dccc::ir::lower_storage(f, diags)) {
        diags.print(std::cerr);
        std::cerr << diags.error_count() << " error(s) generated.\n";
        return kExitErrors;
      }
  }
  if (o.emit == "vloop") std::cout << dccc::ir::print(*module);
  if (!o.run) return kExitOk;
  const dccc::ir::Func* main_fn = nullptr;
  for (const auto& f : module->funcs)
    if (f.name == "main") main_fn = &f;
  if (!main_fn) {
    std::cerr << "dccc: error: `" << o.file << "` has no `fn main()` to run\n";
    return kExitErrors;
  }
  if (!o.interpret) {
    std::cout.flush();
    std::string error;
    int status = dccc::backend::jit_run_main(*module, error);
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

struct ThreadArgs {
  const Options* options;
  int result = kExitInternal;
};

void* run_thread(void* p) {
  auto* args = static_cast<ThreadArgs*>(p);
  try {
    args->result = run(*args->options);
  } catch (const std::exception& e) {
    std::cerr << "dccc: internal error: " << e.what() << "\n";
    args->result = kExitInternal;
  } catch (...) {
    std::cerr << "dccc: internal error: unknown exception\n";
    args->result = kExitInternal;
  }
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  int rc = parse_args(argc, argv, o);
  if (rc == -1) return kExitOk;
  if (rc != kExitOk) return rc;
  // The front end recurses over the tree; give it a large stack so that the
  // parser's nesting limit, not the default thread stack, bounds recursion.
  ThreadArgs args{&o};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256u << 20);
  pthread_t thread;
  if (pthread_create(&thread, &attr, run_thread, &args) != 0) {
    run_thread(&args);
  } else {
    pthread_join(thread, nullptr);
  }
  pthread_attr_destroy(&attr);
  std::cout.flush();
  return args.result;
}
