#include "ir/schedule/gpu_mapping.h"

#include <fmt/format.h>

#include <map>
#include <optional>
#include <set>

namespace dccc::ir {
namespace {

/// The loop directly inside `loop` (through `if`s without `else` when
/// `guards`), or null when anything else lies between.
const StmtNode* child_loop(const StmtNode* loop, bool guards) {
  Stmt s = unwrap(loop->body[0]);
  while (guards && s && s->kind == StmtKind::IfThenElse && (s->body.size() == 1 || !s->body[1])) s = unwrap(s->body[0]);
  return s && s->kind == StmtKind::For ? s.get() : nullptr;
}

/// Whether the iterations of `loop` may run on different GPU threads (an
/// inner loop carries no `parallel` mark: mark_parallel marks outermost
/// loops only): no prints or checks; every tensor store has an index that
/// mentions the loop variable (lowering gives each left-side index its own
/// dimension, and split, fuse and remap keep each iteration's element its
/// own: `i_o * k + i_i`, `F_fo[f]`, `R_perm[b_r]`), no stored tensor is read
/// in the loop, and every scalar it stores is a private accumulator,
/// written before it is read in each iteration. A `reduce` loop fails the
/// last (its accumulator carries across iterations).
bool gpu_independent(const ScheduleState& st, const StmtNode* loop, std::string& why) {
  return st.independent(loop->body[0], loop->var, why, /*plain=*/false);
}

}  // namespace

void apply_gpu_mapping(ScheduleState& st, const std::vector<Directive>& all) {
  struct Mapping {
    const Directive* blocks = nullptr;
    const Directive* threads = nullptr;
    std::vector<Var> bv, tv;
    size_t nest = 0;
  };
  std::map<size_t, Mapping> per_item;  // top-level statement -> its mapping
  std::vector<Stmt> items = items_of(st.f.body);
  std::set<size_t> directed = st.directed;
  for (const auto& d : all) {
    if (d.kind != DirectiveKind::GpuBlocks && d.kind != DirectiveKind::GpuThreads) continue;
    const bool blocks = d.kind == DirectiveKind::GpuBlocks;
    const char* name = directive_name(d.kind);
    const size_t most = blocks ? 2 : 3;
    if (d.loops.size() > most) {
      st.error(d.loops[most].at,
               blocks ? "`gpu_blocks` takes one or two loops (the grid's y and x dimensions)"
                      : "`gpu_threads` takes one to three loops (flattened over the threads of a block)");
      continue;
    }
    if (!st.gpu) {
      // The CPU target ignores the mapping: only its names are checked
      // (the CPU's own loop order may differ from the CUDA target's).
      std::optional<size_t> nest;
      for (const auto& r : d.loops)
        if (auto res = st.resolve(r)) nest = res->nest;
      if (nest)
        st.notes[*nest].push_back(
            fmt::format("{}: ignored on the CPU target (a GPU grid and block mapping; "
                        "parallel loops run on the thread pool) (directive)",
                        st.where(d)));
      continue;
    }
    std::vector<Var> vars;
    std::vector<const StmtNode*> loops;
    size_t nest = 0;
    bool bad = false;
    for (size_t k = 0; k < d.loops.size() && !bad; ++k) {
      const LoopRef& r = d.loops[k];
      if (k && r.tensor != d.loops[0].tensor) {
        st.error(r.at, fmt::format("`{}` names loops of different assignments (`{}` and `{}`)", name, d.loops[0].tensor,
                                   r.tensor));
        bad = true;
        break;
      }
      auto res = st.resolve(r);
      if (!res) {
        bad = true;
        break;
      }
      nest = res->nest;
      const StmtNode* loop = find_for(st.f.body, res->var.get());
      std::string why;
      if (loop->loop != LoopKind::Parallel && !gpu_independent(st, loop, why)) {
        st.error(r.at, fmt::format("loop `{}` of `{}` is not a `parallel` loop ({}); only the iterations of a parallel "
                                   "loop can run on different GPU {}",
                                   r.index, r.tensor, why, blocks ? "blocks" : "threads"));
        bad = true;
      }
      if (k && !bad && child_loop(loops.back(), true) != loop) {
        st.error(r.at, fmt::format("loop `{}` is not directly inside `{}` (only an `if` without `else` may lie "
                                   "between); `{}` takes a perfectly nested chain of loops, outermost first",
                                   r.index, d.loops[k - 1].index, name));
        bad = true;
      }
      // Thread loops are flattened: an inner one's extent is computed
      // whether or not a condition between them holds (it reads no thread
      // loop's variable, checked below, so only the grid's).
      if (k && !bad && !blocks && child_loop(loops.back(), false) != loop && may_fail(loop->extent)) {
        st.error(r.at, fmt::format("loop `{}` lies below a condition inside `{}`, and its extent may fail (an integer "
                                   "division); the threads of a block compute it whether or not the condition holds",
                                   r.index, d.loops[k - 1].index));
        bad = true;
      }
      vars.push_back(res->var);
      loops.push_back(loop);
    }
    if (bad) continue;
    size_t item = 0;
    for (size_t k = 0; k < items.size(); ++k)
      if (find_for(items[k], vars[0].get())) item = k;
    Mapping& m = per_item[item];
    if ((blocks ? m.blocks : m.threads) != nullptr) {
      st.error(d.at, fmt::format("the statement of `{}.{}` is mapped by an earlier `{}` already", d.loops[0].tensor,
                                 d.loops[0].index, name));
      st.note((blocks ? m.blocks : m.threads)->at, "the earlier directive is here");
      continue;
    }
    (blocks ? m.blocks : m.threads) = &d;
    (blocks ? m.bv : m.tv) = vars;
    m.nest = nest;
    if (!blocks)
      for (size_t k = 1; k < loops.size(); ++k)
        for (size_t j = 0; j < k; ++j)
          if (mentions(loops[k]->extent, vars[j])) {
            st.error(d.loops[k].at, fmt::format("the extent of loop `{}` depends on loop `{}`; thread loops are "
                                                "flattened into one thread index, so their extents must not depend on "
                                                "each other",
                                                d.loops[k].index, d.loops[j].index));
            m.threads = nullptr;
          }
  }
  for (auto& [item, m] : per_item) {
    if (!m.blocks && !m.threads) continue;
    const Stmt& top = items[item];
    const StmtNode* outer = top->kind == StmtKind::For ? top.get() : nullptr;
    if (m.blocks && (!outer || outer->var != m.bv[0])) {
      st.error(m.blocks->loops[0].at, fmt::format("loop `{}` is not the outermost loop of its statement; `gpu_blocks` "
                                                  "starts at the outermost loop (the grid runs whole iterations of it)",
                                                  m.blocks->loops[0].index));
      continue;
    }
    if (m.threads) {
      // The loops above the first thread loop: the grid's.
      std::vector<Var> above;
      std::vector<const StmtNode*> above_loops;
      const StmtNode* cur = outer;
      while (cur && cur->var != m.tv[0]) {
        above.push_back(cur->var);
        above_loops.push_back(cur);
        cur = child_loop(cur, true);
      }
      const LoopRef& first = m.threads->loops[0];
      if (!cur) {
        st.error(first.at,
                 fmt::format("loop `{}` is not in the chain of loops that starts at its statement's outermost "
                             "loop (another statement or loop lies between); `gpu_threads` names loops "
                             "directly inside the grid's",
                             first.index));
        continue;
      }
      if (m.blocks && above != m.bv) {
        st.error(first.at,
                 fmt::format("loop `{}` is not directly inside the loops of `gpu_blocks` ({}); the threads of "
                             "a block run the loops directly inside the grid's",
                             first.index, m.blocks->loops.back().index));
        continue;
      }
      if (above.empty()) {
        st.error(
            first.at,
            fmt::format("loop `{}` is the outermost loop of its statement; the grid needs a loop above "
                        "the thread loops: split it (`split({}.{}, 256)`, then `gpu_blocks({}.{}_o)` and "
                        "`gpu_threads({}.{}_i)`) or name an inner loop",
                        first.index, first.tensor, first.index, first.tensor, first.index, first.tensor, first.index));
        continue;
      }
      if (above.size() > 2) {
        st.error(first.at,
                 fmt::format("{} loops lie above loop `{}`, and the grid takes at most two; fuse them or name "
                             "a loop further out",
                             above.size(), first.index));
        continue;
      }
      bool bad = false;
      for (const StmtNode* a : above_loops) {
        std::string why;
        if (a->loop != LoopKind::Parallel && !gpu_independent(st, a, why) && !bad) {
          st.error(first.at, fmt::format("loop `{}` above the thread loops would run on the grid, but it is not a "
                                         "`parallel` loop ({})",
                                         st.name_of(m.nest, a->var.get()), why));
          bad = true;
        }
      }
      if (bad) continue;
      m.bv = above;
    }
    // --explain, and the record the CUDA emitter reads.
    std::string bnames, tnames;
    for (const auto& v : m.bv) bnames += (bnames.empty() ? "`" : ", `") + st.name_of(m.nest, v.get()) + "`";
    for (const auto& v : m.tv) tnames += (tnames.empty() ? "`" : ", `") + st.name_of(m.nest, v.get()) + "`";
    const Directive* d = m.blocks ? m.blocks : m.threads;
    if (m.blocks)
      st.notes[m.nest].push_back(fmt::format(
          "{}: {} on the CUDA grid, a block per iteration ({}; blocks stride when there are more){} (directive)",
          st.where(*m.blocks), bnames + (m.bv.size() > 1 ? " run" : " runs"),
          m.bv.size() > 1 ? "blockIdx.y, blockIdx.x" : "blockIdx.x",
          m.threads ? ""
                    : "; the threads of a block take the parallel loops directly inside, as the CUDA backend chooses"));
    if (m.threads)
      st.notes[m.nest].push_back(fmt::format(
          "{}: {} on the threads of a block, flattened into one index (threadIdx.x, striding; a block has their "
          "iteration count rounded up to a multiple of 32 threads when it is a constant, at most 1024, otherwise "
          "256){} (directive)",
          st.where(*m.threads), tnames + (m.tv.size() > 1 ? " run" : " runs"),
          m.blocks ? "" : "; the loops above, " + bnames + ", run on the grid, a block per iteration"));
    st.f.gpu_mappings.push_back(GpuMapping{m.bv, m.tv, d->at});
  }
  // A mapping changes no loop: the CPU target's default padding still applies.
  if (!st.gpu) st.directed = directed;
}

}  // namespace dccc::ir
