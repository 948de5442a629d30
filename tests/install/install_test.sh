#!/usr/bin/env bash
# CTest install/relocatable: installs the build to a temporary prefix, moves
# the prefix elsewhere, and from there
#   - checks that dccc takes its runtime from the moved prefix
#     (`dccc --print-runtime`), not from the build tree,
#   - compiles share/dccc/examples/softmax.toy and runs the installed C host
#     (examples/host/softmax_host.c: a float64 reference),
#   - builds a program against the shared runtime through pkg-config,
#   - configures and builds tests/install/consumer with find_package(dccc)
#     and dccc_add_library, runs it, checks that a second build does
#     nothing and that touching the .toy file rebuilds the library.
# (Importing the Python package from the prefix is left to the lead, once
# the python/ package is merged.)
#   install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
BUILD="$(cd "$1" && pwd)"; SRC="$(cd "$2" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "install test: FAILED: $*"; exit 1; }

cmake --install "$BUILD" --prefix "$tmp/first" --strip >/dev/null
mv "$tmp/first" "$tmp/moved"
P="$tmp/moved"
[ -x "$P/bin/dccc" ] || fail "no bin/dccc"
for f in lib/dccc/libdccrt.a include/dccc/dccrt.h lib/cmake/dccc/dcccConfig.cmake \
         lib/cmake/dccc/dcccConfigVersion.cmake lib/pkgconfig/dccrt.pc share/dccc/examples/softmax.toy; do
  [ -e "$P/$f" ] || fail "$f is not installed"
done
# The shared runtime carries a versioned SONAME.
so="$(ls "$P"/lib/libdccrt.so.*.*.* | head -1)"
readelf -d "$so" | grep -q 'SONAME.*\[libdccrt\.so\.[0-9]*\.[0-9]*\]' || fail "libdccrt.so has no versioned SONAME"

"$P/bin/dccc" --version | grep -q '^dccc [0-9]' || fail "dccc --version"
rt="$("$P/bin/dccc" --print-runtime)"
echo "$rt"
grep -qx "library: $P/lib/dccc/libdccrt.a" <<<"$rt" || fail "the moved dccc does not use the moved runtime"
grep -qx "header: $P/include/dccc/dccrt.h" <<<"$rt" || fail "the moved dccc does not use the moved header"

mkdir "$tmp/work"
cd "$tmp/work"
"$P/bin/dccc" "$P/share/dccc/examples/softmax.toy" -o softmax.so
cmp -s dccrt.h "$P/include/dccc/dccrt.h" || fail "dccrt.h beside the library is not the installed one"
cc -std=c11 -Wall -Wextra -Werror -I. "$P/share/dccc/examples/host/softmax_host.c" softmax.so -lm \
   -Wl,-rpath,"$tmp/work" -o host
./host | tee host.out
grep -q 'softmax host check: OK' host.out || fail "the C host"

# --runtime=shared from the moved prefix: the library finds the moved
# prefix's libdccrt.so through its RUNPATH.
mkdir shared
"$P/bin/dccc" "$P/share/dccc/examples/softmax.toy" --runtime=shared -o shared/softmax.so 2>/dev/null
readelf -d shared/softmax.so | grep -q "R\(UN\)\?PATH.*\[$P/lib" || fail "--runtime=shared's RUNPATH is not the moved prefix"
# The host calls dcc_last_error itself: it links the shared runtime too.
cc -std=c11 -I shared "$P/share/dccc/examples/host/softmax_host.c" shared/softmax.so -L"$P/lib" -ldccrt -lm \
   -Wl,-rpath,"$tmp/work/shared" -Wl,-rpath,"$P/lib" -o shared/host
shared/host | grep -q 'softmax host check: OK' || fail "the C host of a --runtime=shared library"

if command -v pkg-config >/dev/null; then
  # shellcheck disable=SC2046
  cc -std=c11 -Wall -Werror "$SRC/tests/install/consumer/rt_check.c" \
     $(PKG_CONFIG_PATH="$P/lib/pkgconfig" pkg-config --cflags --libs dccrt) -Wl,-rpath,"$P/lib" -o rt_pc
  ./rt_pc | grep -q 'rt_check: OK' || fail "a program built with pkg-config --cflags --libs dccrt"
else
  echo "(no pkg-config: dccrt.pc not checked)"
fi

# The consumer project, with its own copy of the program to touch.
mkdir "$tmp/consumer-src"
cp "$SRC"/tests/install/consumer/{CMakeLists.txt,rt_check.c} "$tmp/consumer-src/"
cp "$P/share/dccc/examples/softmax.toy" "$P/share/dccc/examples/host/softmax_host.c" "$tmp/consumer-src/"
gen=()
if command -v ninja >/dev/null; then gen=(-G Ninja); fi
cmake -S "$tmp/consumer-src" -B "$tmp/consumer" ${gen[@]+"${gen[@]}"} -DCMAKE_PREFIX_PATH="$P" >/dev/null
cmake --build "$tmp/consumer" >"$tmp/build1.log" 2>&1 || { cat "$tmp/build1.log"; fail "building the consumer"; }
"$tmp/consumer/softmax_host" | grep -q 'softmax host check: OK' || fail "the consumer's softmax_host"
"$tmp/consumer/rt_check" | grep -q 'rt_check: OK' || fail "the consumer's rt_check (dccc::dccrt)"
readelf -d "$tmp/consumer/softmax_host" | grep -q 'NEEDED.*\[softmax\.so\]' ||
  fail "softmax_host does not record the library by its SONAME"
cmake --build "$tmp/consumer" >"$tmp/build2.log" 2>&1
if grep -q 'dccc: compiling' "$tmp/build2.log"; then fail "an up-to-date build ran dccc again"; fi
sleep 1
touch "$tmp/consumer-src/softmax.toy"
cmake --build "$tmp/consumer" >"$tmp/build3.log" 2>&1
grep -q 'dccc: compiling' "$tmp/build3.log" || { cat "$tmp/build3.log"; fail "touching softmax.toy did not rebuild the library"; }
"$tmp/consumer/softmax_host" | grep -q 'softmax host check: OK' || fail "the rebuilt consumer"
echo "install test: OK (prefix moved, example compiled and run, consumer project built with dccc_add_library)"
