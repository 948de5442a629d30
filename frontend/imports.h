// Imports: a root file and every file it imports -> one ast::Program.
//
// `import "P";` brings the public names of file P into the importing file;
// `import "P" as m;` brings none, and `m.name` names them. P is looked up
// (1) next to the importing file, (2) in each `-I DIR` in order, and (3) when
// it starts with `std/`, in each standard-library directory (stdlib_dirs()).
// A name that starts with `_` is private to its file. Each file is read and
// checked once however often it is imported; cycles, missing files, clashing
// names and private names are located errors, and a diagnostic inside an
// imported file carries "imported here" notes back to the root.
//
// The result is one program the checker and everything after it see as if
// it were one file: the root's declarations keep their names, an imported
// file's declarations are renamed `stem.name` (`nn.rmsnorm` for a
// declaration of std/nn.toy; `nn2.` etc. when two files share a stem), and
// every reference is rewritten to the renamed declaration. Imported files'
// declarations come first, dependencies before their users.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "frontend/ast.h"
#include "frontend/parser.h"
#include "support/diagnostics.h"

namespace dccc {

/// The standard library's directories, searched in order for `std/...`:
/// `<dir of the dccc executable>/../share/dccc/std` (an installed dccc),
/// then the source tree's `stdlib/` (a dccc run from its build tree).
std::vector<std::string> stdlib_dirs();

struct ImportOptions {
  std::vector<std::string> include_dirs;  // -I, in order
  /// Where the root's relative imports are looked up first; empty: the
  /// root file's folder (a REPL entry, which is no file, passes ".").
  std::string root_dir;
  /// When set, the folder each of the root's imports is looked up in first
  /// (the REPL: the folder of the file a `:load`ed import came from).
  std::function<std::string(const ast::ImportDecl&)> root_dir_of;
  ParseLimits limits;
};

/// What a compilation read, beside the program.
struct LoadedFiles {
  /// The imported files' texts; the program's SourceRanges point into them,
  /// so they must outlive it (and the diagnostics that name them).
  std::vector<std::unique_ptr<SourceFile>> files;
  /// Every file read, the root first, each once, as opened (for `-MD`-style
  /// dependency lists).
  std::vector<std::string> paths;
  /// The module name each imported file's declarations were prefixed with,
  /// in the order of `files`.
  std::vector<std::string> prefixes;
};

/// Parses `root` and, recursively, every file it imports, reporting into
/// `diags` (whose own file is `root`). Returns the merged program, or
/// nullptr when any error was reported.
std::unique_ptr<ast::Program> parse_with_imports(const SourceFile& root, DiagnosticEngine& diags,
                                                 const ImportOptions& options, LoadedFiles& loaded);

}  // namespace dccc
