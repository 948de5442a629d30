// Online reductions: a chain of reductions over one index, in which a later
// reduction reads an earlier one's result, computed in one pass over that
// index (flash attention's running maximum and sum, derived from the naive
// program rather than recognised; docs/vloop.md, "Online reductions").
//
// A top-level assignment R = reduce(op, X) over a loop j (the root) whose
// body or result reads the result r of an earlier reduction over the same
// range of j (a member; its own body may read earlier members, and so on)
// is fused with its members into one loop over j when every member's body
// separates in the earlier results it reads:
//
//   op +:        X = G(j) * exp(E(r)) * P(r)    (a product; exp factors of
//                the body merge into one exponent, split into a j part
//                and an r part E)
//   op max/min:  X = G(j) + H(r)
//
// found by rewriting X (products, quotients, exp of sums and differences,
// scaling by values independent of j and r, casts between float types,
// `select` on a condition independent of r with a zero branch or with
// branches that separate alike), never by matching one program. Each + member
// keeps acc = sum over j' <= j of X(j', r_j) with the results r_j of the
// prefix; when they move from r_old to r_new it multiplies acc by
// exp(E(r_new) - E(r_old)) (1 when E does not change, 0 when E(r_old) is
// -inf, so no quotient of large exponentials and no inf * 0), and adds
// X(j, r_new) with its P factors left out; P(r) is applied after the loop
// with the final results (the factor is 1, and not computed, while E does
// not move). A max/min member folds G(j) and adds H(r) after the loop. An
// exp of the step that reads no extra index is computed once per j. Element-wise tensors read by the chain (p = exp(s - m), masks,
// scales, casts) are computed in the fused body; a tensor indexed by j that
// a reduction over other indices computes (the scores q k^T) is computed per
// j into a scalar. No tensor indexed by j is stored any more: the memory of
// attention drops from O(s^2) to the results (rows) and, for a root with
// left-side indices beyond the rows (d), its accumulator (the output itself
// when its type is the accumulator's).
//
// Nothing changes (and --explain says why) when a body does not separate
// (`sqrt(s - m)`, `exp(s * m)`, `s + m` in a sum), a tensor of the chain is
// read elsewhere before the root or is indexed by j and read outside the
// chain, a statement between the chain's assignments writes what they read,
// a `schedule` directive names one of its assignments, or `materialize(T)`
// names one of its tensors. Runs on multi-index IR before mark_parallel, for
// both targets.
#pragma once

#include <set>
#include <string>

#include "ir/ir.h"

namespace dccc::ir {

/// Fuses every chain of dependent reductions of `f` that qualifies (see
/// above). `keep` names tensors a `materialize` directive keeps stored and
/// `scheduled` the tensors whose assignments a directive names; chains
/// touching either are left alone. Appends to `explain` (when not null) one
/// line per chain fused or refused, saying which rewrite or which factor.
void online_reductions(Func& f, const std::set<std::string>& keep, const std::set<std::string>& scheduled,
                       std::string* explain);

}  // namespace dccc::ir
