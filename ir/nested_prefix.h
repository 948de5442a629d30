// Offset arrays of a nested ragged dimension (storage lowering, CoRa §5.2
// and appendix B.1, for a dimension whose own extent depends on an outer
// one).
//
// In `[b: B][i: seqlen[b]][i + 1, H]` dimension i sizes the inner ones (row
// i holds (i + 1) * H elements) and its extent depends on b. Its prefix
// array A_i cannot be indexed by i alone: every b has its own run of
// prefix sums. The runs are laid out one after another, run b holding
// seqlen[b] + 1 entries (the last one is the size of b's whole slice), and a
// second array S gives where each run starts:
//
//   S[0] = 0,  S[o + 1] = S[o] + extent(o) + 1             (O + 1 entries)
//   A[S[o] + y] = sum over y' < y of slice(o, y')           (S[O] entries)
//
// so the offset of index i inside b's slice is A[S[b] + i] and the size of
// b's slice is A[S[b] + seqlen[b]]. Both arrays are filled by the prelude;
// the storage lowering (ir/storage_lowering.cpp) shares them between
// buffers with the same definition, as it does the flat prefix arrays.
#pragma once

#include <string>

#include "ir/ir.h"

namespace dccc::ir {

/// The two arrays of one nested prefix and the prelude statements that
/// fill them (`fill_starts` first: `fill_prefix` reads S, and A's total is
/// S[O]).
struct NestedPrefix {
  Buffer starts;  // S, i64, outer_extent + 1 entries
  Buffer prefix;  // A, i64, S[outer_extent] entries (its total reads S)
  Stmt fill_starts;
  Stmt fill_prefix;
};

/// Builds S (named `starts_name`) and A (`prefix_name`) for an outer
/// dimension of `outer_extent` (which must not depend on other indices)
/// and an inner one of extent `extent` and slice size `slice`: `extent`
/// may mention `outer`; `slice` may mention `outer` and `inner`. Loads in
/// them stay unlowered (the caller lowers the fills with everything else).
NestedPrefix nested_prefix(const std::string& starts_name, const std::string& prefix_name, const Var& outer,
                           const Expr& outer_extent, const Var& inner, const Expr& extent, const Expr& slice);

/// A[S[outer_index] + index]: the prefix at `index` in the run of
/// `outer_index` (unlowered loads, i64).
Expr nested_prefix_at(const NestedPrefix& p, const Expr& outer_index, const Expr& index);

}  // namespace dccc::ir
