// Host program for examples/mha.toy (multi-head attention over packed
// sequences): includes the generated header, links the generated library,
// runs attention on random ragged data — queries and keys with their own
// lengths per sequence, zero-length ones included — and checks it against a
// float64 reference written here, independently of the compiler. Also
// checks that bad arguments are rejected with a status and leave the
// output untouched.
//
//   dccc examples/mha.toy -o mha.so
//   c++ -std=c++17 -I. mha_host.cpp ./mha.so -o mha_host && ./mha_host
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "mha.h"

namespace {

int failures = 0;

void expect(bool ok, const char* what) {
  if (!ok) {
    std::printf("FAIL: %s (dcc_last_error: %s)\n", what, dcc_last_error());
    ++failures;
  }
}

/// Per sequence b, head h and query row i: softmax over the key rows j of
/// q[i, h, :] . k[j, h, :] / sqrt(D), then the weighted sum of v[j, h, :].
/// A query row with no key rows gives 0: its sums are 0, and 0 / 0 is 0 in
/// DCC (docs/language.md, "Masked values").
std::vector<double> reference(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                              const std::vector<int32_t>& ql, const std::vector<int32_t>& kl, int H, int D) {
  std::vector<double> out(q.size());
  size_t qoff = 0, koff = 0;  // rows before sequence b
  auto at = [&](size_t row, int h, int d) { return row * H * D + size_t(h) * D + d; };
  for (size_t b = 0; b < ql.size(); ++b) {
    for (int i = 0; i < ql[b]; ++i) {
      for (int h = 0; h < H; ++h) {
        std::vector<double> s(kl[b]);
        double m = -INFINITY;
        for (int j = 0; j < kl[b]; ++j) {
          double dot = 0;
          for (int d = 0; d < D; ++d) dot += double(q[at(qoff + i, h, d)]) * double(k[at(koff + j, h, d)]);
          s[j] = dot / std::sqrt(double(D));
          m = std::max(m, s[j]);
        }
        double sum = 0;
        for (int j = 0; j < kl[b]; ++j) sum += std::exp(s[j] - m);
        for (int d = 0; d < D; ++d) {
          double acc = 0;
          for (int j = 0; j < kl[b]; ++j) acc += std::exp(s[j] - m) * double(v[at(koff + j, h, d)]);
          out[at(qoff + i, h, d)] = kl[b] == 0 ? 0.0 : acc / sum;
        }
      }
    }
    qoff += ql[b];
    koff += kl[b];
  }
  return out;
}

/// Runs mha on random data with these lengths (through mha_meta first when
/// `meta`, else allocating the output from the host's own count) and checks
/// it against the reference; returns whether it matched.
bool run_case(std::mt19937& rng, std::vector<int32_t> qlens, std::vector<int32_t> klens, int H, int D, bool meta = true,
              const dcc_prelude* held = nullptr) {
  int B = static_cast<int>(qlens.size());
  int64_t qtotal = 0, ktotal = 0;
  for (int32_t l : qlens) qtotal += l;
  for (int32_t l : klens) ktotal += l;
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> qd(qtotal * H * D), kd(ktotal * H * D), vd(ktotal * H * D);
  for (auto& x : qd) x = u(rng);
  for (auto& x : kd) x = u(rng);
  for (auto& x : vd) x = u(rng);
  PackedQueries q{qd.data(), (int64_t)qd.size(), qlens.data(), B, B, H, D};
  PackedKV kv{kd.data(), (int64_t)kd.size(), vd.data(), (int64_t)vd.size(), klens.data(), B, B, H, D};
  PackedQueries out{};
  if (meta) {
    expect(mha_meta(&q, &kv, &out) == DCC_OK, "meta succeeds");
    expect(out.data_len == qtotal * H * D && out.seqlen == qlens.data() && out.seqlen_len == B && out.B == B &&
               out.H == H && out.D == D,
           "meta fills the result: the queries' lengths, their element count");
  } else {
    out.data_len = qtotal * H * D;
  }
  std::vector<float> od(out.data_len, 0.f);
  out.data = od.data();
  if (held) expect(mha_with_prelude(held, &q, &kv, &out) == DCC_OK, "mha_with_prelude succeeds");
  else expect(mha(&q, &kv, &out) == DCC_OK, "mha succeeds");
  std::vector<double> ref = reference(qd, kd, vd, qlens, klens, H, D);
  double worst = 0;
  int zeros = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (ref[i] == 0) {
      ++zeros;
      expect(od[i] == 0, "a query row without keys gives 0");
      continue;
    }
    expect(!std::isnan(od[i]), "no NaN in the output");
    double err = std::fabs(od[i] - ref[i]) / std::max(1.0, std::fabs(ref[i]));
    worst = std::max(worst, err);
  }
  std::printf("B=%d H=%d D=%d query rows=%lld key rows=%lld: max relative error %.2e%s\n", B, H, D,
              (long long)qtotal, (long long)ktotal, worst, zeros ? " (rows without keys: 0)" : "");
  expect(worst < 1e-5, "matches the float64 reference within 1e-5");
  return worst < 1e-5;
}

// Built with -DMHA_FUSED_MAPS for tests/host/mha_fused.schedule: its two
// `fuse`s over (b, i) add, per length pattern, two prelude units each --
// F_oif (B + 1 offsets, from q.seqlen) and the maps F_fo, F_fi (one entry
// per query row) -- and the second fusion's units are the first's (the same
// computation from the same lengths): a hit in the same call.
#ifdef MHA_FUSED_MAPS
constexpr uint64_t kMapUnits = 2;  // new entries per query-length pattern
#else
constexpr uint64_t kMapUnits = 0;
#endif
// Built with -DMHA_REMAP for tests/host/mha_remap.schedule (remapping arrays
// in the prelude, with fusion maps): results and rejections are checked,
// the entry counts above are not (the remap key reads both lengths and D).
#ifdef MHA_REMAP
constexpr bool kCounts = false;
#else
constexpr bool kCounts = true;
#endif
// The prelude's arrays depend on the form dccc computes. By default (and
// with the variants' schedules) the chain is computed as written, with
// stored scores: five arrays, below. Built with `dccc --online-reductions`
// (and -DMHA_ONLINE here: test host/mha_online), the softmax is one pass
// over the keys in blocks of 32 and no scores are stored: three arrays,
// q.seqlen * H * D and kv.seqlen * H * D (one entry when the lengths are
// equal) and the transposed keys' padded rows H * D * kv.seqlen rounded up
// to 16 (as materialised); a block's scores and weights are rows of
// [B, H, 32] per query of a tile, no offsets (ir/online_reductions.h).
#if defined(MHA_ONLINE)
constexpr bool kOnline = true;
#else
constexpr bool kOnline = false;
#endif
struct Counts {
  uint64_t fresh, other_q_miss, other_q_hit, other_d_miss, other_d_hit, self_miss, self_hit, held_equal;
};
constexpr Counts kMaterialised{5, 3, 2, 3, 2, 4, 1, 7};
constexpr Counts kOnlineCounts{3, 1, 2, 3, 0, 2, 1, 4};
constexpr Counts kN = kOnline ? kOnlineCounts : kMaterialised;

struct CacheStats {
  uint64_t hits = 0, misses = 0;
};
CacheStats cache_stats() {
  CacheStats s;
  expect(dcc_prelude_cache_stats(dcc_default_prelude_cache(), &s.hits, &s.misses, nullptr) == DCC_OK, "cache stats");
  return s;
}

/// The offset arrays come from the runtime's prelude cache, one entry per
/// array (three in the online form, kN above; materialised mha has five: q.seqlen * H * D, kv.seqlen * H * D -- the same
/// computation from other lengths --, q.seqlen * H * kv.seqlen, q.seqlen * H
/// and H * D * kv.seqlen rounded up to 16, the transposed keys' padded rows,
/// ir/transpose_operands.h), keyed by the sizes it reads and its lengths' contents: a
/// second call with equal lengths (in other arrays) reuses them, different
/// lengths (even with the same totals) and other sizes compute new ones for
/// the arrays they change, and results stay right either way.
void prelude_cache(std::mt19937& rng) {
  const int H = 2, D = 8;
  CacheStats s0 = cache_stats();
  expect(run_case(rng, {3, 0, 5}, {2, 4, 1}, H, D, false), "first call with a new length pattern");
  CacheStats s1 = cache_stats();
  expect(!kCounts || (s1.misses == s0.misses + kN.fresh + kMapUnits && s1.hits == s0.hits + kMapUnits), "a new length pattern computes its arrays");
  expect(run_case(rng, {3, 0, 5}, {2, 4, 1}, H, D, false), "second call with the same lengths");
  CacheStats s2 = cache_stats();
  expect(!kCounts || (s2.hits == s1.hits + kN.fresh + 2 * kMapUnits && s2.misses == s1.misses), "the same lengths (other arrays, other data) reuse them");
  expect(run_case(rng, {4, 0, 4}, {2, 4, 1}, H, D, false), "call with other query lengths, same total");
  CacheStats s3 = cache_stats();
  expect(!kCounts || (s3.misses == s2.misses + kN.other_q_miss + kMapUnits && s3.hits == s2.hits + kN.other_q_hit + kMapUnits), "other query lengths with the same total compute the arrays they shape, the keys' are reused");
  expect(run_case(rng, {3, 0, 5}, {2, 4, 1}, H, 4, false), "call with the same lengths and another D");
  CacheStats s4 = cache_stats();
  expect(!kCounts || (s4.misses == s3.misses + kN.other_d_miss && s4.hits == s3.hits + kN.other_d_hit + 2 * kMapUnits), "another D computes the arrays that read D; those that do not are reused");
  expect(run_case(rng, {4, 0, 4}, {2, 4, 1}, H, D), "meta and call with a pattern seen before");
  CacheStats s5 = cache_stats();
  expect(!kCounts || (s5.hits == s4.hits + 2 * kN.fresh + 4 * kMapUnits && s5.misses == s4.misses), "mha_meta and mha both reuse a cached pattern");
  expect(run_case(rng, {6, 1, 2}, {6, 1, 2}, H, D, false), "self-attention lengths");
  CacheStats s5b = cache_stats();
  expect(!kCounts || (s5b.misses == s5.misses + kN.self_miss + kMapUnits && s5b.hits == s5.hits + kN.self_hit + kMapUnits), "equal query and key lengths share the q.seqlen * H * D and kv.seqlen * H * D entry");
  s5 = s5b;
  // Arguments rejected before the prelude leave the cache alone.
  std::vector<int32_t> ql{2, -1}, kl{1, 1};
  std::vector<float> d(64), o(64, 7.f);
  PackedQueries q{d.data(), 0, ql.data(), 2, 2, H, D};
  PackedKV kv{d.data(), 2 * H * D, d.data(), 2 * H * D, kl.data(), 2, 2, H, D};
  PackedQueries out{o.data(), (int64_t)o.size(), nullptr, 0, 0, 0, 0};
  expect(mha(&q, &kv, &out) == DCC_ERR_NEGATIVE_LENGTH, "negative length rejected");
  CacheStats s6 = cache_stats();
  expect(s6.hits == s5.hits && s6.misses == s5.misses, "a rejected call does not touch the cache");
  std::printf("prelude cache: %llu hits, %llu misses in the checks above\n", (unsigned long long)(s6.hits - s0.hits),
              (unsigned long long)(s6.misses - s0.misses));
}

/// A prelude the host holds: mha_prelude computes the five arrays once
/// (four when query and key lengths are equal: those two are one entry),
/// mha_with_prelude uses them without the cache, and other lengths are
/// rejected without writing anything.
void held_prelude(std::mt19937& rng) {
  const int H = 4, D = 8;
  std::vector<int32_t> ql{5, 0, 7, 2}, kl{3, 6, 0, 2};
  PackedQueries q{nullptr, 0, ql.data(), 4, 4, H, D};  // lengths only
  PackedKV kv{nullptr, 0, nullptr, 0, kl.data(), 4, 4, H, D};
  dcc_prelude* p = nullptr;
  expect(mha_prelude(&q, &kv, &p) == DCC_OK && p, "mha_prelude");
  int64_t n = 0;
  size_t bytes = 0;
  dcc_prelude_stats(p, &n, &bytes);
  // With the maps: F_oif (5 offsets) and F_fo, F_fi (14 query rows each).
  expect(!kCounts || (n == (int64_t)(kN.fresh + kMapUnits) &&
                       bytes == (kN.fresh * 5 + (kMapUnits ? 5 + 2 * 14 : 0)) * sizeof(int64_t)),
         "its arrays of B + 1 offsets");
  CacheStats s0 = cache_stats();
  for (int k = 0; k < 3; ++k) expect(run_case(rng, ql, kl, H, D, false, p), "mha_with_prelude matches the reference");
  CacheStats s1 = cache_stats();
  expect(s1.hits == s0.hits && s1.misses == s0.misses, "calls with a held prelude do not use the cache");
  // Keys with the queries' lengths added to the same handle: kv.seqlen * H * D
  // is the held q.seqlen * H * D, q.seqlen * H is held too: two new entries,
  // q.seqlen * H * kv.seqlen and the transposed keys' padded rows.
  expect(mha_prelude(&q, (kv.seqlen = ql.data(), &kv), &p) == DCC_OK, "mha_prelude, equal lengths");
  dcc_prelude_stats(p, &n, nullptr);
  expect(!kCounts || (n == (int64_t)(kN.held_equal + kMapUnits)),
         "only q.seqlen * H * kv.seqlen and the padded key rows are new (the padded key rows in the online form)");
  expect(run_case(rng, ql, ql, H, D, false, p), "self-attention with the held prelude");
  // Lengths the handle was not made for.
  std::vector<int32_t> other{5, 1, 6, 2};
  std::vector<float> d(14 * H * D), o(14 * H * D, 7.f);
  PackedQueries qo{d.data(), (int64_t)d.size(), other.data(), 4, 4, H, D};
  PackedKV kvo{d.data(), (int64_t)d.size(), d.data(), (int64_t)d.size(), other.data(), 4, 4, H, D};
  PackedQueries out{o.data(), (int64_t)o.size(), nullptr, 0, 0, 0, 0};
  expect(mha_with_prelude(p, &qo, &kvo, &out) == DCC_ERR_SIZE_MISMATCH &&
             std::all_of(o.begin(), o.end(), [](float x) { return x == 7.f; }),
         "other lengths rejected, nothing written");
  expect(mha_with_prelude(nullptr, &qo, &kvo, &out) == DCC_ERR_NULL_POINTER, "NULL prelude rejected");
  dcc_prelude_destroy(p);
}

void bad_inputs() {
  const int H = 2, D = 4;
  std::vector<int32_t> ql{2, 3}, kl{1, 2}, bad{2, -1}, three{2, 3, 1};
  std::vector<float> qd(5 * H * D, 0.5f), kd(3 * H * D, 0.25f), vd(3 * H * D, 1.f), o(5 * H * D, 7.f);
  auto untouched = [&] { return std::all_of(o.begin(), o.end(), [](float x) { return x == 7.f; }); };
  PackedQueries q{qd.data(), (int64_t)qd.size(), ql.data(), 2, 2, H, D};
  PackedKV kv{kd.data(), (int64_t)kd.size(), vd.data(), (int64_t)vd.size(), kl.data(), 2, 2, H, D};
  PackedQueries out{o.data(), (int64_t)o.size(), nullptr, 0, 0, 0, 0};
  // The good call works (so the failures below are the arguments' fault).
  std::vector<float> good(5 * H * D);
  PackedQueries gout{good.data(), (int64_t)good.size(), nullptr, 0, 0, 0, 0};
  expect(mha(&q, &kv, &gout) == DCC_OK, "the unbroken arguments are accepted");
  // A negative key length.
  PackedKV kvn = kv;
  kvn.seqlen = bad.data();
  expect(mha(&q, &kvn, &out) == DCC_ERR_NEGATIVE_LENGTH && untouched(), "negative length rejected");
  // B of q disagrees with B of kv.
  PackedKV kv3 = kv;
  kv3.seqlen = three.data();
  kv3.seqlen_len = 3;
  kv3.B = 3;
  expect(mha(&q, &kv3, &out) == DCC_ERR_SIZE_MISMATCH && untouched(), "B mismatch rejected");
  // H of q disagrees with H of kv.
  PackedKV kvh = kv;
  kvh.H = 1;
  expect(mha(&q, &kvh, &out) == DCC_ERR_SIZE_MISMATCH && untouched(), "H mismatch rejected");
  // A length array of the wrong size.
  PackedKV kvl = kv;
  kvl.seqlen_len = 1;
  expect(mha(&q, &kvl, &out) == DCC_ERR_SIZE_MISMATCH && untouched(), "wrong seqlen_len rejected");
  // v's element count disagrees with the key lengths.
  PackedKV kvv = kv;
  kvv.v_len -= 1;
  expect(mha(&q, &kvv, &out) == DCC_ERR_SIZE_MISMATCH && untouched(), "wrong v_len rejected");
  expect(std::strcmp(dcc_last_error(), "mha: kv.v_len is 23 but its sizes and lengths give 24 elements") == 0,
         "the message names the field and both counts");
  // Null pointers.
  expect(mha(&q, nullptr, &out) == DCC_ERR_NULL_POINTER && untouched(), "null argument rejected");
  PackedKV kvz = kv;
  kvz.v = nullptr;
  expect(mha(&q, &kvz, &out) == DCC_ERR_NULL_POINTER && untouched(), "null v rejected");
  expect(mha(&q, &kv, nullptr) == DCC_ERR_NULL_POINTER && untouched(), "null result rejected");
  // Output too small.
  PackedQueries small{o.data(), (int64_t)o.size() - 1, nullptr, 0, 0, 0, 0};
  expect(mha(&q, &kv, &small) == DCC_ERR_SIZE_MISMATCH && untouched(), "small output rejected");
  // Lengths whose element count overflows int64.
  std::vector<int32_t> huge{2147483647, 2147483647};
  PackedQueries qo{qd.data(), (int64_t)qd.size(), huge.data(), 2, 2, INT64_C(1) << 40, D};
  PackedKV kvo{kd.data(), (int64_t)kd.size(), vd.data(), (int64_t)vd.size(), huge.data(), 2, 2, INT64_C(1) << 40, D};
  expect(mha(&qo, &kvo, &out) == DCC_ERR_OVERFLOW && untouched(), "overflowing lengths rejected");
  std::printf("bad inputs: last message: %s\n", dcc_last_error());
}

}  // namespace

int main() {
  std::mt19937 rng(11);
  run_case(rng, {5, 0, 12, 1}, {7, 3, 9, 1}, 2, 8);   // a zero-length query sequence
  run_case(rng, {4, 0, 3}, {6, 0, 2}, 3, 4);          // a sequence with no queries and no keys
  run_case(rng, {2, 3}, {0, 4}, 2, 4);                // queries without keys: rows of 0
  run_case(rng, {17}, {9}, 8, 16);                    // B = 1
  run_case(rng, {1, 2, 70, 3}, {2, 80, 1, 3}, 2, 4);  // one long sequence each
  std::uniform_int_distribution<int> len(0, 20);
  std::vector<int32_t> ql(32), kl(32);
  for (auto& l : ql) l = len(rng);
  for (auto& l : kl) l = 1 + len(rng);
  run_case(rng, ql, kl, 8, 64);                       // H = 8, D = 64
  bad_inputs();
  prelude_cache(rng);
  held_prelude(rng);
  std::printf("%s\n", failures ? "mha host check: FAILED" : "mha host check: OK");
  return failures ? 1 : 0;
}
