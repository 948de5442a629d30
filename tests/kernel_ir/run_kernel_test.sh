#!/usr/bin/env bash
# Runs one kernel-IR text test (no GPU, no nvcc): a .toy program whose one
# `// RUN: [dccc options]` line is added to `dccc --emit=kernel` (or whose
# options hold --emit=cuda, for the printer's CUDA text), with stdout checked
# by LLVM's FileCheck against the file's `// CHECK:` lines (docs/cuda.md,
# "Reading --emit=kernel").
#
#   run_kernel_test.sh DCCC FILECHECK FILE.toy
#
# Fails on: no RUN line or more than one, no CHECK line, dccc failing, and a
# CHECK mismatch.
set -uo pipefail
if (($# != 3)); then
  echo "usage: run_kernel_test.sh DCCC FILECHECK FILE" >&2
  exit 2
fi
dccc="$1"
filecheck="$2"
file="$3"
name="$(basename "$file")"
fail() {
  echo "kernel test $name: $*"
  exit 1
}
mapfile -t runs < <(grep -E '^[[:space:]]*// RUN:' "$file")
((${#runs[@]} == 1)) || fail "expected exactly one \`// RUN:\` line, found ${#runs[@]}"
grep -qE '// CHECK(-NEXT|-NOT|-SAME)?:' "$file" || fail "no CHECK line"
read -r -a args <<<"${runs[0]#*// RUN:}"
emit=--emit=kernel
for a in "${args[@]}"; do [[ "$a" == --emit=* ]] && emit=""; done
out="$("$dccc" $emit "${args[@]}" "$file" 2>&1)"
rc=$?
((rc == 0)) || fail "dccc exited with $rc: $out"
printf '%s\n' "$out" | "$filecheck" "$file" || fail "CHECK mismatch"
echo "kernel test $name: ok"
