// The CUDA target's DeviceAbi (backend/cuda/cuda_abi.h): the names and
// text the C wrapper (backend/abi) writes for the CUDA code, which defines
// them -- dcc__cuda_stage, dcc__cuda_is_device and dcc__cuda_prelude_release
// in the kernels' prologue (cuda_prologue.cpp), dcc__cuda_device,
// dcc__cuda_prelude and the units' GPU kernels in emit_cuda_prelude
// (cuda_prelude.cpp), FN__cuda in the launch code (host_code.cpp).
#include "backend/cuda/cuda_abi.h"

namespace dccc::backend {

namespace {

/// The header's note on the CUDA target, after `extern "C" {`.
const char* const kHeaderNote =
    "/* CUDA target: every pointer in the structs is a device pointer.\n"
    " * NAME_on_stream(prelude, args..., result, stream) is NAME without waiting,\n"
    " * for a hot path that already has the lengths on the host and for CUDA\n"
    " * graphs: the length arrays of the argument structs (the fields other\n"
    " * fields' extents read) are HOST arrays there, the data device arrays;\n"
    " * every kernel runs on `stream` (a cudaStream_t; NULL: the default\n"
    " * stream), and it returns once they are queued, having copied nothing\n"
    " * between host and device for lengths seen before: the offsets, the tile\n"
    " * lists and the lengths' device copies come from the prelude cache, or\n"
    " * from `prelude` (not NULL: a handle NAME_prelude filled for these lengths,\n"
    " * whose arrays live until dcc_prelude_destroy -- what a captured graph\n"
    " * needs). A scalar result pointer is device memory there. Errors of\n"
    " * the kernels show in later CUDA calls (cudaStreamSynchronize). */\n"
    "struct CUstream_st;\n\n";

/// The wrapper's declarations of what the CUDA code defines for it.
const char* const kWrapperDecls =
    "/* Copies `bytes` of device memory into dcc_alloc'ed host memory; NULL\n"
    " * with the error set on failure. Defined with the CUDA kernels. */\n"
    "void* dcc__cuda_stage(const void* device, size_t bytes);\n"
    "/* Whether p is device memory (f_on_stream's host arrays must not be). */\n"
    "int dcc__cuda_is_device(const void* p);\n\n"
    "/* The device copy of a prelude unit (defined with the CUDA code, see\n"
    " * emit_cuda_prelude): dcc__cuda_prelude fills a cache entry with a device\n"
    " * pointer -- the host arrays uploaded, or, with DCCC_CUDA_PRELUDE=gpu and\n"
    " * `gpu` set, the unit computed by a GPU kernel from the device lengths --\n"
    " * and dcc__cuda_prelude_release frees it with the entry. */\n"
    "struct dcc__cuda_prelude_ctx {\n  const void* host;\n  size_t bytes;\n  const struct dcc__prelude_ctx* pc;\n"
    "  const void* const* dev_l;\n"
    "  int (*gpu)(const struct dcc__prelude_ctx* pc, const void* const* dev_l, void* dev_out);\n};\n"
    "#define DCC__DEVICE_KIND UINT64_C(0x6465766963650001)\n"
    "int64_t dcc__cuda_device(void);\n"
    "dcc_status dcc__cuda_prelude(void* ctx, void* out, size_t out_bytes);\n"
    "void dcc__cuda_prelude_release(void* buffer, size_t bytes);\n";

DeviceAbi make_cuda_abi() {
  DeviceAbi d;
  d.name = "CUDA";
  d.header_note = kHeaderNote;
  // `struct CUstream_st*` is cudaStream_t, declared (in kHeaderNote) so
  // that the header needs no CUDA header.
  d.stream_param = "struct CUstream_st* dcc_stream";
  d.wrapper_decls = kWrapperDecls;
  d.launcher = kCudaLauncher;
  d.launcher_params = kCudaLauncherParams;
  d.stage = "dcc__cuda_stage";
  d.is_device = "dcc__cuda_is_device";
  d.device = "dcc__cuda_device";
  d.copy_ctx = "dcc__cuda_prelude_ctx";
  d.copy = "dcc__cuda_prelude";
  d.release = "dcc__cuda_prelude_release";
  d.unit_on_device = gpu_prelude;
  d.unit_kernel = "__gpu";
  // The kernels' argument struct (cuda_codegen.cpp) and the kernels.
  d.function_names = {{"__args", "the kernel arguments of "}};
  d.kernels = "__k";
  return d;
}

}  // namespace

const DeviceAbi& cuda_device_abi() {
  static const DeviceAbi abi = make_cuda_abi();
  return abi;
}

bool gpu_prelude(const cabi::PreludeUnit& u) {
  for (const auto& b : u.inputs)
    if (b->dims.empty() || b->kind != ir::BufferKind::Input) return false;  // an earlier unit's array is on the host
  return u.inputs.size() <= kGpuPreludeMax && u.sizes.size() <= kGpuPreludeMax && u.aux.size() <= kGpuPreludeMax;
}

}  // namespace dccc::backend
