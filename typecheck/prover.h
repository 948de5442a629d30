// Z3-backed proofs about extents and index bounds.
//
// The checker asks: under these facts (size parameters are non-negative,
// lengths are non-negative, every index lies in its range, the `where`
// constraints hold), is this goal always true? Array reads become
// uninterpreted functions. Syntactic cases are settled without calling Z3,
// facts that share no variable, size or array with the goal are left out
// of its query, variables get names numbered per query (so Z3 sees the
// same query on every run), and answers are cached, so checking stays
// fast on large programs.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "typecheck/sym.h"

namespace dccc {

enum class ProofResult { Proved, Refuted, Unknown };

class Prover {
 public:
  /// `budget`: Z3's deterministic resource limit (rlimit) per query. A
  /// wall-clock timeout is not used: Z3 4.8's timer thread can hang the
  /// process, and a resource limit gives the same answer on every machine.
  explicit Prover(unsigned budget = kDefaultBudget);
  static constexpr unsigned kDefaultBudget = 500000;
  ~Prover();
  Prover(const Prover&) = delete;
  Prover& operator=(const Prover&) = delete;

  /// Is `goal` (a boolean Sym) implied by `facts`? Reads of arrays for
  /// which `is_length` answers true are assumed non-negative (the runtime
  /// checks lengths on entry); other arrays may hold anything.
  ProofResult prove(const std::vector<Fact>& facts, const SymPtr& goal);

  /// Which arrays are length arrays (default: all).
  void set_length_predicate(std::function<bool(const std::string&)> is_length) {
    is_length_ = std::move(is_length);
  }

  /// Which size names are known to be non-negative (default: all). Size
  /// parameters are (the runtime checks them on entry); an integer `let`
  /// is a size too, but its value may be negative, so only the fact of its
  /// value says what it is.
  void set_size_predicate(std::function<bool(const std::string&)> nonneg_size) {
    nonneg_size_ = std::move(nonneg_size);
  }

  /// Number of queries that reached Z3 (for tests and benchmarks).
  int solver_calls() const { return solver_calls_; }

 private:
  /// One Z3 query (after the syntactic shortcuts), cached by key.
  ProofResult solve(const std::vector<Fact>& facts, const SymPtr& goal);

  struct Impl;
  std::unique_ptr<Impl> impl_;
  int solver_calls_ = 0;
  std::function<bool(const std::string&)> is_length_;
  std::function<bool(const std::string&)> nonneg_size_;
};

}  // namespace dccc
