#include "ir/materialize.h"

#include <fmt/format.h>

namespace dccc::ir {

MaterializeCheck check_materialize(const Func& f, const LoopRef& r) {
  MaterializeCheck out;
  size_t hits = 0;
  for (size_t i = 0; i < f.nests.size(); ++i)
    if (f.nests[i].tensor == r.tensor) {
      if (hits++ == 0) out.nest = i;
    }
  if (hits == 0) {
    bool param = false;
    for (const auto& b : f.buffers) param |= b->name == r.tensor && b->kind == BufferKind::Input;
    out.error = param ? fmt::format("`{}` is a parameter of `{}`; it is stored already", r.tensor, f.name)
                      : fmt::format("`{}` has no assignment to `{}`", f.name, r.tensor);
    return out;
  }
  if (hits > 1) {
    out.error = fmt::format("`{}` is written by {} statements of `{}`; `materialize` names a tensor one statement "
                            "computes",
                            r.tensor, hits, f.name);
    return out;
  }
  out.note = fmt::format("stored whole: no online reduction computes `{}` in its loop (directive)", r.tensor);
  return out;
}

}  // namespace dccc::ir
