// The C wrapper's per-function core:
//   static dcc_status FN__prepare(args..., result, dcc_prelude* held, int run, void* stream)
// checks every argument before anything is written (NULL pointers, sizes
// that disagree, negative lengths, element counts, overflow, `where`
// constraints, result capacities), takes the prelude from the cache or the
// held prelude (or computes it), fills the result's sizes, and with `run`
// calls the kernel (docs/abi.md). run == 0: FN_meta; 1: FN or
// FN_with_prelude (held set); 2: FN_prelude (fills `held`, stops after the
// prelude); 3: FN_on_stream (a device target, backend/abi/device_abi.h:
// the length arrays are host arrays, nothing waits; `stream` is the
// target's stream, a cudaStream_t on CUDA). emit_wrapper
// (backend/abi/c_abi.h) wraps it in the public functions.
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include "backend/abi/device_abi.h"
#include "ir/ir.h"

namespace dccc::backend::cabi {

/// The integer input arrays FN_on_stream takes as host arrays: those the
/// wrapper or the launcher read on the host (totals, the prelude, `where`
/// checks, loop extents).
std::set<const ir::BufferNode*> on_stream_host_arrays(const ir::Func& f);

/// Appends FN__prepare for `f` to `out`, and to `prelude_callbacks` the
/// functions that compute the prelude units not yet in `emitted_units`
/// (which it extends); `device`: the device target, or nullptr (the CPU).
/// Throws BackendUnsupported for what the C ABI cannot express (a `list`
/// parameter on a device target, a result size the body computes).
/// Returns, on a device target, why FN_on_stream must refuse every call
/// (its text, for dcc_last_error), or "" when it can run.
std::string emit_prepare(const ir::Func& f, const DeviceAbi* device, std::string& out, std::string& prelude_callbacks,
                         std::set<uint64_t>& emitted_units);

}  // namespace dccc::backend::cabi
