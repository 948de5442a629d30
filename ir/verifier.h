// The vloop IR verifier: structural invariants every pass must keep.
//
// - every variable is used only inside the loop (or buffer dimension, or
//   entry check) that binds it, and no loop rebinds a variable in scope;
// - every buffer a statement touches belongs to the function;
// - a Load/Store has one index per dimension (or, once storage-lowered,
//   one flat offset for a tensor and none for a scalar);
// - loop extents and indices are integers; conditions are booleans;
// - a Store's value can be converted to the buffer's element type;
// - no scalar local is read without being written somewhere.
// dccc runs it after every pass in debug builds (and always under
// --verify-each); tests run it on purpose-built broken IR.
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"

namespace dccc::ir {

/// The violations found in `f` (empty when it is well formed); `pass` names
/// the pass that produced it, for the messages.
std::vector<std::string> verify(const Func& f, const std::string& pass);

}  // namespace dccc::ir
