// dccc_progen: the random-program tester (issue 21). Generates well-typed
// DCC programs and requires every engine to agree on them:
//
//   dccc_progen --dccc PATH [--seed S] [-n N] [-j J] [--keep DIR] [--mutate]
//               [--avoid-open | --avoid F,...] [--asan] [--no-host] [--cc CC] [--timeout SEC]
//   dccc_progen --print SEED [--avoid-open] [--mutate]   (the program, host and mutation of one seed)
//
// Program k of a run has seed S + k, so a failure printed as `seed 1234`
// is replayed with `--seed 1234 -n 1 --keep DIR`. For each program:
//   1. `dccc --check` exits 0;
//   2. `dccc run`, `dccc run --interpret` and `dccc run --no-storage-lowering`
//      exit 0 and print the same (numbers within the element type's tolerance);
//   3. `dccc prog.toy -o prog.so` builds, the generated C host (host.c) built
//      against prog.h calls every function main calls, and prints the same;
//   4. with --asan (give the asan build's dccc), the library and the host are
//      built with -fsanitize=address,undefined and no command may report.
// --mutate rewrites each program first (a recorded site: an index swapped, a
// range off by one, a `where` dropped, a length above its bound; or a token
// changed); then the check must give a located error (`prog.toy:L:C: error:
// ... [Kind]`, exit 1) or, if it passes, the run modes must agree.
// Never acceptable anywhere: exit 70, "internal error", a signal, a timeout.
// --avoid-open leaves out constructs with known open defects (generator.h);
// --avoid leaves out some of them: nested, alias_write, c_names, multi_call,
// i32_result, i32_elem, or half (f16/bf16 element types).
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fuzz/progen/compare.h"
#include "fuzz/progen/generator.h"

extern char** environ;

namespace dccc::progen {
namespace {

namespace fs = std::filesystem;

struct Options {
  std::string dccc;
  std::string cc = "cc";
  uint64_t seed = 1;
  int count = 100;
  int jobs = 1;
  std::string keep;
  bool mutate = false;
  bool asan = false;
  bool host = true;
  int timeout_s = 120;
  Features features;
};

struct Result {
  int rc = -1;      // exit status; 128 + N for signal N; 124 timeout
  std::string out;  // stdout
  std::string err;  // stderr
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void spill(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
}

/// Runs argv in `dir` with `env` added, stdout and stderr to files; kills its
/// process group after `timeout_s`.
Result run_cmd(const std::vector<std::string>& argv, const fs::path& dir, const std::string& tag,
               const std::vector<std::string>& env, int timeout_s) {
  Result r;
  fs::path out = dir / (tag + ".out"), err = dir / (tag + ".err");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  std::vector<std::string> envs;
  for (char** e = environ; *e; ++e) envs.push_back(*e);
  for (const std::string& e : env) envs.push_back(e);
  std::vector<char*> cargv, cenv;
  for (const std::string& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const std::string& e : envs) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, cargv[0], &fa, &attr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    r.rc = 127;
    r.err = std::string("cannot run ") + argv[0] + ": " + std::strerror(rc);
    return r;
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int status = 0;
  bool timed_out = false;
  while (true) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  r.out = slurp(out);
  r.err = slurp(err);
  if (timed_out) r.rc = 124;
  else if (WIFSIGNALED(status)) r.rc = 128 + WTERMSIG(status);
  else r.rc = WEXITSTATUS(status);
  return r;
}

/// A problem no command may show: an internal error, a signal, a timeout,
/// a sanitizer report.
std::string crash_in(const Result& r) {
  if (r.rc == 124) return "timed out";
  if (r.rc == 70) return "exit 70 (internal error)";
  if (r.rc > 128) return "killed by signal " + std::to_string(r.rc - 128);
  if (r.err.find("internal error") != std::string::npos) return "`internal error` on stderr";
  for (const char* s : {"AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer", ": runtime error: "})
    if (r.err.find(s) != std::string::npos) return std::string("sanitizer report (") + s + ")";
  return "";
}

std::string first_lines(const std::string& s, int n = 6) {
  std::string out;
  std::istringstream in(s);
  std::string line;
  for (int i = 0; i < n && std::getline(in, line); ++i) out += "      " + line + "\n";
  return out;
}

/// The `dccc: run-time error: ...` line of a run's stderr.
std::string runtime_error(const std::string& err) {
  size_t at = err.find("run-time error:");
  if (at == std::string::npos) return "";
  return err.substr(at, err.find('\n', at) - at);
}

struct Outcome {
  bool ok = true;
  std::string why;
  bool host_checked = false;
  bool mutated_valid = false;
  std::string open_mutation;  // the mutation exercises a known-open defect
};

class Runner {
 public:
  explicit Runner(const Options& o) : o_(o) {}

  Outcome one(uint64_t seed, const fs::path& dir) {
    Program p = generate(seed, o_.features);
    std::string text = p.toy;
    std::string what;
    Outcome oc;
    if (o_.mutate) text = mutate(p, seed, &what);
    if (what.find("through an alias") != std::string::npos) oc.open_mutation = "alias_write";
    fs::create_directories(dir);
    spill(dir / "prog.toy", text);
    spill(dir / "host.c", p.host_c);
    auto fail = [&](const std::string& step, const std::string& why, const Result* r) {
      oc.ok = false;
      oc.why = step + ": " + why;
      if (!what.empty()) oc.why += "\n    mutation: " + what;
      if (r) oc.why += "\n    stderr:\n" + first_lines(r->err);
      return oc;
    };
    std::vector<std::string> env = {"DCC_POISON_UNINIT=1"};
    Result check = run_cmd({o_.dccc, "--check", (dir / "prog.toy").string()}, dir, "check", env, o_.timeout_s);
    if (std::string c = crash_in(check); !c.empty()) return fail("dccc --check", c, &check);
    if (o_.mutate && check.rc == 1) {
      static const std::regex located(R"(prog\.toy:\d+:\d+: error: .*\[[A-Za-z]+\])");
      if (!std::regex_search(check.err, located)) return fail("dccc --check", "an error without a location", &check);
      return oc;
    }
    if (check.rc != 0) return fail("dccc --check", "exit " + std::to_string(check.rc), &check);
    oc.mutated_valid = o_.mutate;
    // A mutation may rename `main` (or drop it) and leave a valid library of
    // functions: it checks, and there is nothing to run.
    if (o_.mutate && !std::regex_search(text, std::regex(R"(\bfn main\s*\()"))) return oc;
    Tolerance tol = tolerance_for(p.elem);
    const std::vector<std::pair<std::string, std::vector<std::string>>> modes = {
        {"interpret", {"--interpret"}}, {"jit", {}}, {"nosl", {"--no-storage-lowering"}}};
    std::vector<Result> runs;
    for (const auto& [tag, flags] : modes) {
      std::vector<std::string> argv = {o_.dccc, "run"};
      argv.insert(argv.end(), flags.begin(), flags.end());
      argv.push_back((dir / "prog.toy").string());
      runs.push_back(run_cmd(argv, dir, tag, env, o_.timeout_s));
      const Result& r = runs.back();
      std::string step = "dccc run" + (flags.empty() ? "" : " " + flags[0]);
      if (std::string c = crash_in(r); !c.empty()) return fail(step, c, &r);
      // A mutated program may stop with a run-time error; all modes must then agree.
      if (r.rc != 0 && !(o_.mutate && r.rc == 3))
        return fail(step, "exit " + std::to_string(r.rc), &r);
    }
    for (size_t m = 1; m < runs.size(); ++m) {
      std::string why;
      if (runs[m].rc != runs[0].rc)
        return fail("dccc run " + modes[m].first, "exit " + std::to_string(runs[m].rc) + " but --interpret exits " +
                                                      std::to_string(runs[0].rc), &runs[m]);
      if (runs[0].rc == 3 && runtime_error(runs[m].err) != runtime_error(runs[0].err))
        return fail("dccc run " + modes[m].first + " vs --interpret",
                    "run-time error `" + runtime_error(runs[m].err) + "` vs `" + runtime_error(runs[0].err) + "`",
                    nullptr);
      if (!same_output(runs[0].out, runs[m].out, tol, &why))
        return fail("dccc run " + modes[m].first + " vs --interpret", "stdout differs: " + why, nullptr);
    }
    if (o_.mutate || !o_.host) return oc;
    std::vector<std::string> lib_env = env;
    std::vector<std::string> cflags = {"-std=c11", "-O1", "-Wall", "-Werror=implicit-function-declaration",
                                       "-Werror=incompatible-pointer-types", "-Werror=int-conversion"};
    if (o_.asan) {
      lib_env.push_back("DCCC_CFLAGS=-fsanitize=address,undefined -fno-sanitize-recover=undefined");
      cflags.insert(cflags.end(), {"-fsanitize=address,undefined", "-fno-sanitize-recover=undefined"});
    }
    Result lib = run_cmd({o_.dccc, (dir / "prog.toy").string(), "-o", (dir / "prog.so").string()}, dir, "lib",
                         lib_env, o_.timeout_s);
    if (std::string c = crash_in(lib); !c.empty()) return fail("dccc -o", c, &lib);
    if (lib.rc != 0) return fail("dccc -o", "exit " + std::to_string(lib.rc), &lib);
    std::vector<std::string> cc = {o_.cc};
    cc.insert(cc.end(), cflags.begin(), cflags.end());
    cc.insert(cc.end(), {"-I" + dir.string(), (dir / "host.c").string(), (dir / "prog.so").string(),
                         "-Wl,-rpath," + dir.string(), "-lm", "-o", (dir / "host").string()});
    Result build = run_cmd(cc, dir, "cc", {}, o_.timeout_s);
    if (build.rc != 0) return fail("cc host.c", "exit " + std::to_string(build.rc), &build);
    Result host = run_cmd({(dir / "host").string()}, dir, "host", env, o_.timeout_s);
    if (std::string c = crash_in(host); !c.empty()) return fail("host", c, &host);
    if (host.rc != 0) return fail("host", "exit " + std::to_string(host.rc), &host);
    std::string why;
    if (!same_output(runs[0].out, host.out, tol, &why))
      return fail("host (-o library) vs --interpret", "stdout differs: " + why, nullptr);
    oc.host_checked = true;
    return oc;
  }

 private:
  const Options& o_;
};

int usage(const char* msg) {
  std::cerr << "dccc_progen: " << msg
            << "\nusage: dccc_progen --dccc PATH [--seed S] [-n N] [-j J] [--keep DIR] [--mutate]\n"
               "                   [--avoid-open | --avoid nested,alias_write,c_names,multi_call,i32_result,i32_elem,half]\n"
               "                   [--asan] [--no-host] [--cc CC] [--timeout SEC]\n"
               "       dccc_progen --print SEED [--avoid-open] [--mutate]\n";
  return 2;
}

int main_impl(int argc, char** argv) {
  Options o;
  bool print = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--dccc") o.dccc = value();
    else if (a == "--seed") o.seed = std::stoull(value());
    else if (a == "-n") o.count = std::stoi(value());
    else if (a == "-j") o.jobs = std::max(1, std::stoi(value()));
    else if (a == "--keep") o.keep = value();
    else if (a == "--mutate") o.mutate = true;
    else if (a == "--avoid-open") o.features.avoid_open();
    else if (a == "--avoid") {
      std::istringstream list(value());
      for (std::string f; std::getline(list, f, ',');)
        if (!o.features.avoid(f)) return usage(("unknown feature " + f).c_str());
    }
    else if (a == "--asan") o.asan = true;
    else if (a == "--no-host") o.host = false;
    else if (a == "--cc") o.cc = value();
    else if (a == "--timeout") o.timeout_s = std::stoi(value());
    else if (a == "--print") print = true, o.seed = std::stoull(value());
    else return usage(("unknown option " + a).c_str());
  }
  if (print) {
    Program p = generate(o.seed, o.features);
    if (o.mutate) {
      std::string what;
      std::string text = mutate(p, o.seed, &what);
      std::cout << "// mutation: " << what << "\n" << text;
      return 0;
    }
    std::cout << p.toy << "\n/* ---- host.c ---- */\n" << p.host_c;
    return 0;
  }
  if (o.dccc.empty()) return usage("--dccc is required");
  o.dccc = fs::absolute(o.dccc).string();
  fs::path base = fs::temp_directory_path() / ("dccc_progen." + std::to_string(getpid()));
  fs::create_directories(base);
  std::atomic<int> next{0}, done{0}, failed{0}, host_checked{0}, mutated_valid{0};
  std::mutex mu;
  std::map<std::string, int> open_failures;
  std::vector<uint64_t> failed_seeds;
  auto start = std::chrono::steady_clock::now();
  auto last_progress = start;
  Runner runner(o);
  auto worker = [&]() {
    while (true) {
      int k = next++;
      if (k >= o.count) return;
      uint64_t seed = o.seed + static_cast<uint64_t>(k);
      fs::path dir = base / std::to_string(seed);
      Outcome oc;
      try {
        oc = runner.one(seed, dir);
      } catch (const std::exception& e) {
        oc.ok = false;
        oc.why = std::string("dccc_progen: ") + e.what();
      }
      std::lock_guard<std::mutex> lock(mu);
      ++done;
      host_checked += oc.host_checked;
      mutated_valid += oc.mutated_valid;
      if (!oc.ok) {
        ++failed;
        failed_seeds.push_back(seed);
        Program p = generate(seed, o.features);
        std::string open;
        std::vector<std::string> used = p.open_used;
        if (!oc.open_mutation.empty()) used.push_back(oc.open_mutation + " (mutation)");
        for (const std::string& f : used) open += (open.empty() ? "" : ", ") + f, ++open_failures[f];
        std::cerr << "FAIL seed " << seed << (open.empty() ? "" : " [uses known-open: " + open + "]") << "\n    "
                  << oc.why << "\n";
        std::cerr << "    replay: dccc_progen --dccc " << o.dccc << " --seed " << seed << " -n 1"
                  << (o.mutate ? " --mutate" : "") << " --keep DIR\n";
        if (!o.keep.empty()) {
          fs::path k_dir = fs::path(o.keep) / ("seed-" + std::to_string(seed));
          fs::create_directories(k_dir);
          for (const auto& e : fs::directory_iterator(dir))
            if (e.is_regular_file() && e.path().filename() != "host" && e.path().extension() != ".so")
              fs::copy_file(e.path(), k_dir / e.path().filename(), fs::copy_options::overwrite_existing);
          spill(k_dir / "why.txt", "seed " + std::to_string(seed) + "\n" + oc.why + "\n");
        }
      }
      auto now = std::chrono::steady_clock::now();
      if (now - last_progress > std::chrono::seconds(10)) {
        last_progress = now;
        double secs = std::chrono::duration<double>(now - start).count();
        std::cerr << "progen: " << done << "/" << o.count << " programs, " << failed << " failed, " << secs
                  << " s\n";
      }
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  };
  std::vector<std::thread> threads;
  for (int j = 0; j < o.jobs; ++j) threads.emplace_back(worker);
  for (std::thread& t : threads) t.join();
  std::error_code ec;
  fs::remove_all(base, ec);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "progen: " << done << " programs (seeds " << o.seed << ".." << o.seed + o.count - 1 << (o.mutate ? ", mutated" : "")
            << "), " << failed << " failed";
  if (!open_failures.empty()) {
    std::cout << " (using known-open features:";
    for (const auto& [f, n] : open_failures) std::cout << " " << f << " " << n;
    std::cout << ")";
  }
  if (o.mutate) std::cout << "; " << mutated_valid << " mutations stayed valid";
  std::string avoided;
  auto flags = [](const Features& f) {
    return std::vector<bool>{f.open_nested,     f.open_alias_write, f.open_c_names, f.open_multi_call,
                             f.open_i32_result, f.open_i32_elem,    f.half};
  };
  for (const char* f : {"nested", "alias_write", "c_names", "multi_call", "i32_result", "i32_elem", "half"}) {
    Features probe = o.features;
    probe.avoid(f);
    if (flags(probe) == flags(o.features)) avoided += std::string(avoided.empty() ? "" : ",") + f;  // already off
  }
  if (!avoided.empty()) std::cout << "; avoiding " << avoided;
  std::cout << "; " << host_checked << " checked against the C host of the -o library";
  std::cout << "; " << secs << " s\n";
  return failed ? 1 : 0;
}

}  // namespace
}  // namespace dccc::progen

int main(int argc, char** argv) {
  try {
    return dccc::progen::main_impl(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "dccc_progen: " << e.what() << "\n";
    return 2;
  }
}
