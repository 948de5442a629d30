/* The consumer's check of scaled.toy (tests/install/install_test.sh): a
 * ragged batch of three sequences (one empty), D = 3; every output must be
 * the input times FACTOR, the first argument (the factor scale.toy has
 * when the library was built), computed here in float64.
 *   scaled_check FACTOR */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "scaled.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: scaled_check FACTOR\n");
    return 2;
  }
  const double factor = atof(argv[1]);
  enum { B = 3, D = 3 };
  int32_t seqlen[B] = {2, 0, 3};
  enum { N = (2 + 0 + 3) * D };
  float x[N], y[N];
  for (int k = 0; k < N; ++k) x[k] = (float)(k % 7) * 0.25f - 0.5f;
  Rows in = {x, N, seqlen, B, B, D};
  Rows out = {y, N, NULL, 0, 0, 0};
  if (scaled_meta(&in, &out) != DCC_OK || out.data_len != N) {
    fprintf(stderr, "scaled_meta: %s\n", dcc_last_error());
    return 1;
  }
  out.data = y;
  if (scaled(&in, &out) != DCC_OK) {
    fprintf(stderr, "scaled: %s\n", dcc_last_error());
    return 1;
  }
  double worst = 0;
  for (int k = 0; k < N; ++k) worst = fmax(worst, fabs((double)x[k] * factor - (double)y[k]));
  printf("scaled: factor %g, max error %.2e\n", factor, worst);
  if (worst > 1e-6) {
    printf("scaled check: FAILED\n");
    return 1;
  }
  printf("scaled check: OK\n");
  return 0;
}
