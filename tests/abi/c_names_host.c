/* Host of c_names.toy (see run_c_host.sh): calls the functions whose
 * parameters, fields, sizes, types and names are C and C++ keywords, C
 * library names and the wrapper's own names, by their C names (docs/abi.md,
 * "Names"), and checks the results against float64 references. Valid C and
 * C++: the script compiles it both ways. */
#include "c_names.h"

#include "host_util.h"

static void check_double(void) {
  /* k: B = 2 sequences of 2 and 1 rows, H = 3. */
  const int B = 2, H = 3;
  int32_t seqlen[2] = {2, 1}, data_len[2] = {7, 9};
  float kdata[9] = {1, 2, 3, 4, 5, 6, -1, 0.5f, 2};
  float iv[2] = {0.5f, 2}, stv[3] = {1, 2, 3}, ovfv[3] = {0.5f, 1, -1};
  float b = 1.5f, result_ = 0.25f, prelude_ = 0.75f;
  Seqs k;
  memset(&k, 0, sizeof k);
  k.data = (float*)to_lib(kdata, sizeof kdata);
  k.data_len = 9;
  k.seqlen = (int32_t*)to_lib(seqlen, sizeof seqlen);
  k.seqlen_len = 2;
  k.data_len_ = (int32_t*)to_lib(data_len, sizeof data_len);
  k.data_len__len = 2;
  k.B = B;
  k.H = H;
  double__i_t i = {(float*)to_lib(iv, sizeof iv), 2, 2};
  double__st_t st = {(float*)to_lib(stv, sizeof stv), 3, 3};
  double__ovf_t ovf = {(float*)to_lib(ovfv, sizeof ovfv), 3, 3};
  Seqs result;
  memset(&result, 0, sizeof result);
  expect_ok("double__meta", double__meta(&k, &i, b, result_, prelude_, &st, &ovf, &result));
  if (result.data_len != 9 || result.B != 2 || result.H != 3) {
    fprintf(stderr, "double__meta: data_len %lld, B %lld, H %lld\n", (long long)result.data_len, (long long)result.B,
            (long long)result.H);
    ++host_failures;
    return;
  }
  result.data = (float*)lib_alloc(9 * sizeof(float));
  expect_ok("double_", double_(&k, &i, b, result_, prelude_, &st, &ovf, &result));
  float got[9];
  from_lib(got, result.data, sizeof got);
  /* if[h] = sum over rows of k.data + st[h] * ovf[h]; switch = result * 2 + b - prelude; held = switch + 1 */
  double ifv[3];
  for (int h = 0; h < H; ++h) {
    ifv[h] = (double)stv[h] * ovfv[h];
    for (int r = 0; r < 3; ++r) ifv[h] += kdata[r * H + h];
  }
  double held = (double)result_ * 2 + b - prelude_ + 1;
  for (int r = 0; r < 3; ++r)
    for (int h = 0; h < H; ++h) {
      int seq = r < 2 ? 0 : 1;
      expect_close("double_ data", r * H + h, got[r * H + h], (double)kdata[r * H + h] * iv[seq] + ifv[h] + held);
    }
  if (result.seqlen != k.seqlen || result.data_len_ != k.data_len_) {
    fprintf(stderr, "double_: the bound fields do not point at the argument's\n");
    ++host_failures;
  }
}

static void check_struct(void) {
  /* int_: n = 2 rows of while_ = {1, 3} by k = 2. */
  int32_t whilev[2] = {1, 3};
  float forv[8] = {0.5f, -1, 2, 7, -3, 1, 4, 6.5f};
  float floatv[2] = {1, -2};
  int_ in;
  memset(&in, 0, sizeof in);
  in.for_ = (float*)to_lib(forv, sizeof forv);
  in.for__len = 8;
  in.while_ = (int32_t*)to_lib(whilev, sizeof whilev);
  in.while__len = 2;
  in.n = 2;
  in.k = 2;
  struct__float__t fl = {(float*)to_lib(floatv, sizeof floatv), 2, 2};
  struct__result_t result = {(float*)lib_alloc(2 * sizeof(float)), 2, 2};
  expect_ok("struct_", struct_(&in, &fl, 0.5f, 3, &result));
  float got[2];
  from_lib(got, result.data, sizeof got);
  /* char[x] = max of row x * float[x] + static; unsigned[x] = char[x] + (void + 1) */
  double m0 = 0.5, m1 = 7;  /* the maxima of {0.5, -1} and of {2, 7, -3, 1, 4, 6.5} */
  expect_close("struct_", 0, got[0], m0 * floatv[0] + 0.5 + 4);
  expect_close("struct_", 1, got[1], m1 * floatv[1] + 0.5 + 4);
}

static void check_printf(void) {
  float a[3] = {1, 2, 3}, s[3] = {4, -5, 6}, r[3] = {0.25f, 0.5f, 1};
  printf__NULL__t NULL_ = {(float*)to_lib(a, sizeof a), 3, 3};
  printf__size_t__t size_t_ = {(float*)to_lib(s, sizeof s), 3, 3};
  printf__run_t run = {(float*)to_lib(r, sizeof r), 3, 3};
  printf__result_t result = {(float*)lib_alloc(3 * sizeof(float)), 3, 3};
  expect_ok("printf_", printf_(&NULL_, &size_t_, 2.0f, -1.5f, &run, &result));
  float got[3];
  from_lib(got, result.data, sizeof got);
  double total = (double)r[0] + r[1] + r[2];
  for (int x = 0; x < 3; ++x) expect_close("printf_", x, got[x], (double)a[x] * s[x] + 2.0 * -1.5 + r[x] + total);
}

static void check_case(void) {
  float v[20];
  for (int q = 0; q < 20; ++q) v[q] = 0.5f * (float)(q + 1);
  float nv[2] = {1, -2}, sv[2] = {3, 0.25f}, kv[2] = {-1, 4};
  case__n_t n = {(float*)to_lib(nv, sizeof nv), 2, 2};
  case__status_t status = {(float*)to_lib(sv, sizeof sv), 2, 2};
  case__key_t key = {(float*)to_lib(kv, sizeof kv), 2, 2};
  case__result_t result = {(float*)lib_alloc(2 * sizeof(float)), 2, 2};
  expect_ok("case_", case_(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11], v[12], v[13], v[14],
                           v[15], v[16], v[17], v[18], v[19], &n, &status, &key, &result));
  float got[2];
  from_lib(got, result.data, sizeof got);
  /* hoist0 = 2 * (sum v[0..4]) + 3 * (sum v[5..9]) + 4 * (sum v[10..14]) + 5 * (sum v[15..19]) + sum(status) */
  double hoist0 = (double)sv[0] + sv[1];
  for (int q = 0; q < 20; ++q) hoist0 += (2 + q / 5) * (double)v[q];
  for (int x = 0; x < 2; ++x) expect_close("case_", x, got[x], (double)nv[x] * sv[x] + kv[x] + hoist0);
}

int main(void) {
  check_double();
  check_case();
  check_struct();
  check_printf();
  if (host_failures) {
    fprintf(stderr, "c_names host check: %d failure(s)\n", host_failures);
    return 1;
  }
  printf("c_names host check: OK\n");
  return 0;
}
