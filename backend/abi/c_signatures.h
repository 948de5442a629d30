// The C declarations of a library's functions and argument structs, shared
// by the header (emit_header) and the wrapper's definitions (emit_wrapper),
// which spell parameters differently (`def`: CNames::arg).
#pragma once

#include <set>
#include <string>

#include "ir/ir.h"

namespace dccc::backend::cabi {

/// The C struct type of an argument or result (`f_x_t`, or the coupling's name).
std::string struct_name(const ir::Func& f, const ir::Param& p);

/// A buffer's extents as the IR prints them, for comments (`strip`: sibling
/// fields without their coupling's prefix).
std::string dims_text(const ir::BufferNode& b, bool strip = false);

/// Appends the struct for an argument or result type to `out`, once per name.
void emit_struct(const ir::Func& f, const ir::Param& p, std::set<std::string>& done, std::string& out);

/// A parameter's C name: in the header its name, in the wrapper's definitions CNames::arg.
std::string param_name(const ir::Param& p, bool def);

/// `dcc_status NAME(args..., result)`.
std::string signature(const ir::Func& f, const std::string& name, bool def = false);

/// The parameters of `f` as C, with or without the result pointer.
std::string param_list(const ir::Func& f, bool with_result, bool def);

/// `dcc_status f_prelude(args..., dcc_prelude** prelude)`.
std::string prelude_signature(const ir::Func& f, bool def = false);

/// `dcc_status f_with_prelude(const dcc_prelude* prelude, args..., result)`.
std::string with_prelude_signature(const ir::Func& f, bool def = false);

/// `dcc_status f_on_stream(const dcc_prelude* prelude, args..., result,
/// STREAM_PARAM)` (a device target; its DeviceAbi::stream_param, on CUDA
/// `struct CUstream_st* dcc_stream`).
std::string on_stream_signature(const ir::Func& f, const std::string& stream_param, bool def = false);

}  // namespace dccc::backend::cabi
