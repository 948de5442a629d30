#!/usr/bin/env bash
# Runs one pass test: IR text in, IR text out, checked by LLVM's FileCheck
# (docs/vloop.md, "Pass tests").
#
#   run_pass_test.sh DCCC FILECHECK FILE.vloop|FILE.toy
#
# FILE has exactly one line `// RUN: --passes=A[,B...] [dccc options]`. The
# runner runs
#   DCCC --emit=vloop --verify-each OPTIONS FILE
# (an `--emit=llvm` or `--emit=cuda` among OPTIONS replaces --emit=vloop, for
# a pass whose effect the IR text does not show: mark-written-first)
# and pipes its stdout to `FILECHECK FILE`, which checks the `// CHECK:`,
# `// CHECK-NEXT:`, `// CHECK-NOT:` ... lines of FILE against it (FileCheck
# reads only its CHECK lines; dccc skips `//` comments). A .toy FILE is for a
# pass whose input IR text cannot carry (apply-schedule: schedules name the
# source's assignments, which IR text does not record).
#
# With DCCC_PASS_TEST_WITHOUT=PASS in the environment, PASS is dropped from
# --passes= (fail_without.sh: every test must fail without its pass).
#
# The test fails on: no RUN line or more than one, a RUN line without
# --passes=, no CHECK line, dccc failing (an unknown pass is a usage error),
# an internal error (exit 70, death by signal, "internal error" on stderr),
# and a CHECK mismatch.
set -uo pipefail

if (($# != 3)); then
  echo "usage: run_pass_test.sh DCCC FILECHECK FILE" >&2
  exit 2
fi
dccc="$1"
filecheck="$2"
file="$3"
name="$(basename "$file")"

fail() {
  echo "pass test $name: $*"
  exit 1
}

[[ -r "$file" ]] || fail "cannot read $file"
mapfile -t runs < <(grep -E '^[[:space:]]*// RUN:' "$file")
((${#runs[@]} == 1)) || fail "expected exactly one \`// RUN: --passes=...\` line, found ${#runs[@]}"
read -r -a args <<<"${runs[0]#*// RUN:}"
has_passes=0
for k in "${!args[@]}"; do
  a="${args[$k]}"
  [[ "$a" == --passes=* ]] || continue
  has_passes=1
  if [[ -n "${DCCC_PASS_TEST_WITHOUT:-}" ]]; then
    IFS=, read -r -a names <<<"${a#--passes=}"
    kept=()
    for n in "${names[@]}"; do
      [[ "$n" == "$DCCC_PASS_TEST_WITHOUT" ]] || kept+=("$n")
    done
    args[$k]="--passes=$(IFS=,; echo "${kept[*]}")"
  fi
done
((has_passes)) || fail "the RUN line names no --passes= (a pass test runs the passes it names, no others)"
grep -qE '//[[:space:]]*CHECK(-[A-Z]+)?:' "$file" || fail "no \`// CHECK:\` line: a test without checks cannot fail"

out="$(mktemp)"
err="$(mktemp)"
trap 'rm -f "$out" "$err"' EXIT
"$dccc" --emit=vloop --verify-each "${args[@]}" "$file" >"$out" 2>"$err"
status=$?
if ((status != 0)); then
  cat "$err"
  if ((status == 70)); then
    fail "dccc exited with 70 (internal error)"
  elif ((status > 128)); then
    fail "dccc died by signal $((status - 128))"
  fi
  fail "dccc ${args[*]} exited with $status"
fi
if grep -q "internal error" "$err"; then
  cat "$err"
  fail "dccc reported an internal error"
fi
# Warnings and notes on stderr are shown, not checked.
cat "$err"
if ! "$filecheck" --input-file="$out" "$file"; then
  fail "CHECK lines do not match the IR after ${args[*]}"
fi
echo "pass test $name: ok"
