// A reference interpreter of the vloop IR: the oracle for backend tests.
//
// It is deliberately independent of storage layout: each buffer is a map
// from index tuple to value, and every access is checked against the
// buffer's (ragged) extents. Host data crosses in the packed layout
// (valid index tuples in lexicographic order), which it derives by
// enumeration rather than by the offset arithmetic the backends use.
// Arithmetic rounds to the operation's type (f32, f16, bf16) after each step.
// It also runs storage-lowered IR, keying tensors by flat offset and
// checking offsets against the buffer's total: comparing the two runs tests
// the offset arithmetic (CoRa Algorithm 1) against plain enumeration.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace dccc::ir {

/// A run-time failure of the interpreted program (an out-of-bounds access,
/// a missing input, integer division by zero).
struct InterpError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Interpreter {
 public:
  explicit Interpreter(std::ostream& out) : out_(out) {}
  /// Compute every float operation in f64 without rounding to the program's
  /// types: a float64 reference for the backends' f32/f16/bf16 results.
  void set_float64_reference(bool on) { exact_ = on; }

  /// Runs `f`. `inputs` maps each input buffer to its packed data.
  void run(const Func& f, const std::map<std::string, int64_t>& sizes,
           const std::map<const BufferNode*, std::vector<double>>& inputs);

  /// Builds packed inputs for every input buffer of `f`, in parameter
  /// order (a coupling's lengths before its data): `gen(buffer, k)` gives
  /// element k. Extents are evaluated from the inputs made so far.
  static std::map<const BufferNode*, std::vector<double>> make_inputs(
      const Func& f, const std::map<std::string, int64_t>& sizes,
      const std::function<double(const BufferNode*, int64_t)>& gen);

  /// Packed data of a buffer after run().
  std::vector<double> packed(const BufferNode* b);
  /// Every valid index tuple of `b` in packed order (after run()).
  std::vector<std::vector<int64_t>> index_space(const BufferNode* b);

 private:
  struct Value {
    double f = 0;
    int64_t i = 0;
  };
  using Tuple = std::vector<int64_t>;

  Value eval(const Expr& e);
  void exec(const Stmt& s);
  void run_checks(const Func& f);
  double as_double(const Value& v, Scalar t) const;
  int64_t as_int(const Value& v, Scalar t) const;
  Value round_to(Scalar t, double v) const;
  /// A float reduction step `acc = acc + p * q` (acc a scalar accumulator,
  /// f32 or f64): computed as one fused multiply-add, rounded once, as the
  /// backends compute it (docs/language.md).
  static bool fused_step(const StmtNode& s);
  Value fma_step(const StmtNode& s);
  void check_in_bounds(const BufferNode* b, const Tuple& idx);
  void print_buffer(const BufferNode* b);
  std::string format(const Value& v, Scalar t) const;

  int64_t flat_offset(const Expr& offset, const BufferNode* b);
  /// Unlowered IR: fails when a length array the function computes that
  /// shapes `b` raggedly, and is not in `checked` yet, has an element < 0.
  void check_lengths(const BufferNode* b, std::set<const BufferNode*>& checked);
  /// The run-time error of a negative computed length (build::assert_length).
  std::string negative_length(const std::string& name, int64_t index, int64_t value) const;

  std::ostream& out_;
  bool flat_ = false;  // running storage-lowered IR: tensors are keyed by offset
  bool exact_ = false;  // float64 reference mode
  bool checked_ = false;  // evaluating a store to an aux array: i64 overflow is an error
  std::string fn_;        // the function run, for messages
  std::map<std::string, int64_t> sizes_;
  std::map<const VarNode*, int64_t> env_;
  std::map<const BufferNode*, std::map<Tuple, Value>> mem_;
};

}  // namespace dccc::ir
