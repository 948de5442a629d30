#!/usr/bin/env bash
# Builds the `fuzz` preset and runs the libFuzzer target over the whole
# front end (parse + check) for a bounded time.
#
#   scripts/fuzz.sh [SECONDS]     (default 60)
#
# The seed corpus is examples/*.toy and tests/lang/**/*.toy, copied into a
# temporary folder at run time; fuzz/dcc.dict is the dictionary. The inputs
# in fuzz/regressions/ are run once first. Fails on any crash, hang (an input
# over 10 s), sanitizer report, leak or out-of-memory (4 GiB); reproducers are
# kept under BUILD_DIR/fuzz-artifacts/ (replay one with
# `BUILD_DIR/fuzz/fuzz_frontend FILE`). DCCC_FUZZ_BUILD_DIR overrides
# BUILD_DIR (default build-fuzz/).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SECONDS_TO_RUN="${1:-60}"
BUILD_DIR="${DCCC_FUZZ_BUILD_DIR:-$ROOT/build-fuzz}"

# Only the fuzz target: the rest of the tree is built and tested by the
# default and asan presets.
"$ROOT/scripts/build.sh" fuzz "$BUILD_DIR" fuzz_frontend
FUZZER="$BUILD_DIR/fuzz/fuzz_frontend"
ARTIFACTS="$BUILD_DIR/fuzz-artifacts"
mkdir -p "$ARTIFACTS"

CORPUS="$(mktemp -d)"
trap 'rm -rf "$CORPUS"' EXIT
seeds=0
while IFS= read -r -d '' f; do
  rel="${f#"$ROOT"/}"
  cp "$f" "$CORPUS/${rel//\//__}"
  seeds=$((seeds + 1))
done < <(find "$ROOT/examples" "$ROOT/tests/lang" -name '*.toy' -type f -print0 2>/dev/null)
echo "fuzz: $seeds seed inputs from examples/ and tests/lang/"

export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"

# Each regression input once (libFuzzer runs file arguments one by one).
echo "fuzz: replaying fuzz/regressions/"
"$FUZZER" -timeout=10 -rss_limit_mb=4096 -artifact_prefix="$ARTIFACTS/" \
  "$ROOT"/fuzz/regressions/*.toy 2>"$BUILD_DIR/fuzz-regressions.log" || {
  tail -50 "$BUILD_DIR/fuzz-regressions.log"
  echo "fuzz: FAILED on a regression input (log: $BUILD_DIR/fuzz-regressions.log)" >&2
  exit 1
}

before="$(find "$ARTIFACTS" -type f | wc -l)"
echo "fuzz: running $FUZZER for ${SECONDS_TO_RUN}s"
set +e
"$FUZZER" -max_total_time="$SECONDS_TO_RUN" -timeout=10 -rss_limit_mb=4096 \
  -dict="$ROOT/fuzz/dcc.dict" -artifact_prefix="$ARTIFACTS/" -print_final_stats=1 \
  "$CORPUS" 2>"$BUILD_DIR/fuzz.log"
rc=$?
set -e
after="$(find "$ARTIFACTS" -type f | wc -l)"
grep -E '^(INFO: Seed:|Done|stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb))' \
  "$BUILD_DIR/fuzz.log" || true
if [[ $rc -ne 0 || "$after" -ne "$before" ]]; then
  grep -E -A40 'ERROR: |==[0-9]+==|runtime error|internal error' "$BUILD_DIR/fuzz.log" | head -80 >&2 || true
  echo "fuzz: FAILED (exit $rc); rerun the same mutations with -seed= and the seed above; reproducers in $ARTIFACTS/:" >&2
  find "$ARTIFACTS" -type f -newer "$BUILD_DIR/fuzz-regressions.log" >&2 || true
  echo "fuzz: full log: $BUILD_DIR/fuzz.log" >&2
  exit 1
fi
echo "fuzz: no crash in ${SECONDS_TO_RUN}s"
