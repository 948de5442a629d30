// The CUDA code a --target=cuda library needs beside the kernels for its
// prelude units' device copies (emit_cuda_prelude, backend/cuda/cuda_abi.h):
// what the C wrapper's dcc__cuda_device and dcc__cuda_prelude calls
// (cuda_abi.cpp) run.
#include <fmt/format.h>

#include <set>

#include "backend/abi/prelude_units.h"
#include "backend/cuda/cuda_abi.h"

namespace dccc::backend {

using cabi::prelude_units;

std::string emit_cuda_prelude(const ir::Module& m) {
  std::string out = R"CU(
// ---- Prelude units on the device (backend/cuda/cuda_prelude.cpp) ----
// The C wrapper keeps each prelude unit's host arrays in libdccrt's prelude
// cache (or a held prelude) and, beside them, an entry holding a device copy,
// made once per length pattern by dcc__cuda_prelude: the host arrays
// uploaded (the default), or with DCCC_CUDA_PRELUDE=gpu computed by a
// one-thread kernel from the device length arrays. Freed with the entry.
extern "C" {
struct dcc__prelude_ctx {
  const char* fn;
  const int64_t* s;
  const void* const* l;
  const int64_t* n;
};
struct dcc__cuda_prelude_ctx {
  const void* host;
  size_t bytes;
  const struct dcc__prelude_ctx* pc;
  const void* const* dev_l;
  int (*gpu)(const struct dcc__prelude_ctx* pc, const void* const* dev_l, void* dev_out);
};
}

namespace dcc_gpu_prelude {
__device__ inline int64_t dcc__add(int64_t a, int64_t b, int* ovf) {
  const int64_t r = (int64_t)((uint64_t)a + (uint64_t)b);
  if ((a >= 0) == (b >= 0) && (r >= 0) != (a >= 0)) *ovf = 1;
  return r;
}
__device__ inline int64_t dcc__sub(int64_t a, int64_t b, int* ovf) {
  const int64_t r = (int64_t)((uint64_t)a - (uint64_t)b);
  if ((a >= 0) != (b >= 0) && (r >= 0) != (a >= 0)) *ovf = 1;
  return r;
}
__device__ inline int64_t dcc__mul(int64_t a, int64_t b, int* ovf) {
  const int64_t lo = (int64_t)((uint64_t)a * (uint64_t)b);
  const int64_t hi = __mul64hi(a, b);
  if (hi != (lo >> 63)) *ovf = 1;
  return lo;
}
__device__ inline int64_t dcc__div(int64_t a, int64_t b, int* ovf) {
  if (b == 0 || (a == INT64_MIN && b == -1)) { *ovf = 1; return 0; }
  return a / b;
}
__device__ inline int64_t dcc__mod(int64_t a, int64_t b, int* ovf) {
  if (b == 0 || (a == INT64_MIN && b == -1)) { *ovf = 1; return 0; }
  return a % b;
}
__device__ inline int64_t dcc__min(int64_t a, int64_t b) { return a < b ? a : b; }
__device__ inline int64_t dcc__max(int64_t a, int64_t b) { return a > b ? a : b; }
struct Ctx {
  int64_t s[8];
  const void* l[8];
  int64_t n[8];
};
}  // namespace dcc_gpu_prelude

extern "C" __attribute__((visibility("hidden"))) int64_t dcc__cuda_device(void) {
  int d = 0;
  if (cudaGetDevice(&d) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  return d;
}

// dcc__cuda_exiting, dcc__cuda_mark_exit and dcc__cuda_prelude_release are in
// the kernels' prologue (backend/cuda/cuda_prologue.cpp): the tile lists of
// the launcher are released by the same function.

extern "C" __attribute__((visibility("hidden"))) dcc_status dcc__cuda_prelude(void* ctx, void* out, size_t out_bytes) {
  const auto* uc = static_cast<const dcc__cuda_prelude_ctx*>(ctx);
  static const bool on_gpu = [] {
    const char* e = std::getenv("DCCC_CUDA_PRELUDE");
    return e && std::strcmp(e, "gpu") == 0;
  }();
  (void)out_bytes;
  static const bool exit_hook = (std::atexit(dcc__cuda_mark_exit), true);
  (void)exit_hook;
  void* d = nullptr;
  cudaError_t e = cudaMalloc(&d, uc->bytes ? uc->bytes : 1);
  if (e != cudaSuccess) return (dcc_status)dcc_cuda_fail(e, "allocating the prelude's device copy");
  if (on_gpu && uc->gpu) {
    const int st = uc->gpu(uc->pc, uc->dev_l, d);
    if (st != 0) {
      cudaFree(d);
      return (dcc_status)st;
    }
  } else if (uc->bytes && (e = cudaMemcpy(d, uc->host, uc->bytes, cudaMemcpyHostToDevice)) != cudaSuccess) {
    cudaFree(d);
    return (dcc_status)dcc_cuda_fail(e, "uploading the prelude");
  }
  std::memcpy(out, &d, sizeof d);
  return DCC_OK;
}

// A library unloaded before the cache it used (another copy of libdccrt's)
// takes its device copies with it: their release code is its own.
__attribute__((destructor)) static void dcc__cuda_prelude_unload() {
  if (dcc__cuda_exiting) return;
  dcc_prelude_cache_drop(dcc_default_prelude_cache(), dcc__cuda_prelude_release);
}
)CU";
  std::set<uint64_t> done;
  for (const auto& f : m.funcs) {
    if (f.name == "main") continue;
    for (const auto& u : prelude_units(f)) {
      if (!gpu_prelude(u) || !done.insert(u.kind).second) continue;
      std::string name = fmt::format("dcc__prelude_{:016x}", u.kind);
      out += fmt::format("\nnamespace dcc_gpu_prelude {{\n__global__ void {}_kernel(Ctx c, void* out, int* status) {{\n"
                         "  const Ctx* pc = &c;\n  int ovf = 0;\n", name);
      out += u.definition;
      out += "  *status = ovf;\n}\n}  // namespace dcc_gpu_prelude\n\n";
      out += fmt::format(
          "extern \"C\" __attribute__((visibility(\"hidden\"))) int {0}__gpu(const dcc__prelude_ctx* pc, const void* const* dev_l, void* dev_out) {{\n"
          "  dcc_gpu_prelude::Ctx c;\n  std::memset(&c, 0, sizeof c);\n"
          "  for (int k = 0; k < {1}; ++k) c.s[k] = pc->s[k];\n"
          "  for (int k = 0; k < {2}; ++k) c.l[k] = dev_l[k];\n"
          "  for (int k = 0; k < {3}; ++k) c.n[k] = pc->n[k];\n"
          "  int* status = nullptr;\n  cudaError_t e = cudaMalloc(&status, sizeof(int));\n"
          "  if (e != cudaSuccess) return dcc_cuda_fail(e, \"allocating the prelude kernel's status\");\n"
          "  dcc_gpu_prelude::{0}_kernel<<<1, 1>>>(c, dev_out, status);\n"
          "  int ovf = 0;\n"
          "  if ((e = cudaGetLastError()) == cudaSuccess) e = cudaMemcpy(&ovf, status, sizeof ovf, cudaMemcpyDeviceToHost);\n"
          "  cudaFree(status);\n"
          "  if (e != cudaSuccess) return dcc_cuda_fail(e, \"computing the prelude on the GPU\");\n"
          "  if (ovf) return dcc_set_error(DCC_ERR_OVERFLOW, \"the lengths make an offset overflow (GPU prelude)\");\n"
          "  return 0;\n}}\n",
          name, u.sizes.size(), u.inputs.size(), u.aux.size());
    }
  }
  return out;
}

}  // namespace dccc::backend
