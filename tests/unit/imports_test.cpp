// Unit tests of frontend/imports.h beyond what the language tests see: the
// list of files a compilation read (LoadedFiles::paths, for make-style
// dependency output), each once, in the order read; the merged names; and
// the standard library's directories.
#include "frontend/imports.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

namespace dccc {
namespace {

namespace fs = std::filesystem;

/// A scratch folder with files, removed afterwards.
struct Scratch {
  fs::path dir;
  Scratch() {
    dir = fs::temp_directory_path() / ("dccc_imports_test_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir / "lib");
  }
  ~Scratch() { fs::remove_all(dir); }
  std::string write(const std::string& rel, const std::string& text) const {
    std::ofstream(dir / rel) << text;
    return (dir / rel).string();
  }
};

std::string read(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(Imports, ListsEveryFileReadOnceRootFirst) {
  Scratch s;
  s.write("lib/a.toy", "import \"b.toy\";\nfn fa(x: f32) f32 { return fb(x); }\n");
  s.write("lib/b.toy", "fn fb(x: f32) f32 { return x; }\n");
  s.write("inc.toy", "fn fi(x: f32) f32 { return x; }\n");
  std::string root_path = s.write("main.toy",
                                  "import \"lib/a.toy\";\nimport \"lib/b.toy\" as b;\nimport \"inc.toy\";\n"
                                  "fn main() { print(fa(1.0), b.fb(2.0), fi(3.0)); }\n");
  SourceFile root(root_path, read(root_path));
  DiagnosticEngine diags(&root);
  LoadedFiles loaded;
  auto prog = parse_with_imports(root, diags, {}, loaded);
  ASSERT_TRUE(prog);
  EXPECT_FALSE(diags.has_errors());
  ASSERT_EQ(loaded.paths.size(), 4u);
  EXPECT_EQ(loaded.paths[0], root_path);
  EXPECT_EQ(fs::path(loaded.paths[1]), (s.dir / "lib/a.toy").lexically_normal());
  EXPECT_EQ(fs::path(loaded.paths[2]), (s.dir / "lib/b.toy").lexically_normal());  // once, though imported twice
  EXPECT_EQ(fs::path(loaded.paths[3]), (s.dir / "inc.toy").lexically_normal());
  EXPECT_EQ(loaded.files.size(), 3u);
  // Dependencies first; imported names are `stem.name`; references rewritten.
  ASSERT_EQ(prog->fns.size(), 4u);
  EXPECT_EQ(prog->fns[0].name.name, "b.fb");
  EXPECT_EQ(prog->fns[1].name.name, "a.fa");
  EXPECT_EQ(prog->fns[2].name.name, "inc.fi");
  EXPECT_EQ(prog->fns[3].name.name, "main");
  EXPECT_TRUE(prog->imports.empty());
}

TEST(Imports, IncludeDirsAreSearchedInOrderAfterTheFilesFolder) {
  Scratch s;
  fs::create_directories(s.dir / "one");
  fs::create_directories(s.dir / "two");
  s.write("one/u.toy", "fn u1(x: f32) f32 { return x; }\n");
  s.write("two/u.toy", "fn u2(x: f32) f32 { return x; }\n");
  std::string root_path = s.write("main.toy", "import \"u.toy\";\nfn main() { print(u2(1.0)); }\n");
  SourceFile root(root_path, read(root_path));
  DiagnosticEngine diags(&root);
  LoadedFiles loaded;
  ImportOptions opts;
  opts.include_dirs = {(s.dir / "two").string(), (s.dir / "one").string()};
  auto prog = parse_with_imports(root, diags, opts, loaded);
  ASSERT_TRUE(prog);
  ASSERT_EQ(loaded.paths.size(), 2u);
  EXPECT_EQ(fs::path(loaded.paths[1]), (s.dir / "two/u.toy").lexically_normal());
}

TEST(Imports, StdlibDirsAreTheInstalledThenTheSourceTree) {
  auto dirs = stdlib_dirs();
  ASSERT_EQ(dirs.size(), 2u);
  EXPECT_EQ(fs::path(dirs[0]).filename(), "std");
  EXPECT_EQ(fs::path(dirs[0]).parent_path().filename(), "dccc");
  EXPECT_TRUE(fs::exists(fs::path(dirs[1]) / "nn.toy"));
}

}  // namespace
}  // namespace dccc
