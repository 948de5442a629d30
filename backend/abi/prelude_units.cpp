// The prelude split into units the prelude cache keeps apart, each with a
// canonical C definition (backend/abi/prelude_units.h).
#include "backend/abi/prelude_units.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <regex>
#include <set>

#include "backend/abi/c_emit.h"

namespace dccc::backend::cabi {

using ir::Buffer;
using ir::BufferKind;
using ir::BufferNode;
using ir::ExprKind;
using ir::StmtKind;

namespace {

/// FNV-1a, 64 bits: the prelude cache's `kind` of a generated prelude.
uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

}  // namespace

/// The prelude's units, or an empty vector when the prelude cannot be cached
/// (it touches buffers other than aux arrays and inputs, reads an aux array
/// no unit fills, or has no aux array).
std::vector<PreludeUnit> prelude_units(const ir::Func& f) {
  std::vector<PreludeUnit> units;
  if (!f.prelude) return units;
  std::vector<ir::Stmt> items = f.prelude->kind == StmtKind::Seq ? f.prelude->body : std::vector<ir::Stmt>{f.prelude};
  // Union of items that touch a common aux array.
  std::vector<size_t> parent(items.size());
  for (size_t k = 0; k < items.size(); ++k) parent[k] = k;
  std::function<size_t(size_t)> root = [&](size_t k) { return parent[k] == k ? k : parent[k] = root(parent[k]); };
  std::map<const BufferNode*, size_t> owner;
  bool ok = true;
  for (size_t k = 0; k < items.size(); ++k) {
    // An aux array that sizes an array this item fills (`fuse`'s F_fo0 of
    // F_oif0@(E)) is complete before the item runs: it is read like an input,
    // so its unit comes first and is found before this one is sized.
    std::set<const BufferNode*> sizing;
    ir::each_stmt(items[k], [&](const ir::StmtNode& st) {
      if (st.kind == StmtKind::Store && st.buffer && st.buffer->kind == BufferKind::Aux)
        ir::each_expr(st.buffer->total, [&](const ir::ExprNode& e) {
          if (e.kind == ExprKind::Load && e.buffer->kind == BufferKind::Aux && e.buffer != st.buffer)
            sizing.insert(e.buffer.get());
        });
    });
    auto touch = [&](const BufferNode* b) {
      if (b->kind == BufferKind::Input || sizing.count(b)) return;
      if (b->kind != BufferKind::Aux) {
        ok = false;
        return;
      }
      auto [it, fresh] = owner.emplace(b, k);
      if (!fresh) parent[root(k)] = root(it->second);
    };
    ir::each_stmt(items[k], [&](const ir::StmtNode& st) {
      if (st.kind == StmtKind::Store && st.buffer) touch(st.buffer.get());
      ir::own_exprs(st, [&](const ir::ExprNode& e) {
        if (e.kind == ExprKind::Load) touch(e.buffer.get());
      });
    });
  }
  if (!ok || items.empty()) return {};
  std::vector<Buffer> filled = ir::prelude_aux(f);
  std::map<size_t, size_t> unit_of;  // root item -> unit
  for (size_t k = 0; k < items.size(); ++k) {
    auto [it, fresh] = unit_of.emplace(root(k), units.size());
    if (fresh) units.emplace_back();
    units[it->second].stmts.push_back(items[k]);
  }
  for (const auto& [b, k] : owner) {
    Buffer buf;
    for (const auto& x : f.buffers)
      if (x.get() == b) buf = x;
    if (!buf || std::find(filled.begin(), filled.end(), buf) == filled.end()) return {};  // read, never filled
  }
  for (const auto& b : f.buffers)
    if (owner.count(b.get())) units[unit_of.at(root(owner.at(b.get())))].aux.push_back(b);
  // An aux array read as an input must come from an earlier unit.
  for (size_t k = 0; k < units.size(); ++k)
    for (const auto& st : units[k].stmts) {
        bool bad = false;
        ir::each_stmt(st, [&](const ir::StmtNode& y) {
          ir::own_exprs(y, [&](const ir::ExprNode& e) {
            if (e.kind != ExprKind::Load || e.buffer->kind != BufferKind::Aux) return;
            auto it = owner.find(e.buffer.get());
            if (it == owner.end() || unit_of.at(root(it->second)) > k) bad = true;
          });
        });
        for (const auto& b : units[k].aux)
          ir::each_expr(b->total, [&](const ir::ExprNode& e) {
            if (e.kind != ExprKind::Load || e.buffer->kind != BufferKind::Aux) return;
            auto it = owner.find(e.buffer.get());
            if (it == owner.end() || unit_of.at(root(it->second)) >= k) bad = true;
          });
        if (bad) return {};
      }
  const CNames names(f);
  for (auto& u : units) {
    CEmitter ce;
    ce.names = &names;
    ce.at = f.at;
    auto note = [&](const ir::ExprNode& e) {
      if (e.kind == ExprKind::SizeRef && std::find(u.sizes.begin(), u.sizes.end(), e.name) == u.sizes.end())
        u.sizes.push_back(e.name);
      bool other_aux = e.kind == ExprKind::Load && e.buffer->kind == BufferKind::Aux &&
                       std::find(u.aux.begin(), u.aux.end(), e.buffer) == u.aux.end();
      if (e.kind == ExprKind::Load && (e.buffer->kind == BufferKind::Input || other_aux) &&
          std::find(u.inputs.begin(), u.inputs.end(), e.buffer) == u.inputs.end())
        u.inputs.push_back(e.buffer);
    };
    for (const auto& st : u.stmts)
      ir::each_stmt(st, [&](const ir::StmtNode& x) {
        // A loop variable reused by another loop (`remap`'s y) keeps its name.
        if (x.kind == StmtKind::For && !ce.vars.count(x.var.get())) ce.vars[x.var.get()] = "v" + std::to_string(ce.vars.size());
        ir::own_exprs(x, [&](const ir::ExprNode& e) { note(e); });
      });
    for (const auto& b : u.aux) ir::each_expr(b->total, [&](const ir::ExprNode& e) { note(e); });
    std::string decl, body;
    for (size_t k = 0; k < u.sizes.size(); ++k) decl += fmt::format("  const int64_t S{0} = pc->s[{0}];\n  (void)S{0};\n", k);
    for (size_t k = 0; k < u.inputs.size(); ++k) {
      const Buffer& b = u.inputs[k];
      decl += fmt::format("  const {0}* const L{1} = (const {0}*)pc->l[{1}];\n", c_type(b->type), k);
      ce.buffers[b.get()] = b->dims.empty() ? fmt::format("(*L{})", k) : fmt::format("L{}", k);
    }
    for (size_t k = 0; k < u.aux.size(); ++k) {
      decl += k == 0 ? "  int64_t* const P0 = (int64_t*)out;\n"
                     : fmt::format("  int64_t* const P{} = P{} + pc->n[{}];\n", k, k - 1, k - 1);
      ce.buffers[u.aux[k].get()] = "P" + std::to_string(k);
    }
    for (const auto& st : u.stmts) ce.stmt(st, 1, body);
    std::string totals = "  /* sizes:";
    for (const auto& b : u.aux) totals += " " + ce.expr(b->total);
    totals += " */\n";
    std::string text = decl + totals + body;
    // Sizes by position, not by name: `s_H` is S0 here if H is read first.
    for (size_t k = 0; k < u.sizes.size(); ++k)
      text = std::regex_replace(text, std::regex("\\bs_" + names.size(u.sizes[k]) + "\\b"), "S" + std::to_string(k));
    u.definition = text;
    u.kind = fnv1a(text);
  }
  return units;
}

}  // namespace dccc::backend::cabi
