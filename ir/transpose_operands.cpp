#include "ir/transpose_operands.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dccc::ir {
namespace {

constexpr int64_t kRowPad = 16;

bool is_var(const Expr& e, const Var& v) { return e && e->kind == ExprKind::VarRef && e->var == v; }

/// One operand to transpose: the load, the position of its j index.
struct Candidate {
  const ExprNode* load = nullptr;
  size_t jpos = 0;
};

/// The operand of `x` to transpose in the nest `i { j { ..; r { step }; .. } }`, if any.
std::optional<Candidate> operand(const Expr& x, const Var& i, const Var& j, const Var& r) {
  bool contiguous_j = false;
  std::optional<Candidate> found;
  each_expr(x, [&](const ExprNode& e) {
    if (e.kind != ExprKind::Load || e.flat || e.args.size() < 2) return;
    if (is_var(e.args.back(), j)) contiguous_j = true;
    if (found || !is_var(e.args.back(), r)) return;
    const BufferNode* b = e.buffer.get();
    if ((b->kind != BufferKind::Input && b->kind != BufferKind::Local) || b->dims.size() != e.args.size()) return;
    for (int64_t p : b->pad)
      if (p > 1) return;
    std::optional<size_t> jpos;
    for (size_t k = 0; k + 1 < e.args.size(); ++k) {
      const Expr& a = e.args[k];
      if (mentions(a, i) || mentions(a, r)) return;
      if (is_var(a, j)) {
        if (jpos) return;
        jpos = k;
      } else if (mentions(a, j)) {
        return;
      }
    }
    if (!jpos) return;
    // The dimension moves last: no other extent may depend on its variable.
    for (size_t k = 0; k < b->dims.size(); ++k)
      if (k != *jpos && mentions(b->dims[k].extent, b->dims[*jpos].var)) return;
    found = Candidate{&e, *jpos};
  });
  if (contiguous_j) return std::nullopt;
  return found;
}

class Transposer {
 public:
  explicit Transposer(Func& f) : f_(f) {}

  /// A copy nest and the rewritten statement for top-level item `s`, or nullopt.
  std::optional<std::pair<Stmt, Stmt>> transform(const Stmt& s) {
    std::optional<std::pair<const ExprNode*, size_t>> hit;
    find(s, nullptr, hit);
    if (!hit) return std::nullopt;
    const ExprNode* load = hit->first;
    size_t jpos = hit->second;
    const Buffer& b = load->buffer;
    bool stored = false;
    each_stmt(s, [&](const StmtNode& x) { stored |= x.kind == StmtKind::Store && x.buffer == b; });
    if (stored) return std::nullopt;

    // BT: B's dimensions with the one at jpos moved last (fresh variables).
    std::vector<size_t> order;
    for (size_t k = 0; k < b->dims.size(); ++k)
      if (k != jpos) order.push_back(k);
    order.push_back(jpos);
    auto bt = std::make_shared<BufferNode>();
    bt->name = b->name + ".T";
    bt->type = b->type;
    bt->kind = BufferKind::Local;
    // Rows (along j) padded to a multiple of 16 in storage: the backend's
    // vector lanes along j may then run to the next multiple of 16 inside
    // the row (backend/llvm/codegen.h) instead of ending in scalar steps.
    bt->pad.assign(b->dims.size(), 1);
    bt->pad.back() = kRowPad;
    std::map<const VarNode*, Expr> dim_vars;
    for (size_t k : order) {
      Var v = make_var(b->dims[k].var->name + ".T");
      dim_vars[b->dims[k].var.get()] = build::var(v);
    }
    for (size_t k : order)
      bt->dims.push_back(BufferDim{dim_vars.at(b->dims[k].var.get())->var, substitute(b->dims[k].extent, dim_vars)});
    f_.buffers.push_back(bt);

    // The copy nest, loops in BT's dimension order. When the statement is a
    // loop and the load's first index is its variable (`b`), the copy of
    // that slice goes first in the loop's body, so the slice is still in
    // cache when the nest reads it; else the whole copy goes before it.
    // The loop must run over exactly B's first dimension (not, say, over two
    // batches one after the other, as `hfuse` makes them).
    bool inside = s->kind == StmtKind::For && jpos != 0 && is_var(load->args[0], s->var) &&
                  same_expr(s->extent, b->dims[0].extent);
    std::vector<Var> loops;
    std::map<const VarNode*, Expr> loop_of;
    for (size_t n = 0; n < order.size(); ++n) {
      loops.push_back(n == 0 && inside ? s->var : make_var(b->dims[order[n]].var->name + ".t"));
      loop_of[bt->dims[n].var.get()] = build::var(loops.back());
    }
    // The j loop runs in blocks of kRowPad (one padded row chunk): for each
    // block, the loop over B's last dimension (d) goes outside a loop over
    // the block's kRowPad positions, so the innermost loop stores a run of
    // BT's row contiguously (one vector) and reads the kRowPad rows of B the
    // block covers, which stay in cache across d (a gather per vector;
    // with j outermost it would be a scatter per vector).
    const size_t last = order.size() - 1;
    Var jo = make_var(loops[last]->name + ".o"), jl = make_var(loops[last]->name + ".i");
    Expr j = build::binary(BinOp::Add, build::binary(BinOp::Mul, build::var(jo), build::int_imm(kRowPad)),
                           build::var(jl));
    std::vector<Expr> src(b->dims.size()), dst;
    for (size_t n = 0; n < order.size(); ++n) {
      src[order[n]] = n == last ? j : build::var(loops[n]);
      dst.push_back(n == last ? j : build::var(loops[n]));
    }
    // The j loop runs over the row padding too, storing there copies of the
    // row's last element (B[.., min(j, n - 1), ..], always in bounds; no
    // iteration when n = 0): nothing uses those values, but BT is then
    // stored in full by its copy and needs no zero fill (ir/written_first.h).
    Expr row = substitute(bt->dims[last].extent, loop_of);
    src[jpos] = build::binary(BinOp::Min, j, build::binary(BinOp::Sub, row, build::int_imm(1)));
    // Loops in BT's order but for the last two: [.., j block, d, j in block].
    Stmt copy = build::for_loop(jl, build::int_imm(kRowPad), build::store(bt, dst, build::load(b, src)),
                                LoopKind::Serial);
    std::vector<std::pair<Var, Expr>> outer;
    for (size_t n = 0; n < last; ++n) {
      if (n == last - 1) outer.emplace_back(jo, build::binary(BinOp::Div, build::round_up(row, kRowPad),
                                                            build::int_imm(kRowPad)));
      outer.emplace_back(loops[n], substitute(bt->dims[n].extent, loop_of));
    }
    for (size_t n = outer.size(); n-- > (inside ? 1 : 0);)
      copy = build::for_loop(outer[n].first, outer[n].second, copy,
                             n == 0 && s->kind == StmtKind::For ? s->loop : LoopKind::Serial);

    // The nest reads BT[other indices in order, j].
    std::vector<Expr> args;
    for (size_t k : order) args.push_back(load->args[k]);
    Expr replacement = build::load(bt, args);
    Stmt rewritten = rewrite(s, [&](const Expr& e) {
      return replace_exprs(e, [&](const Expr& x) { return x.get() == load ? replacement : nullptr; });
    });
    if (inside) {
      auto loop = std::make_shared<StmtNode>(*rewritten);
      loop->body = {build::seq({copy, rewritten->body[0]})};
      return std::make_pair(Stmt(), Stmt(loop));
    }
    return std::make_pair(copy, rewritten);
  }

 private:
  /// Looks for the nest `i { j { init; r { step }; fin } }` in `s`; `parent`
  /// is the loop whose body `s` is directly (null: none).
  void find(const Stmt& s, const StmtNode* parent, std::optional<std::pair<const ExprNode*, size_t>>& hit) {
    if (!s || hit) return;
    if (s->kind == StmtKind::For && parent && s->loop == LoopKind::Serial) {
      Stmt body = unwrap(s->body[0]);
      if (body && body->kind == StmtKind::Seq && body->body.size() == 3) {
        const Stmt& init = body->body[0];
        const Stmt& red = body->body[1];
        const Stmt& fin = body->body[2];
        if (init->kind == StmtKind::Store && red->kind == StmtKind::For && red->loop == LoopKind::Serial &&
            fin->kind == StmtKind::Store && init->buffer->kind == BufferKind::Scalar) {
          Stmt step = unwrap(red->body[0]);
          if (step && step->kind == StmtKind::Store && step->buffer == init->buffer && step->value->kind == ExprKind::Binary &&
              step->value->args[0]->kind == ExprKind::Load && step->value->args[0]->buffer == init->buffer) {
            if (auto c = operand(step->value->args[1], parent->var, s->var, red->var)) {
              hit = std::make_pair(c->load, c->jpos);
              return;
            }
          }
        }
      }
    }
    // A loop directly encloses its body (one-item sequences unwrapped), not
    // the items of a longer sequence or the branches of a condition.
    const StmtNode* next = s->kind == StmtKind::For ? s.get() : nullptr;
    for (const auto& c : s->body) find(unwrap(c), next, hit);
  }

  Func& f_;
};

}  // namespace

int transpose_operands(Func& f) {
  if (!f.body || f.storage_lowered) return 0;
  std::vector<Stmt> items = items_of(f.body);
  std::vector<Stmt> out;
  int made = 0;
  Transposer t(f);
  for (const auto& item : items) {
    if (auto r = t.transform(item)) {
      if (r->first) out.push_back(r->first);
      out.push_back(r->second);
      ++made;
    } else {
      out.push_back(item);
    }
  }
  if (made) f.body = build::seq(out);
  return made;
}

}  // namespace dccc::ir
