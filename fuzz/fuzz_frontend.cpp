// libFuzzer target over the whole front end: bytes -> SourceFile -> parse
// -> check.
//
// Any input must end in diagnostics, never in a crash, a hang, a sanitizer
// report or an escaping exception (an escaping exception aborts, which
// libFuzzer records as a crash with its reproducer).
//
// The parser and the checker recurse over the tree. The driver runs them on
// a thread with a 1 GiB stack (tools/dccc.cpp); the fuzzer does the same
// with one long-lived worker thread, so that deep input is bounded by the
// parser's limits exactly as in dccc, and not by libFuzzer's main stack.
#include <pthread.h>

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>

#include "frontend/parser.h"
#include "typecheck/checker.h"
#include "support/large_stack.h"

namespace {

constexpr size_t kStackBytes = dccc::kFrontEndStackBytes;  // as in tools/dccc.cpp
constexpr unsigned kSolverBudget = 200000;

void run_one(const std::string& text) {
  dccc::SourceFile file("fuzz.toy", text);
  dccc::DiagnosticEngine diags(&file);
  auto program = dccc::parse(file, diags);
  if (!program) return;
  dccc::CheckOptions options;
  options.solver_budget = kSolverBudget;
  auto checked = dccc::check(*program, diags, options);
  // Render every diagnostic too: printing is part of what users run.
  for (const auto& d : diags.diagnostics()) (void)diags.render(d);
  if (checked && !diags.has_errors()) {
    (void)dccc::dump_typed(*checked);
    (void)dccc::summarize(*checked);
  }
}

/// A worker thread with a large stack that runs one input at a time.
class Worker {
 public:
  Worker() {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, kStackBytes);
    if (pthread_create(&thread_, &attr, &Worker::main, this) != 0) {
      std::fprintf(stderr, "fuzz_frontend: cannot start the worker thread\n");
      std::abort();
    }
    pthread_attr_destroy(&attr);
  }

  void run(const uint8_t* data, size_t size) {
    std::unique_lock<std::mutex> lock(mu_);
    input_.assign(reinterpret_cast<const char*>(data), size);
    pending_ = true;
    cv_.notify_all();
    cv_.wait(lock, [this] { return !pending_; });
  }

 private:
  static void* main(void* self) {
    static_cast<Worker*>(self)->loop();
    return nullptr;
  }

  void loop() {
    for (;;) {
      std::string text;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return pending_; });
        text = input_;
      }
      try {
        run_one(text);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "fuzz_frontend: internal error: uncaught exception: %s\n", e.what());
        std::abort();
      } catch (...) {
        std::fprintf(stderr, "fuzz_frontend: internal error: uncaught non-standard exception\n");
        std::abort();
      }
      std::lock_guard<std::mutex> lock(mu_);
      pending_ = false;
      cv_.notify_all();
    }
  }

  pthread_t thread_{};
  std::mutex mu_;
  std::condition_variable cv_;
  std::string input_;
  bool pending_ = false;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Never destroyed: the worker blocks in its loop until the process exits.
  static Worker* worker = new Worker();
  worker->run(data, size);
  return 0;
}
