#!/usr/bin/env bash
# CTest install/relocatable: installs the build to a temporary prefix, moves
# the prefix elsewhere, and from there
#   - checks that dccc takes its runtime from the moved prefix
#     (`dccc --print-runtime`), not from the build tree,
#   - compiles share/dccc/examples/softmax.toy and runs the installed C host
#     (examples/host/softmax_host.c: a float64 reference),
#   - compiles a program that imports std/nn.toy and checks (-MD) that the
#     import was read from the moved prefix's share/dccc/std,
#   - builds a program against the shared runtime through pkg-config,
#   - configures and builds tests/install/consumer with find_package(dccc)
#     and dccc_add_library, runs it, checks that a second build does
#     nothing, that touching the .toy file rebuilds the library, and that
#     changing a file the program imports (scale.toy) rebuilds it too, with
#     the new factor in the results,
#   - imports the installed Python package with only the moved prefix on
#     PYTHONPATH (and $DCCC unset), compiles an example through it (its
#     dccc.compile must find the moved prefix's bin/dccc) and calls it
#     against a float64 NumPy softmax.
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
         lib/cmake/dccc/dcccConfigVersion.cmake lib/pkgconfig/dccrt.pc share/dccc/examples/softmax.toy \
         share/dccc/std/nn.toy share/dccc/std/attention.toy lib/python3/dist-packages/dccc/__init__.py; do
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

# The standard library comes from the moved prefix: the dependency file of
# a program importing std/nn.toy names the prefix's copy.
cat > uses_std.toy <<'TOY'
import "std/nn.toy" as nn;

fn act(x: [N]f32) [N]f32 {
    let y: [N]f32;
    y[i] = nn.silu(x[i]);
    return y;
}
TOY
"$P/bin/dccc" uses_std.toy -o uses_std.so -MD 2>/dev/null
grep -q "$P/share/dccc/std/nn.toy" uses_std.d || { cat uses_std.d; fail "std/nn.toy was not read from the moved prefix"; }

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
cp "$SRC"/tests/install/consumer/{CMakeLists.txt,rt_check.c,scaled.toy,scale.toy,scaled_check.c} "$tmp/consumer-src/"
cp "$P/share/dccc/examples/softmax.toy" "$P/share/dccc/examples/host/softmax_host.c" "$tmp/consumer-src/"
gen=()
if command -v ninja >/dev/null; then gen=(-G Ninja); fi
cmake -S "$tmp/consumer-src" -B "$tmp/consumer" ${gen[@]+"${gen[@]}"} -DCMAKE_PREFIX_PATH="$P" >/dev/null
cmake --build "$tmp/consumer" >"$tmp/build1.log" 2>&1 || { cat "$tmp/build1.log"; fail "building the consumer"; }
"$tmp/consumer/softmax_host" | grep -q 'softmax host check: OK' || fail "the consumer's softmax_host"
"$tmp/consumer/rt_check" | grep -q 'rt_check: OK' || fail "the consumer's rt_check (dccc::dccrt)"
"$tmp/consumer/scaled_check" 2 | grep -q 'scaled check: OK' || fail "the consumer's scaled_check (factor 2)"
readelf -d "$tmp/consumer/softmax_host" | grep -q 'NEEDED.*\[softmax\.so\]' ||
  fail "softmax_host does not record the library by its SONAME"
cmake --build "$tmp/consumer" >"$tmp/build2.log" 2>&1
if grep -q 'dccc: compiling' "$tmp/build2.log"; then fail "an up-to-date build ran dccc again"; fi
sleep 1
touch "$tmp/consumer-src/softmax.toy"
cmake --build "$tmp/consumer" >"$tmp/build3.log" 2>&1
grep -q 'dccc: compiling' "$tmp/build3.log" || { cat "$tmp/build3.log"; fail "touching softmax.toy did not rebuild the library"; }
"$tmp/consumer/softmax_host" | grep -q 'softmax host check: OK' || fail "the rebuilt consumer"
# An imported file changes: scaled.so is rebuilt (softmax.so is not), and
# the library multiplies by the new factor.
sleep 1
sed -i 's/v \* 2\.0/v * 3.0/' "$tmp/consumer-src/scale.toy"
grep -q 'v \* 3\.0' "$tmp/consumer-src/scale.toy" || fail "scale.toy was not rewritten"
cmake --build "$tmp/consumer" >"$tmp/build4.log" 2>&1
grep -q 'dccc: compiling scaled.toy' "$tmp/build4.log" ||
  { cat "$tmp/build4.log"; fail "changing the imported scale.toy did not rebuild scaled.so"; }
if grep -q 'dccc: compiling .*softmax.toy' "$tmp/build4.log"; then fail "changing scale.toy rebuilt softmax.so"; fi
"$tmp/consumer/scaled_check" 3 | grep -q 'scaled check: OK' || fail "the rebuilt scaled.so does not multiply by 3"

# The Python package from the moved prefix, nothing else on its path: its
# dccc.compile finds the prefix's bin/dccc.
PYDIR="$P/lib/python3/dist-packages"
(cd "$tmp/work" && env -u DCCC PYTHONPATH="$PYDIR" DCCC_CACHE_DIR="$tmp/pycache" PYTHONDONTWRITEBYTECODE=1 \
   /usr/bin/python3 - "$P" <<'PY') || fail "the Python package from the moved prefix"
import os, sys
import numpy as np
import dccc
from dccc import _compile
prefix = sys.argv[1]
assert os.path.realpath(dccc.__file__).startswith(os.path.realpath(prefix)), dccc.__file__
assert _compile._dccc_binary() == os.path.join(prefix, "bin", "dccc"), _compile._dccc_binary()
lib = dccc.compile(os.path.join(prefix, "share", "dccc", "examples", "softmax.toy"))
seqlen = np.array([3, 0, 2], np.int32)
x = np.linspace(-2, 2, 5 * 4, dtype=np.float32).reshape(5, 4)
y = lib.softmax({"data": x, "seqlen": seqlen})["data"]
want, row = np.empty((5, 4)), 0
for n in seqlen:
    if n:  # an empty sequence has no rows
        block = x[row:row + n].astype(np.float64)
        e = np.exp(block - block.max(axis=0))
        want[row:row + n] = e / e.sum(axis=0)
    row += n
err = float(np.abs(want - y).max())
assert err < 1e-6, err
print(f"python from the moved prefix: softmax max error {err:.1e}")
PY
echo "install test: OK (prefix moved, example compiled and run, consumer project built with dccc_add_library" \
     "and rebuilt after a .toy and an imported file changed, Python package imported and called)"
