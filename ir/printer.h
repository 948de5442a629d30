// Text form of the vloop IR (`--emit=vloop`).
//
// Variables print by name; distinct variables that share a name get a
// numeric suffix (`i.1`) so that the text names every object uniquely.
// Loops whose extent mentions an outer loop variable are marked `// vloop`.
#pragma once

#include <string>

#include "ir/ir.h"

namespace dccc::ir {

std::string print(const Module& m);
std::string print(const Func& f);

}  // namespace dccc::ir
