/* Links the installed shared runtime (dccc::dccrt) and calls it. */
#include <dccrt.h>
#include <stdio.h>
#include <string.h>

int main(void) {
  const char* name = dcc_status_name(DCC_ERR_OVERFLOW);
  int64_t offsets[4];
  const int32_t lengths[3] = {2, 0, 5};
  dcc_status st = dcc_offsets_from_lengths(lengths, 3, offsets);
  if (strcmp(name, "DCC_ERR_OVERFLOW") != 0 || st != DCC_OK || offsets[3] != 7) {
    printf("rt_check: FAILED (%s, %d, %lld)\n", name, (int)st, (long long)offsets[3]);
    return 1;
  }
  printf("rt_check: OK\n");
  return 0;
}
