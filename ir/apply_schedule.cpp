// The dispatch of ir/apply_schedule.h: the order in which a schedule's
// directives apply. Each directive is a file pair in ir/schedule/; what
// they share is ir/schedule/state.h.
#include "ir/apply_schedule.h"

#include "ir/materialize.h"
#include "ir/schedule/default_padding.h"
#include "ir/schedule/fuse.h"
#include "ir/schedule/fuse_dims.h"
#include "ir/schedule/gpu_mapping.h"
#include "ir/schedule/hfuse.h"
#include "ir/schedule/inline.h"
#include "ir/schedule/pad_loop.h"
#include "ir/schedule/pad_storage.h"
#include "ir/schedule/remap.h"
#include "ir/schedule/reorder.h"
#include "ir/schedule/split.h"
#include "ir/schedule/split_op.h"
#include "ir/schedule/state.h"
#include "ir/schedule/tile.h"

namespace dccc::ir {
namespace {

bool run(ScheduleState& st, const Schedule* s) {
  if (!s) return true;
  // Storage padding is a property of buffers, read by the loop directives'
  // guard decisions: all of it first.
  for (const auto& d : s->directives)
    if (d.kind == DirectiveKind::PadStorage) apply_pad_storage(st, d);
  // Kernel fusion next: the loop directives' checks (padding into storage
  // above all) must see the accesses the fused readers make.
  for (const auto& d : s->directives)
    if (d.kind == DirectiveKind::Inline) apply_inline(st, d);
  for (const auto& d : s->directives) {
    switch (d.kind) {
      case DirectiveKind::PadStorage: break;
      case DirectiveKind::Inline: break;
      case DirectiveKind::Materialize: {
        MaterializeCheck m = check_materialize(st.f, d.loops[0]);
        if (!m.error.empty()) st.error(d.loops[0].at, m.error);
        else st.notes[m.nest].push_back(m.note);
        break;
      }
      case DirectiveKind::Remap: apply_remap(st, d); break;
      case DirectiveKind::FuseDims: apply_fuse_dims(st, d); break;
      case DirectiveKind::PadLoop: apply_pad_loop(st, d); break;
      case DirectiveKind::Split: apply_split(st, d, d.loops[0], d.factors[0]); break;
      case DirectiveKind::Reorder: apply_reorder(st, d, d.loops); break;
      case DirectiveKind::Tile: apply_tile(st, d); break;
      case DirectiveKind::Fuse: apply_fuse(st, d); break;
      case DirectiveKind::SplitOp: apply_split_op(st, d); break;
      case DirectiveKind::HFuse: apply_hfuse(st, d); break;
      case DirectiveKind::GpuBlocks:
      case DirectiveKind::GpuThreads: break;
    }
  }
  // The GPU mapping names the loops as the other directives left them.
  apply_gpu_mapping(st, s->directives);
  return st.ok;
}

}  // namespace

bool apply_schedule(Func& f, const Schedule* schedule, DiagnosticEngine& diags, std::string* explain,
                    const ScheduleDefaults& defaults) {
  ScheduleState s(f, diags);
  s.gpu = defaults.gpu;
  bool ok = run(s, schedule);
  if (ok) apply_default_padding(s, defaults.pad, defaults.off_reason, defaults.order_note);
  if (explain) *explain += s.explain();
  return ok;
}

}  // namespace dccc::ir
