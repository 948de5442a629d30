#!/usr/bin/env bash
# Dump every text dccc generates for a set of programs, for checking that a
# refactor of a backend changes none of it (diff -r two dumps):
#
#   scripts/dump_generated.sh DCCC OUT_DIR [FILE.toy...]
#
# Default files: examples/*.toy, tests/lang/stdlib/*.toy, stdlib/*.toy.
# Per file and target (cpu, cuda) it writes what `-o` writes -- the header
# (NAME.TARGET.h), the C wrapper (NAME.TARGET.abi.c) and on CUDA the .cu
# source nvcc would get (NAME.cuda.kernels.cu, emit_cuda + emit_cuda_prelude)
# -- and `--emit=cuda`'s output (NAME.emit.cu), each command's stderr and
# exit status beside it. No C compiler or nvcc runs: CC and DCCC_NVCC point
# at a stand-in that copies its .c / .cu input and reports success. Needs no
# GPU.
set -euo pipefail

if (($# < 2)); then
  echo "usage: $0 DCCC OUT_DIR [FILE.toy...]" >&2
  exit 2
fi
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DCCC="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
OUT="$2"
shift 2
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
cd "$ROOT"
if (($#)); then FILES=("$@"); else FILES=(examples/*.toy tests/lang/stdlib/*.toy stdlib/*.toy); fi

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
# The stand-in compiler: copies abi.c / kernels.cu to $DUMP_TO.<name>, and
# creates the -o file so the driver sees a result.
cat > "$WORK/standin" <<'EOF'
#!/usr/bin/env bash
out=
prev=
for a in "$@"; do
  case "$a" in
    *abi.c) cp "$a" "$DUMP_TO.abi.c" ;;
    *kernels.cu) cp "$a" "$DUMP_TO.kernels.cu" ;;
  esac
  [[ "$prev" == -o ]] && out="$a"
  prev="$a"
done
[[ -n "$out" ]] && : > "$out"
exit 0
EOF
chmod +x "$WORK/standin"

count=0
for f in "${FILES[@]}"; do
  name="$(echo "${f%.toy}" | tr / _)"
  set +e
  "$DCCC" --target=cuda --emit=cuda "$f" > "$OUT/$name.emit.cu" 2> "$OUT/$name.emit.err"
  echo "$?" > "$OUT/$name.emit.rc"
  for target in cpu cuda; do
    lib="$WORK/$name.$target/$(basename "${f%.toy}").so"
    mkdir -p "$(dirname "$lib")"
    DUMP_TO="$OUT/$name.$target" CC="$WORK/standin" DCCC_NVCC="$WORK/standin" \
      "$DCCC" --target="$target" "$f" -o "$lib" > /dev/null 2> "$OUT/$name.$target.err"
    echo "$?" > "$OUT/$name.$target.rc"
    [[ -f "${lib%.so}.h" ]] && cp "${lib%.so}.h" "$OUT/$name.$target.h"
  done
  set -e
  # The driver names its temporary folder in messages: make them comparable.
  sed -i -E 's#(/tmp|'"$WORK"')/[^ ]*#<tmp>#g' "$OUT/$name".*.err
  count=$((count + 1))
done
echo "dump_generated: $count file(s), $(ls "$OUT" | wc -l) output(s) in $OUT"
