/* A C host of examples/softmax.toy: a ragged batch of three sequences (one
 * empty) with two heads, softmax over each sequence's own positions,
 * checked against a float64 softmax computed here. Used by the install test
 * (tests/install/) and the tutorial (docs/tutorial.md).
 *
 *   dccc examples/softmax.toy -o softmax.so
 *   cc -std=c11 -I. examples/host/softmax_host.c softmax.so -lm -Wl,-rpath,. -o host && ./host
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "softmax.h"

int main(void) {
  enum { B = 3, H = 2 };
  int32_t seqlen[B] = {4, 0, 3};
  int64_t total = 0;
  for (int b = 0; b < B; ++b) total += seqlen[b];
  float* x = malloc(sizeof(float) * (size_t)(total * H));
  for (int64_t k = 0; k < total * H; ++k) x[k] = (float)((k * 7) % 11) / 3.0f - 1.5f;

  Seqs in = {x, total * H, seqlen, B, B, H};
  Seqs out = {0};
  if (softmax_meta(&in, &out) != DCC_OK) {
    fprintf(stderr, "softmax_meta: %s\n", dcc_last_error());
    return 1;
  }
  out.data = malloc(sizeof(float) * (size_t)out.data_len);
  dcc_status st = softmax(&in, &out);
  if (st != DCC_OK) {
    fprintf(stderr, "softmax: %s\n", dcc_last_error());
    return 1;
  }
  /* The float64 reference: rows of sequence b start at its offset. */
  double worst = 0;
  int64_t row = 0;
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < H; ++h) {
      double m = -INFINITY, sum = 0;
      for (int i = 0; i < seqlen[b]; ++i) m = fmax(m, x[(row + i) * H + h]);
      for (int i = 0; i < seqlen[b]; ++i) sum += exp(x[(row + i) * H + h] - m);
      for (int i = 0; i < seqlen[b]; ++i) {
        double want = exp(x[(row + i) * H + h] - m) / sum;
        worst = fmax(worst, fabs(want - out.data[(row + i) * H + h]));
      }
    }
    row += seqlen[b];
  }
  /* A negative length is refused, nothing written. */
  seqlen[1] = -1;
  int refused = softmax(&in, &out) == DCC_ERR_NEGATIVE_LENGTH;
  printf("softmax: %lld rows, max error %.2e against float64\n", (long long)total, worst);
  free(x);
  free(out.data);
  if (worst > 1e-6 || !refused) {
    printf("softmax host check: FAILED (%s)\n", refused ? "error too large" : "a negative length was accepted");
    return 1;
  }
  printf("softmax host check: OK\n");
  return 0;
}
