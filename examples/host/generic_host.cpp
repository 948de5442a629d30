// Host program for examples/mha_generic.toy: one library holding several
// instances of one generic function (`mha<T: f32 | bf16>` -> `mha__f32`,
// `mha__bf16`, with their own structs `PackedQueries__f32`, ...;
// docs/abi.md). Calls each instance on the same random ragged batch
// (zero-length sequences included) and checks it against one float64
// reference written here, independently of the compiler: the bf16 instance
// against the reference of the bf16-rounded inputs.
//
//   dccc examples/mha_generic.toy -o mha_generic.so
//   c++ -std=c++17 -I. generic_host.cpp ./mha_generic.so -o generic_host && ./generic_host
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "mha_generic.h"

namespace {

int failures = 0;

void expect(bool ok, const char* what) {
  if (!ok) {
    std::printf("FAIL: %s (dcc_last_error: %s)\n", what, dcc_last_error());
    ++failures;
  }
}

uint16_t to_bf16(float x) {  // round to nearest even
  uint32_t u;
  std::memcpy(&u, &x, 4);
  u += 0x7FFF + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}

float from_bf16(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

/// softmax_j(q_i . k_j / sqrt(D)) v_j per sequence and head, in float64; a
/// query row with no keys gives 0.
std::vector<double> reference(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                              const std::vector<int32_t>& ql, const std::vector<int32_t>& kl, int H, int D) {
  std::vector<double> out(q.size(), 0.0);
  size_t qoff = 0, koff = 0;
  auto at = [&](size_t row, int h, int d) { return row * H * D + size_t(h) * D + d; };
  for (size_t b = 0; b < ql.size(); ++b) {
    for (int i = 0; i < ql[b]; ++i)
      for (int h = 0; h < H; ++h) {
        std::vector<double> s(kl[b]);
        double m = -INFINITY, sum = 0;
        for (int j = 0; j < kl[b]; ++j) {
          double dot = 0;
          for (int d = 0; d < D; ++d) dot += double(q[at(qoff + i, h, d)]) * double(k[at(koff + j, h, d)]);
          s[j] = dot / std::sqrt(double(D));
          m = std::max(m, s[j]);
        }
        for (int j = 0; j < kl[b]; ++j) sum += std::exp(s[j] - m);
        for (int d = 0; d < D && kl[b] > 0; ++d) {
          double acc = 0;
          for (int j = 0; j < kl[b]; ++j) acc += std::exp(s[j] - m) * double(v[at(koff + j, h, d)]);
          out[at(qoff + i, h, d)] = acc / sum;
        }
      }
    qoff += ql[b];
    koff += kl[b];
  }
  return out;
}

double worst_error(const std::vector<double>& got, const std::vector<double>& ref) {
  double worst = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (std::isnan(got[i])) return INFINITY;
    worst = std::max(worst, std::fabs(got[i] - ref[i]));
  }
  return worst;
}

void run_case(std::mt19937& rng, std::vector<int32_t> qlens, std::vector<int32_t> klens, int H, int D) {
  const int B = static_cast<int>(qlens.size());
  int64_t qt = 0, kt = 0;
  for (int32_t l : qlens) qt += l;
  for (int32_t l : klens) kt += l;
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> qd(qt * H * D), kd(kt * H * D), vd(kt * H * D);
  for (auto* a : {&qd, &kd, &vd})
    for (auto& x : *a) x = u(rng);

  // f32 instance
  PackedQueries__f32 q{qd.data(), (int64_t)qd.size(), qlens.data(), B, B, H, D};
  PackedKV__f32 kv{kd.data(), (int64_t)kd.size(), vd.data(), (int64_t)vd.size(), klens.data(), B, B, H, D};
  PackedQueries__f32 out{};
  expect(mha__f32_meta(&q, &kv, &out) == DCC_OK, "mha__f32_meta succeeds");
  expect(out.data_len == qt * H * D, "mha__f32_meta gives the queries' element count");
  std::vector<float> od(qt * H * D, -7.f);
  out.data = od.data();
  out.data_len = (int64_t)od.size();
  expect(mha__f32(&q, &kv, &out) == DCC_OK, "mha__f32 succeeds");
  std::vector<double> got(od.begin(), od.end());
  double e32 = worst_error(got, reference(qd, kd, vd, qlens, klens, H, D));
  expect(e32 < 1e-5, "mha__f32 matches the float64 reference within 1e-5");

  // bf16 instance on the same values rounded to bf16
  std::vector<uint16_t> qh(qd.size()), kh(kd.size()), vh(vd.size());
  std::vector<float> qr(qd.size()), kr(kd.size()), vr(vd.size());
  for (size_t i = 0; i < qd.size(); ++i) qr[i] = from_bf16(qh[i] = to_bf16(qd[i]));
  for (size_t i = 0; i < kd.size(); ++i) kr[i] = from_bf16(kh[i] = to_bf16(kd[i]));
  for (size_t i = 0; i < vd.size(); ++i) vr[i] = from_bf16(vh[i] = to_bf16(vd[i]));
  PackedQueries__bf16 qb{qh.data(), (int64_t)qh.size(), qlens.data(), B, B, H, D};
  PackedKV__bf16 kvb{kh.data(), (int64_t)kh.size(), vh.data(), (int64_t)vh.size(), klens.data(), B, B, H, D};
  std::vector<uint16_t> oh(qt * H * D, 0xFFFF);
  PackedQueries__bf16 outb{oh.data(), (int64_t)oh.size(), qlens.data(), B, B, H, D};
  expect(mha__bf16(&qb, &kvb, &outb) == DCC_OK, "mha__bf16 succeeds");
  std::vector<double> gotb(oh.size());
  for (size_t i = 0; i < oh.size(); ++i) gotb[i] = from_bf16(oh[i]);
  // Scores, probabilities and sums are stored in bf16 (8 significant bits).
  double e16 = worst_error(gotb, reference(qr, kr, vr, qlens, klens, H, D));
  expect(e16 < 0.05, "mha__bf16 matches the float64 reference of the rounded inputs within 0.05");
  // The two instances are different code: the bf16 one is not the f32 one.
  expect(worst_error(gotb, got) > 0 || qt == 0, "mha__bf16 rounds (its result differs from mha__f32's)");
  std::printf("B=%d H=%d D=%d: mha__f32 max error %.2e, mha__bf16 max error %.2e\n", B, H, D, e32, e16);
}

}  // namespace

int main() {
  std::mt19937 rng(20);
  run_case(rng, {3, 0, 5, 1}, {4, 2, 0, 6}, 2, 8);
  run_case(rng, {7}, {5}, 1, 16);
  run_case(rng, {0, 0}, {0, 3}, 2, 4);
  if (failures) {
    std::printf("generic host check: %d failure(s)\n", failures);
    return 1;
  }
  std::printf("generic host check: OK\n");
  return 0;
}
