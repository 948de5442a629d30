// What the directives of ir/apply_schedule share while they apply one
// function's schedule: the loop names of each assignment as the directives
// so far left them, the notes --explain prints, the bookkeeping one
// directive leaves for a later one (storage padding, fusion maps, parts of
// split operations, remapped loops), and the checks several directives make
// (resolving `T.i`, independent iterations). Each directive is a file pair
// of its own in this folder with one entry point taking a ScheduleState.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ir/fuse_dims.h"
#include "ir/ir.h"
#include "ir/schedule.h"
#include "support/diagnostics.h"

namespace dccc::ir {

/// `s` with the loop of `v` replaced by fn(loop).
Stmt replace_for(const Stmt& s, const VarNode* v, const std::function<Stmt(const Stmt&)>& fn);

Stmt make_for(const Var& v, Expr extent, Stmt body, LoopKind k);

/// A loop a directive names (`T.i`): its assignment (index into Func::nests)
/// and variable.
struct ResolvedLoop {
  size_t nest;
  Var var;
};

/// The maps of one `fuse` directive, for a later `fuse_dims`.
struct FusionMaps {
  size_t nest;
  std::string outer, inner, name;
  FusedLoops maps;
};

/// The state of applying one function's schedule. A bad directive reports a
/// [Schedule] error through error() (which clears `ok`) and changes nothing.
class ScheduleState {
 public:
  ScheduleState(Func& f, DiagnosticEngine& diags);

  /// Reports a [Schedule] error at `at`; the schedule fails.
  void error(SourceRange at, const std::string& msg);
  void note(SourceRange at, const std::string& msg);
  /// How --explain names directive `d`: its text and line.
  std::string where(const Directive& d) const;
  /// The loop `r` names, or nullopt after an error saying why not. Marks
  /// its assignment as named by a directive (no default padding).
  std::optional<ResolvedLoop> resolve(const LoopRef& r);
  /// The name of loop `v` in nest `n` (its variable's name when unnamed).
  std::string name_of(size_t n, const VarNode* v) const;
  /// The nest's loops as they now run, outermost first: `parallel b, i (to a multiple of 4), h`.
  std::string loop_order(size_t n) const;
  /// Whether the iterations of a loop over `v` with body `body` are
  /// independent (may run in any order): every tensor store names `v`
  /// plainly (with `plain` false: has an index that mentions `v`), no stored
  /// tensor is read, scalars are written before read, no prints. `why` says
  /// why not.
  bool independent(const Stmt& body, const Var& v, std::string& why, bool plain = true) const;
  /// The loop variables an index determines one-to-one (ir/split_op.h).
  void plain_vars(const Expr& e, std::set<const VarNode*>& out) const;
  /// New loops replacing `old` belong to its part of a split operation.
  void inherit_part(const Var& old, std::initializer_list<Var> fresh);
  /// What --explain prints for the function: per assignment, its loops as
  /// they now run and each choice with its reason.
  std::string explain() const;

  Func& f;
  DiagnosticEngine& diags;
  std::vector<FusionMaps> fusion_maps;  // every fuse() so far
  std::set<size_t> inlined;             // nests computed in their readers
  std::set<const VarNode*> remapped;    // remapped loops
  bool gpu = false;                     // the CUDA target (gpu_blocks, gpu_threads apply)
  int remaps = 0;

  int fusions = 0;
  std::map<const VarNode*, int> part_of;  // loop -> the part of a split operation it runs in
  std::vector<int> part_parent;           // part -> the part it was split from (-1: a whole statement)
  std::vector<std::map<std::string, Var>> names;  // per nest: loop name -> variable (after splits)
  std::vector<std::vector<std::string>> notes;   // per nest: what --explain says
  std::vector<std::set<std::string>> split_away;  // per nest: names split away
  std::vector<std::map<std::string, std::string>> fused_into;  // per nest: names fused away -> the fused loop
  std::string order_note = "loop order and `parallel` from the CPU heuristics";
  std::set<size_t> directed;                     // nests a directive names
  std::vector<std::string> defaults;             // per nest: the default padding's note
  std::map<std::pair<const BufferNode*, size_t>, SourceRange> storage_at;  // pad_storage directives
  bool ok = true;
};

}  // namespace dccc::ir
