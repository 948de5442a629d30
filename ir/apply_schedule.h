// Applies a function's schedule (ir/schedule.h) to its vloop IR.
//
// Runs on multi-index IR after mark_parallel and reorder_loops (whose
// choices are the defaults a directive overrides) and before storage
// lowering, which lays out the storage padding. Directives:
//   pad_storage(T.i, p)  T's dimension indexed by i holds its extent rounded
//                        up to a multiple of p. Only local tensors (the C ABI
//                        of inputs and results stays packed, docs/abi.md)
//                        and only dimensions no other extent depends on.
//                        Applied before the loop directives, whatever their order.
//   pad_loop(T.i, k)     loop i runs to its extent rounded up to a multiple of
//                        k. The extra iterations compute into storage padding
//                        when every tensor the body indexes with i is padded
//                        there by a multiple of k (storage padding below the
//                        loop padding, or not a multiple of it, is an error)
//                        and the body cannot fail or accumulate across
//                        iterations; otherwise they are guarded by
//                        `if (i < extent)`. Either way results are unchanged.
//   split(T.i, k)        for i_o in 0 .. ceil(E / k) { for i_i in 0 .. k {
//                        if (i_o * k + i_i < E) body } } (no guard when E is a
//                        multiple of k: is_multiple_of in ir/split_op.h); i_o
//                        keeps i's parallel mark.
//   reorder(T.a, T.b...) the named loops of one perfectly nested chain take the
//                        given order (outermost first); refused when a loop
//                        would move above a loop its extent depends on (a
//                        vloop above its bound's loop), when iterations are
//                        not independent (a `reduce` accumulation, a tensor
//                        read where it is written, prints), or when other
//                        statements lie between the loops. Bound checks of
//                        split loops in the chain sink to its innermost body.
//   tile(T.x, T.y, a, b) split(T.x, a), split(T.y, b),
//                        reorder(T.x_o, T.y_o, T.x_i, T.y_i).
//   split_op(T.i, k)     operation splitting (ir/split_op.h): the bulk keeps
//                        the names, i over (E / k) * k; the remainder
//                        statement's loops are T.X_rest (T.X_rest2, ... for a
//                        later split_op of the same assignment).
//   hfuse(A.x, B.y, ...) horizontal fusion (ir/hfuse.h) into one loop A.x_y
//                        (= B.x_y); the two parts of one split_op may both
//                        store the assignment's tensor.
//   gpu_blocks(T.a[, T.b]), gpu_threads(T.x[, T.y[, T.z]])
//                        the CUDA grid and block mapping of a statement
//                        (ir.h GpuMapping), after every other directive;
//                        only `parallel` loops, chains of loops from the
//                        statement's outermost one. Ignored on the CPU.
// A bad directive is a [Schedule] error at its location and changes nothing.
// Each directive is a file pair in ir/schedule/ (pad_storage, pad_loop,
// split, reorder, tile, fuse, split_op, hfuse, remap, inline, fuse_dims,
// gpu_mapping) with one entry point; the default padding is
// ir/schedule/default_padding; what they share is ir/schedule/state.h.
#pragma once

#include <cstdint>
#include <string>

#include "ir/ir.h"
#include "ir/schedule.h"
#include "support/diagnostics.h"

namespace dccc::ir {

/// What dccc chooses where no directive names an assignment. `pad` = k > 1:
/// the innermost loop of an assignment, a vloop over a left-side index with
/// a straight-line body, runs to a multiple of k into storage padding of a
/// multiple of k added to the local tensors it indexes, where that needs no
/// guard (only local tensors indexed by it; the body cannot fail or
/// accumulate). 0 or 1: none, and --explain gives `off_reason`.
struct ScheduleDefaults {
  int64_t pad = 0;
  std::string off_reason = "default padding is off";
  /// What --explain says of the loop order and `parallel` marks.
  std::string order_note = "loop order and `parallel` from the CPU heuristics";
  /// The CUDA target: `gpu_blocks` and `gpu_threads` are recorded in
  /// Func::gpu_mappings (otherwise checked, then ignored).
  bool gpu = false;
};

/// The default padding factor on the CPU target (docs/schedules.md says
/// how it was chosen).
inline constexpr int64_t kCpuDefaultPad = 4;

/// Applies `schedule` (null: none) to `f`, then `defaults` to the
/// assignments no directive names; false after [Schedule] errors.
/// When `explain` is given, appends what --explain prints for `f`: per
/// assignment, its loops as they now run and each choice with its reason
/// (a directive, or the default).
bool apply_schedule(Func& f, const Schedule* schedule, DiagnosticEngine& diags, std::string* explain = nullptr,
                    const ScheduleDefaults& defaults = {});

}  // namespace dccc::ir
