#!/usr/bin/env bash
# Runs `dccc --check` on every hostile input in this folder (.toy programs and
# .vloop IR text, listed with its
# expected exit status and diagnostic kind in expected.txt) and on a few
# larger ones generated here, and fails unless each ends in a diagnostic of
# the form `FILE:LINE:COL: error|warning: message [Kind]` with the expected
# exit status: never a crash, a hang or an internal error.
#
#   fuzz/regressions/run.sh path/to/dccc
set -uo pipefail

DCCC="${1:?usage: run.sh path/to/dccc}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
LIMIT_S=120
failures=0
count=0

fail() {
  echo "FAIL $1: $2"
  sed 's/^/    | /' "$TMP/stderr" | head -c 2000
  failures=$((failures + 1))
}

# check FILE EXPECTED_EXIT KIND  (EXPECTED_EXIT `any`: 0 or 1, and when 1 an
# error diagnostic of any kind; KIND `-` accepts any kind)
check() {
  local file="$1" want="$2" kind="$3" name
  name="$(basename "$file")"
  count=$((count + 1))
  timeout "$LIMIT_S" "$DCCC" --check "$file" >"$TMP/stdout" 2>"$TMP/stderr"
  local rc=$?
  if [[ $rc -eq 124 ]]; then fail "$name" "no answer within ${LIMIT_S}s (hang)"; return; fi
  if [[ $rc -ne 0 && $rc -ne 1 ]]; then fail "$name" "exit status $rc (crash or internal error)"; return; fi
  if grep -qi 'internal error' "$TMP/stderr"; then fail "$name" "internal error reported"; return; fi
  if [[ "$want" != any && $rc -ne $want ]]; then fail "$name" "exit status $rc, expected $want"; return; fi
  local severity='error' kind_re='[A-Za-z]+'
  [[ $rc -eq 0 ]] && severity='warning'
  [[ "$kind" != - ]] && kind_re="$kind"
  if [[ "$want" == any && $rc -eq 0 ]]; then
    echo "ok   $name (exit 0)"
    return
  fi
  # The file name as dccc prints it is the path it was given.
  local re="^$(printf '%s' "$file" | sed 's/[][\.*^$/]/\\&/g'):[0-9]+:[0-9]+: ${severity}: .+ \[${kind_re}\]\$"
  if ! grep -Eq "$re" "$TMP/stderr"; then
    fail "$name" "no \`$severity: ... [${kind}]\` diagnostic with a file:line:col location"
    return
  fi
  echo "ok   $name (exit $rc, $(grep -Eo "\[${kind_re}\]\$" "$TMP/stderr" | head -1))"
}

# The committed inputs, each listed in expected.txt.
declare -A listed=()
while read -r file want kind; do
  [[ -z "$file" || "$file" == \#* ]] && continue
  listed["$file"]=1
  if [[ ! -f "$HERE/$file" ]]; then
    echo "FAIL $file: listed in expected.txt but missing"
    failures=$((failures + 1))
    continue
  fi
  check "$HERE/$file" "$want" "$kind"
done <"$HERE/expected.txt"
for f in "$HERE"/*.toy "$HERE"/*.vloop; do
  [[ -f "$f" ]] || continue
  if [[ -z "${listed[$(basename "$f")]:-}" ]]; then
    echo "FAIL $(basename "$f"): not listed in expected.txt"
    failures=$((failures + 1))
  fi
done

# Generated inputs, too large to keep in the repository (awk, not python:
# a fresh machine may have no python3).
rep() { awk -v s="$1" -v n="$2" 'BEGIN { for (i = 0; i < n; i++) printf "%s", s }'; }
# A statement past the parser's token limit (20000).
{ printf 'const X = '; rep '1 + ' 120000; printf '1;\n'; } >"$TMP/gen_long_statement.toy"
# Long chains below that limit: deep left- or right-leaning trees without
# brackets, which the bracket-nesting limit does not see.
{ printf 'fn f(x: f32) f32 {\n    return '; rep 'x + ' 60000; printf 'x;\n}\n'; } >"$TMP/gen_long_sum.toy"
{ printf 'fn f(x: f32) f32 {\n    return '; rep '- ' 60000; printf 'x;\n}\n'; } >"$TMP/gen_unary_chain.toy"
{ printf 'fn f(c: bool) bool {\n    return '; rep '!' 60000; printf 'c;\n}\n'; } >"$TMP/gen_not_chain.toy"
{ printf 'fn f(x: f32) f32 {\n    return x'; rep '.a' 60000; printf ';\n}\n'; } >"$TMP/gen_field_chain.toy"
{ printf 'fn f(x: [4]f32) f32 {\n    return x'; rep '[0]' 60000; printf ';\n}\n'; } >"$TMP/gen_index_chain.toy"
awk 'BEGIN { for (i = 0; i < 20000; i++) printf "fn f%d(x: f32) f32 { return x; }\n", i }' \
  >"$TMP/gen_many_functions.toy"
awk 'BEGIN { for (i = 0; i < 5000; i++) printf "fn f%d() i32 { return nope%d; }\n", i, i }' \
  >"$TMP/gen_many_errors.toy"
# Megabyte tokens: a name, a name where `;` is missing, an unclosed comment.
{ printf 'fn '; rep a 1000000; printf '() { let }\n'; } >"$TMP/gen_long_name.toy"
{ printf 'fn f() { let x = 1 '; rep a 1000000; printf ' }\n'; } >"$TMP/gen_long_bad_token.toy"
{ printf '/*'; rep ' ' 1000000; printf '\n'; } >"$TMP/gen_long_comment.toy"
check "$TMP/gen_long_statement.toy" 1 ExpressionTooLong
for f in long_sum unary_chain not_chain field_chain index_chain many_functions long_name \
         long_bad_token long_comment; do
  check "$TMP/gen_$f.toy" any -
done
check "$TMP/gen_many_errors.toy" 1 UnknownName

echo "$count inputs, $failures failed"
[[ $failures -eq 0 ]]
