#!/usr/bin/env bash
# Builds dccc and runs every test. The README's second quick-start command.
#
#   scripts/test.sh          setup, build the `default` preset (warnings are
#                            errors), run ctest
#   scripts/test.sh --full   also: the `asan` preset (ASan + UBSan) and its
#                            ctest run, the generated parallel loops and
#                            the prelude cache under TSan
#                            (scripts/tsan_check.sh), then the
#                            `fuzz` preset and 60 s of libFuzzer over the
#                            front end (what CI runs)
#
# DCCC_BUILD_PREFIX (default ROOT/build) names the build folders:
# PREFIX, PREFIX-asan, PREFIX-fuzz. DCCC_JOBS sets parallelism (default 2).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FULL=0
for arg in "$@"; do
  case "$arg" in
    --full) FULL=1 ;;
    -h | --help)
      sed -n '2,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "test: unknown argument \`$arg\`; expected --full" >&2
      exit 2
      ;;
  esac
done
PREFIX="${DCCC_BUILD_PREFIX:-$ROOT/build}"
JOBS="${DCCC_JOBS:-2}"
export DCCC_JOBS="$JOBS"

start=$SECONDS
# Each step says when it starts (seconds into the run), so a CI log shows
# where the time went.
step() { echo; echo "=== test: $* === (at $((SECONDS - start)) s)"; }
# A failing build stops the script; failing tests are recorded and the later
# stages still run, so that one CI run reports everything.
failed=()

step "setup"
"$ROOT/scripts/setup.sh"

step "build (default preset)"
"$ROOT/scripts/build.sh" default "$PREFIX"
step "ctest (default preset)"
# The long tests first where the build has run none yet (scripts/ctest_costs.sh).
"$ROOT/scripts/ctest_costs.sh" seed "$PREFIX" default
ctest --test-dir "$PREFIX" --output-on-failure -j "$JOBS" || failed+=("ctest (default)")

if [[ $FULL -eq 1 ]]; then
  step "build (asan preset: AddressSanitizer + UndefinedBehaviorSanitizer)"
  "$ROOT/scripts/build.sh" asan "$PREFIX-asan"
  step "ctest (asan preset)"
  "$ROOT/scripts/ctest_costs.sh" seed "$PREFIX-asan" asan
  ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}" \
    UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}" \
    ctest --test-dir "$PREFIX-asan" --output-on-failure -j "$JOBS" || failed+=("ctest (asan)")

  step "tsan (parallel loops of generated kernels; prelude cache from 8 threads)"
  DCCC="$PREFIX/tools/dccc" "$ROOT/scripts/tsan_check.sh" || failed+=("tsan")

  step "fuzz (fuzz preset, 60 s)"
  DCCC_FUZZ_BUILD_DIR="$PREFIX-fuzz" "$ROOT/scripts/fuzz.sh" 60 || failed+=("fuzz")
fi

elapsed=$((SECONDS - start))
if ((${#failed[@]})); then
  step "FAILED after ${elapsed} s: ${failed[*]}"
  exit 1
fi
step "all tests passed in ${elapsed} s$([[ $FULL -eq 1 ]] && echo ' (--full)')"
