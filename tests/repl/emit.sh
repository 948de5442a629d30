#!/usr/bin/env bash
# `:emit vloop|llvm|cuda NAME` in `dccc repl`, checked against other tools:
# the vloop IR and the CUDA C++ must equal what `dccc --emit=vloop` and
# `dccc --emit=cuda` print for the same function in a file, and the LLVM IR
# must be accepted by LLVM's own assembler (llvm-as) and define the
# function's kernel.
#
#   emit.sh DCCC LLVM_AS
set -uo pipefail
dccc="$1"
llvm_as="$2"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "repl emit test: $*"
  exit 1
}

cat >"$tmp/scale.toy" <<'TOY'
fn scale(x: [N]f32, s: f32) [N]f32 {
  let y: [N]f32;
  y[i] = x[i] * s + 1.0;
  return y;
}
TOY
"$dccc" --emit=vloop "$tmp/scale.toy" >"$tmp/expected.vloop" || fail "dccc --emit=vloop failed"
grep -q 'func scale' "$tmp/expected.vloop" || fail "dccc --emit=vloop printed no function"

{ cat "$tmp/scale.toy"; echo ':emit vloop scale'; } | "$dccc" repl >"$tmp/repl.vloop" 2>"$tmp/err" ||
  fail "dccc repl failed: $(cat "$tmp/err")"
diff -u "$tmp/expected.vloop" "$tmp/repl.vloop" || fail ":emit vloop differs from dccc --emit=vloop"

{ cat "$tmp/scale.toy"; echo ':emit llvm scale'; } | "$dccc" repl >"$tmp/repl.ll" 2>"$tmp/err" ||
  fail "dccc repl failed: $(cat "$tmp/err")"
"$llvm_as" "$tmp/repl.ll" -o "$tmp/repl.bc" || fail "llvm-as rejects the :emit llvm output"
grep -q '^define .*@scale__kernel(' "$tmp/repl.ll" || fail ":emit llvm does not define @scale__kernel"
grep -q 'fmul\|fma' "$tmp/repl.ll" || fail ":emit llvm has no multiplication"

"$dccc" --emit=cuda "$tmp/scale.toy" >"$tmp/expected.cu" || fail "dccc --emit=cuda failed"
grep -q 'scale__cuda' "$tmp/expected.cu" || fail "dccc --emit=cuda printed no scale__cuda"
{ cat "$tmp/scale.toy"; echo ':emit cuda scale'; } | "$dccc" repl >"$tmp/repl.cu" 2>"$tmp/err" ||
  fail "dccc repl failed: $(cat "$tmp/err")"
diff -u "$tmp/expected.cu" "$tmp/repl.cu" || fail ":emit cuda differs from dccc --emit=cuda"

# Names that are not functions of the session.
printf 'let v = 1;\n:emit vloop v\n:emit llvm scale\n:emit cuda scale\n' | "$dccc" repl >"$tmp/out" 2>&1
status=$?
[[ $status -eq 1 ]] || fail "errors should give exit status 1, got $status"
cat >"$tmp/expected" <<'TXT'
error: no function `v` in this session (none declared yet)
error: no function `scale` in this session (none declared yet)
error: no function `scale` in this session (none declared yet)
TXT
diff -u "$tmp/expected" "$tmp/out" || fail "unexpected messages for bad :emit requests"
echo "repl emit test: ok"
