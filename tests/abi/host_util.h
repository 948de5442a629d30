/* Shared by the tests/abi hosts: device or host copies of arguments (the
 * structs of a --target=cuda library hold device pointers), and checks
 * against float64 references. Valid C and C++. */
#ifndef DCC_ABI_HOST_UTIL_H
#define DCC_ABI_HOST_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef DCC_HOST_CUDA
#include <cuda_runtime_api.h>
#endif

static int host_failures = 0;

/* Every buffer to_lib and lib_alloc hand out, freed at exit (before the
 * leak check of a sanitizer build runs). */
static void* lib_owned[256];
static int lib_n_owned = 0;
static void lib_free_all(void) {
  for (int i = 0; i < lib_n_owned; ++i) {
#ifdef DCC_HOST_CUDA
    cudaFree(lib_owned[i]);
#else
    free(lib_owned[i]);
#endif
  }
  lib_n_owned = 0;
}
static void* lib_own(void* p) {
  if (!p || lib_n_owned == (int)(sizeof lib_owned / sizeof lib_owned[0])) {
    fprintf(stderr, "out of memory or too many host buffers\n");
    exit(1);
  }
  if (lib_n_owned == 0) atexit(lib_free_all);
  lib_owned[lib_n_owned++] = p;
  return p;
}

/* A copy of `bytes` from host memory where the library reads arguments. */
static void* to_lib(const void* p, size_t bytes) {
#ifdef DCC_HOST_CUDA
  void* d = NULL;
  if (cudaMalloc(&d, bytes ? bytes : 1) != cudaSuccess || cudaMemcpy(d, p, bytes, cudaMemcpyHostToDevice) != cudaSuccess) {
    fprintf(stderr, "cuda copy failed\n");
    exit(1);
  }
  return lib_own(d);
#else
  void* h = lib_own(malloc(bytes ? bytes : 1));
  if (bytes) memcpy(h, p, bytes);
  return h;
#endif
}

/* Library memory for `bytes` of results. */
static void* lib_alloc(size_t bytes) {
#ifdef DCC_HOST_CUDA
  void* d = NULL;
  if (cudaMalloc(&d, bytes ? bytes : 1) != cudaSuccess) exit(1);
  return lib_own(d);
#else
  return lib_own(calloc(bytes ? bytes : 1, 1));
#endif
}

/* Library memory copied back to `out`. */
static void from_lib(void* out, const void* p, size_t bytes) {
#ifdef DCC_HOST_CUDA
  if (cudaMemcpy(out, p, bytes, cudaMemcpyDeviceToHost) != cudaSuccess) exit(1);
#else
  memcpy(out, p, bytes);
#endif
}

static void expect_close(const char* what, int k, double got, double want) {
  if (fabs(got - want) > 1e-4 * (1.0 + fabs(want))) {
    fprintf(stderr, "%s[%d]: got %.9g, want %.9g\n", what, k, got, want);
    ++host_failures;
  }
}

static void expect_ok(const char* what, int st) {
  if (st != 0) {
    fprintf(stderr, "%s: status %d: %s\n", what, st, dcc_last_error());
    ++host_failures;
  }
}

#endif
