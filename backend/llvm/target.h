// The CPU a library is compiled for (`dccc --cpu=`), the optimization level
// (`-O0`..`-O3`) and whether to emit DWARF line tables (`-g`).
//
// The default CPU of `dccc -o` is portable, not the build machine's: a
// library built on one machine must run on another of the same
// architecture, so on x86-64 it is `x86-64-v2` (SSE4.2 and POPCNT, every
// x86-64 CPU since 2009), elsewhere LLVM's `generic`. `--cpu=native`
// compiles for this machine's CPU and features (AVX-512 where present), as
// `dccc run` always does.
#pragma once

#include <memory>
#include <string>

namespace llvm {
class TargetMachine;
}  // namespace llvm

namespace dccc::backend {

struct CpuTarget {
  /// "native", or an LLVM CPU name for this architecture (`x86-64-v3`,
  /// `skylake-avx512`, `znver4`); empty: default_cpu().
  std::string cpu;
  int opt_level = 3;  // 0..3
  /// Non-empty: emit DWARF line tables naming this `.toy` file (its path as
  /// the debugger should find it), one row per source statement.
  std::string debug_file;
};

/// The CPU `-o` compiles for when --cpu is not given.
std::string default_cpu();

/// True when `name` is "native" or a CPU LLVM knows for this architecture.
bool valid_cpu(const std::string& name);

/// A position-independent target machine for `t` on this architecture;
/// null and `error` set on failure.
std::unique_ptr<llvm::TargetMachine> make_target_machine(const CpuTarget& t, std::string& error);

}  // namespace dccc::backend
