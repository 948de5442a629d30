// The analysis half of the online-reductions pass (ir/online_reductions.h):
// from a root reduction over j of a function's top level, the chain to fuse
// (the earlier reductions over the same range of j whose results it reads,
// its members; the element-wise tensors computed in the fused body; the
// reductions over other indices computed per j, its producers), the checks
// that make fusing it legal, and each member's body separated in the
// earlier results (ir/separate.h). ir/online_fuse.h builds the fused loop
// from what Chain::analyse finds.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "ir/online_nest.h"
#include "ir/separate.h"

namespace dccc::ir {

/// A reduction of the chain: a member (an earlier reduction over j) or the
/// root (the last one).
struct Member {
  const Nest* nest = nullptr;
  std::vector<Expr> args;  // where the chain reads it (the root: its own left side)
  Expr x, post;            // expanded, in the root's variables
  bool deps = false;       // x reads earlier results
  AddForm add;
  MulForm mul;
  Buffer cur, old;  // the result over the prefix so far, and before this step (set by fuse_chain)
  bool store = false;
};

/// A reduction over other indices whose result the chain reads at j (the
/// scores q k^T): computed per j into `scalar`.
struct Producer {
  const Nest* nest = nullptr;
  std::vector<Expr> args;
  Buffer scalar;
};

/// One chain: a root reduction, the earlier reductions over the same j it
/// reads (members), and the tensors computed in the fused body.
class Chain {
 public:
  /// The chain rooted at top-level statement `root` of `func` (whose top
  /// level is `all_items`, parsed as `all_nests`).
  Chain(Func& func, const std::vector<Stmt>& all_items, const std::vector<std::optional<Nest>>& all_nests,
        size_t root);

  /// Finds the members and separates their bodies; false when nothing is
  /// fused (`why` says why; empty: the root reads no earlier reduction over j).
  bool analyse(const std::set<std::string>& keep, const std::set<std::string>& scheduled);

  /// The top-level statements the fused loop replaces besides the root.
  const std::set<size_t>& removed() const { return removed_; }
  /// The tensors no longer stored once the chain is fused.
  std::set<const BufferNode*> dropped() const;

  /// A new scalar named `base` (made unique), added to `new_buffers`.
  Buffer scalar(const std::string& base, Scalar t);
  /// Nest `n`'s left-side variables bound to `args`.
  std::map<const VarNode*, Expr> bind(const Nest& n, const std::vector<Expr>& args) const;

  std::string why;  // why the chain is not fused (empty: no chain at all)
  /// When analyse refused because a reduction over other indices that the
  /// chain reads at j is indexed beyond the rows (transformer_block's v =
  /// y . wv, read as v[b][j, h, e]): those tensors. Recomputing one per j
  /// for every such index would repeat its whole reduction; stored, as its
  /// own statement computes it, the chain reads it like an input. The pass
  /// retries with them kept (keep_stored).
  std::vector<const BufferNode*> beyond_rows;
  /// Tensor `t` stays stored: the chain reads it, never computes it.
  void keep_stored(const BufferNode* t) { def_.erase(t); }

  // What analyse found (read by fuse_chain, ir/online_fuse.h).
  Func& f;
  const std::vector<Stmt>& items;                // the function's top level
  const std::vector<std::optional<Nest>>& nests;  // parsed
  size_t root_item;
  Var j;                                         // the root's reduction variable
  Expr extent;                                   // and its extent
  size_t rows = 0;                               // the root's left-side indices the results are read at
  std::vector<Member> members;                   // dependency order, the root last
  std::vector<Producer> producers;
  std::set<size_t> inlined;                      // element-wise statements computed in the loop
  // Built with the fused loop.
  std::map<const BufferNode*, Buffer> transposed;  // transposed copies of operands
  std::vector<Buffer> new_buffers;
  std::vector<Stmt> pre;  // run before the fused statement (transposed copies)

 private:
  bool refuse(std::string w);
  std::string names(const std::set<const VarNode*>& vs) const;
  bool is_member(const BufferNode* b) const;
  bool dep_j(const Expr& e) const;
  bool dep_r(const Expr& e) const;
  bool at_j(const std::vector<Expr>& args) const;
  Expr expand(const Expr& e);
  void member(const Nest& n, const std::vector<Expr>& args);
  Expr producer(const Nest& n, const std::vector<Expr>& args);

  std::map<const BufferNode*, const Nest*> def_;
  std::set<const VarNode*> lhs_;
  std::set<size_t> removed_;
  std::set<const BufferNode*> gone_;
};

}  // namespace dccc::ir
