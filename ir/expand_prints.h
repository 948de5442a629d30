// Expands `print` of a whole tensor into loops of scalar prints.
//
// The output format (documented in docs/language.md, "Printing"): a dense
// tensor prints as nested brackets on one line, `[[1, 2], [3, 4]]`; a
// ragged tensor prints one sequence per line between `[` and `]`; scalars
// print alone. Backends then only need to print text and single values.
#pragma once

#include "ir/ir.h"

namespace dccc::ir {

void expand_prints(Func& f);

}  // namespace dccc::ir
