#include "frontend/imports.h"
#include "frontend/generics.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

namespace dccc {
namespace {

namespace fs = std::filesystem;

bool is_private(const std::string& name) { return !name.empty() && name[0] == '_'; }

std::string code(const std::string& s) { return "`" + s + "`"; }

/// One file of the compilation.
struct Module {
  std::string path;  // as opened
  std::string shown;  // for messages: the import's text (`std/nn.toy`), the root's name
  const SourceFile* src = nullptr;
  std::unique_ptr<ast::Program> prog;
  bool loading = true;  // on the import stack: importing it again is a cycle
  std::string prefix;   // "" for the root
  std::vector<Diagnostic::Note> chain;  // "imported here" notes up to the root
  /// The import declarations and the module each resolved to (-1: failed).
  std::vector<int> imported;
  /// Top-level names -> merged name and where declared.
  std::map<std::string, std::pair<std::string, SourceRange>> decls;
};

class Loader {
 public:
  Loader(DiagnosticEngine& diags, const ImportOptions& opts, LoadedFiles& loaded)
      : diags_(diags), opts_(opts), loaded_(loaded) {}

  std::unique_ptr<ast::Program> run(const SourceFile& root) {
    auto m = std::make_unique<Module>();
    m->path = root.name();
    m->shown = root.name();
    m->src = &root;
    loaded_.paths.push_back(root.name());
    std::error_code ec;
    std::string canon = fs::weakly_canonical(root.name(), ec).string();
    if (!ec) index_[canon] = 0;
    modules_.push_back(std::move(m));
    std::string dir = opts_.root_dir.empty() ? fs::path(root.name()).parent_path().string() : opts_.root_dir;
    load(0, dir);
    if (diags_.has_errors()) return nullptr;
    name_modules();
    for (size_t k = 0; k < modules_.size(); ++k) resolve(static_cast<int>(k));
    if (diags_.has_errors()) return nullptr;
    auto merged = merge();
    if (!instantiate_generics(*merged, diags_)) return nullptr;
    return merged;
  }

 private:
  DiagnosticEngine& diags_;
  const ImportOptions& opts_;
  LoadedFiles& loaded_;
  std::vector<std::unique_ptr<Module>> modules_;
  std::map<std::string, int> index_;  // canonical path -> module
  std::vector<int> post_order_;       // dependencies first
  std::vector<int> stack_;            // modules being loaded

  /// Parses module `k` (its src is set) and loads its imports.
  void load(int k, const std::string& dir) {
    Module& m = *modules_[k];
    m.prog = parse(*m.src, diags_, opts_.limits);
    stack_.push_back(k);
    if (m.prog) {
      m.imported.assign(m.prog->imports.size(), -1);
      for (size_t i = 0; i < m.prog->imports.size(); ++i)
        modules_[k]->imported[i] =
            import_one(k, modules_[k]->prog->imports[i],
                       k == 0 && opts_.root_dir_of ? opts_.root_dir_of(modules_[k]->prog->imports[i]) : dir);
    }
    stack_.pop_back();
    modules_[k]->loading = false;
    post_order_.push_back(k);
  }

  /// The candidates for `import "p"` in search order.
  std::vector<fs::path> candidates(const std::string& p, const std::string& dir) {
    if (fs::path(p).is_absolute()) return {fs::path(p)};
    std::vector<fs::path> out;
    out.push_back(dir.empty() ? fs::path(p) : fs::path(dir) / p);
    for (const auto& d : opts_.include_dirs) out.push_back(fs::path(d) / p);
    if (p.rfind("std/", 0) == 0)
      for (const auto& d : stdlib_dirs()) out.push_back(fs::path(d) / p.substr(4));
    return out;
  }

  int import_one(int from, const ast::ImportDecl& imp, const std::string& dir) {
    auto notes_here = [&] {
      std::vector<Diagnostic::Note> chain;
      chain.push_back({imp.range, code(imp.path) + " is imported here"});
      const auto& up = modules_[from]->chain;
      chain.insert(chain.end(), up.begin(), up.end());
      return chain;
    };
    // (A diagnostic in an imported file gets its "imported here" notes from
    // the engine: set_file_notes.)
    if (imp.path.empty() || imp.path.back() == '/') {
      diags_.report(DiagKind::ImportNotFound, imp.path_range, imp.path, "nowhere: the name is not a file name");
      return -1;
    }
    fs::path found;
    std::string searched;
    for (const auto& c : candidates(imp.path, dir)) {
      std::error_code ec;
      std::string shown = c.lexically_normal().string();
      searched += (searched.empty() ? "" : ", ") + code(shown);
      if (fs::is_regular_file(c, ec)) {
        found = c.lexically_normal();
        break;
      }
    }
    if (found.empty()) {
      diags_.report(DiagKind::ImportNotFound, imp.path_range, imp.path, searched);
      return -1;
    }
    std::error_code ec;
    std::string canon = fs::weakly_canonical(found, ec).string();
    if (ec) canon = found.string();
    if (auto it = index_.find(canon); it != index_.end()) {
      Module& target = *modules_[it->second];
      if (target.loading) {
        // The cycle: from the stack entry of `target` to `from`, then back.
        std::string cycle;
        bool on = false;
        for (int s : stack_) {
          if (s == it->second) on = true;
          if (on) cycle += code(modules_[s]->shown) + " imports ";
        }
        cycle += code(imp.path);
        diags_.report(DiagKind::ImportCycle, imp.path_range, cycle);
          return -1;
      }
      return it->second;
    }
    std::ifstream in(found, std::ios::binary);
    std::stringstream buf;
    if (in) buf << in.rdbuf();
    if (!in) {
      diags_.report(DiagKind::ImportNotFound, imp.path_range, imp.path, code(found.string()) + ", which cannot be read");
      return -1;
    }
    auto file = std::make_unique<SourceFile>(found.string(), buf.str());
    auto m = std::make_unique<Module>();
    m->path = found.string();
    m->shown = imp.path;
    m->src = file.get();
    m->chain = notes_here();
    diags_.set_file_notes(file.get(), m->chain);
    loaded_.files.push_back(std::move(file));
    loaded_.paths.push_back(found.string());
    int k = static_cast<int>(modules_.size());
    index_[canon] = k;
    modules_.push_back(std::move(m));
    load(k, found.parent_path().string());
    return k;
  }

  /// Each imported module's prefix: its file's stem made a name, unique.
  void name_modules() {
    std::set<std::string> used;
    for (size_t k = 1; k < modules_.size(); ++k) {
      std::string stem = fs::path(modules_[k]->path).stem().string();
      std::string base;
      for (char c : stem) base += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      if (base.empty() || std::isdigit(static_cast<unsigned char>(base[0]))) base = "m" + base;
      std::string p = base;
      for (int n = 2; used.count(p); ++n) p = base + std::to_string(n);
      used.insert(p);
      modules_[k]->prefix = p;
      loaded_.prefixes.push_back(p);
    }
    for (auto& m : modules_) {
      if (!m->prog) continue;
      auto declare = [&](const ast::Ident& id) {
        if (m->decls.count(id.name)) return;  // the checker reports the redefinition
        m->decls[id.name] = {m->prefix.empty() ? id.name : m->prefix + "." + id.name, id.range};
      };
      for (const auto& t : m->prog->types) declare(t.name);
      for (const auto& c : m->prog->consts) declare(c.name);
      for (const auto& f : m->prog->fns) declare(f.name);
    }
  }

  // --- Name resolution of one module -------------------------------------

  struct Scope {
    std::map<std::string, std::string> names;              // visible name -> merged
    std::map<std::string, int> aliases;                     // `as` name -> module
    std::map<std::string, std::pair<int, SourceRange>> privates;  // hidden name -> module
  };

  void resolve(int k) {
    Module& m = *modules_[k];
    if (!m.prog) return;
    Scope scope;
    for (const auto& [n, d] : m.decls) scope.names[n] = d.first;
    std::map<std::string, std::pair<int, SourceRange>> brought;  // name -> module, import
    for (size_t i = 0; i < m.prog->imports.size(); ++i) {
      const ast::ImportDecl& imp = m.prog->imports[i];
      int d = m.imported[i];
      if (d < 0) continue;
      Module& dm = *modules_[d];
      if (imp.alias) {
        const std::string& a = imp.alias->name;
        if (auto own = m.decls.find(a); own != m.decls.end()) {
          diags_.report(DiagKind::ImportClash, imp.alias->range,
                        "the module name " + code(a) + " is also declared in this file");
          diags_.note(own->second.second, code(a) + " is declared here");
        } else if (auto it = scope.aliases.find(a); it != scope.aliases.end() && it->second != d) {
          diags_.report(DiagKind::ImportClash, imp.alias->range,
                        "the module name " + code(a) + " already names " + code(modules_[it->second]->shown));
        } else {
          scope.aliases[a] = d;
        }
        continue;
      }
      for (const auto& [n, dd] : dm.decls) {
        if (is_private(n)) {
          scope.privates.emplace(n, std::make_pair(d, dd.second));
          continue;
        }
        if (auto own = m.decls.find(n); own != m.decls.end()) {
          diags_.report(DiagKind::ImportClash, own->second.second,
                        code(n) + " is declared here and also imported from " + code(dm.shown));
          diags_.note(imp.range, code(dm.shown) + " is imported here");
          diags_.note(dd.second, "the imported " + code(n) + " is declared here");
          continue;
        }
        auto [it, fresh] = brought.emplace(n, std::make_pair(d, imp.range));
        if (!fresh && it->second.first != d) {
          diags_.report(DiagKind::ImportClash, imp.path_range,
                        code(n) + " is imported from both " + code(modules_[it->second.first]->shown) + " and " +
                            code(dm.shown));
          diags_.note(it->second.second, "the first import of " + code(n));
          diags_.note(dd.second, "the second " + code(n) + " is declared here");
          continue;
        }
        scope.names[n] = dd.first;
      }
    }
    Rewriter rw{*this, m, scope};
    for (auto& t : m.prog->types) {
      t.name.name = m.decls[t.name.name].first;
      rw.type(*t.type);
    }
    for (auto& c : m.prog->consts) {
      c.name.name = m.decls[c.name.name].first;
      if (c.type) rw.type(*c.type);
      rw.expr(c.value);
    }
    for (auto& f : m.prog->fns) {
      f.name.name = m.decls[f.name.name].first;
      for (auto& p : f.params) {
        rw.local(p.name);
        rw.type(*p.type);
      }
      if (f.ret) rw.type(*f.ret);
      for (auto& w : f.where) rw.expr(w);
      for (auto& s : f.body) rw.stmt(*s);
    }
    for (auto& s : m.prog->schedules)
      if (auto it = scope.names.find(s.func.name); it != scope.names.end()) s.func.name = it->second;
  }

  /// Rewrites the names of one module's declarations to merged names.
  struct Rewriter {
    Loader& L;
    Module& m;
    Scope& scope;

    /// A parameter or `let` may not reuse a module name (`nn.x` must mean one thing).
    void local(const ast::Ident& id) {
      if (scope.aliases.count(id.name)) {
        L.diags_.report(DiagKind::ImportClash, id.range,
                        code(id.name) + " names an imported module in this file; choose another name");
      }
    }

    /// The merged name for `written` (plain or `alias.name`), reporting
    /// private and unknown qualified names; empty when it stays as written.
    std::string lookup(const std::string& written, SourceRange at, DiagKind unknown) {
      size_t dot = written.find('.');
      if (dot != std::string::npos) {
        std::string alias = written.substr(0, dot);
        if (!scope.aliases.count(alias)) {
          // Not a module name of this file (a file's stem is none: the
          // merged names `stem.name` cannot be written).
          L.diags_.report(unknown, at, written);
          L.diags_.note(SourceRange{}, code(alias) + " is not a module name here; `import \"FILE\" as " + alias +
                                           ";` makes it one");
          return "";
        }
        return qualified(alias, written.substr(dot + 1), at);
      }
      if (auto it = scope.names.find(written); it != scope.names.end()) return it->second;
      if (auto it = scope.privates.find(written); it != scope.privates.end()) {
        L.diags_.report(DiagKind::PrivateName, at, written, L.modules_[it->second.first]->shown);
        L.diags_.note(it->second.second, code(written) + " is declared here");
      }
      return "";
    }

    std::string qualified(const std::string& alias, const std::string& n, SourceRange at) {
      auto a = scope.aliases.find(alias);
      if (a == scope.aliases.end()) return "";
      Module& d = *L.modules_[a->second];
      auto it = d.decls.find(n);
      if (it == d.decls.end()) {
        L.diags_.report(DiagKind::UnknownName, at, alias + "." + n);
        L.diags_.note(SourceRange{}, code(alias) + " is " + code(d.shown) + ", which declares no " + code(n));
        return "";
      }
      if (is_private(n)) {
        L.diags_.report(DiagKind::PrivateName, at, alias + "." + n, d.shown);
        L.diags_.note(it->second.second, code(n) + " is declared here");
        return "";
      }
      return it->second.first;
    }

    void rename(std::string& name, SourceRange at, DiagKind unknown) {
      std::string to = lookup(name, at, unknown);
      if (!to.empty()) name = to;
    }

    void type(ast::TypeExpr& t) {
      if (t.kind == ast::TypeExprKind::Named || t.kind == ast::TypeExprKind::Tensor) rename(t.name.name, t.name.range, DiagKind::UnknownType);
      for (auto& g : t.groups)
        for (auto& d : g.dims)
          if (d.extent) expr(d.extent);
      for (auto& f : t.fields) type(*f.type);
      for (auto& w : t.where) expr(w);
      if (t.element) type(*t.element);
      for (auto& a : t.type_args) type(*a);
    }

    void stmt(ast::Stmt& s) {
      if (s.kind == ast::StmtKind::Let) local(s.name);
      if (s.type) type(*s.type);
      if (s.target) expr(s.target);
      if (s.value) expr(s.value);
    }

    void expr(ast::ExprPtr& e) {
      using K = ast::ExprKind;
      switch (e->kind) {
        case K::Name: rename(e->name, e->range, DiagKind::UnknownName); return;
        case K::Field: {
          const ast::Expr& base = *e->operands[0];
          if (base.kind == K::Name && scope.aliases.count(base.name)) {
            std::string to = qualified(base.name, e->name, e->range);
            if (to.empty()) return;
            auto n = std::make_unique<ast::Expr>(K::Name, e->range);
            n->name = to;
            n->name_range = e->range;
            e = std::move(n);
            return;
          }
          break;
        }
        case K::Call:
        case K::Construct: rename(e->name, e->name_range, e->kind == K::Call ? DiagKind::UnknownFunction : DiagKind::UnknownType); break;
        default: break;
      }
      for (auto& o : e->operands) expr(o);
      for (auto& a : e->type_args) type(*a);
      for (auto& f : e->fields) {
        if (f.type) type(*f.type);
        if (f.value) expr(f.value);
      }
    }
  };

  /// Moves every module's declarations into one program, dependencies first.
  std::unique_ptr<ast::Program> merge() {
    auto out = std::make_unique<ast::Program>();
    for (int k : post_order_) {
      ast::Program& p = *modules_[k]->prog;
      for (auto [kind, i] : p.order) {
        switch (kind) {
          case 0:
            out->types.push_back(std::move(p.types[i]));
            out->order.emplace_back(0, out->types.size() - 1);
            break;
          case 1:
            out->consts.push_back(std::move(p.consts[i]));
            out->order.emplace_back(1, out->consts.size() - 1);
            break;
          case 2:
            out->fns.push_back(std::move(p.fns[i]));
            out->order.emplace_back(2, out->fns.size() - 1);
            break;
          default:
            out->schedules.push_back(std::move(p.schedules[i]));
            out->order.emplace_back(3, out->schedules.size() - 1);
            break;
        }
      }
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<ast::Program> parse_with_imports(const SourceFile& root, DiagnosticEngine& diags,
                                                 const ImportOptions& options, LoadedFiles& loaded) {
  return Loader(diags, options, loaded).run(root);
}

}  // namespace dccc
