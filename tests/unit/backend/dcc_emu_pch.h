// What every emulated CUDA program includes (cuda_emu_build.h's
// build_emulated), precompiled once a build per optimization level
// (tests/unit/backend/CMakeLists.txt: emu_pch/O0, emu_pch/O1) and passed to
// the host compiler with -include: the headers are about a quarter of
// compiling a fused-attention program and over half of a small one. The
// compiler ignores a precompiled header built with other options and
// reads this text instead, so the programs compile the same either way.
#include "tests/unit/backend/cuda_emu.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <type_traits>
#include <vector>

#include "dccrt.h"
