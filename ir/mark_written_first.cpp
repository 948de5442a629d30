#include "ir/mark_written_first.h"

#include "ir/written_first.h"

namespace dccc::ir {

void mark_written_first(Func& f) {
  if (f.storage_lowered) return;
  for (const auto& b : f.buffers)
    if (b->kind == BufferKind::Local && !b->dims.empty() && written_first(f, b.get())) b->zero_fill = false;
}

}  // namespace dccc::ir
