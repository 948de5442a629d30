// The dccc driver's command line: its usage text, the options it sets and
// their parser (tools/dccc.cpp runs them).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backend/cuda/cuda_codegen.h"
#include "frontend/imports.h"
#include "ir/pipeline.h"
#include "ir/schedule.h"
#include "typecheck/checker.h"

namespace dccc::tools {

struct Options {
  std::string file;
  std::string emit;  // "", "ast", "typed", "vloop", ..., "docs"
  std::string docs_name;  // --docs-name=: the heading --emit=docs gives the file
  bool run = false;
  bool storage = true;  // run storage-lowered IR (off: the layout-free oracle)
  bool interpret = false;  // run with the reference interpreter instead of the JIT
  bool jit = false;        // --jit: JIT-compile a .vloop file
  bool from_vloop = false;  // FILE.vloop: IR text
  std::string output;      // -o PROG.so
  ir::Target target = ir::Target::Cpu;  // --target=cpu|cuda
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
  bool materialize = false;        // --materialize
  int64_t online_block = 0;        // --online-block=N (0: the target's)
  bool explain_simplify = false;
  int64_t default_pad = ir::kCpuDefaultPad;  // 0: --no-default-schedule
  bool default_pad_given = false;
  int max_errors = 100;
  CheckOptions check;
  // Target and output flags (tools/link_library.h).
  std::string cpu;                     // --cpu (empty: the default of -o / --emit=llvm)
  std::vector<std::string> cuda_archs; // --cuda-arch
  int opt_level = 3;                   // -O
  bool debug = false;                  // -g
  bool lineinfo = false;               // -lineinfo
  bool depfile = false;                // -MD
  std::string depfile_path;            // -MF
  bool print_runtime = false;
  bool shared_runtime = false;         // --runtime=shared
  ImportOptions imports;
  backend::CudaOptions cuda;  // --fp32-math
};

/// Prints `dccc: error: MSG` and the --help hint; kExitUsage.
int usage_error(const std::string& msg);

/// Reads argv into `o`: kExitOk, a usage error's status (the message
/// printed), or -1 where --help or --version printed what they print.
int parse_args(int argc, char** argv, Options& o);

}  // namespace dccc::tools
