#!/usr/bin/env bash
# dccc on its own IR text, end to end through the driver:
#   - for every examples/*.toy and tests/lang/run/*.toy, `dccc --emit=vloop`
#     of the printed IR (after storage lowering, and with
#     --no-storage-lowering) prints it back unchanged;
#   - for every tests/lang/run/*.toy, `dccc run` of its IR text (interpreted,
#     and with --jit) and of its unlowered IR text prints what `dccc run` of
#     the program prints, with the same exit status (running the unlowered
#     text lowers its storage from the text; the result need not print as the
#     program's does, since nested statement sequences print flat and an aux
#     array's fill may land one statement later, but it must compute the same);
#   - `dccc --emit=cuda` of every example's IR text for the CUDA target
#     (`--emit=vloop --target=cuda`) equals that of the example, but for
#     one documented difference: IR text read back zero-fills every local
#     (`dalloc(..., false)` skips the fill where the example's first
#     statement stores every element, found on the multi-index IR; see
#     ir/written_first.h), so `, false)` is dropped from the example's.
#
# DCCC_TEST_SAMPLE=N (the default preset sets 2, the asan preset 6) checks
# every Nth tests/lang/run program and, for N >= 3, every (N / 3)th example:
# unit/ir/IrParser.* round-trip and run every example and program in-process
# (half of them under ASan, tests/unit/program_files.h), this test the
# driver's reading of the text; under the sanitizers it looks for memory
# errors in the IR reader (each dccc run there starts in about 0.5 s), and a
# sixth of the programs with half the examples reach every statement kind
# while keeping CI short.
#
#   tests/vloop/driver_roundtrip.sh path/to/dccc
set -uo pipefail

DCCC="${1:?usage: driver_roundtrip.sh path/to/dccc}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
failures=0
checked=0
fail() {
  echo "FAIL $1: $2"
  failures=$((failures + 1))
}

# -D arguments of a `// RUN:` line.
defines() { sed -n 's|^// RUN: run||p' "$1" | grep -o -- '-D[A-Za-z_][A-Za-z0-9_]*=-\{0,1\}[0-9]*' | tr '\n' ' '; }

sample="${DCCC_TEST_SAMPLE:-1}"
nth=0
nth_example=0
example_sample=$((sample >= 3 ? sample / 3 : 1))
min_checked=40
[[ "$sample" -gt 1 ]] && min_checked=$((40 / sample))
for toy in "$ROOT"/examples/*.toy "$ROOT"/tests/lang/run/*.toy; do
  name="${toy#"$ROOT"/}"
  if [[ "$name" == tests/lang/run/* ]]; then
    nth=$((nth + 1))
    ((nth % sample == 0)) || continue
  else
    nth_example=$((nth_example + 1))
    ((nth_example % example_sample == 0)) || continue
  fi
  args=$(defines "$toy")
  # shellcheck disable=SC2086  # ARGS are words
  if ! "$DCCC" --emit=vloop $args "$toy" >"$TMP/low.vloop" 2>"$TMP/err"; then
    echo "skip $name (does not lower: $(head -1 "$TMP/err"))"
    continue
  fi
  # shellcheck disable=SC2086
  "$DCCC" --emit=vloop --no-storage-lowering $args "$toy" >"$TMP/plain.vloop" 2>/dev/null
  checked=$((checked + 1))
  "$DCCC" --emit=vloop "$TMP/low.vloop" >"$TMP/low2" 2>"$TMP/err" || fail "$name" "its IR text does not parse: $(head -3 "$TMP/err")"
  cmp -s "$TMP/low.vloop" "$TMP/low2" || fail "$name" "--emit=vloop of its IR text differs: $(diff "$TMP/low.vloop" "$TMP/low2" | head -5)"
  "$DCCC" --emit=vloop --no-storage-lowering "$TMP/plain.vloop" >"$TMP/plain2" 2>"$TMP/err" ||
    fail "$name" "its unlowered IR text does not parse: $(head -3 "$TMP/err")"
  cmp -s "$TMP/plain.vloop" "$TMP/plain2" || fail "$name" "--emit=vloop --no-storage-lowering of its IR text differs"
  "$DCCC" --emit=vloop "$TMP/plain.vloop" >/dev/null 2>"$TMP/err" || fail "$name" "storage lowering of its unlowered IR text fails: $(head -3 "$TMP/err")"
  case "$name" in
    examples/*)
      # The IR the CUDA target gets (the CPU's also has its loops reordered).
      # shellcheck disable=SC2086
      "$DCCC" --emit=vloop --target=cuda $args "$toy" >"$TMP/cuda.vloop" 2>/dev/null
      "$DCCC" --emit=cuda "$toy" 2>/dev/null | sed 's/^\(    if (!dalloc(.*\), false)) {/\1)) {/' >"$TMP/a.cu"
      "$DCCC" --emit=cuda "$TMP/cuda.vloop" >"$TMP/b.cu" 2>/dev/null
      cmp -s "$TMP/a.cu" "$TMP/b.cu" || fail "$name" "--emit=cuda of its IR text differs from the example's"
      ;;
    tests/lang/run/*)
      # shellcheck disable=SC2086
      "$DCCC" run $args "$toy" >"$TMP/want" 2>/dev/null
      want=$?
      for how in "run $TMP/low.vloop" "run --jit $TMP/low.vloop" "run $TMP/plain.vloop"; do
        # shellcheck disable=SC2086
        "$DCCC" $how >"$TMP/got" 2>/dev/null
        got=$?
        [[ $got -eq $want ]] || fail "$name" "\`dccc ${how/$TMP\//}\` exited with $got, the program with $want"
        cmp -s "$TMP/want" "$TMP/got" || fail "$name" "\`dccc ${how/$TMP\//}\` printed something else than the program"
      done
      ;;
  esac
done
echo "$checked programs, $failures failures"
[[ $checked -ge $min_checked && $failures -eq 0 ]]
