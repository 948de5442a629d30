// The pass pipeline: the one place that says which IR passes run, in which
// order, for which target.
//
// Every entry point — the driver (tools/dccc.cpp), the REPL (tools/repl.cpp),
// the unit-test helpers and the benchmarks — lowers a checked program with
// ir::lower and then calls run_pipeline. passes_for() is the ordered list
// (`dccc --list-passes [--target=T]` prints it); `--passes=a,b,c` runs
// exactly the named passes instead (for pass tests and bisecting),
// `--print-after=PASS` / `--print-after-all` print the IR after a pass and
// `--verify-each` runs the IR verifier after every pass (always on in debug
// builds). `--emit=vloop` prints the IR at the end of the list; `--emit=llvm`
// and `--emit=cuda` print what a backend makes of it.
//
// Passes before storage lowering run only on functions that are not storage
// lowered yet (IR text may come lowered: docs/vloop.md); simplify-indices runs
// on the functions this run lowered.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/apply_schedule.h"
#include "ir/ir.h"
#include "ir/schedule.h"
#include "ir/simplify_indices.h"
#include "support/diagnostics.h"

namespace dccc::ir {

/// What a library or a `dccc run` is compiled for. The one place target
/// names are spelled (parse_target / target_name).
enum class Target { Cpu, Cuda };

/// "cpu" / "cuda" -> the target; nullopt for anything else.
std::optional<Target> parse_target(std::string_view name);
const char* target_name(Target t);

/// One pass of the pipeline, as --list-passes shows it.
struct PassInfo {
  std::string name;     // as --passes and --print-after spell it
  std::string summary;  // one line: what it does
};

struct PipelineOptions {
  Target target = Target::Cpu;
  /// Off (`--no-storage-lowering`): stop before storage lowering.
  bool storage_lowering = true;
  /// Off (`--no-simplify`): no simplify-indices after storage lowering.
  bool simplify = true;
  /// On (`--online-reductions`): the online-reductions pass derives the
  /// one-pass (flash-attention) form of dependent reduction chains on every
  /// function, f32 ones on the CUDA target included. Without it the pass
  /// runs by default on the CPU (blocks of 128 keys, rows in tiles: not
  /// slower than the materialised form by wall clock at 1 and 2 threads,
  /// bench/RESULTS.md) and on the CUDA target where the fused attention
  /// kernel (backend/gpu/plan_attention.h) takes its output: every derived
  /// key loop starts with a one-loop score contraction, and f32 inputs run
  /// on tensor cores (ir/pipeline.cpp).
  bool online_reductions = false;
  /// On (`--materialize`, `--no-online-reductions`): the online-reductions
  /// pass does not run (unless --online-reductions asks for it).
  bool materialize = false;
  /// CUDA target: f32 contractions run on the tensor cores (`--fp32-math`
  /// 3xtf32 or tf32, not ieee), so the fused attention kernel takes f32
  /// attention and the online form is derived for it by default.
  bool cuda_fp32_tensor_cores = true;
  /// Values of j a step of the fused loop (`--online-block=N`); 0: the
  /// target's (the CPU's kCpuOnlineBlock, with rows in tiles; CUDA 1).
  int64_t online_block = 0;
  /// The module is IR text: no default schedule (it is taken as scheduled).
  bool from_ir_text = false;
  /// The CPU target's default padding factor (0 or 1: none); when
  /// `default_pad_reason` is set, --explain says it came from there.
  int64_t default_pad = kCpuDefaultPad;
  std::string default_pad_reason;
  /// The `schedule` blocks, in order (the file's, then --schedule texts).
  std::vector<Schedule> schedules;
  /// Collect apply-schedule's --explain text into PipelineResult::explain.
  bool explain = false;
  bool verify_each =
#ifdef NDEBUG
      false;
#else
      true;
#endif
  /// Print the IR after these passes (`--print-after`), or after every pass.
  std::vector<std::string> print_after;
  bool print_after_all = false;
  /// Where --print-after writes (default std::cerr, as LLVM's opt does).
  std::ostream* print_stream = nullptr;
  /// `--passes=`: exactly these passes, in this order, instead of the list.
  std::optional<std::vector<std::string>> passes;
};

/// The ordered pass list for `options` (target, storage lowering, simplify).
std::vector<PassInfo> passes_for(const PipelineOptions& options);

/// Every pass the pipeline knows, for every target, in list order.
std::vector<PassInfo> all_passes();

struct PipelineResult {
  enum class Status { Ok, Errors, Internal };
  Status status = Status::Ok;
  /// Status::Internal: what the verifier found (or a bad --passes name).
  std::string internal_error;
  /// --explain text (options.explain): apply-schedule's and online
  /// reductions' choices, then per function the calls lowering inlined and
  /// which of their tensors are still stored after the passes.
  std::string explain;
  /// simplify-indices, per function it ran on.
  std::vector<std::pair<std::string, SimplifyReport>> simplified;
  bool ok() const { return status == Status::Ok; }
};

/// Checks `--passes` / `--print-after` names: the first unknown one, or
/// nullopt when all are passes the pipeline knows.
std::optional<std::string> unknown_pass_name(const PipelineOptions& options);

/// Runs the passes on `module`. Errors a user can cause (a bad schedule,
/// storage that cannot be laid out) are reported to `diags` and give
/// Status::Errors; a verifier failure gives Status::Internal.
PipelineResult run_pipeline(Module& module, const PipelineOptions& options, DiagnosticEngine& diags);

}  // namespace dccc::ir
