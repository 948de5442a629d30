// Small pieces of the C wrapper's text: failure returns, C string literals,
// the names of list locals, and which buffers the checks read.
#pragma once

#include <set>
#include <string>

#include "ir/ir.h"

namespace dccc::backend::cabi {

/// Whether `e` reads an aux (offset) array.
bool reads_aux(const ir::Expr& e);

/// `dcc__fail(STATUS, FORMAT);`
std::string fail_return(const std::string& status, const std::string& fmt_text);

/// `st = dcc__fail(STATUS, FORMAT, ARGS);`
std::string fail(const std::string& status, const std::string& fmt_text, const std::string& args = "");

/// A C string literal of the printf format `s` (its `%` directives kept).
std::string quote(const std::string& s);

/// Text that a printf format shows as is (`%` doubled).
std::string literal(const std::string& s);

/// The wrapper's locals of list argument `p` (`l_xs__packed`, `__rows`,
/// `__row`): a family of their own, apart from the parameters' `a_`.
std::string list_local(const ir::Param& p);

/// `text` with the list locals written as `ARG__x` renamed to `LOCAL__x`.
std::string to_list_locals(std::string text, const std::string& arg, const std::string& local);

/// Buffers whose values are read by totals, the prelude or checks: lengths.
std::set<const ir::BufferNode*> length_buffers(const ir::Func& f);

}  // namespace dccc::backend::cabi
