#!/usr/bin/env bash
# CTest install/deb: builds the Debian package (scripts/make_deb.sh, i.e.
# `cpack -G DEB`) and checks it:
#   - dpkg-deb -c: the compiler, both runtimes, the header, the CMake and
#     pkg-config files and the examples are in it, under /usr;
#   - dpkg-deb -I: Depends names the package of every shared library that
#     bin/dccc and libdccrt.so need (found with readelf and dpkg -S here),
#     a C compiler and libc6-dev (dccc -o runs `cc`), and every package it
#     names is installed here, so the Depends can be satisfied;
#   - dpkg -x into a temporary root: that dccc runs, uses that root's
#     runtime, compiles an example that a C host runs, and a find_package
#     consumer builds against it (its imported-file library included), and
#     Python imports the unpacked package and compiles through it.
# (A real `dpkg -i`/`apt install` needs root and changes this machine; it
# is not done here.)
#   deb_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
BUILD="$(cd "$1" && pwd)"; SRC="$(cd "$2" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "deb test: FAILED: $*"; exit 1; }
command -v dpkg-deb >/dev/null || { echo "SKIP: no dpkg-deb"; exit 77; }

deb="$("$SRC/scripts/make_deb.sh" "$BUILD" "$tmp/out" | tail -1)"
[ -f "$deb" ] || fail "no .deb written"
dpkg-deb -c "$deb" | awk '{print $6}' >"$tmp/contents"
for f in ./usr/bin/dccc ./usr/lib/dccc/libdccrt.a ./usr/include/dccc/dccrt.h \
         ./usr/lib/cmake/dccc/dcccConfig.cmake ./usr/lib/cmake/dccc/dcccConfigVersion.cmake \
         ./usr/lib/cmake/dccc/dcccAddLibrary.cmake ./usr/share/dccc/examples/softmax.toy \
         ./usr/share/dccc/examples/host/softmax_host.c ./usr/share/dccc/std/nn.toy \
         ./usr/lib/python3/dist-packages/dccc/__init__.py; do
  grep -qx "$f" "$tmp/contents" || fail "$f is not in the package"
done
grep -q '^\./usr/lib/\(.*/\)\?libdccrt\.so\.[0-9]*\.[0-9]*$' "$tmp/contents" || fail "no libdccrt.so.X.Y"
grep -q '^\./usr/lib/\(.*/\)\?pkgconfig/dccrt\.pc$' "$tmp/contents" || fail "no dccrt.pc"

depends="$(dpkg-deb -f "$deb" Depends)"
echo "Depends: $depends"
[ "$(dpkg-deb -f "$deb" Package)" = dccc ] || fail "the package is not named dccc"
grep -q 'c-compiler' <<<"$depends" || fail "Depends has no C compiler"
grep -q 'libc6-dev' <<<"$depends" || fail "Depends has no libc6-dev"
grep -q 'python3-numpy' <<<"$(dpkg-deb -f "$deb" Recommends)" || fail "Recommends has no python3-numpy"
dpkg -x "$deb" "$tmp/root"
P="$tmp/root/usr"
# Every library the binaries need comes from a package that Depends names.
shared="$(find "$P/lib" -name 'libdccrt.so.*.*.*' | sed -n 1p)"
[ -n "$shared" ] || fail "no libdccrt.so.X.Y.Z unpacked"
for bin in "$P/bin/dccc" "$shared"; do
  for soname in $(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    path="$(ldconfig -p | awk -v s="$soname" '$1 == s && !found {print $NF; found = 1}')"
    [ -n "$path" ] || fail "$soname (needed by $(basename "$bin")) is not on this machine"
    pkg="$(dpkg -S "$(readlink -f "$path")" 2>/dev/null | sed -n '1s/:.*//p' || true)"
    [ -n "$pkg" ] || pkg="$(dpkg -S "$path" 2>/dev/null | sed -n '1s/:.*//p' || true)"
    [ -n "$pkg" ] || fail "no package owns $path"
    tr ',|' '\n\n' <<<"$depends" | awk '{print $1}' | grep -qxF "$pkg" || fail "$(basename "$bin") needs $soname from $pkg, not in Depends"
  done
done
# Every package Depends names (the first of each alternative that is
# installed) is installed here.
IFS=',' read -ra deps <<<"$depends"
for d in "${deps[@]}"; do
  ok=0
  IFS='|' read -ra alts <<<"$d"
  for a in "${alts[@]}"; do
    name="$(awk '{print $1}' <<<"$a")"
    if dpkg -s "$name" >/dev/null 2>&1 || [ "$name" = c-compiler ]; then ok=1; fi
  done
  [ "$ok" = 1 ] || fail "no package of \`$d\` is installed"
done

"$P/bin/dccc" --version | grep -q '^dccc ' || fail "the packaged dccc does not run"
"$P/bin/dccc" --print-runtime | grep -qx "library: $P/lib/dccc/libdccrt.a" || fail "the packaged dccc uses another runtime"
cd "$tmp"
"$P/bin/dccc" "$P/share/dccc/examples/softmax.toy" -o softmax.so 2>/dev/null
cc -std=c11 -I. "$P/share/dccc/examples/host/softmax_host.c" softmax.so -lm -Wl,-rpath,"$tmp" -o host
./host | grep -q 'softmax host check: OK' || fail "the packaged dccc's library"
mkdir consumer-src
cp "$SRC"/tests/install/consumer/{CMakeLists.txt,rt_check.c,scaled.toy,scale.toy,scaled_check.c} consumer-src/
cp "$P/share/dccc/examples/softmax.toy" "$P/share/dccc/examples/host/softmax_host.c" consumer-src/
gen=(); if command -v ninja >/dev/null; then gen=(-G Ninja); fi
cmake -S consumer-src -B consumer ${gen[@]+"${gen[@]}"} -DCMAKE_PREFIX_PATH="$P" >/dev/null
cmake --build consumer >build.log 2>&1 || { cat build.log; fail "building the consumer against the package"; }
./consumer/softmax_host | grep -q 'softmax host check: OK' || fail "the consumer's softmax_host"
./consumer/rt_check | grep -q 'rt_check: OK' || fail "the consumer's rt_check"
./consumer/scaled_check 2 | grep -q 'scaled check: OK' || fail "the consumer's scaled_check"
env -u DCCC PYTHONPATH="$P/lib/python3/dist-packages" DCCC_CACHE_DIR="$tmp/pycache" PYTHONDONTWRITEBYTECODE=1 \
  /usr/bin/python3 -c '
import sys, dccc
from dccc import _compile
assert _compile._dccc_binary() == sys.argv[1] + "/bin/dccc", _compile._dccc_binary()
lib = dccc.compile(sys.argv[1] + "/share/dccc/examples/softmax.toy")
assert "softmax" in lib.functions
' "$P" || fail "the packaged Python package"
echo "deb test: OK ($(basename "$deb"), $(wc -l <"$tmp/contents") entries)"
