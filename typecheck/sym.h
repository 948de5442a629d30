// Symbolic integer expressions: the language of extents, index ranges and facts.
//
// An extent such as `kv.seqlen[b] + 1` is a Sym tree over constants, size
// parameters (`B`), index variables (objects, compared by identity) and reads
// of integer arrays (`kv.seqlen(b)`, an uninterpreted length function).
// Boolean forms (comparisons, and/or/not) express `where` facts. Syms are
// immutable and shared.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "support/source.h"

namespace dccc {

/// An index variable: a left-side index, a reduction index, a dimension's
/// named index or a `where` quantifier. Identity is the object.
struct IndexVar {
  std::string name;
  SourceRange where;  // where it was bound
};
using IndexVarPtr = std::shared_ptr<const IndexVar>;

#define DCCC_SYM_KINDS(X) \
  X(Const) X(Size) X(Var) X(Read) X(Add) X(Sub) X(Mul) X(Div) X(Mod) X(Min) X(Max) \
  X(Eq) X(Ne) X(Lt) X(Le) X(And) X(Or) X(Not) X(True)

enum class SymKind {
#define X(k) k,
  DCCC_SYM_KINDS(X)
#undef X
};

struct Sym;
using SymPtr = std::shared_ptr<const Sym>;

/// Const: value; Size: name (a size parameter or opaque size); Var: var;
/// Read: name (the array, e.g. "kv.seqlen") applied to args; others: args.
struct Sym {
  SymKind kind;
  int64_t value = 0;
  std::string name;
  IndexVarPtr var;
  std::vector<SymPtr> args;
};

namespace sym {
SymPtr constant(int64_t v);
SymPtr size(std::string name);
SymPtr var(IndexVarPtr v);
SymPtr read(std::string array, std::vector<SymPtr> args);
SymPtr op(SymKind k, std::vector<SymPtr> args);  // folds constants where trivial
SymPtr add(SymPtr a, SymPtr b);
SymPtr sub(SymPtr a, SymPtr b);
SymPtr lt(SymPtr a, SymPtr b);
SymPtr le(SymPtr a, SymPtr b);
SymPtr eq(SymPtr a, SymPtr b);
SymPtr truth();

/// Structural equality (variables by identity).
bool same(const SymPtr& a, const SymPtr& b);
/// Source-like text: `kv.seqlen[b] + 1`.
std::string str(const SymPtr& s);
/// True when the Sym mentions a variable or an array read (a ragged extent).
bool is_ragged(const SymPtr& s);
/// Every variable mentioned.
void vars(const SymPtr& s, std::vector<IndexVarPtr>& out);
/// Every array read, ground or not.
void reads(const SymPtr& s, std::vector<SymPtr>& out);

/// A substitution: variables, sizes and array-name prefixes to replace.
struct Subst {
  std::map<const IndexVar*, SymPtr> vars;
  std::map<std::string, SymPtr> sizes;
  /// Array renaming: "seqlen" -> "q.seqlen" (a whole name, or a prefix up to '.').
  std::map<std::string, std::string> arrays;
  bool empty() const { return vars.empty() && sizes.empty() && arrays.empty(); }
};
SymPtr substitute(const SymPtr& s, const Subst& subst);
}  // namespace sym

/// A fact the prover may assume: for all `vars` within their ranges
/// (0 <= v < range), `body` holds. No vars: a plain fact.
struct Fact {
  std::vector<std::pair<IndexVarPtr, SymPtr>> vars;
  SymPtr body;
};

}  // namespace dccc
