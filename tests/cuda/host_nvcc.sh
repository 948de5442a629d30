# Sourced by the tests that build CUDA host programs with nvcc.
#   host_nvcc OUT SOURCE.cu [-I... flags] [libraries and link flags]
# compiles SOURCE.cu (nvcc -O2 -std=c++17, the -I flags) and links OUT with
# the rest. Where the tests compile through ccache (tests/CMakeLists.txt sets
# DCCC_COMPILER_LAUNCHER), the compile goes through it with the checkout as
# CCACHE_BASEDIR, so the same host compiled by a run in another checkout is a
# cache hit. Needs $nvcc and $src (the checkout) set.
host_nvcc() {
  local exe="$1" cu="$2"
  shift 2
  local includes=() rest=()
  for a in "$@"; do
    case "$a" in
      -I*) includes+=("$a") ;;
      *) rest+=("$a") ;;
    esac
  done
  CCACHE_BASEDIR="$src" ${DCCC_COMPILER_LAUNCHER:+"$DCCC_COMPILER_LAUNCHER"} "$nvcc" -O2 -std=c++17 "${includes[@]}" \
    -c "$cu" -o "$exe.o"
  "$nvcc" -o "$exe" "$exe.o" "${rest[@]}"
  rm -f "$exe.o"
}
