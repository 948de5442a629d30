// The random-program generator: see generator.h.
//
// A program is built from a small model. Every tensor value has a list of
// dimensions, each of a *domain* (the batch, a ragged position, a head, ...);
// a ragged dimension names the dimension its extent reads (its parent) and a
// length class (values of one class have provably equal lengths). An
// expression is generated in a context of bound index variables, and a
// value can be read there only when every dimension gets a variable whose
// range provably lies inside it; a `reduce` binds new variables for the
// dimensions of one value it reads. So every program checks by
// construction, and the few places where that is not certain (a `where`
// the program needs, a range inferred from two uses) are the checker's to
// prove.
#include "fuzz/progen/generator.h"

#include <algorithm>
#include <random>
#include <set>
#include <sstream>

namespace dccc::progen {
namespace {

enum class Dom { kBatch, kPos, kHead, kM, kN, kTri, kRagTri, kDoc, kSent, kTok };

struct Dim {
  Dom dom;
  int parent = -1;  // the dimension whose index this extent reads
  int cls = 0;      // length class of a ragged dimension
};

struct Value {
  std::string name;  // how it is read: `x.data`, `t3`
  std::vector<Dim> dims;
  std::vector<int> groups;  // bracket groups of a read: {1, 2} is [b][i, h]
  std::string elem;
  bool local = false;      // storage this function allocated (may be written)
  bool alias = false;      // a `let a = t;` of a local
  std::string src = "";    // a ragged local: the coupling whose lengths it was allocated with
};

struct Var {
  std::string name;
  Dom dom;
  int parent = -1;  // index of the variable this one's range depends on
  int cls = 0;
  /// Bound by a `reduce`: its range is inferred from every use, and uses on
  /// two ragged ranges must agree (`[RangeMismatch]`: a triangular `i + 1`
  /// is not the sequence's `len[b]`, though it fits inside it).
  bool reduced = false;
};

enum class PKind { kSeqs, kW, kV, kScalar, kDocs };
enum class RKind { kSeqs, kDocs, kBH, kB, kV, kScalar, kDH, kD };

struct Param {
  PKind kind;
  std::string name;
  int cls = 0;
  std::string main_arg;  // what main passes
};

struct Coupling {
  std::string name;
  int cls;
  bool docs;
};

struct Fn {
  std::string name;
  std::vector<Param> params;
  RKind ret = RKind::kScalar;
  bool docs = false;
  bool where_m = false;
  bool has_reduce = false;
  /// The result is storage the function allocated, not (a field of) one of
  /// its parameters: calls are inlined, so a returned parameter is the
  /// caller's argument itself, as read-only or frozen as it is there.
  bool ret_fresh = true;
  std::multiset<int> inlined;  // every function this one inlines, transitively
};

const char* kMarkBegin = "\x01";
const char* kMarkMid = "\x02";
const char* kMarkEnd = "\x03";

class Gen {
 public:
  Gen(uint64_t seed, const Features& f) : rng_(seed), f_(f) {}
  Program run();

 private:
  // Random numbers (own arithmetic: std distributions differ between libraries).
  uint64_t next() { return rng_(); }
  int below(int n) { return n <= 1 ? 0 : static_cast<int>(next() % static_cast<uint64_t>(n)); }
  bool chance(int percent) { return below(100) < percent; }
  template <class T>
  const T& pick(const std::vector<T>& v) { return v[below(static_cast<int>(v.size()))]; }

  bool is_float() const { return elem_ != "i32" && elem_ != "i64"; }
  std::string mark(const std::string& text, const std::string& replacement, const std::string& what);
  std::string literal();
  std::string var_name(Dom d, const std::vector<Var>& vars);
  bool compatible(const std::vector<Var>& vars, int v, const Dim& d, const std::vector<int>& chosen) const;
  std::string read(const Value& val, const std::vector<int>& chosen, const std::vector<Var>& vars,
                   bool allow_site);
  bool try_read(const Value& val, std::vector<Var>& vars, std::string* out);
  std::string leaf(std::vector<Var>& vars);
  std::string expr(std::vector<Var>& vars, int depth);
  std::string reduce(std::vector<Var>& vars, int depth);
  std::string cond(std::vector<Var>& vars, int depth);
  std::string cast_to_elem(const std::string& e, const std::string& from);

  // Functions.
  void gen_function(int k);
  std::string alloc_decl(const std::vector<Dim>& dims, const std::string& rag_len_src, bool site);
  void new_local(std::ostringstream& body, Fn& fn, const std::string& shape);
  bool gen_call(std::ostringstream& body, Fn& fn, int k);
  std::string coupling_of_cls(int cls, bool docs) const;
  void add_coupling_values(const std::string& name, int cls, bool docs);
  std::string lhs(const Value& v, std::vector<Var>& vars);
  void gen_main();
  void gen_host();

  std::mt19937_64 rng_;
  Features f_;
  std::string elem_;
  std::string len_elem_;
  std::vector<std::string> open_used_;
  std::vector<std::string> site_repl_, site_what_;
  std::ostringstream out_;
  std::vector<Fn> fns_;
  // The function being generated.
  std::vector<Value> scope_;
  std::vector<Coupling> couplings_;
  Fn* cur_ = nullptr;
  int next_cls_ = 0;
  int next_local_ = 0;
  int fresh_ = 0;  // suffix of the next variable a reduce binds
  bool c_names_ = false;
  // Main's inputs.
  int B_ = 0, H_ = 0, M_ = 0, N_ = 0, D_ = 0;
  std::vector<int> lens_[3];
  std::vector<int> nsent_;
  bool uses_docs_ = false;
  std::string host_;
};

void note_open(std::vector<std::string>& used, const std::string& what) {
  if (std::find(used.begin(), used.end(), what) == used.end()) used.push_back(what);
}

std::string Gen::mark(const std::string& text, const std::string& replacement, const std::string& what) {
  site_repl_.push_back(replacement);
  site_what_.push_back(what);
  return std::string(kMarkBegin) + std::to_string(site_repl_.size() - 1) + kMarkMid + text + kMarkEnd;
}

std::string Gen::literal() {
  if (is_float()) {
    static const std::vector<std::string> fl = {"0.5", "1.0", "2.0", "0.25", "1.5", "3.0", "0.0", "0.75"};
    return pick(fl);
  }
  static const std::vector<std::string> il = {"0", "1", "2", "3", "5", "7"};
  return pick(il);
}

/// The C name docs/abi.md ("Names") gives a parameter, written here from
/// that rule rather than read from the header: a C/C++ keyword, `result`
/// or `prelude` gets `_` appended (the generator's other names are C names).
std::string c_name(const std::string& n) {
  static const char* const kTaken[] = {"int", "char", "double", "float", "unsigned", "signed", "long", "short",
                                       "void", "for", "while", "if", "else", "return", "struct", "const",
                                       "result", "prelude"};
  for (const char* t : kTaken)
    if (n == t) return n + "_";
  return n;
}

const char* dom_base(Dom d, bool c_names) {
  static const char* plain[] = {"b", "i", "h", "m", "r", "c", "j", "d", "s", "t"};
  static const char* odd[] = {"bq", "iq", "hq", "mq", "rq", "cq", "jq", "dq", "sq", "tq"};
  return (c_names ? odd : plain)[static_cast<int>(d)];
}

std::string Gen::var_name(Dom d, const std::vector<Var>& vars) {
  std::string base = dom_base(d, c_names_);
  int n = 0;
  for (const Var& v : vars)
    if (v.dom == d) ++n;
  return n == 0 ? base : base + std::to_string(n + 1);
}

bool ragged(Dom d) { return d == Dom::kPos || d == Dom::kTri || d == Dom::kRagTri || d == Dom::kSent || d == Dom::kTok; }

// Whether variable v may index dimension d given the variables chosen for
// the earlier dimensions of the same read.
bool Gen::compatible(const std::vector<Var>& vars, int vi, const Dim& d, const std::vector<int>& chosen) const {
  const Var& v = vars[vi];
  int want_parent = d.parent >= 0 ? chosen[d.parent] : -1;
  if (v.dom == d.dom) {
    if (ragged(d.dom) && v.cls != d.cls) return false;
    return d.parent < 0 || v.parent == want_parent;
  }
  if (v.dom == Dom::kTri && d.dom == Dom::kN) return true;
  if (v.dom == Dom::kPos && d.dom == Dom::kM) return cur_ && cur_->where_m;
  if (v.dom == Dom::kRagTri && d.dom == Dom::kPos) {
    if (v.reduced) return false;
    const Var& p = vars[v.parent];
    return p.cls == d.cls && p.parent == want_parent;
  }
  return false;
}

std::string Gen::read(const Value& val, const std::vector<int>& chosen, const std::vector<Var>& vars,
                      bool allow_site) {
  std::string s = val.name;
  size_t k = 0;
  std::vector<std::string> names;
  for (int c : chosen) names.push_back(vars[c].name);
  for (int g : val.groups) {
    s += "[";
    std::string inner;
    for (int j = 0; j < g; ++j) inner += (j ? ", " : "") + names[k + j];
    if (allow_site && g == 2 && chance(30)) {
      std::string swapped = names[k + 1] + ", " + names[k];
      inner = mark(inner, swapped, "swap two indices");
    } else if (allow_site && chance(15)) {
      std::string plus = inner + " + 1";
      inner = mark(inner, plus, "off-by-one index");
    }
    s += inner + "]";
    k += static_cast<size_t>(g);
  }
  return s;
}

bool Gen::try_read(const Value& val, std::vector<Var>& vars, std::string* out) {
  if (val.dims.empty()) {
    *out = val.name;
    return true;
  }
  std::vector<int> chosen;
  for (const Dim& d : val.dims) {
    std::vector<int> ok;
    for (int v = 0; v < static_cast<int>(vars.size()); ++v)
      if (compatible(vars, v, d, chosen)) ok.push_back(v);
    if (ok.empty()) return false;
    chosen.push_back(pick(ok));
  }
  *out = read(val, chosen, vars, true);
  return true;
}

std::string Gen::cast_to_elem(const std::string& e, const std::string& from) {
  if (from == elem_) return e;
  return elem_ + "(" + e + ")";
}

std::string Gen::leaf(std::vector<Var>& vars) {
  int r = below(100);
  if (r < 65) {
    for (int attempt = 0; attempt < 6; ++attempt) {
      const Value& v = pick(scope_);
      std::string s;
      if (try_read(v, vars, &s)) return cast_to_elem(s, v.elem);
    }
  }
  if (r < 82 && !vars.empty()) return elem_ + "(" + pick(vars).name + ")";
  return literal();
}

std::string Gen::cond(std::vector<Var>& vars, int depth) {
  if (vars.size() >= 2 && chance(35)) {
    static const std::vector<std::string> ops = {"<", "<=", "==", "!=", ">", ">="};
    return pick(vars).name + " " + pick(ops) + " " + pick(vars).name;
  }
  static const std::vector<std::string> ops = {"<", "<=", ">", ">="};
  return expr(vars, depth - 1) + " " + pick(ops) + " " + expr(vars, depth - 1);
}

std::string Gen::reduce(std::vector<Var>& vars, int depth) {
  // Pick a value to anchor the new variables: each of its dimensions takes
  // a bound variable or a new one; at least one must be new.
  for (int attempt = 0; attempt < 8; ++attempt) {
    const Value& val = pick(scope_);
    if (val.dims.empty()) continue;
    std::vector<Var> inner = vars;
    std::vector<int> chosen;
    bool fresh = false;
    for (const Dim& d : val.dims) {
      std::vector<int> ok;
      for (int v = 0; v < static_cast<int>(inner.size()); ++v)
        if (compatible(inner, v, d, chosen)) ok.push_back(v);
      if (!ok.empty() && chance(50)) {
        chosen.push_back(pick(ok));
        continue;
      }
      // Unique per program: two sibling reduces must not share a name, or
      // the enclosing reduce would bind it with two ranges.
      Var nv{std::string(dom_base(d.dom, c_names_)) + std::to_string(++fresh_), d.dom,
             d.parent >= 0 ? chosen[d.parent] : -1, d.cls, true};
      inner.push_back(nv);
      chosen.push_back(static_cast<int>(inner.size()) - 1);
      fresh = true;
    }
    if (!fresh) continue;
    std::string anchor = cast_to_elem(read(val, chosen, inner, true), val.elem);
    static const std::vector<std::string> ops = {"+", "*", "max", "min", "+", "max"};
    std::string op = pick(ops);
    std::string body = anchor;
    if (chance(50)) {
      static const std::vector<std::string> bin = {" + ", " * ", " - "};
      body = anchor + pick(bin) + expr(inner, depth - 1);
    }
    if (cur_) cur_->has_reduce = true;
    return "reduce(" + op + ", " + body + ")";
  }
  return leaf(vars);
}

std::string Gen::expr(std::vector<Var>& vars, int depth) {
  if (depth <= 0 || chance(30)) return leaf(vars);
  int r = below(100);
  if (r < 30) {
    static const std::vector<std::string> ops = {" + ", " - ", " * ", " + "};
    return "(" + expr(vars, depth - 1) + pick(ops) + expr(vars, depth - 1) + ")";
  }
  if (r < 38) {
    if (is_float()) return "(" + expr(vars, depth - 1) + " / (abs(" + expr(vars, depth - 1) + ") + 1.0))";
    static const std::vector<std::string> ops = {" / 3", " % 5", " / 2", " % 3"};
    return "(" + expr(vars, depth - 1) + pick(ops) + ")";
  }
  if (r < 50) {
    std::vector<std::string> un = {"-", "abs", "max", "min"};
    if (is_float()) un.insert(un.end(), {"tanh", "sqrt", "exp", "log", "erf"});
    std::string u = pick(un);
    std::string a = expr(vars, depth - 1);
    if (u == "-") return "(-" + a + ")";
    if (u == "max" || u == "min") return u + "(" + a + ", " + expr(vars, depth - 1) + ")";
    if (u == "sqrt" || u == "log") return u + "(abs(" + a + ") + 1.0)";
    if (u == "exp") return "exp(tanh(" + a + "))";
    return u + "(" + a + ")";
  }
  if (r < 62) return "select(" + cond(vars, depth) + ", " + expr(vars, depth - 1) + ", " + expr(vars, depth - 1) + ")";
  if (r < 70) {
    std::vector<std::string> to;
    if (is_float()) to = {"i32", "f64", "f32", "i64"};
    else to = {"f64", "f32", "i32", "i64"};
    std::string t = pick(to);
    if (t == elem_) t = is_float() ? "i32" : "f64";
    return elem_ + "(" + t + "(" + expr(vars, depth - 1) + "))";
  }
  if (r < 90) return reduce(vars, depth);
  return leaf(vars);
}

// ---------------------------------------------------------------------------
// Functions.

std::string Gen::coupling_of_cls(int cls, bool docs) const {
  std::vector<std::string> names;
  for (const Coupling& c : couplings_)
    if (c.cls == cls && c.docs == docs) names.push_back(c.name);
  return names.empty() ? "" : names.front();
}

void Gen::add_coupling_values(const std::string& name, int cls, bool docs) {
  couplings_.push_back({name, cls, docs});
  if (!docs) {
    scope_.push_back({name + ".data", {{Dom::kBatch}, {Dom::kPos, 0, cls}, {Dom::kHead}}, {1, 2}, elem_});
    scope_.push_back({name + ".len", {{Dom::kBatch}}, {1}, len_elem_});
  } else {
    scope_.push_back({name + ".data",
                      {{Dom::kDoc}, {Dom::kSent, 0, cls}, {Dom::kTok, 1, cls}, {Dom::kHead}},
                      {1, 1, 2},
                      elem_});
    scope_.push_back({name + ".nsent", {{Dom::kDoc}}, {1}, len_elem_});
    scope_.push_back({name + ".ntok", {{Dom::kDoc}, {Dom::kSent, 0, cls}}, {1, 1}, len_elem_});
  }
}

// The left side `t[b][i, h]`: one new variable per dimension.
std::string Gen::lhs(const Value& v, std::vector<Var>& vars) {
  std::vector<int> chosen;
  for (const Dim& d : v.dims) {
    vars.push_back({var_name(d.dom, vars), d.dom, d.parent >= 0 ? chosen[d.parent] : -1, d.cls});
    chosen.push_back(static_cast<int>(vars.size()) - 1);
  }
  return read(v, chosen, vars, false);
}

// A local's type, e.g. `[b: B][x.len[b], H]f32`.
std::string Gen::alloc_decl(const std::vector<Dim>& dims, const std::string& src, bool site) {
  const std::string b = dom_base(Dom::kBatch, c_names_), i = dom_base(Dom::kPos, c_names_),
                    r = dom_base(Dom::kN, c_names_), d = dom_base(Dom::kDoc, c_names_),
                    s = dom_base(Dom::kSent, c_names_);
  auto rag = [&](const std::string& text) {
    return site && chance(50) ? mark(text, text + " + 1", "off-by-one ragged extent") : text;
  };
  switch (dims[0].dom) {
    case Dom::kBatch:
      if (dims.size() == 1) return "[B]" + elem_;
      if (dims[1].dom == Dom::kHead) return "[B, H]" + elem_;
      if (dims.size() == 3) return "[" + b + ": B][" + rag(src + ".len[" + b + "]") + ", H]" + elem_;
      return "[" + b + ": B][" + i + ": " + src + ".len[" + b + "]][" + rag(i + " + 1") + ", H]" + elem_;
    case Dom::kN:
      if (dims.size() == 1) return "[N]" + elem_;
      return "[" + r + ": N][" + (site ? mark(r + " + 1", r + " + 2", "off-by-one triangular range") : r + " + 1") +
             "]" + elem_;
    case Dom::kDoc:
      if (dims.size() == 1) return "[D]" + elem_;
      if (dims[1].dom == Dom::kHead) return "[D, H]" + elem_;
      if (dims.size() == 2) return "[" + d + ": D][" + src + ".nsent[" + d + "]]" + elem_;
      return "[" + d + ": D][" + s + ": " + src + ".nsent[" + d + "]][" + rag(src + ".ntok[" + d + "][" + s + "]") +
             ", H]" + elem_;
    default:
      return "?";
  }
}

void Gen::new_local(std::ostringstream& body, Fn& fn, const std::string& shape) {
  std::string name = (c_names_ && chance(40)) ? pick(std::vector<std::string>{"status", "result", "n", "k", "int",
                                                                             "unsigned", "offsets", "acc0"})
                                              : "u" + std::to_string(next_local_);
  // A name already taken (a parameter, a coupling, another local) gets the plain one.
  for (const Value& v : scope_)
    if (v.name == name || v.name.rfind(name + ".", 0) == 0) name = "u" + std::to_string(next_local_);
  if (name[0] != 'u') note_open(open_used_, "c_names");
  ++next_local_;
  Value v{name, {}, {}, elem_, true};
  std::string src;
  if (shape == "scalar") {
    std::vector<Var> vars;
    std::string e = chance(70) ? reduce(vars, 2) : expr(vars, 2);
    body << "    let " << name << ": " << elem_ << " = " << e << ";\n";
    scope_.push_back(v);
    return;
  }
  int cls = 0;
  if (shape == "rag" || shape == "ragtri" || shape == "docs" || shape == "ds") {
    std::vector<const Coupling*> cs;
    for (const Coupling& c : couplings_)
      if (c.docs == (shape == "docs" || shape == "ds")) cs.push_back(&c);
    const Coupling* c = cs[below(static_cast<int>(cs.size()))];
    src = c->name;
    cls = c->cls;
    v.src = src;
  }
  if (shape == "rag") v.dims = {{Dom::kBatch}, {Dom::kPos, 0, cls}, {Dom::kHead}}, v.groups = {1, 2};
  if (shape == "ragtri") {
    v.dims = {{Dom::kBatch}, {Dom::kPos, 0, cls}, {Dom::kRagTri, 1, cls}, {Dom::kHead}}, v.groups = {1, 1, 2};
    note_open(open_used_, "nested");
  }
  if (shape == "bh") v.dims = {{Dom::kBatch}, {Dom::kHead}}, v.groups = {2};
  if (shape == "b") v.dims = {{Dom::kBatch}}, v.groups = {1};
  if (shape == "v") v.dims = {{Dom::kN}}, v.groups = {1};
  if (shape == "tri") v.dims = {{Dom::kN}, {Dom::kTri, 0}}, v.groups = {1, 1};
  if (shape == "docs") v.dims = {{Dom::kDoc}, {Dom::kSent, 0, cls}, {Dom::kTok, 1, cls}, {Dom::kHead}}, v.groups = {1, 1, 2};
  if (shape == "ds") v.dims = {{Dom::kDoc}, {Dom::kSent, 0, cls}}, v.groups = {1, 1};
  if (shape == "dh") v.dims = {{Dom::kDoc}, {Dom::kHead}}, v.groups = {2};
  if (shape == "d") v.dims = {{Dom::kDoc}}, v.groups = {1};
  body << "    let " << name << ": " << alloc_decl(v.dims, src, true) << ";\n";
  std::vector<Var> vars;
  std::string l = lhs(v, vars);
  body << "    " << l << " = " << expr(vars, 3) << ";\n";
  scope_.push_back(v);
}

bool Gen::gen_call(std::ostringstream& body, Fn& fn, int k) {
  std::vector<int> cands;
  for (int j = 0; j < k; ++j) {
    const Fn& g = fns_[j];
    if (g.docs != fn.docs) continue;
    bool ok = true;
    for (const Param& p : g.params) {
      if (p.kind == PKind::kW || p.kind == PKind::kV) {
        bool have = false;
        for (const Param& q : fn.params) have |= q.kind == p.kind;
        ok &= have;
      }
    }
    if (!ok) continue;
    bool dup = fn.inlined.count(j) > 0;
    for (int x : g.inlined) dup |= fn.inlined.count(x) > 0;
    if (dup && !f_.open_multi_call) continue;
    cands.push_back(j);
  }
  if (cands.empty()) return false;
  int j = pick(cands);
  const Fn& g = fns_[j];
  bool dup = fn.inlined.count(j) > 0;
  for (int x : g.inlined) dup |= fn.inlined.count(x) > 0;
  if (dup) note_open(open_used_, "multi_call");
  fn.inlined.insert(j);
  for (int x : g.inlined) fn.inlined.insert(x);
  fn.has_reduce |= g.has_reduce;
  std::vector<std::string> args;
  int first_cls = -1;
  for (const Param& p : g.params) {
    switch (p.kind) {
      case PKind::kSeqs:
      case PKind::kDocs: {
        std::vector<const Coupling*> cs;
        for (const Coupling& c : couplings_)
          if (c.docs == (p.kind == PKind::kDocs) && (first_cls < 0 || c.cls == first_cls || !g.where_m))
            cs.push_back(&c);
        const Coupling* c = cs[below(static_cast<int>(cs.size()))];
        // A callee with two couplings of one class gets two of one class.
        if (first_cls >= 0 && p.cls == 0) {
          for (const Coupling& cc : couplings_)
            if (cc.cls == first_cls && cc.docs == c->docs) c = &cc;
        }
        if (first_cls < 0) first_cls = c->cls;
        args.push_back(c->name);
        break;
      }
      case PKind::kW:
      case PKind::kV:
        for (const Param& q : fn.params)
          if (q.kind == p.kind) {
            args.push_back(q.name);
            break;
          }
        break;
      case PKind::kScalar: {
        std::vector<std::string> ss;
        for (const Value& v : scope_)
          if (v.dims.empty() && v.elem == elem_) ss.push_back(v.name);
        args.push_back(ss.empty() || chance(30) ? literal() : pick(ss));
        break;
      }
    }
  }
  std::string name = "u" + std::to_string(next_local_++);
  body << "    let " << name << " = " << g.name << "(";
  for (size_t a = 0; a < args.size(); ++a) body << (a ? ", " : "") << args[a];
  body << ");\n";
  Value v{name, {}, {}, elem_, g.ret_fresh};
  switch (g.ret) {
    case RKind::kSeqs: add_coupling_values(name, next_cls_++, false); return true;
    case RKind::kDocs: add_coupling_values(name, next_cls_++, true); return true;
    case RKind::kBH: v.dims = {{Dom::kBatch}, {Dom::kHead}}, v.groups = {2}; break;
    case RKind::kB: v.dims = {{Dom::kBatch}}, v.groups = {1}; break;
    case RKind::kV: v.dims = {{Dom::kN}}, v.groups = {1}; break;
    case RKind::kDH: v.dims = {{Dom::kDoc}, {Dom::kHead}}, v.groups = {2}; break;
    case RKind::kD: v.dims = {{Dom::kDoc}}, v.groups = {1}; break;
    case RKind::kScalar: break;
  }
  scope_.push_back(v);
  return true;
}

void Gen::gen_function(int k) {
  Fn fn;
  fn.name = "f" + std::to_string(k);
  fn.docs = f_.open_nested && chance(15);
  scope_.clear();
  couplings_.clear();
  next_cls_ = 0;
  next_local_ = 0;
  c_names_ = f_.open_c_names && chance(25);
  cur_ = &fn;
  std::vector<std::string> pool = {"x", "y", "w", "v", "s", "z"};
  if (c_names_) {
    note_open(open_used_, "c_names");
    pool = {"k", "i", "b", "n", "result", "status", "int", "char", "double", "data", "len", "h", "offsets"};
    for (size_t a = pool.size(); a > 1; --a) std::swap(pool[a - 1], pool[below(static_cast<int>(a))]);
  }
  size_t next_name = 0;
  auto pname = [&]() { return pool[next_name++ % pool.size()]; };
  std::string where;
  if (fn.docs) {
    uses_docs_ = true;
    note_open(open_used_, "nested");
    fn.params.push_back({PKind::kDocs, pname(), next_cls_++, "z0"});
  } else {
    fn.params.push_back({PKind::kSeqs, pname(), next_cls_++, "x0"});
    if (chance(35)) {
      bool eq = chance(65);
      Param y{PKind::kSeqs, pname(), eq ? 0 : next_cls_++, eq ? (chance(50) ? "x1" : "x0") : "x2"};
      fn.params.push_back(y);
      if (eq) {
        std::string b = dom_base(Dom::kBatch, c_names_);
        where += mark("all(" + fn.params[0].name + ".len[" + b + "] == " + y.name + ".len[" + b + "])", "B >= 0",
                      "drop a `where`");
      }
    }
    if (chance(40)) {
      fn.params.push_back({PKind::kW, pname(), 0, "w0"});
      fn.where_m = chance(80);
      if (fn.where_m) {
        std::string b = dom_base(Dom::kBatch, c_names_);
        std::string c = "all(" + fn.params[0].name + ".len[" + b + "] <= M)";
        if (fn.params.size() > 2) c += ", all(" + fn.params[1].name + ".len[" + b + "] <= M)";
        if (!where.empty()) where += ", ";
        where += mark(c, "B >= 0", "drop a `where`");
      }
    }
    if (chance(40)) fn.params.push_back({PKind::kV, pname(), 0, "v0"});
  }
  if (chance(30)) fn.params.push_back({PKind::kScalar, pname(), 0, ""});
  for (const Param& p : fn.params) {
    switch (p.kind) {
      case PKind::kSeqs: add_coupling_values(p.name, p.cls, false); break;
      case PKind::kDocs: add_coupling_values(p.name, p.cls, true); break;
      case PKind::kW:
        scope_.push_back({p.name, {{Dom::kBatch}, {Dom::kM}}, {2}, elem_});
        break;
      case PKind::kV: scope_.push_back({p.name, {{Dom::kN}}, {1}, elem_}); break;
      case PKind::kScalar: scope_.push_back({p.name, {}, {}, elem_}); break;
    }
  }
  bool has_v = false;
  for (const Param& p : fn.params) has_v |= p.kind == PKind::kV;
  std::ostringstream body;
  // A mutation that writes a parameter through an alias (read-only).
  if (!fn.docs && f_.open_alias_write) {
    std::string b = dom_base(Dom::kBatch, c_names_), i = dom_base(Dom::kPos, c_names_), h = dom_base(Dom::kHead, c_names_);
    body << mark("", "    let pa = " + fn.params[0].name + ".data;\n    pa[" + b + "][" + i + ", " + h + "] = " +
                         literal() + ";\n", "write a parameter through an alias");
  }
  int n = 1 + below(5);
  for (int s = 0; s < n; ++s) {
    int r = below(100);
    if (r < 15 && gen_call(body, fn, k)) continue;
    if (r < 25) {
      // An alias of a value or a coupling; reading it reads the storage it names.
      if (chance(30)) {
        const Coupling c = couplings_[below(static_cast<int>(couplings_.size()))];
        std::string name = "a" + std::to_string(next_local_++);
        body << "    let " << name << " = " << c.name << ";\n";
        add_coupling_values(name, c.cls, c.docs);
        continue;
      }
      std::vector<const Value*> named;
      for (const Value& v : scope_)
        if (!v.dims.empty()) named.push_back(&v);
      if (!named.empty()) {
        Value a = *named[below(static_cast<int>(named.size()))];
        std::string from = a.name;
        a.name = "a" + std::to_string(next_local_++);
        a.local = false;
        a.alias = true;
        body << "    let " << a.name << " = " << from << ";\n";
        scope_.push_back(a);
        continue;
      }
    }
    if (r < 35) {
      // A write through an alias of a local.
      std::vector<Value*> locals;
      for (Value& v : scope_)
        if (v.local && !v.dims.empty() && v.name[0] == 'u') locals.push_back(&v);
      if (!locals.empty() && f_.open_alias_write) {
        Value a = *locals[below(static_cast<int>(locals.size()))];
        std::string from = a.name;
        a.name = "a" + std::to_string(next_local_++);
        a.alias = true;
        body << "    let " << a.name << " = " << from << ";\n";
        std::vector<Var> vars;
        // The right side must not read the aliased storage.
        std::vector<Value> saved = scope_;
        scope_.erase(std::remove_if(scope_.begin(), scope_.end(), [&](const Value& v) { return v.name == from; }),
                     scope_.end());
        if (scope_.empty()) scope_ = saved;
        std::string l = lhs(a, vars);
        body << "    " << l << " = " << expr(vars, 2) << ";\n";
        scope_ = saved;
        scope_.push_back(a);
        note_open(open_used_, "alias_write");
        continue;
      }
    }
    std::vector<std::string> shapes;
    if (fn.docs) {
      shapes = {"docs", "ds", "dh", "d", "scalar", "docs"};
    } else {
      shapes = {"rag", "bh", "b", "scalar", "rag", "bh"};
      if (has_v) shapes.insert(shapes.end(), {"v", "tri", "tri"});
      if (f_.open_nested && chance(20)) shapes.push_back("ragtri");
    }
    new_local(body, fn, pick(shapes));
  }
  // The return value: a local or parameter of a returnable shape.
  std::vector<std::string> ret_lines;
  std::vector<RKind> ret_kinds;
  std::vector<bool> ret_fresh;
  for (const Value& v : scope_) {
    if (v.dims.empty()) {
      if (elem_ == "i32" && !f_.open_i32_result) continue;
      ret_lines.push_back("return " + v.name + ";");
      ret_kinds.push_back(RKind::kScalar);
      ret_fresh.push_back(true);
      continue;
    }
    if (v.groups == std::vector<int>{2} && v.dims[0].dom == Dom::kBatch && v.dims[1].dom == Dom::kHead) {
      ret_lines.push_back("return " + v.name + ";"), ret_kinds.push_back(RKind::kBH), ret_fresh.push_back(v.local);
    } else if (v.groups == std::vector<int>{1} && v.dims[0].dom == Dom::kBatch && v.elem == elem_) {
      ret_lines.push_back("return " + v.name + ";"), ret_kinds.push_back(RKind::kB), ret_fresh.push_back(v.local);
    } else if (v.groups == std::vector<int>{1} && v.dims[0].dom == Dom::kN) {
      ret_lines.push_back("return " + v.name + ";"), ret_kinds.push_back(RKind::kV), ret_fresh.push_back(v.local);
    } else if (v.groups == std::vector<int>{2} && v.dims[0].dom == Dom::kDoc) {
      ret_lines.push_back("return " + v.name + ";"), ret_kinds.push_back(RKind::kDH), ret_fresh.push_back(v.local);
    } else if (v.groups == std::vector<int>{1} && v.dims[0].dom == Dom::kDoc && v.elem == elem_) {
      ret_lines.push_back("return " + v.name + ";"), ret_kinds.push_back(RKind::kD), ret_fresh.push_back(v.local);
    } else if (v.local && v.groups == std::vector<int>{1, 2} && v.dims[0].dom == Dom::kBatch) {
      std::string src = v.src.empty() ? coupling_of_cls(v.dims[1].cls, false) : v.src;
      ret_lines.push_back("return Seqs { data: " + v.name + ", len: " + src + ".len };");
      ret_kinds.push_back(RKind::kSeqs);
      ret_fresh.push_back(true);
    } else if (v.local && v.groups == std::vector<int>{1, 1, 2} && v.dims[0].dom == Dom::kDoc) {
      std::string src = v.src.empty() ? coupling_of_cls(v.dims[1].cls, true) : v.src;
      ret_lines.push_back("return Docs { data: " + v.name + ", nsent: " + src + ".nsent, ntok: " + src + ".ntok };");
      ret_kinds.push_back(RKind::kDocs);
      ret_fresh.push_back(true);
    }
  }
  for (const Coupling& c : couplings_) {
    if (chance(30)) {
      ret_lines.push_back("return " + c.name + ";");
      ret_kinds.push_back(c.docs ? RKind::kDocs : RKind::kSeqs);
      ret_fresh.push_back(false);
    }
  }
  if (ret_lines.empty()) {
    ret_lines.push_back("return " + couplings_[0].name + ";");
    ret_kinds.push_back(couplings_[0].docs ? RKind::kDocs : RKind::kSeqs);
    ret_fresh.push_back(false);
  }
  // Prefer what the body computed last.
  int pick_i = static_cast<int>(ret_lines.size()) - 1 - below(std::min<int>(3, static_cast<int>(ret_lines.size())));
  fn.ret = ret_kinds[pick_i];
  fn.ret_fresh = ret_fresh[pick_i];
  if (fn.ret == RKind::kScalar && elem_ == "i32") note_open(open_used_, "i32_result");
  std::string ret_type;
  switch (fn.ret) {
    case RKind::kSeqs: ret_type = "Seqs"; break;
    case RKind::kDocs: ret_type = "Docs"; break;
    case RKind::kBH: ret_type = "[B, H]" + elem_; break;
    case RKind::kB: ret_type = "[B]" + elem_; break;
    case RKind::kV: ret_type = "[N]" + elem_; break;
    case RKind::kDH: ret_type = "[D, H]" + elem_; break;
    case RKind::kD: ret_type = "[D]" + elem_; break;
    case RKind::kScalar: ret_type = elem_; break;
  }
  out_ << "fn " << fn.name << "(";
  for (size_t a = 0; a < fn.params.size(); ++a) {
    const Param& p = fn.params[a];
    out_ << (a ? ", " : "") << p.name << ": ";
    switch (p.kind) {
      case PKind::kSeqs: out_ << "Seqs"; break;
      case PKind::kDocs: out_ << "Docs"; break;
      case PKind::kW: out_ << "[B, M]" << elem_; break;
      case PKind::kV: out_ << "[N]" << elem_; break;
      case PKind::kScalar: out_ << elem_; break;
    }
  }
  out_ << ") " << ret_type;
  if (!where.empty()) out_ << " where { " << where << " }";
  out_ << " {\n" << body.str() << "    " << ret_lines[pick_i] << "\n}\n\n";
  cur_ = nullptr;
  fns_.push_back(fn);
}

std::string join_ints(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s;
}

std::string fill_formula(const std::string& elem, bool is_float, const std::string& sum) {
  if (is_float) return elem + "((" + sum + ") % 9) * 0.5 - 1.0";
  return elem + "((" + sum + ") % 9 - 4)";
}

void Gen::gen_main() {
  std::ostringstream m;
  m << "fn main() {\n";
  for (int k = 0; k < 3; ++k) {
    std::string l = "l" + std::to_string(k), x = "x" + std::to_string(k);
    std::string lit = "[" + join_ints(lens_[k]) + "]";
    if (k == 0 && !lens_[0].empty())
      lit = "[" + mark(std::to_string(lens_[0][0]), std::to_string(M_ + 1), "a length above M") +
            (lens_[0].size() > 1 ? ", " : "") +
            join_ints(std::vector<int>(lens_[0].begin() + 1, lens_[0].end())) + "]";
    // (`let l: [0]i32 = [];` is rejected: open/empty_int_literal.toy)
    if (B_ == 0) m << "    let " << l << ": [0]" << len_elem_ << ";\n";
    else m << "    let " << l << ": [" << B_ << "]" << len_elem_ << " = " << lit << ";\n";
    m << "    let " << x << " = Seqs { data: [b: " << B_ << "][" << l << "[b], " << H_ << "]" << elem_ << ", len: " << l
      << " };\n";
    m << "    " << x << ".data[b][i, h] = "
      << fill_formula(elem_, is_float(), "b * 7 + i * 3 + h * 5 + " + std::to_string(k)) << ";\n";
    // A mutation that writes a frozen length array through an alias: an
    // error once aliases follow storage (issue 21), today `dccc run` reads
    // past the data.
    if (k == 0 && f_.open_alias_write)
      m << mark("", "    let la = " + l + ";\n    la[b] = la[b] + 2;\n    print(" + x + ".data);\n",
                "write a length array through an alias");
  }
  m << "    let w0: [" << B_ << ", " << M_ << "]" << elem_ << ";\n";
  m << "    w0[b, m] = " << fill_formula(elem_, is_float(), "b * 5 + m * 2 + 3") << ";\n";
  m << "    let v0: [" << N_ << "]" << elem_ << ";\n";
  m << "    v0[r] = " << fill_formula(elem_, is_float(), "r * 4 + 1") << ";\n";
  if (uses_docs_) {
    if (D_ == 0) m << "    let ns: [0]" << len_elem_ << ";\n";
    else m << "    let ns: [" << D_ << "]" << len_elem_ << " = [" << join_ints(nsent_) << "];\n";
    m << "    let nt: [d: " << D_ << "][ns[d]]" << len_elem_ << ";\n";
    m << "    nt[d][s] = " << len_elem_ << "((d * 2 + s + 1) % 4);\n";
    m << "    let z0 = Docs { data: [d: " << D_ << "][s: ns[d]][nt[d][s], " << H_ << "]" << elem_
      << ", nsent: ns, ntok: nt };\n";
    m << "    z0.data[d][s][t, h] = " << fill_formula(elem_, is_float(), "d * 3 + s * 5 + t * 7 + h + 2") << ";\n";
  }
  for (size_t k = 0; k < fns_.size(); ++k) {
    const Fn& fn = fns_[k];
    m << "    let r" << k << " = " << fn.name << "(";
    for (size_t a = 0; a < fn.params.size(); ++a) {
      const Param& p = fn.params[a];
      m << (a ? ", " : "") << (p.kind == PKind::kScalar ? (is_float() ? "1.5" : "3") : p.main_arg);
    }
    m << ");\n";
    if (fn.ret == RKind::kSeqs || fn.ret == RKind::kDocs)
      m << "    print(r" << k << ".data);\n";
    else
      m << "    print(r" << k << ");\n";
  }
  m << "}\n";
  out_ << m.str();
}

// ---------------------------------------------------------------------------
// The C host.

void Gen::gen_host() {
  std::ostringstream h;
  std::string ct = elem_ == "f32" ? "float" : elem_ == "f64" ? "double" : elem_ == "i32" ? "int32_t"
                   : elem_ == "i64" ? "int64_t" : "uint16_t";
  std::string lt = len_elem_ == "i32" ? "int32_t" : "int64_t";
  h << "/* Generated by dccc_progen: calls every function main calls, on main's inputs,\n"
       "   and prints the results as `print` does. */\n"
       "#include <math.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n\n"
       "#include \"prog.h\"\n\n";
  h << "typedef " << ct << " elem_t;\ntypedef " << lt << " len_t;\n";
  h << R"(static void* owned[4096];
static int n_owned = 0;
static void* alloc(int64_t n, size_t size) {
  void* p = calloc((size_t)(n > 0 ? n : 1), size);
  owned[n_owned++] = p;
  return p;
}
static uint32_t bits_of(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float float_of(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static double h2d(uint16_t h) {
  int e = (h >> 10) & 31, m = h & 1023;
  double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
  return (h & 0x8000) ? -v : v;
}
static uint16_t d2h(double d) { /* exact for the small values the inputs use */
  uint16_t s = d < 0 ? 0x8000 : 0; d = fabs(d);
  if (d == 0) return s;
  int e; double f = frexp(d, &e); /* d = f * 2^e, f in [0.5, 1) */
  return (uint16_t)(s | ((e + 14) << 10) | ((int)(f * 2048) - 1024));
}
static double bf2d(uint16_t b) { return float_of((uint32_t)b << 16); }
static uint16_t d2bf(double d) { return (uint16_t)(bits_of((float)d) >> 16); }
)";
  if (elem_ == "f16") h << "static double val(elem_t v) { return h2d(v); }\nstatic elem_t mk(double d) { return d2h(d); }\n";
  else if (elem_ == "bf16") h << "static double val(elem_t v) { return bf2d(v); }\nstatic elem_t mk(double d) { return d2bf(d); }\n";
  else h << "static double val(elem_t v) { return (double)v; }\nstatic elem_t mk(double d) { return (elem_t)d; }\n";
  if (is_float()) {
    h << "static elem_t fill(long long k) { return mk((double)(k % 9) * 0.5 - 1.0); }\n";
    h << "static void pr(elem_t e) {\n  double v = val(e);\n"
         "  if (isnan(v)) printf(\"nan\");\n  else if (isinf(v)) printf(v < 0 ? \"-inf\" : \"inf\");\n"
      << (elem_ == "f64" ? "  else printf(\"%.17g\", v);\n" : "  else printf(\"%.9g\", (double)(float)v);\n")
      << "}\n";
  } else {
    h << "static elem_t fill(long long k) { return mk((double)(k % 9 - 4)); }\n";
    h << "static void pr(elem_t e) { printf(\"%lld\", (long long)e); }\n";
  }
  h << R"(static void fail(const char* f) {
  fflush(stdout);
  fprintf(stderr, "dccc: run-time error: %s: %s\n", f, dcc_last_error());
  exit(3);
}
static void print_dense(const elem_t* d, int64_t rows, int64_t cols, int rank) {
  if (rank == 1) {
    printf("[");
    for (int64_t i = 0; i < rows; ++i) { if (i) printf(", "); pr(d[i]); }
    printf("]\n");
    return;
  }
  printf("[");
  for (int64_t i = 0; i < rows; ++i) {
    if (i) printf(", ");
    printf("[");
    for (int64_t j = 0; j < cols; ++j) { if (j) printf(", "); pr(d[i * cols + j]); }
    printf("]");
  }
  printf("]\n");
}
static void print_ragged(const elem_t* d, const len_t* len, int64_t B, int64_t H) {
  int64_t off = 0;
  printf("[\n");
  for (int64_t b = 0; b < B; ++b) {
    printf("  [");
    for (int64_t i = 0; i < len[b]; ++i) {
      if (i) printf(", ");
      printf("[");
      for (int64_t h = 0; h < H; ++h) { if (h) printf(", "); pr(d[(off + i) * H + h]); }
      printf("]");
    }
    printf("]%s\n", b + 1 < B ? "," : "");
    off += len[b];
  }
  printf("]\n");
}
/* A two-level coupling's field, printed as `print` does: one document per
   line, its sentences, their tokens, each token's H values. */
static void print_docs(const elem_t* d, const len_t* nsent, const len_t* ntok, int64_t D, int64_t H) {
  int64_t k = 0, tok = 0;
  printf("[\n");
  for (int64_t doc = 0; doc < D; ++doc) {
    printf("  [");
    for (int64_t s = 0; s < nsent[doc]; ++s, ++k) {
      if (s) printf(", ");
      printf("[");
      for (int64_t t = 0; t < ntok[k]; ++t, ++tok) {
        if (t) printf(", ");
        printf("[");
        for (int64_t h = 0; h < H; ++h) { if (h) printf(", "); pr(d[tok * H + h]); }
        printf("]");
      }
      printf("]");
    }
    printf("]%s\n", doc + 1 < D ? "," : "");
  }
  printf("]\n");
}

int main(void) {
  dcc_status st;
)";
  for (int k = 0; k < 3; ++k) {
    std::string l = "l" + std::to_string(k), x = "x" + std::to_string(k);
    h << "  len_t " << l << "[] = {" << (lens_[k].empty() ? "0" : join_ints(lens_[k])) << "};\n";
    long total = 0;
    for (int v : lens_[k]) total += v;
    h << "  elem_t* " << x << "d = (elem_t*)alloc(" << total * H_ << ", sizeof(elem_t));\n";
    h << "  for (int64_t b = 0, off = 0; b < " << B_ << "; off += " << l << "[b], ++b)\n"
      << "    for (int64_t i = 0; i < " << l << "[b]; ++i)\n"
      << "      for (int64_t h = 0; h < " << H_ << "; ++h) " << x << "d[(off + i) * " << H_
      << " + h] = fill(b * 7 + i * 3 + h * 5 + " << k << ");\n";
    // The header declares `Seqs` only when some function uses it.
    bool used = false;
    for (const Fn& fn : fns_)
      for (const Param& p : fn.params) used |= p.kind == PKind::kSeqs && p.main_arg == x;
    if (!used) continue;
    h << "  Seqs " << x << ";\n  memset(&" << x << ", 0, sizeof " << x << ");\n";
    h << "  " << x << ".data = " << x << "d; " << x << ".data_len = " << total * H_ << "; " << x << ".len = " << l
      << "; " << x << ".len_len = " << B_ << "; " << x << ".B = " << B_ << "; " << x << ".H = " << H_ << ";\n";
  }
  h << "  elem_t* w0d = (elem_t*)alloc(" << B_ * M_ << ", sizeof(elem_t));\n"
    << "  for (int64_t b = 0; b < " << B_ << "; ++b)\n    for (int64_t m = 0; m < " << M_ << "; ++m) w0d[b * " << M_
    << " + m] = fill(b * 5 + m * 2 + 3);\n";
  h << "  elem_t* v0d = (elem_t*)alloc(" << N_ << ", sizeof(elem_t));\n"
    << "  for (int64_t r = 0; r < " << N_ << "; ++r) v0d[r] = fill(r * 4 + 1);\n";
  if (uses_docs_) {
    // z0 as main builds it: ns, nt[d][s] = (d * 2 + s + 1) % 4 packed
    // document after document, tokens packed sentence after sentence.
    long nsum = 0, tsum = 0;
    std::vector<long> nt;
    for (int d = 0; d < D_; ++d)
      for (int s = 0; s < nsent_[d]; ++s) nt.push_back((d * 2 + s + 1) % 4), ++nsum, tsum += nt.back();
    std::vector<int> ntv(nt.begin(), nt.end());
    h << "  len_t ns[] = {" << (nsent_.empty() ? "0" : join_ints(nsent_)) << "};\n";
    h << "  len_t nt[] = {" << (ntv.empty() ? "0" : join_ints(ntv)) << "};\n";
    h << "  elem_t* z0d = (elem_t*)alloc(" << tsum * H_ << ", sizeof(elem_t));\n";
    h << "  for (int64_t d = 0, k = 0, tok = 0; d < " << D_ << "; ++d)\n"
      << "    for (int64_t s = 0; s < ns[d]; ++s, ++k)\n"
      << "      for (int64_t t = 0; t < nt[k]; ++t, ++tok)\n"
      << "        for (int64_t h = 0; h < " << H_ << "; ++h) z0d[tok * " << H_
      << " + h] = fill(d * 3 + s * 5 + t * 7 + h + 2);\n";
    h << "  Docs z0;\n  memset(&z0, 0, sizeof z0);\n";
    h << "  z0.data = z0d; z0.data_len = " << tsum * H_ << "; z0.nsent = ns; z0.nsent_len = " << D_
      << "; z0.ntok = nt; z0.ntok_len = " << nsum << "; z0.D = " << D_ << "; z0.H = " << H_ << ";\n";
  }
  for (size_t k = 0; k < fns_.size(); ++k) {
    const Fn& fn = fns_[k];
    std::string args;
    for (const Param& p : fn.params) {
      std::string a;
      switch (p.kind) {
        case PKind::kSeqs: a = "&" + p.main_arg; break;
        case PKind::kDocs: a = "&" + p.main_arg; break;
        case PKind::kW: {
          std::string s = fn.name + "_" + c_name(p.name) + "_t";
          std::string v = "a" + std::to_string(k) + "_" + p.name;
          h << "  " << s << " " << v << ";\n  memset(&" << v << ", 0, sizeof " << v << ");\n  " << v
            << ".data = w0d; " << v << ".data_len = " << B_ * M_ << "; " << v << ".B = " << B_ << "; " << v
            << ".M = " << M_ << ";\n";
          a = "&" + v;
          break;
        }
        case PKind::kV: {
          std::string s = fn.name + "_" + c_name(p.name) + "_t";
          std::string v = "a" + std::to_string(k) + "_" + p.name;
          h << "  " << s << " " << v << ";\n  memset(&" << v << ", 0, sizeof " << v << ");\n  " << v
            << ".data = v0d; " << v << ".data_len = " << N_ << "; " << v << ".N = " << N_ << ";\n";
          a = "&" + v;
          break;
        }
        case PKind::kScalar: a = is_float() ? "mk(1.5)" : "mk(3)"; break;
      }
      args += a + ", ";
    }
    std::string r = "r" + std::to_string(k);
    std::string rt;
    switch (fn.ret) {
      case RKind::kSeqs: rt = "Seqs"; break;
      case RKind::kDocs: rt = "Docs"; break;
      case RKind::kScalar: rt = "elem_t"; break;
      default: rt = fn.name + "_result_t"; break;
    }
    h << "  " << rt << " " << r << ";\n  memset(&" << r << ", 0, sizeof " << r << ");\n";
    if (fn.ret != RKind::kScalar) {
      h << "  st = " << fn.name << "_meta(" << args << "&" << r << ");\n  if (st != DCC_OK) fail(\"" << fn.name
        << "_meta\");\n";
      h << "  if (!" << r << ".data) " << r << ".data = (elem_t*)alloc(" << r << ".data_len, sizeof(elem_t));\n";
      if (fn.ret == RKind::kSeqs)
        h << "  if (!" << r << ".len) " << r << ".len = (len_t*)alloc(" << r << ".len_len, sizeof(len_t));\n";
      if (fn.ret == RKind::kDocs)
        for (const char* f : {"nsent", "ntok"})
          h << "  if (!" << r << "." << f << ") " << r << "." << f << " = (len_t*)alloc(" << r << "." << f
            << "_len, sizeof(len_t));\n";
    }
    h << "  st = " << fn.name << "(" << args << "&" << r << ");\n  if (st != DCC_OK) fail(\"" << fn.name << "\");\n";
    switch (fn.ret) {
      case RKind::kSeqs: h << "  print_ragged(" << r << ".data, " << r << ".len, " << r << ".B, " << r << ".H);\n"; break;
      case RKind::kBH: h << "  print_dense(" << r << ".data, " << r << ".B, " << r << ".H, 2);\n"; break;
      case RKind::kB: h << "  print_dense(" << r << ".data, " << r << ".B, 1, 1);\n"; break;
      case RKind::kV: h << "  print_dense(" << r << ".data, " << r << ".N, 1, 1);\n"; break;
      case RKind::kDH: h << "  print_dense(" << r << ".data, " << r << ".D, " << r << ".H, 2);\n"; break;
      case RKind::kD: h << "  print_dense(" << r << ".data, " << r << ".D, 1, 1);\n"; break;
      case RKind::kScalar: h << "  pr(" << r << ");\n  printf(\"\\n\");\n"; break;
      case RKind::kDocs:
        h << "  print_docs(" << r << ".data, " << r << ".nsent, " << r << ".ntok, " << r << ".D, " << r << ".H);\n";
        break;
    }
  }
  h << "  for (int i = 0; i < n_owned; ++i) free(owned[i]);\n  return 0;\n}\n";
  host_ = h.str();
}

Program Gen::run() {
  static const std::vector<std::string> plain = {"f32", "f64", "i32", "i64", "f32", "f64"};
  static const std::vector<std::string> half = {"f16", "bf16"};
  elem_ = (f_.half && chance(15)) ? pick(half) : pick(plain);
  if (elem_ == "i32" && !f_.open_i32_elem) elem_ = "i64";
  if (elem_ == "i32") note_open(open_used_, "i32_elem");
  len_elem_ = chance(75) ? "i32" : "i64";
  B_ = chance(10) ? 0 : 1 + below(4);
  H_ = chance(8) ? 0 : 1 + below(3);
  int maxlen = 0;
  for (auto& l : lens_) {
    l.clear();
    for (int b = 0; b < B_; ++b) {
      l.push_back(chance(20) ? 0 : below(6));
      maxlen = std::max(maxlen, l.back());
    }
  }
  lens_[1] = lens_[0];
  M_ = maxlen + below(3);
  N_ = chance(10) ? 0 : 1 + below(5);
  D_ = chance(10) ? 0 : 1 + below(3);
  for (int d = 0; d < D_; ++d) nsent_.push_back(below(4));

  out_ << "// Generated by dccc_progen.\n";
  out_ << "type Seqs = coupling {\n    data: [b: B][len[b], H]" << elem_ << ",\n    len: [B]" << len_elem_ << "\n}";
  if (chance(30)) out_ << " " << mark("where { all(len[b] >= 0) }", "", "drop a `where`");
  out_ << "\n\n";
  std::ostringstream fns;
  int nfn = 1 + below(4);
  // Functions are generated into out_ after the types; the Docs type goes
  // in only when some function uses it.
  std::string head = out_.str();
  out_.str("");
  for (int k = 0; k < nfn; ++k) gen_function(k);
  gen_main();
  std::string body = out_.str();
  if (uses_docs_) {
    head += "type Docs = coupling {\n    data: [d: D][s: nsent[d]][ntok[d][s], H]" + elem_ + ",\n    nsent: [D]" +
            len_elem_ + ",\n    ntok: [d: D][nsent[d]]" + len_elem_ + "\n}\n\n";
  }
  std::string marked = head + body;
  Program p;
  // Strip the site markers, recording where each site ended up.
  std::string text;
  std::vector<size_t> starts;
  std::vector<int> ids;
  for (size_t i = 0; i < marked.size(); ++i) {
    char c = marked[i];
    if (c == kMarkBegin[0]) {
      size_t mid = marked.find(kMarkMid[0], i);
      ids.push_back(std::stoi(marked.substr(i + 1, mid - i - 1)));
      starts.push_back(text.size());
      i = mid;
    } else if (c == kMarkEnd[0]) {
      int id = ids.back();
      size_t start = starts.back();
      ids.pop_back();
      starts.pop_back();
      p.sites.push_back({start, text.size() - start, site_repl_[id], site_what_[id]});
    } else {
      text += c;
    }
  }
  p.toy = text;
  p.elem = elem_;
  gen_host();
  p.host_c = host_;
  p.open_used = open_used_;
  return p;
}

}  // namespace

Program generate(uint64_t seed, const Features& features) {
  Gen g(seed * 0x9E3779B97F4A7C15ULL + 1, features);
  return g.run();
}

std::string mutate(const Program& p, uint64_t seed, std::string* what) {
  std::mt19937_64 rng(seed * 0xD1B54A32D192ED03ULL + 7);
  auto below = [&](size_t n) { return n <= 1 ? size_t{0} : static_cast<size_t>(rng() % n); };
  // Sites nest (an index inside a read inside a declaration); a site whose
  // text was changed by an inner one is applied on the original text only.
  if (!p.sites.empty() && below(100) < 70) {
    const Site& s = p.sites[below(p.sites.size())];
    *what = s.what + " at offset " + std::to_string(s.offset) + ": `" + p.toy.substr(s.offset, s.length) + "` -> `" +
            s.replacement + "`";
    return p.toy.substr(0, s.offset) + s.replacement + p.toy.substr(s.offset + s.length);
  }
  // Token-level: find identifier and number tokens.
  struct Tok {
    size_t at, len;
    bool ident;
  };
  std::vector<Tok> toks;
  for (size_t i = 0; i < p.toy.size();) {
    char c = p.toy[i];
    if (c == '/' && i + 1 < p.toy.size() && p.toy[i + 1] == '/') {
      while (i < p.toy.size() && p.toy[i] != '\n') ++i;
      continue;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < p.toy.size() && (std::isalnum(static_cast<unsigned char>(p.toy[j])) || p.toy[j] == '_')) ++j;
      toks.push_back({i, j - i, true});
      i = j;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      while (j < p.toy.size() && (std::isdigit(static_cast<unsigned char>(p.toy[j])) || p.toy[j] == '.')) ++j;
      toks.push_back({i, j - i, false});
      i = j;
    } else if (!std::isspace(static_cast<unsigned char>(c))) {
      toks.push_back({i, 1, false});
      ++i;
    } else {
      ++i;
    }
  }
  const Tok& t = toks[below(toks.size())];
  std::string tok = p.toy.substr(t.at, t.len);
  std::string repl;
  int kind = static_cast<int>(below(4));
  if (kind == 0 && t.ident) {
    std::vector<std::string> idents;
    for (const Tok& u : toks)
      if (u.ident) idents.push_back(p.toy.substr(u.at, u.len));
    repl = idents[below(idents.size())];
    *what = "replace name `" + tok + "` with `" + repl + "`";
  } else if (kind == 1 && std::isdigit(static_cast<unsigned char>(tok[0]))) {
    repl = tok.find('.') == std::string::npos ? std::to_string(std::stoll(tok) + (below(2) ? 1 : -1) + 0) : tok + "1";
    *what = "change number `" + tok + "` to `" + repl + "`";
  } else if (kind == 2) {
    repl = "";
    *what = "drop token `" + tok + "`";
  } else {
    repl = tok + " " + tok;
    *what = "duplicate token `" + tok + "`";
  }
  *what += " at offset " + std::to_string(t.at);
  return p.toy.substr(0, t.at) + repl + p.toy.substr(t.at + t.len);
}

}  // namespace dccc::progen
