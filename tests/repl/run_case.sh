#!/usr/bin/env bash
# Runs one REPL test case: feeds CASE.repl to `dccc repl` on stdin (not a
# terminal) from this folder, and compares what it printed, stdout and
# stderr together, followed by `exit status: N`, with CASE.out (written by
# hand). A first line `// ARGS: ...` gives `dccc repl` arguments (to the
# REPL itself that line is a comment).
#
#   run_case.sh DCCC CASE.repl
set -uo pipefail
dccc="$1"
input="$2"
expected="${input%.repl}.out"
cd "$(dirname "$input")" || exit 1
actual="$(mktemp)"
trap 'rm -f "$actual"' EXIT
args=()
first="$(head -n 1 "$(basename "$input")")"
if [[ "$first" == "// ARGS: "* ]]; then
  read -r -a args <<<"${first#// ARGS: }"
fi
"$dccc" repl "${args[@]}" <"$(basename "$input")" >"$actual" 2>&1
echo "exit status: $?" >>"$actual"
if ! diff -u "$(basename "$expected")" "$actual"; then
  echo "repl test $(basename "$input"): output differs from $(basename "$expected") (- expected, + actual)"
  exit 1
fi
echo "repl test $(basename "$input"): ok"
