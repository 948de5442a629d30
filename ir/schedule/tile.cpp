#include "ir/schedule/tile.h"

#include <fmt/format.h>

#include "ir/schedule/reorder.h"
#include "ir/schedule/split.h"

namespace dccc::ir {

void apply_tile(ScheduleState& st, const Directive& d) {
  const LoopRef &x = d.loops[0], &y = d.loops[1];
  if (x.tensor != y.tensor || x.index == y.index) {
    st.error(y.at, "`tile` takes two different loops of one assignment");
    return;
  }
  if (!apply_split(st, d, x, d.factors[0]) || !apply_split(st, d, y, d.factors[1])) return;
  auto with = [](LoopRef r, const char* suffix) {
    r.index += suffix;
    return r;
  };
  if (apply_reorder(st, d, {with(x, "_o"), with(y, "_o"), with(x, "_i"), with(y, "_i")}))
    st.notes[st.f.nests.empty() ? 0 : st.resolve(with(x, "_o"))->nest].push_back(
        fmt::format("{}: tiles of {} x {} iterations: loops {}_o, {}_o, {}_i, {}_i (directive)", st.where(d),
                    d.factors[0], d.factors[1], x.index, y.index, x.index, y.index));
}

}  // namespace dccc::ir
