#!/usr/bin/env bash
# Builds two libraries with dccc (each linking the static libdccrt, as dccc
# writes them) and the host that includes both headers, and runs it.
#
#   run_prelude_host.sh DCCC CXX A.toy B.toy HOST.cpp [EXTRA_FLAGS...]
set -euo pipefail
DCCC="$1"; CXX="$2"; A="$3"; B="$4"; HOST="$5"; shift 5
FLAGS="$*"
DIR="$(mktemp -d)"
trap 'rm -rf "$DIR"' EXIT
DCCC_CFLAGS="$FLAGS" "$DCCC" "$A" -o "$DIR/share_a.so"
DCCC_CFLAGS="$FLAGS" "$DCCC" "$B" -o "$DIR/share_b.so"
# shellcheck disable=SC2086
"$CXX" -std=c++17 -O1 $FLAGS -I"$DIR" "$HOST" "$DIR/share_a.so" "$DIR/share_b.so" -Wl,-rpath,"$DIR" -o "$DIR/host"
"$DIR/host"
