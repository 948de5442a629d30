// What a device target gives the C ABI writer: the one way backend/abi
// learns of a target whose arrays live in device memory. backend/abi
// depends on no backend; the CUDA backend passes its DeviceAbi
// (backend/cuda/cuda_abi.h, cuda_device_abi()) to assign_c_names,
// emit_header and emit_wrapper (backend/abi/c_abi.h), which take nullptr
// for the CPU target (LLVM kernels `FN__kernel(sizes, buffers)` on host
// memory).
//
// The protocol is the writer's: with a DeviceAbi the wrapper
//  - takes device pointers in the argument structs, and copies each integer
//    input array (the lengths) to a host copy (`stage`) before it checks it;
//  - keeps, beside each cached prelude unit's host arrays, a second cache
//    entry with the unit's device copy: kind `KIND ^ DCC__DEVICE_KIND`, the
//    unit's key followed by the device number (`device`), made by `copy`
//    from a `struct <copy_ctx>` and freed by `release`;
//  - calls the launcher `int32_t FN<launcher>(<launcher_params>)` instead
//    of FN__kernel, as FN<launcher>(sizes, buffers, host, aux_dev,
//    aux_host, held, stream, run == 3) (on CUDA: f__cuda, whose contract
//    is in backend/cuda/cuda_codegen.h);
//  - defines FN_on_stream(const dcc_prelude* prelude, args..., result,
//    <stream_param>): FN__prepare's run == 3 (backend/abi/prepare.h), the
//    length arrays host arrays (`is_device` refuses device memory), whose
//    device copies are cache entries made by `copy` too.
// The target's own code (generated beside the kernels) defines every
// function named here; `wrapper_decls` declares them for the wrapper. The
// text is the target's; what is written where, and when, is the writer's.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "backend/abi/prelude_units.h"

namespace dccc::backend {

struct DeviceAbi {
  /// The target's name in messages and comments ("CUDA": "a `list`
  /// parameter on the CUDA target", "FN on a CUDA stream").
  std::string name;
  /// Header text right after `extern "C" {`: what the structs' pointers are
  /// on this target, FN_on_stream's contract, and the declaration of the
  /// stream parameter's type.
  std::string header_note;
  /// FN_on_stream's last parameter, a declaration named `dcc_stream`.
  std::string stream_param;
  /// The wrapper's declarations, after `struct dcc__prelude_ctx`: the
  /// functions below, `struct <copy_ctx>` and the macro DCC__DEVICE_KIND.
  std::string wrapper_decls;
  /// The launcher's suffix (FN<launcher> is function FN's launcher) and
  /// its parameter list, which the wrapper declares: eight parameters, for
  /// sizes (const int64_t*), the device pointers, their host views, the
  /// aux arrays on the device and on the host (void* const* each), the held
  /// prelude and the stream (void*), and the flags (int; 1: FN_on_stream).
  std::string launcher, launcher_params;
  /// `void* stage(const void* device, size_t bytes)`: a dcc_alloc'ed host
  /// copy of device memory; NULL with the error set on failure.
  std::string stage;
  /// `int is_device(const void* p)`: whether p is device memory.
  std::string is_device;
  /// `int64_t device(void)`: the current device's number, in the keys of
  /// device copies.
  std::string device;
  /// `struct <copy_ctx> { const void* host; size_t bytes; const struct
  /// dcc__prelude_ctx* pc; const void* const* dev_l; int (*gpu)(const
  /// struct dcc__prelude_ctx* pc, const void* const* dev_l, void* dev_out);
  /// }`: what `copy` makes a device copy from -- `bytes` of `host`, or, when
  /// `gpu` is set, the unit computed on the device from the device
  /// length arrays `dev_l`.
  std::string copy_ctx;
  /// `dcc_status copy(void* ctx, void* out, size_t out_bytes)`, a
  /// dcc_prelude compute callback: stores the device copy's pointer in out.
  std::string copy;
  /// `void release(void* buffer, size_t bytes)`: frees an entry `copy` made.
  std::string release;
  /// Whether the target's code defines `int dcc__prelude_<KIND as 16 hex
  /// digits><unit_kernel>(const struct dcc__prelude_ctx* pc, const void*
  /// const* dev_l, void* dev_out)`, which computes unit u on the device
  /// (the `gpu` of copy_ctx). Unset: for no unit.
  std::function<bool(const cabi::PreludeUnit& u)> unit_on_device;
  std::string unit_kernel;
  /// Further global C names the target's code defines per function,
  /// FN<suffix>, with what they are (for assign_c_names' collision errors).
  std::vector<std::pair<std::string, std::string>> function_names;
  /// The target's kernels are FN<kernels>0, FN<kernels>1, ... (non-empty).
  std::string kernels;
};

}  // namespace dccc::backend
