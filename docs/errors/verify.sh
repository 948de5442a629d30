#!/usr/bin/env bash
# Re-verifies the examples of docs/errors.md.
#
#   docs/errors/verify.sh path/to/dccc
#
# For every diagnostic kind K with a file K.toy (or K.vloop, IR text, for
# the kinds of the IR parser) in this directory:
#   - `dccc K.toy` must report `[K]`, exit 1 (exit 0 when K is a warning in
#     support/diagnostic_kinds.def), and not report an internal error;
#   - `dccc K.fixed.toy` (K.fixed.vloop) must exit 0 and print nothing on stderr (in the
#     default --check mode it prints nothing at all).
# An example whose first line is `// dccc-args: ARGS` is run as
# `dccc ARGS FILE` instead (Unsupported.toy uses `// dccc-args: run`, since
# only lowering reports that kind); the same ARGS apply to its fixed file.
# It also fails when a non-note kind of diagnostic_kinds.def has no example
# pair here (other than the two excluded kinds below), or when a pair is
# incomplete.
#
# Excluded on purpose:
#   - ExpressionTooLong: the bad example needs a statement of more than
#     20000 tokens; errors.md describes it instead of shipping a ~40 KB file,
#     so there is no ExpressionTooLong.toy.
#   (ProofUnknown is checked like the others: the solver's budget is a
#   deterministic resource limit, not a timeout.)
set -u

if [ $# -ne 1 ]; then
  echo "usage: $0 path/to/dccc" >&2
  exit 2
fi
dccc=$1
if [ ! -x "$dccc" ]; then
  echo "verify.sh: \`$dccc\` is not an executable" >&2
  exit 2
fi

here=$(cd "$(dirname "$0")" && pwd)
def="$here/../../support/diagnostic_kinds.def"
excluded="ExpressionTooLong"

is_excluded() {
  local k
  for k in $excluded; do [ "$k" = "$1" ] && return 0; done
  return 1
}

# Severity of a kind according to diagnostic_kinds.def (empty if unknown).
severity() {
  [ -f "$def" ] || return 0
  sed -n "s/^DIAG(\($1\), *\([A-Za-z]*\),.*/\2/p" "$def"
}

# Extra arguments from a first line `// dccc-args: ARGS` (none otherwise).
args_of() {
  sed -n '1s|^// dccc-args: *||p' "$1"
}

run_dccc() {  # file args -> sets $out (stdout and stderr), $err (stderr), $rc
  local errf
  errf=$(mktemp)
  # shellcheck disable=SC2086  # ARGS are words
  out=$(timeout 120 "$dccc" $2 "$1" 2>"$errf")
  rc=$?
  err=$(cat "$errf")
  rm -f "$errf"
  out="$out${out:+${err:+$'\n'}}$err"
}

pass=0
fail=0
skipped=0
failed() {
  echo "FAIL $1"
  [ -n "${2:-}" ] && printf '%s\n' "$2" | sed 's/^/    | /'
  fail=$((fail + 1))
}

# Every kind of the .def (notes aside) must have a pair unless excluded.
if [ -f "$def" ]; then
  for k in $(sed -n 's/^DIAG(\([A-Za-z]*\), *\(Error\|Warning\),.*/\1/p' "$def"); do
    case "$k" in ExpressionTooLong | ProofUnknown) continue ;; esac
    [ -f "$here/$k.toy" ] || [ -f "$here/$k.vloop" ] || failed "$k: no example $k.toy (or $k.vloop)"
  done
else
  echo "note: $def not found; not checking that every kind has an example"
fi

for bad in "$here"/*.toy "$here"/*.vloop; do
  [ -f "$bad" ] || continue
  ext=${bad##*.}
  name=$(basename "$bad" ".$ext")
  case "$name" in *.fixed) continue ;; esac
  kind=$name
  fixed="$here/$kind.fixed.$ext"
  if is_excluded "$kind"; then
    echo "SKIP $kind (excluded; see the comment at the top of verify.sh)"
    skipped=$((skipped + 1))
    continue
  fi
  sev=$(severity "$kind")
  if [ -f "$def" ] && [ -z "$sev" ]; then
    failed "$kind: not a kind of diagnostic_kinds.def"
    continue
  fi
  want_rc=1
  [ "$sev" = Warning ] && want_rc=0

  ok=1
  args=$(args_of "$bad")
  run_dccc "$bad" "$args"
  if [ $rc -ge 2 ] || printf '%s' "$out" | grep -q "internal error"; then
    failed "$kind.$ext: dccc crashed or failed (exit $rc)" "$out"; ok=0
  elif ! printf '%s' "$out" | grep -qF "[$kind]"; then
    failed "$kind.$ext: no [$kind] diagnostic (exit $rc)" "$out"; ok=0
  elif [ $rc -ne $want_rc ]; then
    failed "$kind.$ext: exit $rc, expected $want_rc" "$out"; ok=0
  fi

  if [ ! -f "$fixed" ]; then
    failed "$kind: no fixed example $kind.fixed.$ext"; ok=0
  else
    run_dccc "$fixed" "$args"
    if [ $rc -ne 0 ]; then
      failed "$kind.fixed.$ext: exit $rc, expected 0" "$out"; ok=0
    elif [ -n "$err" ]; then
      failed "$kind.fixed.$ext: exit 0 but dccc printed diagnostics" "$out"; ok=0
    elif [ -z "$args" ] && [ -n "$out" ]; then
      failed "$kind.fixed.$ext: exit 0 but dccc printed output" "$out"; ok=0
    fi
  fi
  if [ $ok = 1 ]; then
    echo "ok   $kind${args:+ (dccc $args)}"
    pass=$((pass + 1))
  fi
done

# A fixed example without its bad example is a leftover.
for fixed in "$here"/*.fixed.toy "$here"/*.fixed.vloop; do
  [ -f "$fixed" ] || continue
  ext=${fixed##*.}
  kind=$(basename "$fixed" ".fixed.$ext")
  [ -f "$here/$kind.$ext" ] || failed "$kind.fixed.$ext: no matching $kind.$ext"
done

echo "verify.sh: $pass passed, $fail failed, $skipped skipped"
[ $fail -eq 0 ]
