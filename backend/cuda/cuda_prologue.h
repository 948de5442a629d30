// The text every generated .cu file starts with: includes, error and
// profiling helpers, bf16/f16 rounding, integer helpers and atomics that
// the kernels and the host code call (emit_cuda prepends it).
#pragma once

namespace dccc::backend {

extern const char* const kCudaPrologue;

}  // namespace dccc::backend
