// Shared by the CUDA hosts of the nested-raggedness examples
// (causal_cuda_host.cu, documents_cuda_host.cu): a failure counter, CUDA
// error checks and plain device copies (never managed memory).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "dccrt.h"

namespace cuda_host {

inline int failures = 0;

inline void expect(bool ok, const char* what) {
  if (!ok) {
    std::printf("FAIL: %s (dcc_last_error: %s)\n", what, dcc_last_error());
    ++failures;
  }
}

inline void cuda_ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::printf("FAIL: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

/// A plain device allocation (never managed memory) holding v; at least one
/// element, so that an empty array is still a non-NULL pointer.
template <typename T>
T* to_device(const std::vector<T>& v) {
  T* p = nullptr;
  cuda_ok(cudaMalloc(&p, std::max<size_t>(1, v.size()) * sizeof(T)), "cudaMalloc");
  if (!v.empty()) cuda_ok(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy to device");
  return p;
}
template <typename T>
std::vector<T> to_host(const T* p, size_t n) {
  std::vector<T> v(n);
  if (n) cuda_ok(cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy to host");
  return v;
}
/// A device buffer of n floats, every one `fill`.
inline float* filled(int64_t n, float fill) { return to_device(std::vector<float>(size_t(std::max<int64_t>(n, 1)), fill)); }

}  // namespace cuda_host
