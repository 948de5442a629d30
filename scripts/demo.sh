#!/usr/bin/env bash
# The main job, and the README's first quick-start command: set up the
# machine, build dccc, check every example program and print what the
# checker inferred for each (sizes, couplings, index ranges, reductions),
# then compile flash attention to a shared library and run the C++ host
# example against it.
#
#   scripts/demo.sh [FILE.toy ...]     (default: examples/*.toy)
#
# DCCC_BUILD_DIR overrides the build folder (default build/, the `default`
# preset). Exits 1 when any example fails to check.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${DCCC_BUILD_DIR:-$ROOT/build}"

"$ROOT/scripts/setup.sh"
"$ROOT/scripts/build.sh" default "$BUILD_DIR"
DCCC="$BUILD_DIR/tools/dccc"

if [[ $# -gt 0 ]]; then
  files=("$@")
else
  cd "$ROOT"
  shopt -s nullglob
  files=(examples/*.toy)
fi
if [[ ${#files[@]} -eq 0 ]]; then
  echo "demo: no examples/*.toy to check" >&2
  exit 1
fi

total=0
ok=0
failed=()
for f in "${files[@]}"; do
  total=$((total + 1))
  echo
  echo "=== $f ==="
  if "$DCCC" --summary "$f"; then
    ok=$((ok + 1))
  else
    failed+=("$f")
  fi
done

echo
echo "$total examples checked, $ok ok"
if [[ ${#failed[@]} -gt 0 ]]; then
  printf 'failed: %s\n' "${failed[@]}"
  exit 1
fi

# Compile flash attention into a shared library with its C header, link the
# C++ host example against it and run the host's check (float64 reference
# and bad-argument rejections).
if [[ $# -eq 0 ]]; then
  OUT="$BUILD_DIR/demo"
  mkdir -p "$OUT"
  echo
  echo "=== dccc examples/flash_attention.toy -o $OUT/fa.so ==="
  "$DCCC" "$ROOT/examples/flash_attention.toy" -o "$OUT/fa.so"
  c++ -std=c++17 -O2 -I"$OUT" "$ROOT/examples/host/flash_attention_host.cpp" "$OUT/fa.so" \
    -Wl,-rpath,"$OUT" -o "$OUT/fa_host"
  "$OUT/fa_host"
fi
