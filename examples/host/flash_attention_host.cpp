// Host program for examples/flash_attention.toy: includes the generated
// header, links the generated library, runs flash attention on random
// ragged data and checks it against a float64 reference written here,
// independently of the compiler. Also checks that bad arguments are
// rejected with a status and leave the output untouched.
//
//   dccc examples/flash_attention.toy -o fa.so
//   c++ -std=c++17 -I. flash_attention_host.cpp ./fa.so -o fa_host && ./fa_host
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "fa.h"

namespace {

int failures = 0;

void expect(bool ok, const char* what) {
  if (!ok) {
    std::printf("FAIL: %s (dcc_last_error: %s)\n", what, dcc_last_error());
    ++failures;
  }
}

/// softmax(q k^T / sqrt(D)) v per sequence, summed over heads for the
/// scores as the .toy program does, in float64.
std::vector<double> reference(const std::vector<float>& q, const std::vector<float>& kv, const std::vector<int32_t>& ql,
                              const std::vector<int32_t>& kl, int H, int D) {
  std::vector<double> out(q.size());
  size_t qoff = 0, koff = 0;
  for (size_t b = 0; b < ql.size(); ++b) {
    for (int i = 0; i < ql[b]; ++i) {
      std::vector<double> s(kl[b]);
      double m = -INFINITY;
      for (int j = 0; j < kl[b]; ++j) {
        double acc = 0;
        for (int h = 0; h < H; ++h)
          for (int d = 0; d < D; ++d)
            acc += double(q[(qoff + i) * H * D + h * D + d]) * double(kv[(koff + j) * H * D + h * D + d]);
        s[j] = acc / std::sqrt(double(D));
        m = std::max(m, s[j]);
      }
      double sum = 0;
      for (int j = 0; j < kl[b]; ++j) sum += std::exp(s[j] - m);
      for (int h = 0; h < H; ++h)
        for (int d = 0; d < D; ++d) {
          double acc = 0;
          for (int j = 0; j < kl[b]; ++j) acc += std::exp(s[j] - m) / sum * double(kv[(koff + j) * H * D + h * D + d]);
          out[(qoff + i) * H * D + h * D + d] = acc;
        }
    }
    qoff += ql[b];
    koff += kl[b];
  }
  return out;
}

bool run_case(std::mt19937& rng, std::vector<int32_t> lens, int H, int D) {
  int B = static_cast<int>(lens.size());
  int64_t total = 0;
  for (int32_t l : lens) total += l;
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> qd(total * H * D), kd(total * H * D);
  for (auto& x : qd) x = u(rng);
  for (auto& x : kd) x = u(rng);
  PackedQueries q{qd.data(), (int64_t)qd.size(), lens.data(), B, B, H, D};
  PackedKV kv{kd.data(), (int64_t)kd.size(), lens.data(), B, B, H, D};
  PackedQueries out{};
  expect(flash_attention_meta(&q, &kv, &out) == DCC_OK, "meta succeeds");
  expect(out.data_len == total * H * D && out.seqlen == lens.data() && out.B == B, "meta fills the result");
  std::vector<float> od(out.data_len, 0.f);
  out.data = od.data();
  expect(flash_attention(&q, &kv, &out) == DCC_OK, "flash_attention succeeds");
  std::vector<double> ref = reference(qd, kd, lens, lens, H, D);
  double worst = 0;
  for (size_t k = 0; k < ref.size(); ++k) {
    double err = std::fabs(od[k] - ref[k]) / std::max(1.0, std::fabs(ref[k]));
    worst = std::max(worst, err);
  }
  std::printf("B=%d H=%d D=%d tokens=%lld: max relative error %.2e\n", B, H, D, (long long)total, worst);
  expect(worst < 1e-5, "matches the float64 reference within 1e-5");
  return worst < 1e-5;
}

void bad_inputs() {
  std::vector<int32_t> lens{2, 3}, bad_lens{2, -1}, other{2, 3, 1};
  std::vector<float> d(5 * 2 * 4, 1.f), o(5 * 2 * 4, 7.f);
  auto untouched = [&] {
    for (float x : o)
      if (x != 7.f) return false;
    return true;
  };
  PackedQueries q{d.data(), (int64_t)d.size(), lens.data(), 2, 2, 2, 4};
  PackedKV kv{d.data(), (int64_t)d.size(), lens.data(), 2, 2, 2, 4};
  PackedQueries out{o.data(), (int64_t)o.size(), nullptr, 0, 0, 0, 0};
  // A negative length.
  PackedQueries qn = q;
  qn.seqlen = bad_lens.data();
  expect(flash_attention(&qn, &kv, &out) == DCC_ERR_NEGATIVE_LENGTH && untouched(), "negative length rejected");
  // B of q disagrees with B of kv.
  PackedKV kv3{d.data(), (int64_t)d.size(), other.data(), 3, 3, 2, 4};
  expect(flash_attention(&q, &kv3, &out) == DCC_ERR_SIZE_MISMATCH && untouched(), "size mismatch rejected");
  // Data element count disagrees with the lengths.
  PackedQueries qs = q;
  qs.data_len -= 1;
  expect(flash_attention(&qs, &kv, &out) == DCC_ERR_SIZE_MISMATCH && untouched(), "wrong data_len rejected");
  // Null pointers.
  expect(flash_attention(nullptr, &kv, &out) == DCC_ERR_NULL_POINTER, "null argument rejected");
  PackedQueries qz = q;
  qz.data = nullptr;
  expect(flash_attention(&qz, &kv, &out) == DCC_ERR_NULL_POINTER && untouched(), "null data rejected");
  // Output too small.
  PackedQueries small{o.data(), 3, nullptr, 0, 0, 0, 0};
  expect(flash_attention(&q, &kv, &small) == DCC_ERR_SIZE_MISMATCH && untouched(), "small output rejected");
  // Lengths that overflow the element count.
  std::vector<int32_t> huge{2147483647, 2147483647};
  PackedQueries qh{d.data(), (int64_t)d.size(), huge.data(), 2, 2, INT64_C(1) << 40, 4};
  PackedKV kvh{d.data(), (int64_t)d.size(), huge.data(), 2, 2, INT64_C(1) << 40, 4};
  expect(flash_attention(&qh, &kvh, &out) == DCC_ERR_OVERFLOW && untouched(), "overflowing lengths rejected");
  std::printf("bad inputs: last message: %s\n", dcc_last_error());
}

}  // namespace

int main() {
  std::mt19937 rng(7);
  run_case(rng, {5, 0, 12, 1}, 2, 8);              // a zero-length sequence
  run_case(rng, {17}, 3, 16);                      // B = 1
  run_case(rng, {1, 2, 64, 3}, 2, 4);              // one long sequence
  std::uniform_int_distribution<int> len(0, 20);
  std::vector<int32_t> lens(32);
  for (auto& l : lens) l = len(rng);
  run_case(rng, lens, 4, 8);
  bad_inputs();
  std::printf("%s\n", failures ? "flash attention host check: FAILED" : "flash attention host check: OK");
  return failures ? 1 : 0;
}
