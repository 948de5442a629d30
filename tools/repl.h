// `dccc repl`: a read-eval-print loop over the DCC language.
//
// Every input goes through the same pipeline as `dccc run` (parse, check,
// lower, expand prints, storage lowering, LLVM code generation, ORC JIT).
// The session keeps the text of what it accepted: top-level declarations
// (`type`, `const`, `fn`) and the statements that build values (`let`,
// element-wise assignments). Each input is evaluated as one synthetic
// program, the kept declarations followed by a function that re-runs the
// kept statements and then the input; an expression is bound to a hidden
// `let`, printed, and followed by ` : TYPE`. Diagnostics are mapped back to
// the input they point into (`<input:N>:LINE:COL`), and an input that fails
// anywhere leaves the session as it was. docs/repl.md describes the commands
// and the output format.
#pragma once

#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "typecheck/checker.h"

namespace dccc::repl {

/// Settings of one session.
struct Options {
  CheckOptions check;        // -DNAME=VALUE
  bool verify_each = false;  // run the IR verifier after every pass
  bool interactive = false;  // prompts and line editing (stdin is a terminal)
};

/// One session: the accepted declarations and statements, and the inputs
/// evaluated so far.
class Session {
 public:
  /// Results go to `out` (values, what `print` shows, `:emit` text);
  /// diagnostics and error messages to `err`.
  Session(Options options, std::ostream& out, std::ostream& err);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  /// Evaluates one complete input: code (declarations, statements or an
  /// expression) or a command (`:help`). Returns false when it failed; the
  /// session is then unchanged.
  bool eval(const std::string& input);
  /// True once `:quit` was given.
  bool quit_requested() const;
  /// The words that complete the partial word before position `pos` of
  /// `line` (Tab on a terminal): commands after a leading `:`, `:emit`
  /// targets, and otherwise keywords, builtins and the names of the kept
  /// declarations and `let`s.
  std::vector<std::string> completions(const std::string& line, size_t pos) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// True when `text` is a complete input: every `(`, `[`, `{` and `/*` is
/// closed (line comments are skipped), so reading stops and it is evaluated.
bool input_complete(const std::string& text);

/// `dccc repl [options]`: `args` are the arguments after `repl`. Reads
/// inputs from stdin (a terminal: with prompts, line editing and history)
/// until end of input or `:quit`; returns the exit status: 0 when every
/// input was accepted, 1 when some input failed, 2 on bad usage.
int main(const std::vector<std::string>& args);

}  // namespace dccc::repl
