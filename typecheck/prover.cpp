#include "typecheck/prover.h"

#include <z3++.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>

namespace dccc {

struct Prover::Impl {
  z3::context ctx;
  unsigned budget;
  std::unordered_map<std::string, ProofResult> cache;
  // Free index variables of the current query, numbered by first use: the
  // names Z3 sees are the same on every run and in every build (names
  // taken from addresses made Z3's nonlinear search take 0.1 s in one
  // build and over a minute in another on the same query).
  std::map<const IndexVar*, int> var_numbers;

  explicit Impl(unsigned b) : budget(b) {}

  struct Env {
    std::map<const IndexVar*, z3::expr> vars;
  };

  z3::func_decl array_fn(const std::string& name, size_t arity) {
    z3::sort_vector domain(ctx);
    for (size_t i = 0; i < arity; ++i) domain.push_back(ctx.int_sort());
    return ctx.function(("arr:" + name + "/" + std::to_string(arity)).c_str(), domain, ctx.int_sort());
  }

  z3::expr var_const(const IndexVar* v) {
    // Unique per object within a query: distinct variables of the same name stay apart.
    auto [it, fresh] = var_numbers.emplace(v, static_cast<int>(var_numbers.size()));
    return ctx.int_const(("v:" + v->name + "#" + std::to_string(it->second)).c_str());
  }

  z3::expr to_z3(const SymPtr& s, Env& env) {
    auto a = [&](size_t i) { return to_z3(s->args[i], env); };
    switch (s->kind) {
      case SymKind::Const: return ctx.int_val(static_cast<int64_t>(s->value));
      case SymKind::Size: return ctx.int_const(("s:" + s->name).c_str());
      case SymKind::Var: {
        auto it = env.vars.find(s->var.get());
        return it != env.vars.end() ? it->second : var_const(s->var.get());
      }
      case SymKind::Read: {
        z3::expr_vector args(ctx);
        for (size_t i = 0; i < s->args.size(); ++i) args.push_back(a(i));
        return array_fn(s->name, s->args.size())(args);
      }
      case SymKind::Add: return a(0) + a(1);
      case SymKind::Sub: return a(0) - a(1);
      case SymKind::Mul: return a(0) * a(1);
      case SymKind::Div: return a(0) / a(1);
      case SymKind::Mod: return z3::mod(a(0), a(1));
      case SymKind::Min: return z3::ite(a(0) <= a(1), a(0), a(1));
      case SymKind::Max: return z3::ite(a(0) >= a(1), a(0), a(1));
      case SymKind::Eq: return a(0) == a(1);
      case SymKind::Ne: return a(0) != a(1);
      case SymKind::Lt: return a(0) < a(1);
      case SymKind::Le: return a(0) <= a(1);
      case SymKind::And: return a(0) && a(1);
      case SymKind::Or: return a(0) || a(1);
      case SymKind::Not: return !a(0);
      case SymKind::True: return ctx.bool_val(true);
    }
    return ctx.bool_val(true);
  }

  z3::expr fact_to_z3(const Fact& f) {
    Env env;
    if (f.vars.empty()) return to_z3(f.body, env);
    z3::expr_vector bound(ctx);
    z3::expr guard = ctx.bool_val(true);
    int n = 0;
    for (const auto& [v, range] : f.vars) {
      z3::expr c = ctx.int_const(("q" + std::to_string(n++) + ":" + v->name).c_str());
      env.vars.emplace(v.get(), c);
      bound.push_back(c);
    }
    for (const auto& [v, range] : f.vars) {
      z3::expr c = env.vars.at(v.get());
      guard = guard && c >= 0 && c < to_z3(range, env);
    }
    return z3::forall(bound, z3::implies(guard, to_z3(f.body, env)));
  }
};

Prover::Prover(unsigned budget) : impl_(std::make_unique<Impl>(budget)) {}
Prover::~Prover() = default;

namespace {

/// A cache key equal for queries that differ only in which variable
/// objects they use (alpha-equivalent queries have the same answer):
/// variables are numbered by first appearance.
std::string key_of(const std::vector<Fact>& facts, const SymPtr& goal) {
  std::string key;
  std::map<const IndexVar*, int> numbers;
  std::function<void(const SymPtr&)> add_sym = [&](const SymPtr& s) {
    if (!s) return;
    if (s->kind == SymKind::Var) {
      auto [it, fresh] = numbers.emplace(s->var.get(), static_cast<int>(numbers.size()));
      key += "v" + std::to_string(it->second);
      return;
    }
    key += std::to_string(static_cast<int>(s->kind));
    if (s->kind == SymKind::Const) key += ":" + std::to_string(s->value);
    if (s->kind == SymKind::Size || s->kind == SymKind::Read) key += ":" + s->name;
    key += "(";
    for (const auto& a : s->args) {
      add_sym(a);
      key += ",";
    }
    key += ")";
  };
  for (const auto& f : facts) {
    for (const auto& [v, r] : f.vars) {
      auto [it, fresh] = numbers.emplace(v.get(), static_cast<int>(numbers.size()));
      key += "A" + std::to_string(it->second) + "<";
      add_sym(r);
    }
    add_sym(f.body);
    key += ";";
  }
  key += "|-";
  add_sym(goal);
  return key;
}

/// Goals settled without the solver: syntactic equalities and `v < hi`
/// where a fact says exactly that.
bool trivially_true(const std::vector<Fact>& facts, const SymPtr& goal) {
  if (goal->kind == SymKind::True) return true;
  if ((goal->kind == SymKind::Eq || goal->kind == SymKind::Le) && sym::same(goal->args[0], goal->args[1]))
    return true;
  if (goal->kind == SymKind::Le && goal->args[0]->kind == SymKind::Const && goal->args[0]->value == 0 &&
      goal->args[1]->kind == SymKind::Var)
    return true;  // index variables are never negative
  for (const auto& f : facts)
    if (f.vars.empty() && sym::same(f.body, goal)) return true;
  return false;
}

/// The symbols a fact or goal constrains: its free index variables, size
/// names and array names.
struct Symbols {
  std::set<const IndexVar*> vars;
  std::set<std::string> names;  // "s:" sizes, "a:" arrays

  void add(const SymPtr& s, const std::set<const IndexVar*>& bound) {
    if (!s) return;
    if (s->kind == SymKind::Var && !bound.count(s->var.get())) vars.insert(s->var.get());
    if (s->kind == SymKind::Size) names.insert("s:" + s->name);
    if (s->kind == SymKind::Read) names.insert("a:" + s->name);
    for (const auto& a : s->args) add(a, bound);
  }
  bool meets(const Symbols& o) const {
    for (const auto* v : o.vars)
      if (vars.count(v)) return true;
    for (const auto& n : o.names)
      if (names.count(n)) return true;
    return false;
  }
  void merge(const Symbols& o) {
    vars.insert(o.vars.begin(), o.vars.end());
    names.insert(o.names.begin(), o.names.end());
  }
};

/// The facts that share a symbol with the goal, directly or through other
/// kept facts. The rest constrain other variables only, so they cannot
/// help a proof unless they contradict each other; left in, they send Z3's
/// nonlinear search astray (an index bound `h / (H / KH) < KH` was proved
/// in 0.2 s alone and ran past a minute beside a dozen unrelated bounds).
std::vector<Fact> relevant_facts(const std::vector<Fact>& facts, const SymPtr& goal) {
  Symbols want;
  want.add(goal, {});
  std::vector<Symbols> of(facts.size());
  for (size_t i = 0; i < facts.size(); ++i) {
    std::set<const IndexVar*> bound;
    for (const auto& [v, r] : facts[i].vars) bound.insert(v.get());
    for (const auto& [v, r] : facts[i].vars) of[i].add(r, bound);
    of[i].add(facts[i].body, bound);
  }
  std::vector<bool> kept(facts.size(), false);
  for (bool grew = true; grew;) {
    grew = false;
    for (size_t i = 0; i < facts.size(); ++i)
      if (!kept[i] && (want.meets(of[i]) || (of[i].vars.empty() && of[i].names.empty()))) {
        kept[i] = true;
        want.merge(of[i]);
        grew = true;
      }
  }
  std::vector<Fact> out;
  for (size_t i = 0; i < facts.size(); ++i)
    if (kept[i]) out.push_back(facts[i]);
  return out;
}

}  // namespace

ProofResult Prover::prove(const std::vector<Fact>& facts, const SymPtr& goal) {
  if (trivially_true(facts, goal)) return ProofResult::Proved;
  std::vector<Fact> relevant = relevant_facts(facts, goal);
  if (relevant.size() == facts.size()) return solve(facts, goal);
  ProofResult sliced = solve(relevant, goal);
  // A counterexample to the slice is one to the whole query unless the
  // left-out facts contradict each other (dead code), which only the
  // whole query can tell.
  return sliced == ProofResult::Refuted ? solve(facts, goal) : sliced;
}

ProofResult Prover::solve(const std::vector<Fact>& facts, const SymPtr& goal) {
  // 0 <= e for e built from sizes, index variables, length reads and
  // non-negative constants with + * min max: true without the solver.
  std::function<bool(const SymPtr&)> nonneg = [&](const SymPtr& e) -> bool {
    switch (e->kind) {
      case SymKind::Const: return e->value >= 0;
      case SymKind::Size: return !nonneg_size_ || nonneg_size_(e->name);
      case SymKind::Var: return true;
      case SymKind::Read: return !is_length_ || is_length_(e->name);
      case SymKind::Add:
      case SymKind::Mul:
      case SymKind::Min:
      case SymKind::Max: return nonneg(e->args[0]) && nonneg(e->args[1]);
      default: return false;
    }
  };
  if (goal->kind == SymKind::Le && goal->args[0]->kind == SymKind::Const && goal->args[0]->value == 0 &&
      nonneg(goal->args[1]))
    return ProofResult::Proved;
  std::vector<SymPtr> goal_reads;
  sym::reads(goal, goal_reads);
  for (const auto& f : facts)
    if (f.vars.empty()) sym::reads(f.body, goal_reads);
  std::vector<std::string> sizes;
  std::function<void(const SymPtr&)> collect = [&](const SymPtr& s) {
    if (!s) return;
    if (s->kind == SymKind::Size) sizes.push_back(s->name);
    for (const auto& a : s->args) collect(a);
  };
  for (const auto& f : facts) {
    collect(f.body);
    for (const auto& [v, r] : f.vars) collect(r);
  }
  collect(goal);
  std::string key = key_of(facts, goal);
  for (const auto& r : goal_reads)
    if (!is_length_ || is_length_(r->name)) key += "|len:" + r->name;
  for (const auto& s : sizes)
    if (nonneg_size_ && !nonneg_size_(s)) key += "|signed:" + s;
  if (auto it = impl_->cache.find(key); it != impl_->cache.end()) return it->second;

  ++solver_calls_;
  impl_->var_numbers.clear();
  static const bool trace = std::getenv("DCCC_PROVER_TRACE") != nullptr;
  if (trace) std::fprintf(stderr, "prover: %zu facts |- %s\n", facts.size(), sym::str(goal).c_str());
  z3::solver solver(impl_->ctx);
  z3::params p(impl_->ctx);
  p.set("rlimit", impl_->budget);
  solver.set(p);
  Impl::Env env;
  std::vector<SymPtr> all_reads;
  for (const auto& f : facts) {
    solver.add(impl_->fact_to_z3(f));
    if (f.vars.empty()) sym::reads(f.body, all_reads);
  }
  sym::reads(goal, all_reads);
  // Size parameters are never negative; nor are lengths (the runtime checks
  // both on entry). An integer `let` is known only by the fact of its value.
  for (const auto& s : sizes)
    if (!nonneg_size_ || nonneg_size_(s)) solver.add(impl_->ctx.int_const(("s:" + s).c_str()) >= 0);
  for (const auto& r : all_reads)
    if (!is_length_ || is_length_(r->name)) solver.add(impl_->to_z3(r, env) >= 0);
  solver.add(!impl_->to_z3(goal, env));
  // A watchdog of our own interrupts Z3 after kWatchdog: the resource
  // limit stops almost every query, but Z3 4.8.12 was seen to run past it,
  // and its built-in timeout has a hang of its own (upstream issue 5990).
  constexpr auto kWatchdog = std::chrono::seconds(10);
  std::mutex m;
  std::condition_variable cv;
  bool finished = false;
  std::thread watchdog([&] {
    std::unique_lock<std::mutex> lock(m);
    if (!cv.wait_for(lock, kWatchdog, [&] { return finished; })) impl_->ctx.interrupt();
  });
  z3::check_result outcome = z3::unknown;
  try {
    outcome = solver.check();
  } catch (const z3::exception&) {
    outcome = z3::unknown;
  }
  {
    std::lock_guard<std::mutex> lock(m);
    finished = true;
  }
  cv.notify_one();
  watchdog.join();
  ProofResult result;
  switch (outcome) {
    case z3::unsat: result = ProofResult::Proved; break;
    case z3::sat: result = ProofResult::Refuted; break;
    default: {
      // Quantified facts can leave Z3 "incomplete" without a timeout: that is
      // "not provable" to the user. Only running out of time is Unknown.
      std::string why = solver.reason_unknown();
      bool timeout = why.find("timeout") != std::string::npos || why.find("cancel") != std::string::npos ||
                     why.find("interrupt") != std::string::npos ||
                     why.find("resource") != std::string::npos || why.find("rlimit") != std::string::npos;
      result = timeout ? ProofResult::Unknown : ProofResult::Refuted;
      break;
    }
  }
  impl_->cache.emplace(std::move(key), result);
  return result;
}

}  // namespace dccc
