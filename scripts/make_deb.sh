#!/usr/bin/env bash
# Builds the Debian package of dccc from a configured, built build directory:
#   scripts/make_deb.sh [BUILD_DIR [OUT_DIR]]
# (default build/ and BUILD_DIR/deb). Runs `cpack -G DEB`
# (cmake/package.cmake): everything `cmake --install` installs, under /usr,
# stripped, with Depends from dpkg-shlibdeps plus a C compiler and libc6-dev.
# Prints the path of the .deb. Install it with `sudo apt install ./dccc_*.deb`.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${1:-$ROOT/build}"
OUT="${2:-$BUILD/deb}"
mkdir -p "$OUT"
(cd "$BUILD" && cpack -G DEB -B "$OUT" >"$OUT/cpack.log" 2>&1) || { cat "$OUT/cpack.log"; exit 1; }
ls "$OUT"/dccc_*.deb
