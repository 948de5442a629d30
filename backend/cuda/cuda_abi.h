// The CUDA target's side of the C ABI (backend/abi/device_abi.h): what the
// C wrapper needs of the CUDA code -- names, declarations, the header's
// note (cuda_device_abi) -- and the CUDA code behind the prelude units'
// device copies (emit_cuda_prelude, cuda_prelude.cpp). backend/abi knows
// nothing of CUDA but what cuda_device_abi() hands it.
#pragma once

#include <cstddef>
#include <string>

#include "backend/abi/device_abi.h"
#include "ir/ir.h"

namespace dccc::backend {

/// The launcher of function FN is `FN` + kCudaLauncher, with the
/// parameters kCudaLauncherParams (backend/cuda/cuda_codegen.h).
inline constexpr const char* kCudaLauncher = "__cuda";
inline constexpr const char* kCudaLauncherParams =
    "const int64_t* sizes, void* const* dev, void* const* host, void* const* aux_dev, void* const* aux_host, "
    "void* held, void* stream, int flags";

/// The CUDA target's DeviceAbi, for assign_c_names, emit_header and
/// emit_wrapper: the wrapper stages lengths with dcc__cuda_stage, keeps
/// device copies made by dcc__cuda_prelude (cuda_prologue.cpp,
/// emit_cuda_prelude) and calls FN__cuda; FN_on_stream takes a
/// `struct CUstream_st*` (cudaStream_t).
const DeviceAbi& cuda_device_abi();

/// CUDA code that the --target=cuda library needs beside the kernels
/// (appended to emit_cuda's output): the prelude units' device copies, made
/// by upload or (DCCC_CUDA_PRELUDE=gpu) by a GPU kernel, and their release.
std::string emit_cuda_prelude(const ir::Module& m);

/// Most sizes, inputs and arrays of a unit the GPU prelude kernel takes.
constexpr size_t kGpuPreludeMax = 8;

/// Whether the GPU may compute the unit's device copy: every input an array
/// (on the device), few enough of everything for the kernel's argument.
bool gpu_prelude(const cabi::PreludeUnit& u);

}  // namespace dccc::backend
