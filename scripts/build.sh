#!/usr/bin/env bash
# Configure and build one CMake preset (see CMakePresets.json).
#
#   scripts/build.sh [PRESET [BUILD_DIR [TARGET...]]]
#
# PRESET is default (build/), asan (build-asan/) or fuzz (build-fuzz/);
# BUILD_DIR overrides the preset's build directory; TARGETs limit the build
# to those targets (default: all). DCCC_JOBS sets the number
# of parallel jobs (default 2). ccache is used when installed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PRESET="${1:-default}"
case "$PRESET" in
  default) DEFAULT_DIR=build ;;
  asan) DEFAULT_DIR=build-asan ;;
  fuzz) DEFAULT_DIR=build-fuzz ;;
  *)
    echo "build: unknown preset \`$PRESET\`; expected default, asan or fuzz" >&2
    exit 2
    ;;
esac
BUILD_DIR="${2:-$ROOT/$DEFAULT_DIR}"
TARGETS=("${@:3}")
case "$BUILD_DIR" in /*) ;; *) BUILD_DIR="$PWD/$BUILD_DIR" ;; esac
JOBS="${DCCC_JOBS:-2}"
# ccache hashes paths under the checkout relative to it (and not the build
# folder), so a clone in another folder, such as CI's clean clone, reuses
# the objects compiled in this one.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$ROOT}"
export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"

cd "$ROOT"
echo "build: configuring preset \`$PRESET\` in $BUILD_DIR"
cmake --preset "$PRESET" -B "$BUILD_DIR"
if ((${#TARGETS[@]})); then
  echo "build: building ${TARGETS[*]} with $JOBS jobs"
  cmake --build "$BUILD_DIR" -j "$JOBS" --target "${TARGETS[@]}"
else
  echo "build: building with $JOBS jobs"
  cmake --build "$BUILD_DIR" -j "$JOBS"
fi
