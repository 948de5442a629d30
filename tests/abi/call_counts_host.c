/* Host of call_counts.toy (see run_c_host.sh): `proj`, with a `reduce`,
 * inlined once, twice and three times into one function, and `dot` three
 * times, checked against float64 references. */
#include "call_counts.h"

#include "host_util.h"

enum { N = 3, M = 4 };
static const float X[N * M] = {1, 2, 3, 4, -1, 0.5f, 2, -2, 3, 1, -1, 0.25f};
static const float W[M] = {0.5f, -1, 2, 1.5f};

static double proj_ref(int i, const double* w) {
  double s = 0;
  for (int j = 0; j < M; ++j) s += (double)X[i * M + j] * w[j];
  return s;
}

static void run_matvec(const char* name, int calls) {
  void* x = to_lib(X, sizeof X);
  void* w = to_lib(W, sizeof W);
  void* out = lib_alloc(N * sizeof(float));
  dcc_status st = DCC_OK;
  if (calls == 1) {
    once_x_t ax = {(float*)x, N * M, N, M};
    once_w_t aw = {(float*)w, M, M};
    once_result_t r = {(float*)out, N, N};
    st = once(&ax, &aw, &r);
  } else if (calls == 2) {
    twice_x_t ax = {(float*)x, N * M, N, M};
    twice_w_t aw = {(float*)w, M, M};
    twice_result_t r = {(float*)out, N, N};
    st = twice(&ax, &aw, &r);
  } else {
    thrice_x_t ax = {(float*)x, N * M, N, M};
    thrice_w_t aw = {(float*)w, M, M};
    thrice_result_t r = {(float*)out, N, N};
    st = thrice(&ax, &aw, &r);
  }
  expect_ok(name, st);
  float got[N];
  from_lib(got, out, sizeof got);
  double w1[M], w2[M], w3[M];
  for (int j = 0; j < M; ++j) {
    w1[j] = W[j];
    w2[j] = calls == 2 ? 2.0 * W[j] : W[j] + 1.0;
    w3[j] = (double)W[j] * W[j];
  }
  for (int i = 0; i < N; ++i) {
    double want = proj_ref(i, w1);
    if (calls >= 2) want += 10 * proj_ref(i, w2);
    if (calls >= 3) want += 100 * proj_ref(i, w3);
    expect_close(name, i, got[i], want);
  }
}

int main(void) {
  run_matvec("once", 1);
  run_matvec("twice", 2);
  run_matvec("thrice", 3);
  float xv[N] = {1, -2, 0.5f}, zv[N] = {3, 0.25f, -1};
  dots_x_t x = {(float*)to_lib(xv, sizeof xv), N, N};
  dots_z_t z = {(float*)to_lib(zv, sizeof zv), N, N};
  float s = 0;
  expect_ok("dots", dots(&x, &z, &s));
  double xx = 0, xz = 0, zz = 0;
  for (int i = 0; i < N; ++i) {
    xx += (double)xv[i] * xv[i];
    xz += (double)xv[i] * zv[i];
    zz += (double)zv[i] * zv[i];
  }
  expect_close("dots", 0, s, xx + 2 * xz + 3 * zz);
  if (host_failures) {
    fprintf(stderr, "call_counts host check: %d failure(s)\n", host_failures);
    return 1;
  }
  printf("call_counts host check: OK\n");
  return 0;
}
