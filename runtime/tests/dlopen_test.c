/* Loads the fixture library (argv[1]) that links the static dccrt, runs it
 * and unloads it, several times: the runtime must work in a dlopen'd library
 * and its pool threads must be joined at dlclose (checked by counting the
 * process's threads; one left running in unmapped code would crash). Prints "ok" on success. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Threads of this process, from /proc/self/status; -1 if unknown. */
static int count_threads(void) {
  char line[256];
  int n = -1;
  FILE* f = fopen("/proc/self/status", "r");
  if (f == NULL) return -1;
  while (fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, "Threads:", 8) == 0) n = atoi(line + 8);
  }
  fclose(f);
  return n;
}

int main(int argc, char** argv) {
  int round;
  if (argc != 2) {
    fprintf(stderr, "usage: %s FIXTURE.so\n", argv[0]);
    return 2;
  }
  for (round = 0; round < 3; ++round) {
    void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    int (*run)(void);
    int rc;
    if (lib == NULL) {
      fprintf(stderr, "dlopen: %s\n", dlerror());
      return 1;
    }
    *(void**)(&run) = dlsym(lib, "fixture_run");
    if (run == NULL) {
      fprintf(stderr, "dlsym: %s\n", dlerror());
      return 1;
    }
    rc = run();
    if (rc != 0) {
      fprintf(stderr, "round %d: fixture_run returned %d\n", round, rc);
      return 1;
    }
    if (count_threads() < 2) {
      fprintf(stderr, "round %d: expected the pool's threads to be running\n", round);
      return 1;
    }
    if (dlclose(lib) != 0) {
      fprintf(stderr, "dlclose: %s\n", dlerror());
      return 1;
    }
    if (count_threads() != 1) {
      fprintf(stderr, "round %d: %d threads left after dlclose\n", round, count_threads());
      return 1;
    }
  }
  printf("ok\n");
  return 0;
}
