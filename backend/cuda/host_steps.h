// Host steps of a CUDA launcher: where the host code needs values the
// function's own kernels compute (issue 20: std/ragged.toy's take_rows,
// slice_rows, slice_rows_each, concat_rows).
//
// The launcher (backend/cuda/host_code.cpp) computes every extent, offset
// array and allocation size on the host. Most come from the sizes, the host
// copies of the length arrays and the prelude; some read an array the body
// computes: `n[b] = max(min(x.seqlen[b], k), 0)` followed by a local
// `[b: B][n[b], D]T`, whose offsets (an aux array) the body fills after n
// is written (storage lowering puts those statements in the body). This
// planner decides, per top-level statement of the body, what the launcher
// does around it: copy device arrays to the host first (a wait on the
// function's stream), run the statement on the host instead of as a kernel
// (it fills aux arrays: the prelude's code, after which they are checked
// and uploaded), or allocate locals whose sizes are known only now. The
// launcher prints the plan; it decides nothing of this itself.
#pragma once

#include <functional>
#include <set>
#include <vector>

#include "ir/ir.h"

namespace dccc::backend::cudagen {

/// What the launcher does for one top-level statement of the body.
struct HostStep {
  /// The statement fills aux arrays only, or checks computed lengths only
  /// (ir::build::assert_length): C code on the host (after the fetches),
  /// its arrays then uploaded (`upload`); no kernel.
  bool on_host = false;
  /// Before the statement: device arrays (or scalars) copied to their host
  /// copies, in this order, after the kernels before it have finished.
  std::vector<const ir::BufferNode*> fetch;
  /// Before the statement, after the fetches: locals and scalars whose size
  /// reads values known only now (not allocated with the others at the start).
  std::vector<const ir::BufferNode*> allocate;
  /// After an on_host statement: the aux arrays it filled, uploaded.
  std::vector<const ir::BufferNode*> upload;
};

/// The plan of one function.
struct HostPlan {
  std::vector<HostStep> steps;  // one per top-level statement of the body
  /// Buffers the host copies from the device at some step (each a host
  /// copy in the launcher's `hp` slot); their loads in host code read it.
  std::set<const ir::BufferNode*> fetched;
  /// Fetched integer arrays that shape a buffer (its dims read them): each
  /// element is checked >= 0 right after the fetch, like an argument's lengths.
  std::set<const ir::BufferNode*> lengths;
  /// Aux arrays a statement of the body fills (on the host), not the prelude.
  std::set<const ir::BufferNode*> body_aux;
  /// Locals and scalars allocated at a step rather than at the start (at
  /// the first statement that touches them; never, if none does).
  std::set<const ir::BufferNode*> deferred;
  /// True when the launcher waits for the device before its last kernel
  /// (some fetch): f_on_stream refuses such a function.
  bool waits() const { return !fetched.empty(); }
};

/// The expressions the launch of top-level statement `item` (a kernel)
/// evaluates on the host: loop extents of its grid, guards, tile-list bounds.
/// `tile_list` is set when they build a cached tile list (tensor-core and
/// fused attention kernels), whose cache key does not hold fetched arrays.
struct LaunchReads {
  std::vector<ir::Expr> exprs;
  bool tile_list = false;
};

/// Plans the host steps of `f` (storage-lowered). `launch(k)` is called once
/// for each top-level statement k that runs as a kernel, in order, and
/// returns what its launch reads on the host; `in_memory(b)` tells whether
/// scalar `b` has device memory (one kernels keep in registers cannot be
/// fetched). Throws CudaUnsupported (backend/cuda/cuda_codegen.h) where a
/// host value cannot be had: an extent read before the statement that
/// computes it, a tile list or an argument's or result's size that reads
/// what the body computes.
HostPlan plan_host_steps(const ir::Func& f, const std::function<LaunchReads(size_t)>& launch,
                         const std::function<bool(const ir::BufferNode*)>& in_memory);

}  // namespace dccc::backend::cudagen
