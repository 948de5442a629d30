#!/usr/bin/env bash
# Compiles examples/EXAMPLE.toy to a shared library with dccc, builds the
# C++ host program that includes its header, and runs it. The host checks
# the results against its own float64 reference and checks that bad
# arguments are rejected without writing anything.
#
#   run_host.sh DCCC CXX EXAMPLE.toy HOST.cpp LIBNAME [EXTRA_FLAGS...]
#
# With DCCC_SCHEDULE_FILE set, dccc also gets --schedule=<that file's text>;
# DCCC_ARGS adds dccc options (e.g. --online-reductions).
set -euo pipefail
DCCC="$1"; CXX="$2"; TOY="$3"; HOST="$4"; LIB="$5"; shift 5
FLAGS="$*"
DIR="$(mktemp -d)"
trap 'rm -rf "$DIR"' EXIT
SCHEDULE=()
if [ -n "${DCCC_SCHEDULE_FILE:-}" ]; then SCHEDULE=("--schedule=$(cat "$DCCC_SCHEDULE_FILE")"); fi
# shellcheck disable=SC2086
DCCC_CFLAGS="$FLAGS" "$DCCC" ${DCCC_ARGS:-} ${SCHEDULE[@]+"${SCHEDULE[@]}"} "$TOY" -o "$DIR/$LIB.so"
# shellcheck disable=SC2086
"$CXX" -std=c++17 -O1 $FLAGS -I"$DIR" "$HOST" "$DIR/$LIB.so" -Wl,-rpath,"$DIR" -o "$DIR/host"
"$DIR/host"
