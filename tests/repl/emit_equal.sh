#!/usr/bin/env bash
# `:emit STAGE` in `dccc repl` after `:load FILE` prints byte for byte what
# `dccc --emit=STAGE FILE` prints, for every example and every stage (vloop,
# llvm, cuda): both run the one pass list of ir/pipeline.cpp. Where the
# driver refuses a stage (the CUDA target cannot express a program), the
# REPL must refuse it too.
#
# DCCC_TEST_SAMPLE=N (the asan preset sets 3) compares every Nth example:
# under the sanitizers the test looks for memory errors in the REPL.
#
#   emit_equal.sh DCCC EXAMPLES_DIR
set -uo pipefail
dccc="$1"
examples="$2"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
failed=0
compared=0
sample="${DCCC_TEST_SAMPLE:-1}"
nth=0
for toy in "$examples"/*.toy; do
  nth=$((nth + 1))
  ((nth % sample == 0)) || continue
  for stage in vloop llvm cuda; do
    "$dccc" --emit="$stage" "$toy" >"$tmp/driver" 2>"$tmp/driver.err"
    driver_rc=$?
    printf ':load %s\n:emit %s\n' "$toy" "$stage" | "$dccc" repl >"$tmp/repl" 2>"$tmp/repl.err"
    repl_rc=$?
    name="$(basename "$toy") --emit=$stage"
    if [[ $driver_rc -ne 0 ]]; then
      if [[ $repl_rc -eq 0 ]]; then
        echo "FAIL $name: dccc refuses it (exit $driver_rc) but :emit $stage succeeds"
        failed=1
      fi
      continue
    fi
    if [[ $repl_rc -ne 0 ]]; then
      echo "FAIL $name: :emit $stage failed (exit $repl_rc): $(head -n 3 "$tmp/repl.err")"
      failed=1
      continue
    fi
    if ! cmp -s "$tmp/driver" "$tmp/repl"; then
      echo "FAIL $name: :emit $stage differs from dccc --emit=$stage (- driver, + repl):"
      diff -u "$tmp/driver" "$tmp/repl" | head -n 20
      failed=1
      continue
    fi
    compared=$((compared + 1))
  done
done
if [[ $compared -eq 0 ]]; then
  echo "repl emit_equal: nothing compared"
  exit 1
fi
[[ $failed -eq 0 ]] || exit 1
echo "repl emit_equal: $compared outputs byte-identical"
