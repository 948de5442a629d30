#!/usr/bin/env bash
# Every pass test must fail without its pass: runs each
# tests/passes/<pass>/<case> with <pass> dropped from its --passes= and
# requires a CHECK mismatch (not passing, and not some other failure). A test
# that passes without its pass checks nothing the pass does.
#
#   fail_without.sh DCCC FILECHECK DIR
set -uo pipefail
dccc="$1"
filecheck="$2"
dir="$3"
runner="$(dirname "${BASH_SOURCE[0]}")/run_pass_test.sh"
bad=0
count=0
for file in "$dir"/*/*.vloop "$dir"/*/*.toy; do
  [[ -e "$file" ]] || continue
  pass="$(basename "$(dirname "$file")")"
  count=$((count + 1))
  out="$(DCCC_PASS_TEST_WITHOUT="$pass" "$runner" "$dccc" "$filecheck" "$file" 2>&1)"
  if ! grep -q "CHECK lines do not match" <<<"$out"; then
    echo "fail_without: ${file#"$dir"/} does not fail on its CHECK lines without $pass:"
    tail -n 5 <<<"$out"
    bad=$((bad + 1))
  fi
done
if ((count == 0)); then
  echo "fail_without: no pass tests under $dir"
  exit 1
fi
if ((bad > 0)); then
  echo "fail_without: $bad of $count pass tests do not fail without their pass"
  exit 1
fi
echo "fail_without: all $count pass tests fail without their pass"
