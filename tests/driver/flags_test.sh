#!/usr/bin/env bash
# CTest driver/<case>: the target, debug, dependency and diagnostics flags
# of dccc (`dccc --help`; docs/install.md and docs/errors.md). Each case
# checks what the flag must change with a tool other than dccc (objdump,
# readelf, Python's json, a pty), and runs a C host where a library is
# built, so that it can fail.
#   flags_test.sh CASE DCCC SOURCE_DIR
# CASE: help, cpu, opt, debug, cuda_arch, depfile, runtime, json, sarif, color,
#       fixit
set -euo pipefail
CASE="$1"; DCCC="$2"; SRC="$3"
PY=/usr/bin/python3
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "driver/$CASE: FAILED: $*"; exit 1; }
toy="$SRC/examples/softmax.toy"
bad="$SRC/tests/driver/two_errors.toy"
# The assignment lines of softmax.toy, read from the source (`x[...] = ...`).
assign_lines() { grep -n '^ *[a-z.]*\[[^]]*\]\(\[[^]]*\]\)\? = ' "$toy" | cut -d: -f1; }
# Builds the library and runs examples/host/softmax_host.c against it.
host() {  # host NAME [DCCC FLAGS...]
  local name="$1"; shift
  mkdir -p "$tmp/$name"
  "$DCCC" "$toy" -o "$tmp/$name/softmax.so" "$@" 2>/dev/null
  # A host calling dcc_* itself links the shared runtime the library uses.
  local rt=()
  if readelf -d "$tmp/$name/softmax.so" | grep -q 'NEEDED.*libdccrt'; then
    local so
    so="$("$DCCC" --print-runtime | sed -n 's/^shared: //p')"
    rt=("$so" -Wl,-rpath,"$(dirname "$so")")
  fi
  cc -std=c11 -I"$tmp/$name" "$SRC/examples/host/softmax_host.c" "$tmp/$name/softmax.so" ${rt[@]+"${rt[@]}"} -lm \
     -Wl,-rpath,"$tmp/$name" -o "$tmp/$name/host"
  "$tmp/$name/host" | grep -q 'softmax host check: OK' || fail "the host of the $name library"
}
usage_error() {  # usage_error ARGS...: dccc must exit 2
  local rc=0
  "$DCCC" "$@" >/dev/null 2>&1 || rc=$?
  [ "$rc" = 2 ] || fail "\`dccc $*\` exited $rc, not 2 (bad usage)"
}

case "$CASE" in
help)
  out="$("$DCCC" --help)"
  for f in --cpu= --cuda-arch= -O0 -O3 " -g " -lineinfo -MD "-MF FILE" --color= --diagnostics-format= --print-runtime \
           --runtime=static; do
    grep -q -- "$f" <<<"$out" || fail "\`dccc --help\` does not mention $f"
  done
  ;;
cpu)
  # x86-64-v2 (and the default) must not use AVX or AVX-512 registers nor
  # libmvec's AVX2 (_ZGVd) and AVX-512 (_ZGVe) entry points; x86-64-v4 does.
  [ "$(uname -m)" = x86_64 ] || { echo "SKIP: not x86-64"; exit 77; }
  for c in default x86-64-v2 x86-64-v4; do
    flags=(); [ "$c" = default ] || flags=(--cpu="$c")
    host "$c" ${flags[@]+"${flags[@]}"}
    objdump -d --no-show-raw-insn "$tmp/$c/softmax.so" >"$tmp/$c.s"
    nm -D "$tmp/$c/softmax.so" >"$tmp/$c.nm"
  done
  for c in default x86-64-v2; do
    if grep -q '%[yz]mm' "$tmp/$c.s"; then fail "--cpu=$c code uses ymm/zmm registers"; fi
    if grep -q '_ZGV[de]N' "$tmp/$c.nm"; then fail "--cpu=$c calls AVX2/AVX-512 libmvec functions"; fi
  done
  grep -q '%zmm' "$tmp/x86-64-v4.s" || fail "--cpu=x86-64-v4 code has no AVX-512 (zmm) instruction"
  # libmvec's entry points follow the CPU: mha_bf16's exp loop (scores kept)
  # vectorizes 8 wide, which LLVM's own table maps to the AVX2 _ZGVdN8v_expf
  # even for a CPU without AVX2 (wrong results from xmm arguments, an
  # illegal instruction on such a CPU). x86-64-v2 gets the SSE entry point,
  # x86-64-v3 the AVX2 one, x86-64-v4 the AVX-512 one too.
  for c in x86-64-v2 x86-64-v3 x86-64-v4; do
    "$DCCC" "$SRC/examples/mha_bf16.toy" "--schedule=schedule mha_bf16 { materialize(scores); }" --cpu="$c" \
      -o "$tmp/mb_$c.so" 2>/dev/null
    nm -D "$tmp/mb_$c.so" | grep -o '_ZGV[A-Za-z0-9_]*' | sort -u | tr '\n' ' ' >"$tmp/mb_$c.nm"
  done
  grep -q '_ZGVbN4v_expf' "$tmp/mb_x86-64-v2.nm" || fail "--cpu=x86-64-v2 mha_bf16 has no SSE libmvec exp"
  if grep -q '_ZGV[cde]N' "$tmp/mb_x86-64-v2.nm"; then
    fail "--cpu=x86-64-v2 mha_bf16 calls AVX libmvec functions: $(cat "$tmp/mb_x86-64-v2.nm")"
  fi
  grep -q '_ZGVdN8v_expf' "$tmp/mb_x86-64-v3.nm" || fail "--cpu=x86-64-v3 mha_bf16 has no AVX2 libmvec exp"
  if grep -q '_ZGVeN' "$tmp/mb_x86-64-v3.nm"; then fail "--cpu=x86-64-v3 mha_bf16 calls AVX-512 libmvec functions"; fi
  grep -q '_ZGVeN16v_expf' "$tmp/mb_x86-64-v4.nm" || fail "--cpu=x86-64-v4 mha_bf16 has no AVX-512 libmvec exp"
  # The library's metadata (dccc_module_info, --emit=metadata) names the CPU
  # it was compiled for; `native` is resolved to this machine's CPU name.
  for c in default x86-64-v4; do
    want="$c"; [ "$c" = default ] && want=x86-64-v2
    grep -aq "\"arch\": \"$want\"" "$tmp/$c/softmax.so" || fail "the --cpu=$c library's metadata does not name $want"
  done
  "$DCCC" "$toy" --emit=metadata --cpu=native | grep -q '"arch": "native"' && fail "--emit=metadata left --cpu=native unresolved"
  "$DCCC" "$toy" --emit=metadata --cpu=x86-64-v3 | grep -q '"arch": "x86-64-v3"' || fail "--emit=metadata ignores --cpu"
  usage_error "$toy" --cpu=pentium-pro-max -o "$tmp/x.so"
  ;;
opt)
  # -O0 runs no loop vectorizer and keeps the stack slots (no mem2reg); -O3
  # vectorizes loops and promotes the slots. Both libraries run.
  "$DCCC" "$toy" --emit=llvm --cpu=x86-64-v3 -O0 >"$tmp/o0.ll"
  "$DCCC" "$toy" --emit=llvm --cpu=x86-64-v3 -O3 >"$tmp/o3.ll"
  if grep -q 'llvm.loop.isvectorized' "$tmp/o0.ll"; then fail "-O0 ran the loop vectorizer"; fi
  grep -q 'llvm.loop.isvectorized' "$tmp/o3.ll" || fail "-O3 vectorized no loop"
  [ "$(grep -c ' = alloca ' "$tmp/o0.ll")" -gt "$(grep -c ' = alloca ' "$tmp/o3.ll")" ] ||
    fail "-O0 IR has no more stack slots than -O3 IR"
  host O0 -O0
  host O1 -O1
  usage_error "$toy" -O4
  ;;
debug)
  # -g: DWARF line rows in softmax.toy at each of its assignments (decoded
  # by objdump); none without -g.
  host g -g
  host nog
  objdump --dwarf=decodedline "$tmp/g/softmax.so" | awk '$1 == "softmax.toy" {print $2}' | sort -un >"$tmp/rows"
  [ -s "$tmp/rows" ] || fail "-g library has no line rows in softmax.toy"
  for line in $(assign_lines); do
    grep -qx "$line" "$tmp/rows" || fail "-g has no line row for softmax.toy:$line ($(sed -n "${line}p" "$toy" | tr -s ' '))"
  done
  [ "$(assign_lines | wc -l)" -ge 4 ] || fail "expected four assignments in softmax.toy"
  if objdump --dwarf=decodedline "$tmp/nog/softmax.so" | grep -q 'softmax\.toy'; then
    fail "a library built without -g names softmax.toy"
  fi  # A statement of an imported file, inlined into the caller, has that
  # file's name and line (rows.toy:12), the caller's its own (main.toy:6);
  # main.toy has 8 lines.
  mkdir "$tmp/imp"
  { for k in 1 2 3 4 5 6 7 8 9; do echo "// line $k"; done
    printf 'fn double_all(x: [N]f32) [N]f32 {\n    let y: [N]f32;\n    y[i] = x[i] * 2.0;\n    return y;\n}\n'
  } >"$tmp/imp/rows.toy"
  printf 'import "rows.toy" as r;\n\nfn f(x: [N]f32) [N]f32 {\n    let z = r.double_all(x);\n    let w: [N]f32;\n    w[i] = z[i] + 1.0;\n    return w;\n}\n' \
    >"$tmp/imp/main.toy"
  "$DCCC" "$tmp/imp/main.toy" -g -o "$tmp/imp/main.so" 2>/dev/null
  objdump --dwarf=decodedline "$tmp/imp/main.so" | awk 'NF >= 3 {print $1 ":" $2}' | sort -u >"$tmp/imp/rows"
  grep -qx 'rows.toy:12' "$tmp/imp/rows" || { cat "$tmp/imp/rows"; fail "-g has no row at the imported rows.toy:12"; }
  grep -qx 'main.toy:6' "$tmp/imp/rows" || { cat "$tmp/imp/rows"; fail "-g has no row at main.toy:6"; }
  if grep -q '^main\.toy:\(9\|[1-9][0-9]\)$' "$tmp/imp/rows"; then fail "-g put rows.toy's lines in main.toy"; fi
  ;;
cuda_arch)
  # A stand-in nvcc records its arguments and the CUDA source it was given.
  cat >"$tmp/nvcc" <<'NVCC'
#!/usr/bin/env bash
printf '%s\n' "$@" >>"$(dirname "$0")/nvcc.args"
out=""; prev=""
for a in "$@"; do
  case "$a" in *.cu) cp "$a" "$(dirname "$0")/kernels.cu" ;; esac
  [ "$prev" = -o ] && out="$a"
  prev="$a"
done
: >"$out"
NVCC
  chmod +x "$tmp/nvcc"
  # A stand-in compiler launcher (DCCC_COMPILER_LAUNCHER, e.g. ccache) that
  # records the commands it is given: nvcc's compile of the kernels, alone,
  # with relative paths (a cache key the same in any folder).
  printf '#!/usr/bin/env bash\nprintf "%%s\\n" "$*" >>"$(dirname "$0")/launched"\nexec "$@"\n' >"$tmp/launcher"
  chmod +x "$tmp/launcher"
  unset DCCC_CUDA_ARCH DCCC_COMPILER_LAUNCHER
  DCCC_COMPILER_LAUNCHER="$tmp/launcher" DCCC_NVCC="$tmp/nvcc" "$DCCC" "$toy" --target=cuda -o "$tmp/default.so" 2>/dev/null
  [ "$(wc -l <"$tmp/launched")" -eq 1 ] || fail "DCCC_COMPILER_LAUNCHER ran $(wc -l <"$tmp/launched") commands, not nvcc's compile alone"
  grep -q -- "^$tmp/nvcc .* -I\. -c kernels\.cu -o kernels_cuda\.o\$" "$tmp/launched" ||
    fail "DCCC_COMPILER_LAUNCHER was not given nvcc's compile of kernels.cu with relative paths: $(cat "$tmp/launched")"
  [ -f "$tmp/default.so" ] || fail "no library after the launcher's nvcc"
  tr '\n' ' ' <"$tmp/nvcc.args" >"$tmp/default.args"
  for want in arch=compute_80,code=sm_80 arch=compute_90a,code=sm_90a arch=compute_90,code=compute_90; do
    grep -q "$want" "$tmp/default.args" || fail "default nvcc flags lack $want"
  done
  if grep -q '#line' "$tmp/kernels.cu"; then fail "CUDA source without -lineinfo has #line"; fi
  rm -f "$tmp/nvcc.args"
  DCCC_NVCC="$tmp/nvcc" "$DCCC" "$toy" --target=cuda --cuda-arch=sm_86,sm_89 -lineinfo -O2 -o "$tmp/a.so" 2>/dev/null
  args="$(tr '\n' ' ' <"$tmp/nvcc.args")"
  for want in arch=compute_86,code=sm_86 arch=compute_89,code=sm_89 arch=compute_89,code=compute_89 -lineinfo -O2; do
    grep -q -- "$want" <<<"$args" || fail "--cuda-arch=sm_86,sm_89 -lineinfo -O2: nvcc flags lack $want ($args)"
  done
  if grep -q 'sm_80\|sm_90' <<<"$args"; then fail "--cuda-arch=sm_86,sm_89 still builds sm_80/sm_90"; fi
  # -lineinfo: `#line N "softmax.toy"` before kernels, N an assignment's
  # line (statements fused into others, as `e`, have no kernel of their own).
  grep -o "^#line [0-9]* \"[^\"]*softmax.toy\"" "$tmp/kernels.cu" | awk '{print $2}' | sort -un >"$tmp/lines"
  [ "$(wc -l <"$tmp/lines")" -ge 2 ] || fail "-lineinfo CUDA source has fewer than two #lines naming softmax.toy"
  for line in $(cat "$tmp/lines"); do
    assign_lines | grep -qx "$line" || fail "-lineinfo has #line $line, not an assignment of softmax.toy"
  done
  # A statement of an imported file gets that file's #line (rows.toy:12),
  # the caller's its own (main.toy:6).
  mkdir "$tmp/imp"
  { for k in 1 2 3 4 5 6 7 8 9; do echo "// line $k"; done
    printf 'fn rowsum(x: [M, N]f32) [M]f32 {\n    let y: [M]f32;\n    y[m] = reduce(+, x[m, n]);\n    return y;\n}\n'
  } >"$tmp/imp/rows.toy"
  printf 'import "rows.toy" as r;\n\nfn f(x: [M, N]f32) [M]f32 {\n    let z = r.rowsum(x);\n    let w: [M]f32;\n    w[m] = z[m] * 2.0;\n    return w;\n}\n' \
    >"$tmp/imp/main.toy"
  DCCC_NVCC="$tmp/nvcc" "$DCCC" "$tmp/imp/main.toy" --target=cuda -lineinfo -o "$tmp/imp/m.so" 2>/dev/null
  grep -qx "#line 12 \"$tmp/imp/rows.toy\"" "$tmp/kernels.cu" || fail "-lineinfo has no #line 12 naming the imported rows.toy"
  grep -qx "#line 6 \"$tmp/imp/main.toy\"" "$tmp/kernels.cu" || fail "-lineinfo has no #line 6 naming main.toy"
  usage_error "$toy" --target=cuda --cuda-arch=compute_90 -o "$tmp/x.so"
  usage_error "$toy" --target=cuda --cuda-arch=sm_75 -o "$tmp/x.so"  # tensor cores need sm_80
  usage_error "$toy" --target=cuda --cuda-arch= -o "$tmp/x.so"
  usage_error "$toy" --target=cuda --attention-tiles=3,4,64,2 --emit=kernel  # m16 tiles a warp: 1 or 2
  usage_error "$toy" --target=cuda --attention-tiles=1,4,40,2 --emit=kernel  # keys: a multiple of 16
  usage_error "$toy" --target=cuda --attention-tiles=1,4,64 --emit=kernel
  usage_error "$toy" --target=cuda --attention-tiles=1,8,64,4 --emit=kernel  # 32 warps an SM: 64 registers a thread
  usage_error "$toy" --target=cuda --attention-split=100,4,16 --emit=kernel  # columns a warp: 32, 64 or 128
  usage_error "$toy" --target=cuda --attention-split=64,9,16 --emit=kernel   # warps: 2-8
  usage_error "$toy" --target=cuda --attention-split=64,8 --emit=kernel
  usage_error "$toy" --target=cuda --attention-grid=dynamic --emit=kernel  # tiles, static or atomic
  usage_error "$toy" --target=cuda --attention-order=random --emit=kernel  # auto, keys, sequences or tiles
  usage_error "$toy" --target=cuda --attention-stages=0 --emit=kernel  # K/V stages: 1, 2, 3 or 4
  usage_error "$toy" --target=cuda --attention-stages=5 --emit=kernel
  usage_error "$toy" --target=cuda --attention-stages=3x --emit=kernel
  usage_error "$toy" --target=cuda --attention-q=shared --emit=kernel  # auto, registers or smem
  usage_error "$toy" --target=cuda --attention-staged-stores=maybe --emit=kernel  # on or off
  usage_error "$toy" --target=cuda --gemm-stages=1 --emit=kernel  # wgmma GEMM stages: 2-4 or 0
  usage_error "$toy" --target=cuda --gemm-stages=5 --emit=kernel
  ;;
depfile)
  mkdir "$tmp/my dir"
  cp "$toy" "$tmp/my dir/soft max.toy"
  "$DCCC" "$tmp/my dir/soft max.toy" -o "$tmp/out.so" -MD -MF "$tmp/out.d" 2>/dev/null
  # Make must read it: a rule whose target needs the (escaped) source.
  printf 'include %s\n%s/out.so:\n\ttouch $@\n' "$tmp/out.d" "$tmp" >"$tmp/Makefile"
  make -s -f "$tmp/Makefile" -q "$tmp/out.so" || fail "the library is out of date right after dccc -MD wrote it"
  sleep 1
  touch "$tmp/my dir/soft max.toy"
  if make -s -f "$tmp/Makefile" -q "$tmp/out.so"; then fail "touching the source does not make the library out of date"; fi
  grep -q "^$tmp/out.so $tmp/out.h:" "$tmp/out.d" || fail "the depfile's targets are not the library and header"
  "$DCCC" "$toy" -o "$tmp/plain.so" -MD 2>/dev/null
  grep -q "softmax.toy" "$tmp/plain.d" || fail "-MD without -MF does not write PROG.d"
  # Every file the program imports is a dependency, however deep: mid.toy
  # beside it, inner.toy that mid.toy imports (found through -I) and the
  # standard library's nn.toy; touching the deepest makes the library out
  # of date.
  mkdir -p "$tmp/imp/inc"
  printf 'fn once(v: f32) f32 {\n    return v;\n}\n' >"$tmp/imp/inc/inner.toy"
  printf 'import "inner.toy" as inner;\nfn twice(v: f32) f32 {\n    return inner.once(v) * 2.0;\n}\n' \
    >"$tmp/imp/mid.toy"
  printf 'import "mid.toy" as mid;\nimport "std/nn.toy" as nn;\nfn f(x: [N]f32) [N]f32 {\n    let y: [N]f32;\n    y[i] = nn.silu(mid.twice(x[i]));\n    return y;\n}\n' \
    >"$tmp/imp/main.toy"
  "$DCCC" "$tmp/imp/main.toy" -I "$tmp/imp/inc" -o "$tmp/imp/main.so" -MD 2>/dev/null
  sed -e 's/^ *//' -e 's/ *\\$//' "$tmp/imp/main.d" >"$tmp/imp/deps"
  for dep in "$tmp/imp/main.toy" "$tmp/imp/mid.toy" "$tmp/imp/inc/inner.toy"; do
    grep -qxF "$dep" "$tmp/imp/deps" || { cat "$tmp/imp/main.d"; fail "-MD does not list $dep"; }
  done
  grep -q '^/.*/nn\.toy$' "$tmp/imp/deps" || { cat "$tmp/imp/main.d"; fail "-MD does not list std/nn.toy"; }
  printf 'include %s\n%s/imp/main.so:\n\ttouch $@\n' "$tmp/imp/main.d" "$tmp" >"$tmp/imp/Makefile"
  make -s -f "$tmp/imp/Makefile" -q "$tmp/imp/main.so" || fail "the importing library is out of date right after -MD"
  sleep 1
  touch "$tmp/imp/inc/inner.toy"
  if make -s -f "$tmp/imp/Makefile" -q "$tmp/imp/main.so"; then
    fail "touching a file imported through another import does not make the library out of date"
  fi
  usage_error "$toy" -MD
  ;;
runtime)
  # --runtime=shared: libdccrt.so is NEEDED and found through the RUNPATH,
  # none of the runtime is copied in; the default copies it in. Two copies
  # of a library loaded RTLD_LOCAL share one prelude cache only with the
  # shared runtime (cache_sharing.c).
  host static
  host shared --runtime=shared
  readelf -d "$tmp/shared/softmax.so" >"$tmp/shared.dyn"
  grep -q 'NEEDED.*\[libdccrt\.so\.[0-9]*\.[0-9]*\]' "$tmp/shared.dyn" || fail "--runtime=shared does not need libdccrt.so"
  grep -q 'R\(UN\)\?PATH' "$tmp/shared.dyn" || fail "--runtime=shared has no RUNPATH"
  if readelf -d "$tmp/static/softmax.so" | grep -q 'libdccrt'; then fail "the default links libdccrt.so"; fi
  nm -D --defined-only "$tmp/static/softmax.so" | grep -q ' dcc_parallel_for$' || fail "the default does not copy the runtime in"
  if nm -D --defined-only "$tmp/shared/softmax.so" | grep -q ' dcc_parallel_for$'; then
    fail "--runtime=shared still copies the runtime in"
  fi
  for mode in static shared; do
    cp "$tmp/$mode/softmax.so" "$tmp/$mode/A.so"
    cp "$tmp/$mode/softmax.so" "$tmp/$mode/B.so"
    cc -std=c11 -Wall -Werror -I"$tmp/$mode" "$SRC/tests/driver/cache_sharing.c" -o "$tmp/$mode/sharing" -ldl
  done
  "$tmp/static/sharing" "$tmp/static/A.so" "$tmp/static/B.so" separate || fail "static runtimes: cache counts"
  "$tmp/shared/sharing" "$tmp/shared/A.so" "$tmp/shared/B.so" shared || fail "the shared runtime: cache counts"
  usage_error "$toy" --runtime=dynamic -o "$tmp/x.so"
  # Libraries written into one folder at once (make -j): each C compile
  # reads a whole dccrt.h (copied in under a private name, then renamed).
  mkdir -p "$tmp/par"
  pids=()
  for k in 1 2 3 4 5 6; do
    "$DCCC" "$toy" -o "$tmp/par/lib$k.so" >"$tmp/par/$k.log" 2>&1 &
    pids+=($!)
  done
  for k in 1 2 3 4 5 6; do
    wait "${pids[$((k - 1))]}" || fail "parallel -o into one folder: library $k failed: $(cat "$tmp/par/$k.log")"
  done
  hdr=$("$DCCC" --print-runtime | sed -n 's/^header: //p')
  cmp -s "$tmp/par/dccrt.h" "$hdr" || fail "parallel -o: dccrt.h is not the runtime's ($hdr)"
  if ls -a "$tmp/par" | grep -q '^\.dccrt'; then fail "parallel -o left a partial dccrt.h copy"; fi
  ;;
json)
  # One object per line; every error of the text output, same place.
  rc=0; "$DCCC" "$bad" --diagnostics-format=json 2>"$tmp/d.json" >/dev/null || rc=$?
  [ "$rc" = 1 ] || fail "exit status $rc, not 1"
  "$DCCC" "$bad" --color=never 2>"$tmp/d.txt" >/dev/null || true
  grep -o '^[^ ]*:[0-9]*:[0-9]*: error: .*\[[A-Za-z]*\]$' "$tmp/d.txt" >"$tmp/text-errors"
  [ "$(wc -l <"$tmp/text-errors")" -ge 2 ] || fail "two_errors.toy gives fewer than two errors"
  "$PY" - "$tmp/d.json" "$tmp/text-errors" <<'PY' || fail "JSON diagnostics"
import json, sys
objs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
text = [l.rstrip("\n") for l in open(sys.argv[2])]
keys = {"file", "line", "column", "range", "severity", "kind", "message", "notes", "fixits"}
for o in objs:
    assert keys <= o.keys(), o.keys()
    assert o["range"]["start"] == {"line": o["line"], "column": o["column"]}, o
    assert (o["range"]["end"]["line"], o["range"]["end"]["column"]) >= (o["line"], o["column"]), o
as_text = [f'{o["file"]}:{o["line"]}:{o["column"]}: {o["severity"]}: {o["message"]} [{o["kind"]}]'
           for o in objs if o["severity"] == "error"]
assert as_text == text, (as_text, text)
PY
  if grep -v '^{' "$tmp/d.json" | grep -q .; then fail "non-JSON lines on stderr: $(grep -v '^{' "$tmp/d.json")"; fi
  ;;
sarif)
  rc=0; "$DCCC" "$bad" --diagnostics-format=sarif 2>"$tmp/d.sarif" >/dev/null || rc=$?
  [ "$rc" = 1 ] || fail "exit status $rc, not 1"
  "$DCCC" "$bad" --color=never 2>"$tmp/d.txt" >/dev/null || true
  n="$(grep -c ': error: ' "$tmp/d.txt")"
  "$PY" - "$tmp/d.sarif" "$n" <<'PY' || fail "SARIF log"
import json, sys
log = json.load(open(sys.argv[1]))
assert log["version"] == "2.1.0"
run = log["runs"][0]
assert run["tool"]["driver"]["name"] == "dccc"
errors = [r for r in run["results"] if r["level"] == "error"]
assert len(errors) == int(sys.argv[2]), (len(errors), sys.argv[2])
for r in errors:
    region = r["locations"][0]["physicalLocation"]["region"]
    assert region["startLine"] >= 1 and region["startColumn"] >= 1, region
    assert r["ruleId"] and r["message"]["text"]
PY
  # A valid program: an empty log, exit 0.
  "$DCCC" "$toy" --diagnostics-format=sarif 2>"$tmp/ok.sarif"
  "$PY" -c 'import json,sys; assert json.load(open(sys.argv[1]))["runs"][0]["results"] == []' "$tmp/ok.sarif" ||
    fail "SARIF log of a valid program"
  ;;
fixit)
  # Misspelled fields get a "did you mean" and a fix-it (text: the
  # replacement under the caret; JSON: `fixits`); applying the JSON
  # fix-its round after round (a coupling's errors hide the function's)
  # leaves only the error that has none (`zzz`).
  typos="$SRC/tests/driver/typos.toy"
  "$DCCC" "$typos" --color=never 2>"$tmp/t.txt" >/dev/null || true
  grep -q "unknown field \`seqln\` in an extent of \`data\`; did you mean \`seqlen\`?" "$tmp/t.txt" ||
    fail "no suggestion for \`seqln\`"
  "$PY" - "$tmp/t.txt" <<'PY' || fail "the text fix-it is not under the caret"
import sys
lines = open(sys.argv[1]).read().split("\n")
k = next(i for i, l in enumerate(lines) if "did you mean" in l)
caret, fix = lines[k + 2], lines[k + 3]
assert caret.index("^") == len(fix) - len(fix.lstrip()) and fix.strip() == "seqlen", (caret, fix)
PY
  cp "$typos" "$tmp/fixed.toy"
  "$PY" - "$DCCC" "$tmp/fixed.toy" <<'PY' || fail "applying the JSON fix-its"
import json, subprocess, sys
dccc, path = sys.argv[1], sys.argv[2]
applied = []
for _ in range(4):
    p = subprocess.run([dccc, path, "--diagnostics-format=json"], capture_output=True, text=True)
    diags = [json.loads(l) for l in p.stderr.splitlines() if l.startswith("{")]
    fixes = [f for d in diags for f in d["fixits"]]
    if not fixes:
        break
    lines = open(path).read().split("\n")
    # Right to left, so earlier columns stay valid.
    for f in sorted(fixes, key=lambda f: (f["line"], f["column"]), reverse=True):
        s, e = f["range"]["start"], f["range"]["end"]
        assert s["line"] == e["line"]
        row = lines[s["line"] - 1]
        lines[s["line"] - 1] = row[:s["column"] - 1] + f["replacement"] + row[e["column"] - 1:]
        applied.append(f["replacement"])
    open(path, "w").write("\n".join(lines))
assert sorted(applied) == ["data", "seqlen", "seqlen"], applied
left = [(d["kind"], d["message"]) for d in diags if d["severity"] == "error"]
assert left == [("NoSuchField", "type `Seqs` has no field `zzz`")], left
PY
  ;;
color)
  esc=$'\x1b\['
  "$DCCC" "$bad" --color=always 2>"$tmp/always" >/dev/null || true
  "$DCCC" "$bad" --color=never 2>"$tmp/never" >/dev/null || true
  "$DCCC" "$bad" 2>"$tmp/auto-pipe" >/dev/null || true
  grep -q "${esc}1;31merror:" "$tmp/always" || fail "--color=always has no red \`error:\`"
  if grep -q "$esc" "$tmp/never"; then fail "--color=never has escape codes"; fi
  if grep -q "$esc" "$tmp/auto-pipe"; then fail "--color=auto into a pipe has escape codes"; fi
  # --color=always stripped of its escapes is the plain text.
  sed "s/${esc}[0-9;]*m//g" "$tmp/always" | cmp -s - "$tmp/never" || fail "coloured text differs from plain text"
  # auto on a terminal: colour, unless NO_COLOR is set.
  cat >"$tmp/on_tty.py" <<'PY'
import os, subprocess, sys
master, slave = os.openpty()
env = dict(os.environ, TERM="xterm")
if sys.argv[1] == "no_color": env["NO_COLOR"] = "1"
else: env.pop("NO_COLOR", None)
p = subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=slave, env=env)
os.close(slave)
out = b""
while True:
    try: chunk = os.read(master, 65536)
    except OSError: break
    if not chunk: break
    out += chunk
sys.stdout.write("colour" if b"\x1b[" in out else "plain")
PY
  [ "$("$PY" "$tmp/on_tty.py" tty "$DCCC" "$bad")" = colour ] || fail "--color=auto on a terminal is not coloured"
  [ "$("$PY" "$tmp/on_tty.py" no_color "$DCCC" "$bad")" = plain ] || fail "NO_COLOR=1 on a terminal still colours"
  usage_error "$toy" --color=sometimes
  ;;
*) fail "unknown case" ;;
esac
echo "driver/$CASE: OK"
