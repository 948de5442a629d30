// The C ABI of a compiled program: a header and a validating C wrapper.
//
// For every function `f` the header declares
//   dcc_status f(const A* a, const B* b, R* result);       // runs f
//   dcc_status f_meta(const A* a, const B* b, R* result);  // sizes only
// A coupling argument is a struct with, per field, a pointer and an element
// count (`data`, `data_len`), then one int64_t per size parameter. Ragged
// fields use the packed layout: sequence after sequence, row-major, no
// padding (the layout of FlashAttention and PyTorch nested tensors). A dense
// tensor argument is a struct `f_x_t { T* data; int64_t data_len; sizes }`;
// a scalar is passed by value and returned through a pointer.
//
// The wrapper checks everything before the kernel writes anything: null
// pointers, sizes that disagree between arguments or with `const`, negative
// lengths, length arrays and data whose element counts differ from what the
// lengths imply, arithmetic overflow of totals, `where` constraints, and
// result capacities. A failure returns a dcc_status with the reason in
// dcc_last_error(). f_meta does the same checks and fills the result's
// sizes, the element counts of its fresh fields and the pointers of fields
// bound to an argument (`seqlen: q.seqlen`), so a host can allocate first.
#pragma once

#include <string>

#include "backend/abi/device_abi.h"
#include "ir/ir.h"

namespace dccc::backend {

/// The header (`prog.h`). `guard` names the include guard. With a device
/// target (backend/abi/device_abi.h; nullptr: the CPU) it also declares
/// FN_on_stream (docs/abi.md, "The CUDA target").
std::string emit_header(const ir::Module& m, const std::string& source_name, const std::string& guard,
                        const DeviceAbi* device = nullptr);

/// The C wrapper (compiled into the .so), which includes `header_name`.
/// Without `device` it calls the LLVM CPU kernels (`f__kernel`); with one,
/// the target's launchers (`f__cuda`, backend/cuda/cuda_codegen.h), and
/// the pointers in the structs are device pointers: the wrapper copies
/// every integer input array (the lengths) to the host before it checks
/// them, and hands those copies to the launcher with the device pointers.
std::string emit_wrapper(const ir::Module& m, const std::string& header_name, const DeviceAbi* device = nullptr);

/// Gives every name the host sees a valid C name (docs/abi.md, "Names"):
/// functions, coupling types, parameters, fields and sizes that are C or C++
/// keywords or names the included headers reserve (c_reserved) get `_`
/// appended, as do names that two members of one struct, or two parameters
/// of one function (`result` and `prelude` included), would share. Then it
/// checks that no two global C names of the library coincide (functions,
/// their `_meta`, `_prelude`, `_with_prelude`, `_on_stream` (a device
/// target) and internal `__` symbols, the device target's own (DeviceAbi's
/// launcher, function_names and kernels), struct types) and throws
/// BackendUnsupported at the later declaration if they do. Run on the
/// library's module before emit_header, emit_wrapper, the device target's
/// code and the LLVM object, which then use the names as they are.
void assign_c_names(ir::Module& m, const DeviceAbi* device);

}  // namespace dccc::backend
