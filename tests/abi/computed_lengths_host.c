/* Host of computed_lengths.toy (see run_c_host.sh): lengths the function
 * computes that go negative, or whose offsets overflow, fail the call with
 * the documented status (docs/abi.md, "Errors") and leave the result as it
 * was; in range, the results are the values worked out by hand. */
#include "computed_lengths.h"

#include "host_util.h"

static void expect_status(const char* what, dcc_status st, dcc_status want, const char* text) {
  if (st != want) {
    fprintf(stderr, "%s: status %d (%s), want %d\n", what, st, dcc_last_error(), want);
    ++host_failures;
  } else if (!strstr(dcc_last_error(), text)) {
    fprintf(stderr, "%s: message \"%s\" lacks \"%s\"\n", what, dcc_last_error(), text);
    ++host_failures;
  }
}

int main(void) {
  /* B = 2, D = 1: sequences [1] and [2, 3, 4]. */
  const int32_t seqlen[2] = {1, 3};
  const float data[4] = {1, 2, 3, 4};
  Seqs x = {(float*)to_lib(data, sizeof data), 4, (int32_t*)to_lib(seqlen, sizeof seqlen), 2, 2, 1};
  const float seven[2] = {7, 7};
  float r[2];
  f_result_t fr = {(float*)lib_alloc(2 * sizeof(float)), 2, 2, 1};
  /* k = 1: n = [0, 2], y = [[], [3, 4]]; r[b] = y[b][0] or 0. */
  expect_ok("f(k = 1)", f(&x, 1, &fr));
  from_lib(r, fr.data, sizeof r);
  expect_close("f(k = 1)", 0, r[0], 0);
  expect_close("f(k = 1)", 1, r[1], 3);
  /* k = 2: n = [-1, 1]. */
  f_result_t fr2 = {(float*)to_lib(seven, sizeof seven), 2, 2, 1};
  expect_status("f(k = 2)", f(&x, 2, &fr2), DCC_ERR_NEGATIVE_LENGTH,
                "f: `n`[0] is -1, a length the function computes; lengths must be >= 0");
  from_lib(r, fr2.data, sizeof r);
  expect_close("f(k = 2) leaves the result", 0, r[0], 7);
  expect_close("f(k = 2) leaves the result", 1, r[1], 7);
  /* k = 4: n = [-3, -1]; the first is named. */
  expect_status("f(k = 4)", f(&x, 4, &fr2), DCC_ERR_NEGATIVE_LENGTH, "f: `n`[0] is -3,");

  /* g, B = 2, D = 2: sequences of 1 and 2 rows, m = [1, 0]: n = [2, 2],
   * y[b][i, d] = i + d; r[b] = y[b][1, 0] = 1. */
  const float data2[6] = {0, 0, 0, 0, 0, 0};
  const int32_t seqlen2[2] = {1, 2};
  Seqs x2 = {(float*)to_lib(data2, sizeof data2), 6, (int32_t*)to_lib(seqlen2, sizeof seqlen2), 2, 2, 2};
  const int32_t m1[2] = {1, 0};
  g_m_t gm = {(int32_t*)to_lib(m1, sizeof m1), 2, 2};
  g_result_t gr = {(float*)to_lib(seven, sizeof seven), 2, 2};
  expect_ok("g", g(&x2, &gm, &gr));
  from_lib(r, gr.data, sizeof r);
  expect_close("g", 0, r[0], 1);
  expect_close("g", 1, r[1], 1);
#ifndef DCC_HOST_CUDA
  /* Empty sequences and D = 2^33: n = [2^31 - 1, 1], so n[0] * D is past
   * INT64_MAX (wrapped, the offsets would be [0, -2^33, 0]). Not on the
   * CUDA target: there `y` is computed in its one reader (kernel fusion), so
   * it has no offsets to overflow, and the reduction would run its 2^64
   * steps (seen on an H200: the call did not return within 60 s). */
  const int32_t zero[2] = {0, 0}, m2[2] = {2147483647, 1};
  Seqs x3 = {(float*)to_lib(data2, 0), 0, (int32_t*)to_lib(zero, sizeof zero), 2, 2, (int64_t)1 << 33};
  g_m_t gm2 = {(int32_t*)to_lib(m2, sizeof m2), 2, 2};
  g_result_t gr2 = {(float*)to_lib(seven, sizeof seven), 2, 2};
  expect_status("g(overflow)", g(&x3, &gm2, &gr2), DCC_ERR_OVERFLOW, "g: the lengths make an offset overflow");
  from_lib(r, gr2.data, sizeof r);
  expect_close("g(overflow) leaves the result", 0, r[0], 7);
  expect_close("g(overflow) leaves the result", 1, r[1], 7);
#endif
  if (host_failures) {
    fprintf(stderr, "computed_lengths host check: %d failure(s)\n", host_failures);
    return 1;
  }
  printf("computed_lengths host check: OK\n");
  return 0;
}
