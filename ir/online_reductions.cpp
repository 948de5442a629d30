#include "ir/online_reductions.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <utility>

#include "ir/online_chain.h"
#include "ir/online_fuse.h"
#include "ir/online_nest.h"
#include "ir/online_split.h"

namespace dccc::ir {

namespace {

/// The chain rooted at top-level statement `r` of `items`, analysed; and
/// whether it may be fused. A reduction the chain would recompute per j at
/// indices beyond the rows stays stored instead (Chain::beyond_rows): one
/// more try without each such tensor, at most once per tensor.
std::pair<std::unique_ptr<Chain>, bool> analyse_chain(Func& f, const std::vector<Stmt>& items,
                                                      const std::vector<std::optional<Nest>>& nests, size_t r,
                                                      const std::set<std::string>& keep,
                                                      const std::set<std::string>& scheduled) {
  std::vector<const BufferNode*> stored;
  auto chain = std::make_unique<Chain>(f, items, nests, r);
  bool ok = chain->analyse(keep, scheduled);
  while (!ok && !chain->beyond_rows.empty() && stored.size() < items.size()) {
    stored.insert(stored.end(), chain->beyond_rows.begin(), chain->beyond_rows.end());
    chain = std::make_unique<Chain>(f, items, nests, r);
    for (const auto* t : stored) chain->keep_stored(t);
    ok = chain->analyse(keep, scheduled);
  }
  return {std::move(chain), ok};
}

}  // namespace

OnlineFused online_reductions(Func& f, const std::set<std::string>& keep, const std::set<std::string>& scheduled,
                              int64_t block, std::string* explain) {
  OnlineFused done;
  if (f.storage_lowered) return done;
  std::set<const BufferNode*> tried;
  std::set<const StmtNode*> split_tried;
  auto taken = [&](const std::string& name) {
    for (const auto& b : f.buffers)
      if (b->name == name) return true;
    return false;
  };
  std::string text;
  for (bool changed = true; changed;) {
    changed = false;
    std::vector<Stmt> items = items_of(f.body);
    std::vector<std::optional<Nest>> nests;
    for (size_t k = 0; k < items.size(); ++k) nests.push_back(parse_nest(items[k], k));
    for (size_t r = items.size(); r-- > 0 && !changed;) {
      if (!nests[r] && !split_tried.count(items[r].get())) {
        // Several reductions in one statement (`reduce(+, e * v) /
        // reduce(+, e)`): the chain may start at the first once the others
        // are statements of their own; kept only when it does.
        split_tried.insert(items[r].get());
        auto sp = split_reductions(items[r], taken);
        if (!sp) continue;
        std::vector<Stmt> trial(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(r));
        trial.insert(trial.end(), sp->items.begin(), sp->items.end());
        trial.insert(trial.end(), items.begin() + static_cast<std::ptrdiff_t>(r) + 1, items.end());
        std::vector<std::optional<Nest>> trial_nests;
        for (size_t k = 0; k < trial.size(); ++k) trial_nests.push_back(parse_nest(trial[k], k));
        const size_t root = r + sp->items.size() - 1;
        auto [chain, ok] = analyse_chain(f, trial, trial_nests, root, keep, scheduled);
        // Only for a chain of dependent reductions (a body reads an earlier
        // result): reductions that merely share a statement stay as written.
        if (ok && std::none_of(chain->members.begin(), chain->members.end(), [](const Member& m) { return m.deps; }))
          continue;
        if (!ok) {
          if (!chain->why.empty())
            text += fmt::format("  `{}`: online reductions not applied: {}\n", trial_nests[root]->target->name,
                                chain->why);
          continue;
        }
        f.body = build::seq(trial);
        f.buffers.insert(f.buffers.end(), sp->new_buffers.begin(), sp->new_buffers.end());
        changed = true;
        continue;
      }
      if (!nests[r] || !nests[r]->reduction || tried.count(nests[r]->target.get())) continue;
      tried.insert(nests[r]->target.get());
      auto [chain, ok] = analyse_chain(f, items, nests, r, keep, scheduled);
      Chain& c = *chain;
      if (!ok) {
        if (!c.why.empty())
          text += fmt::format("  `{}`: online reductions not applied: {}\n", nests[r]->target->name, c.why);
        continue;
      }
      std::string note;
      ++done.chains;
      done.per_key_reduced += !c.producers.empty();
      Stmt fused = fuse_chain(c, block, note);
      text += fmt::format("  `{}`: {}\n", nests[r]->target->name, note);
      std::vector<Stmt> out;
      std::set<const BufferNode*> accs, assigned;
      for (size_t k = 0; k < items.size(); ++k) {
        if (k == r) {
          out.insert(out.end(), c.pre.begin(), c.pre.end());
          out.push_back(fused);
        } else if (!c.removed().count(k)) {
          out.push_back(items[k]);
        } else {
          accs.insert(nests[k]->acc.get());
          assigned.insert(nests[k]->target.get());
        }
      }
      f.body = build::seq(out);
      std::set<const BufferNode*> drop = c.dropped();
      std::set<const BufferNode*> used;
      each_stmt(f.body, [&](const StmtNode& s) {
        if (s.buffer) used.insert(s.buffer.get());
        own_exprs(s, [&](const ExprNode& x) {
          if (x.kind == ExprKind::Load) used.insert(x.buffer.get());
        });
      });
      for (const BufferNode* a : accs)
        if (a && !used.count(a)) drop.insert(a);
      if (!used.count(nests[r]->acc.get())) drop.insert(nests[r]->acc.get());
      std::erase_if(f.buffers, [&](const Buffer& b) {
        return drop.count(b.get()) && (b->kind == BufferKind::Local || b->kind == BufferKind::Scalar);
      });
      f.buffers.insert(f.buffers.end(), c.new_buffers.begin(), c.new_buffers.end());
      // The chain's assignments other than the root's are gone (a result
      // stored after the loop has no loops of its own a schedule could name).
      std::erase_if(f.nests, [&](const NamedNest& nn) { return assigned.count(nn.target.get()) > 0; });
      changed = true;
    }
  }
  if (explain && !text.empty()) *explain += fmt::format("fn {}:\n{}", f.name, text);
  return done;
}

}  // namespace dccc::ir
