// lang_runner: runs one language test (a .toy file whose `//` comments state
// what dccc must do with it) and reports every way the result differs. A
// .vloop file (IR text, which dccc reads instead of a program) is run the
// same way.
//
//   lang_runner DCCC_BINARY FILE.toy
//   lang_runner --kinds-covered DIR      (every non-note diagnostic kind is
//                                        named by some EXPECT-ERROR/-WARNING)
//
// Directives (in `//` comments, anywhere on a line):
//   RUN: MODE [-DNAME=VALUE ...]                 how to run dccc; MODE is check
//                                                (default), typed, ast, vloop,
//                                                cuda (--emit=MODE: the CUDA
//                                                target's source, no GPU needed)
//                                                run (`dccc run`) or lib
//                                                (`dccc FILE -o DIR/lib.so` into
//                                                a fresh directory; --target=cuda
//                                                allowed: back-end errors)
//   EXPECT-OK                                    the program checks with no errors
//   EXPECT-ERROR[@loc] [Kind] message-substring  an error on the comment's line
//   EXPECT-WARNING[@loc] [Kind] message-substring
//   EXPECT-NOTE[@loc] [Kind]? message-substring  notes are checked only when a
//                                                file has at least one EXPECT-NOTE
//   EXPECT-STDOUT: text                          one line of the expected stdout
//   EXPECT-RUNTIME-ERROR: text                   (RUN: run only) the program must
//                                                stop with a run-time error: exit 3
//                                                and `dccc: run-time error: ...text...`
//                                                on stderr, the same from every engine
// where @loc is @+N / @-N (relative to the comment's line) or @LINE, each
// optionally followed by :COL, or @:COL (a column on the comment's line), or
// @FILE.toy:LINE[:COL], a diagnostic in another file (an imported module;
// FILE is relative to the test file's folder). `RUN:` also takes -IDIR
// (relative to the test's folder), and `RUN: run --materialize` runs every
// engine on the reductions as written (the JIT's default online form may
// sum in another order than the interpreters, docs/vloop.md). Files under a folder named `mods` are
// modules the tests import, not tests (tests/CMakeLists.txt skips them).
//
// The test fails on: an unknown directive, a file with no expectation, an
// internal error (exit 70, death by signal, "internal error" on stderr), an
// expected diagnostic that is missing, an error or warning that is not
// expected, a stdout mismatch, and a file named fail_* that does not expect
// an error (or the reverse). fail_* files must exit 1, files that expect a
// run-time error 3, the others 0.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

extern char** environ;

namespace {

namespace fs = std::filesystem;

enum class Sev { Error, Warning, Note };

const char* sev_name(Sev s) {
  switch (s) {
    case Sev::Error: return "error";
    case Sev::Warning: return "warning";
    case Sev::Note: return "note";
  }
  return "?";
}

/// Every registered diagnostic kind with its severity, read from the one list.
const std::map<std::string, Sev>& known_kinds() {
  static const std::map<std::string, Sev> kinds = {
#define DIAG(kind, severity, format) {#kind, Sev::severity},
#include "support/diagnostic_kinds.def"
#undef DIAG
  };
  return kinds;
}

/// One `EXPECT-ERROR` / `EXPECT-WARNING` / `EXPECT-NOTE` directive.
struct ExpectedDiag {
  Sev sev;
  int line = 0;  // the line the diagnostic must be reported on
  int col = 0;   // 0: any column
  std::string kind;  // empty: any (notes only)
  std::string substring;
  int directive_line = 0;
  std::string file;  // relative to the test's folder; empty: the test file
};

/// What a test file asks for.
struct TestSpec {
  bool has_run = false;
  std::string mode = "check";
  std::vector<std::string> extra_args;
  std::vector<std::string> include_dirs;  // -I, relative to the test's folder
  bool expect_ok = false;
  std::vector<ExpectedDiag> diags;
  bool has_stdout = false;
  std::vector<std::string> stdout_lines;
  bool has_note = false;
  std::string runtime_error;  // EXPECT-RUNTIME-ERROR text; empty: none expected
  std::vector<std::string> problems;  // malformed directives
  bool any_expectation() const { return expect_ok || !diags.empty() || has_stdout || !runtime_error.empty(); }
  bool expects_error() const {
    return std::any_of(diags.begin(), diags.end(), [](const ExpectedDiag& d) { return d.sev == Sev::Error; });
  }
};

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\r')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r' || s[e - 1] == '\n')) --e;
  return std::string(s.substr(b, e - b));
}

std::string rtrim(std::string_view s) {
  size_t e = s.size();
  while (e > 0 && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r' || s[e - 1] == '\n')) --e;
  return std::string(s.substr(0, e));
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

bool parse_int(std::string_view s, int& out) {
  if (s.empty() || s.size() > 9) return false;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  out = v;
  return true;
}

/// Parses `@+N`, `@-N`, `@LINE`, each with an optional `:COL`, or `@:COL`
/// (the comment's line); `loc` is the text after '@'.
bool parse_location(std::string_view loc, int directive_line, int& line, int& col) {
  col = 0;
  size_t colon = loc.find(':');
  if (colon != std::string_view::npos && (!parse_int(loc.substr(colon + 1), col) || col < 1)) return false;
  std::string_view l = loc.substr(0, colon);
  if (l.empty() && col > 0) {  // `@:COL`: the comment's own line
    line = directive_line;
    return true;
  }
  if (!l.empty() && (l[0] == '+' || l[0] == '-')) {
    int n = 0;
    if (!parse_int(l.substr(1), n)) return false;
    line = l[0] == '+' ? directive_line + n : directive_line - n;
    return line >= 1;
  }
  return parse_int(l, line) && line >= 1;
}

/// Reads the directive in one comment (the text after `//`), if there is one.
void parse_comment(std::string_view comment, int line_no, TestSpec& spec) {
  std::string text = trim(comment);
  auto problem = [&](const std::string& what) {
    spec.problems.push_back("line " + std::to_string(line_no) + ": " + what);
  };
  // A directive starts with EXPECT or RUN; lowercase `expect-`/`run:` are
  // flagged too, since a typo'd directive must not silently test nothing.
  std::string lower;
  for (char c : text) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  bool upper_directive = starts_with(text, "EXPECT") || starts_with(text, "RUN");
  bool lower_directive = !upper_directive && (starts_with(lower, "expect-") || starts_with(lower, "run:"));
  if (lower_directive) {
    problem("directive words are uppercase: `" + text.substr(0, text.find(' ')) + "`");
    return;
  }
  if (!upper_directive) return;
  size_t word_end = 0;
  while (word_end < text.size() && (std::isupper(static_cast<unsigned char>(text[word_end])) || text[word_end] == '-'))
    ++word_end;
  std::string word = text.substr(0, word_end);
  std::string rest = text.substr(word_end);

  if (word == "RUN") {
    if (!starts_with(rest, ":")) return problem("`RUN` must be followed by `:`");
    std::istringstream in(rest.substr(1));
    std::string mode;
    in >> mode;
    if (mode != "check" && mode != "typed" && mode != "ast" && mode != "vloop" && mode != "cuda" && mode != "run" &&
        mode != "lib")
      return problem("unknown RUN mode `" + mode + "`; expected check, typed, ast, vloop, cuda, run or lib");
    if (spec.has_run) return problem("more than one RUN directive");
    spec.has_run = true;
    spec.mode = mode;
    for (std::string arg; in >> arg;) {
      if ((mode == "lib" && arg == "--target=cuda") || (mode == "run" && arg == "--materialize")) {
        spec.extra_args.push_back(arg);
        continue;
      }
      if (starts_with(arg, "-I") && arg.size() > 2) {
        spec.include_dirs.push_back(arg.substr(2));
        continue;
      }
      if (!starts_with(arg, "-D"))
        return problem("RUN accepts only -DNAME=VALUE and -IDIR arguments (and --materialize with run, --target=cuda with lib), not `" +
                       arg + "`");
      spec.extra_args.push_back(arg);
    }
    return;
  }
  if (word == "EXPECT-OK") {
    if (!trim(rest).empty()) return problem("EXPECT-OK takes no arguments");
    spec.expect_ok = true;
    return;
  }
  if (word == "EXPECT-STDOUT") {
    if (!starts_with(rest, ":")) return problem("`EXPECT-STDOUT` must be followed by `:`");
    std::string_view line = std::string_view(rest).substr(1);
    if (!line.empty() && line[0] == ' ') line.remove_prefix(1);
    spec.has_stdout = true;
    spec.stdout_lines.push_back(rtrim(line));
    return;
  }
  if (word == "EXPECT-RUNTIME-ERROR") {
    if (!starts_with(rest, ":")) return problem("`EXPECT-RUNTIME-ERROR` must be followed by `:`");
    std::string want = trim(std::string_view(rest).substr(1));
    if (want.empty()) return problem("EXPECT-RUNTIME-ERROR needs the text the error message must contain");
    if (!spec.runtime_error.empty()) return problem("more than one EXPECT-RUNTIME-ERROR directive");
    spec.runtime_error = want;
    return;
  }
  Sev sev;
  if (word == "EXPECT-ERROR") sev = Sev::Error;
  else if (word == "EXPECT-WARNING") sev = Sev::Warning;
  else if (word == "EXPECT-NOTE") sev = Sev::Note;
  else return problem("unknown directive `" + word + "`");

  ExpectedDiag d;
  d.sev = sev;
  d.directive_line = line_no;
  d.line = line_no;
  std::string_view r = rest;
  if (!r.empty() && r[0] == '@') {
    size_t end = r.find_first_of(" \t");
    std::string_view loc = r.substr(1, end == std::string_view::npos ? std::string_view::npos : end - 1);
    if (size_t t = loc.find(".toy:"); t != std::string_view::npos) {  // @FILE.toy:LINE[:COL]
      d.file = std::string(loc.substr(0, t + 4));
      loc = loc.substr(t + 5);
      if (loc.empty() || loc[0] == '+' || loc[0] == '-' || loc[0] == ':')
        return problem("a location in another file is @FILE.toy:LINE[:COL]");
    }
    if (!parse_location(loc, line_no, d.line, d.col))
      return problem("bad location `@" + std::string(loc) + "` (expected @+N, @-N or @LINE, optionally with :COL, or @:COL)");
    r = end == std::string_view::npos ? std::string_view() : r.substr(end);
  } else if (!r.empty() && r[0] != ' ' && r[0] != '\t') {
    return problem("unknown directive `" + word + std::string(r.substr(0, r.find(' '))) + "`");
  }
  std::string body = trim(r);
  if (starts_with(body, "[")) {
    size_t close = body.find(']');
    if (close == std::string::npos) return problem("unterminated `[Kind]`");
    d.kind = body.substr(1, close - 1);
    body = trim(std::string_view(body).substr(close + 1));
    auto it = known_kinds().find(d.kind);
    if (it == known_kinds().end()) return problem("unknown diagnostic kind `" + d.kind + "`");
    if (it->second != sev)
      return problem("kind `" + d.kind + "` is reported as " + (it->second == Sev::Error ? "an " : "a ") +
                     sev_name(it->second) + "; expect it with EXPECT-" +
                     (it->second == Sev::Error ? "ERROR" : it->second == Sev::Warning ? "WARNING" : "NOTE"));
    // Notes are printed without their kind; it only documents the directive.
    if (sev == Sev::Note) d.kind.clear();
  } else if (sev != Sev::Note) {
    return problem(word + " needs a `[Kind]`");
  }
  d.substring = body;
  if (sev == Sev::Note) spec.has_note = true;
  spec.diags.push_back(std::move(d));
}

TestSpec parse_spec(const std::string& text) {
  TestSpec spec;
  std::istringstream in(text);
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    size_t pos = line.find("//");
    if (pos == std::string::npos) continue;
    parse_comment(std::string_view(line).substr(pos + 2), line_no, spec);
  }
  return spec;
}

/// A diagnostic as dccc printed it.
struct ProducedDiag {
  Sev sev;
  int line = 0, col = 0;
  std::string kind;
  std::string message;
  std::string text;  // the printed first line
  bool matched = false;
  std::string file;  // empty: the test file; else the path dccc printed
};

/// Splits dccc's stderr into diagnostics; lines that are neither a
/// diagnostic, an echoed source line/caret nor the summary go to `stray`.
std::vector<ProducedDiag> parse_stderr(const std::string& err, const std::string& file,
                                       std::vector<std::string>& stray) {
  std::vector<ProducedDiag> out;
  std::istringstream in(err);
  std::string line;
  while (std::getline(in, line)) {
    if (starts_with(line, "  ")) continue;  // source line or caret
    if (line.empty()) continue;
    if (line.find(" error(s) generated.") != std::string::npos) continue;
    ProducedDiag d;
    size_t prefix = file.size();
    if (!starts_with(line, file + ":")) {
      // A diagnostic in another .toy file (an imported module).
      size_t t = line.find(".toy:");
      if (t == std::string::npos || t == 0 || line.find(": ") < t) {
        stray.push_back(line);
        continue;
      }
      prefix = t + 4;
      d.file = line.substr(0, prefix);
    }
    std::string_view rest = std::string_view(line).substr(prefix + 1);
    d.text = line;
    // Optional LINE:COL:
    size_t c1 = rest.find(':');
    int l = 0, c = 0;
    if (c1 != std::string_view::npos && parse_int(rest.substr(0, c1), l)) {
      size_t c2 = rest.find(':', c1 + 1);
      if (c2 == std::string_view::npos || !parse_int(rest.substr(c1 + 1, c2 - c1 - 1), c)) {
        stray.push_back(line);
        continue;
      }
      d.line = l;
      d.col = c;
      rest = rest.substr(c2 + 1);
    }
    if (starts_with(rest, " error: ")) {
      d.sev = Sev::Error;
      rest.remove_prefix(8);
    } else if (starts_with(rest, " warning: ")) {
      d.sev = Sev::Warning;
      rest.remove_prefix(10);
    } else if (starts_with(rest, " note: ")) {
      d.sev = Sev::Note;
      rest.remove_prefix(7);
    } else {
      stray.push_back(line);
      continue;
    }
    std::string msg(rest);
    if (d.sev != Sev::Note && !msg.empty() && msg.back() == ']') {
      size_t open = msg.rfind(" [");
      if (open != std::string::npos) {
        d.kind = msg.substr(open + 2, msg.size() - open - 3);
        msg = msg.substr(0, open);
      }
    }
    d.message = msg;
    out.push_back(std::move(d));
  }
  return out;
}

struct RunResult {
  bool started = false;
  std::string start_error;
  bool timed_out = false;
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;
  std::string out, err;
};

/// Runs argv with stdout and stderr captured separately through pipes.
RunResult run_process(const std::vector<std::string>& args, int timeout_s) {
  RunResult r;
  int out_pipe[2], err_pipe[2];
  if (pipe(out_pipe) != 0 || pipe(err_pipe) != 0) {
    r.start_error = std::string("pipe: ") + std::strerror(errno);
    return r;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addclose(&actions, out_pipe[0]);
  posix_spawn_file_actions_addclose(&actions, err_pipe[0]);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  posix_spawn_file_actions_addclose(&actions, out_pipe[1]);
  posix_spawn_file_actions_addclose(&actions, err_pipe[1]);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (rc != 0) {
    r.start_error = "cannot start `" + args[0] + "`: " + std::strerror(rc);
    close(out_pipe[0]);
    close(err_pipe[0]);
    return r;
  }
  r.started = true;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* bufs[2] = {&r.out, &r.err};
  int open_fds = 2;
  char chunk[65536];
  while (open_fds > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      r.timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    int n = poll(fds, 2, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t got = read(fds[i].fd, chunk, sizeof chunk);
      if (got > 0) {
        bufs[i]->append(chunk, static_cast<size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) close(f.fd);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  return r;
}

std::vector<std::string> split_lines_trimmed(const std::string& s) {
  std::vector<std::string> lines;
  std::istringstream in(s);
  std::string line;
  while (std::getline(in, line)) lines.push_back(rtrim(line));
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

std::string describe(const ExpectedDiag& d) {
  std::string s = std::string(sev_name(d.sev)) + " at " + (d.file.empty() ? "" : d.file + " ") + "line " +
                  std::to_string(d.line);
  if (d.col) s += ", column " + std::to_string(d.col);
  if (!d.kind.empty()) s += " [" + d.kind + "]";
  if (!d.substring.empty()) s += " containing \"" + d.substring + "\"";
  s += " (directive on line " + std::to_string(d.directive_line) + ")";
  return s;
}

/// The file a diagnostic names is the file an expectation names.
bool same_file(const ExpectedDiag& e, const ProducedDiag& p, const std::string& test_path) {
  if (e.file.empty() || p.file.empty()) return e.file.empty() && p.file.empty();
  std::error_code ec1, ec2;
  fs::path want = fs::weakly_canonical(fs::path(test_path).parent_path() / e.file, ec1);
  fs::path got = fs::weakly_canonical(p.file, ec2);
  return !ec1 && !ec2 && want == got;
}

bool matches(const ExpectedDiag& e, const ProducedDiag& p, const std::string& test_path) {
  return same_file(e, p, test_path) && e.sev == p.sev && e.line == p.line && (e.col == 0 || e.col == p.col) &&
         (e.kind.empty() || e.kind == p.kind) && p.message.find(e.substring) != std::string::npos;
}

bool read_file(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return true;
}

int run_test(const std::string& dccc, const std::string& path) {
  std::string text;
  if (!read_file(path, text)) {
    std::cout << "FAIL " << path << ": cannot read the file\n";
    return 1;
  }
  TestSpec spec = parse_spec(text);
  std::vector<std::string> failures;
  for (const auto& p : spec.problems) failures.push_back("bad directive, " + p);
  if (!spec.any_expectation())
    failures.push_back("the file states no expectation (EXPECT-OK, EXPECT-ERROR, EXPECT-WARNING, "
                       "EXPECT-NOTE, EXPECT-STDOUT or EXPECT-RUNTIME-ERROR)");
  if (spec.expect_ok && spec.expects_error())
    failures.push_back("EXPECT-OK contradicts the file's EXPECT-ERROR directives");
  const bool expects_runtime_error = !spec.runtime_error.empty();
  if (expects_runtime_error && spec.mode != "run")
    failures.push_back("EXPECT-RUNTIME-ERROR needs `RUN: run`");
  if (expects_runtime_error && (spec.expect_ok || spec.expects_error()))
    failures.push_back("EXPECT-RUNTIME-ERROR contradicts EXPECT-OK / EXPECT-ERROR: the program must check and then fail when run");

  std::string base = fs::path(path).filename().string();
  bool named_fail = starts_with(base, "fail_");
  bool must_fail = spec.expects_error();
  if (named_fail && !must_fail)
    failures.push_back("the file is named fail_* but expects no error (rename it or add EXPECT-ERROR)");
  if (!named_fail && must_fail)
    failures.push_back("the file expects an error, so its name must start with fail_");

  std::vector<std::string> args = {dccc};
  if (spec.mode == "run") args.push_back("run");  // must come first
  else if (spec.mode == "check") args.push_back("--check");
  else if (spec.mode != "lib") args.push_back("--emit=" + spec.mode);
  args.push_back("--max-errors=1000000");
  for (const auto& a : spec.extra_args) args.push_back(a);
  for (const auto& d : spec.include_dirs) args.push_back("-I" + (fs::path(path).parent_path() / d).string());
  args.push_back(path);
  // `RUN: lib`: the library and its headers go to a fresh directory, removed after.
  std::string lib_dir;
  if (spec.mode == "lib") {
    std::string templ = (fs::temp_directory_path() / "lang_runner_lib.XXXXXX").string();
    if (!mkdtemp(templ.data())) {
      std::cout << "FAIL " << path << ": cannot create a temporary directory\n";
      return 1;
    }
    lib_dir = templ;
    args.push_back("-o");
    args.push_back(lib_dir + "/lib.so");
  }
  RunResult r = run_process(args, 120);
  if (!lib_dir.empty()) {
    std::error_code rm_ec;
    fs::remove_all(lib_dir, rm_ec);
  }

  std::string command;
  for (const auto& a : args) command += (command.empty() ? "" : " ") + a;
  if (!r.started) {
    failures.push_back(r.start_error);
  } else {
    if (r.timed_out) failures.push_back("dccc did not finish within 120 s and was killed");
    else if (r.signal) failures.push_back("dccc died by signal " + std::to_string(r.signal) + " (" + strsignal(r.signal) + ")");
    else if (r.exit_code == 70) failures.push_back("dccc exited with 70 (internal error)");
    if (r.err.find("internal error") != std::string::npos || r.out.find("internal error") != std::string::npos)
      failures.push_back("dccc reported an internal error");
    if (!r.timed_out && !r.signal && r.exit_code != 70) {
      int want = must_fail ? 1 : expects_runtime_error ? 3 : 0;
      if (r.exit_code != want)
        failures.push_back("dccc exited with " + std::to_string(r.exit_code) + ", expected " + std::to_string(want) +
                           (must_fail              ? " (the file expects errors)"
                            : expects_runtime_error ? " (the file expects a run-time error)"
                                                    : " (the file expects no errors)"));
    }
    if (expects_runtime_error && !r.timed_out && !r.signal) {
      const std::string prefix = "dccc: run-time error: ";
      size_t at = r.err.find(prefix);
      std::string got = at == std::string::npos ? "" : r.err.substr(at + prefix.size(), r.err.find('\n', at) - at - prefix.size());
      if (at == std::string::npos)
        failures.push_back("expected a run-time error containing \"" + spec.runtime_error + "\", but dccc reported none");
      else if (got.find(spec.runtime_error) == std::string::npos)
        failures.push_back("the run-time error \"" + got + "\" does not contain \"" + spec.runtime_error + "\"");
    }

    std::vector<std::string> stray;
    std::vector<ProducedDiag> produced = parse_stderr(r.err, path, stray);
    // Most specific expectations first, so that a vague one cannot take the
    // diagnostic a precise one needs.
    std::vector<const ExpectedDiag*> order;
    for (const auto& e : spec.diags) order.push_back(&e);
    std::stable_sort(order.begin(), order.end(), [](const ExpectedDiag* a, const ExpectedDiag* b) {
      auto score = [](const ExpectedDiag* d) { return (d->col ? 100000 : 0) + static_cast<int>(d->substring.size()); };
      return score(a) > score(b);
    });
    for (const ExpectedDiag* e : order) {
      bool found = false;
      for (auto& p : produced) {
        if (!p.matched && matches(*e, p, path)) {
          p.matched = found = true;
          break;
        }
      }
      if (!found) {
        std::string msg = "missing " + describe(*e);
        // Point at near misses: same line and severity.
        for (const auto& p : produced)
          if (p.sev == e->sev && p.line == e->line)
            msg += "\n      on that line dccc said: " + p.text.substr(p.text.find(':') + 1);
        failures.push_back(msg);
      }
    }
    for (const auto& p : produced) {
      if (p.matched) continue;
      if (p.sev == Sev::Note && !spec.has_note) continue;
      failures.push_back(std::string("unexpected ") + sev_name(p.sev) + ": " + p.text);
    }
    for (const auto& s : stray)
      if ((s.find("error") != std::string::npos || s.find("warning") != std::string::npos) &&
          !(expects_runtime_error && starts_with(s, "dccc: run-time error: ")))
        failures.push_back("unexpected output on stderr: " + s);

    if (spec.has_stdout) {
      std::vector<std::string> got = split_lines_trimmed(r.out);
      std::vector<std::string> want = spec.stdout_lines;
      while (!want.empty() && want.back().empty()) want.pop_back();
      if (got != want) {
        std::string msg = "stdout differs from EXPECT-STDOUT";
        size_t i = 0;
        while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
        msg += " (first difference at stdout line " + std::to_string(i + 1) + ")";
        msg += "\n      expected: " + (i < want.size() ? "\"" + want[i] + "\"" : std::string("<end of output>"));
        msg += "\n      got:      " + (i < got.size() ? "\"" + got[i] + "\"" : std::string("<end of output>"));
        msg += "\n    full stdout:\n";
        for (const auto& l : got) msg += "      | " + l + "\n";
        failures.push_back(msg);
      }
    }
  }

  // `RUN: run` executes the program three ways: the LLVM JIT (above), the
  // interpreter of the storage-lowered IR and the layout-free interpreter.
  // All three must print the same and exit the same.
  if (spec.mode == "run" && r.started && !r.timed_out && !r.signal) {
    for (const char* engine : {"--interpret", "--no-storage-lowering"}) {
      std::vector<std::string> alt = {dccc, "run", engine};
      for (const auto& a : spec.extra_args) alt.push_back(a);
      for (const auto& d : spec.include_dirs) alt.push_back("-I" + (fs::path(path).parent_path() / d).string());
      alt.push_back(path);
      RunResult o = run_process(alt, 120);
      if (!o.started || o.timed_out || o.signal || o.exit_code != r.exit_code)
        failures.push_back(std::string("`dccc run ") + engine + "` exited with " +
                           (o.signal ? "signal " + std::to_string(o.signal) : std::to_string(o.exit_code)) +
                           ", the JIT with " + std::to_string(r.exit_code));
      else if (o.out != r.out)
        failures.push_back(std::string("`dccc run ") + engine + "` printed something else than the JIT:\n" + o.out);
      else if (expects_runtime_error && o.err.find(spec.runtime_error) == std::string::npos)
        failures.push_back(std::string("`dccc run ") + engine + "` stopped without a run-time error containing \"" +
                           spec.runtime_error + "\":\n" + o.err);
    }
  }

  if (failures.empty()) {
    std::cout << "PASS " << path << "\n";
    return 0;
  }
  std::cout << "FAIL " << path << "\n  command: " << command << "\n";
  for (const auto& f : failures) std::cout << "  - " << f << "\n";
  if (r.started) {
    std::cout << "  exit status: "
              << (r.signal ? "signal " + std::to_string(r.signal) : std::to_string(r.exit_code)) << "\n";
    if (!r.err.empty()) {
      std::cout << "  stderr:\n";
      for (const auto& l : split_lines_trimmed(r.err)) std::cout << "    | " << l << "\n";
    }
    if (!r.out.empty() && !spec.has_stdout) {
      std::cout << "  stdout:\n";
      for (const auto& l : split_lines_trimmed(r.out)) std::cout << "    | " << l << "\n";
    }
  }
  return 1;
}

/// `--kinds-covered DIR`: every error and warning kind appears in some
/// EXPECT-ERROR / EXPECT-WARNING directive of a .toy or .vloop file under DIR.
int kinds_covered(const std::string& dir) {
  std::map<std::string, std::vector<std::string>> used;  // kind -> files
  size_t files = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (!it->is_regular_file() || (it->path().extension() != ".toy" && it->path().extension() != ".vloop")) continue;
    ++files;
    std::string text;
    if (!read_file(it->path().string(), text)) continue;
    TestSpec spec = parse_spec(text);
    for (const auto& d : spec.diags)
      if (d.sev != Sev::Note && !d.kind.empty()) used[d.kind].push_back(it->path().string());
  }
  if (ec) {
    std::cout << "FAIL cannot read " << dir << ": " << ec.message() << "\n";
    return 1;
  }
  std::vector<std::string> missing;
  for (const auto& [kind, sev] : known_kinds())
    if (sev != Sev::Note && !used.count(kind)) missing.push_back(kind);
  std::cout << files << " language tests name " << used.size() << " diagnostic kinds\n";
  if (missing.empty()) {
    std::cout << "PASS every error and warning kind is exercised\n";
    return 0;
  }
  std::cout << "FAIL no EXPECT-ERROR/EXPECT-WARNING in " << dir << " names these kinds:\n";
  for (const auto& k : missing) std::cout << "  " << k << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--kinds-covered") return kinds_covered(argv[2]);
  if (argc != 3) {
    std::cerr << "usage: lang_runner DCCC_BINARY FILE.toy\n"
                 "       lang_runner --kinds-covered DIR\n";
    return 2;
  }
  return run_test(argv[1], argv[2]);
}
