// A grouped GEMM checked against float64 (mma_emu_test.cpp on the CPU
// emulator, cuda_backend_test.cpp on a GPU): grouped_gemm-shaped functions
// (buffers x.m, x.k, x.n, x.a, x.b, out.c) run on length patterns, every
// output element compared with a float64 sum of the same inputs.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "tests/unit/backend/half_bits.h"

namespace dccc::backend::testing {

/// Typed storage of one buffer, values read back as double.
struct Buf {
  Scalar type;
  std::vector<unsigned char> bytes;
  size_t elem() const { return type == Scalar::F32 || type == Scalar::I32 ? 4 : type == Scalar::I64 ? 8 : 2; }
  void resize(size_t n) { bytes.assign(std::max<size_t>(n, 1) * elem(), 0); }
  size_t size() const { return bytes.size() / elem(); }
  void set(size_t k, double v) {
    unsigned char* p = bytes.data() + k * elem();
    if (type == Scalar::F32) { float f = static_cast<float>(v); std::memcpy(p, &f, 4); }
    else if (type == Scalar::I32) { int32_t i = static_cast<int32_t>(v); std::memcpy(p, &i, 4); }
    else if (type == Scalar::BF16) { uint16_t h = to_bf16(static_cast<float>(v)); std::memcpy(p, &h, 2); }
    else if (type == Scalar::F16) { uint16_t h = to_f16(static_cast<float>(v)); std::memcpy(p, &h, 2); }
  }
  double get(size_t k) const {
    const unsigned char* p = bytes.data() + k * elem();
    if (type == Scalar::F32) { float f; std::memcpy(&f, p, 4); return f; }
    if (type == Scalar::I32) { int32_t i; std::memcpy(&i, p, 4); return i; }
    uint16_t h;
    std::memcpy(&h, p, 2);
    return type == Scalar::BF16 ? from_bf16(h) : from_f16(h);
  }
};


using Entry = int32_t (*)(const int64_t*, void* const*);

struct Lengths {
  std::vector<int32_t> m, k, n;
};


struct Tolerance {
  double of_sum;   // times sum |a b|
  double of_ref;   // times |ref| (the result's rounding)
};

/// Runs grouped_gemm-shaped `fn` (buffers x.m, x.k, x.n, x.a, x.b, out.c)
/// on every pattern of `patterns`; returns the largest error relative to sum |a b|.
/// `a_km`: x.a is stored [k][m] (A transposed); `b_nk`: x.b is stored [n][k].
inline double run_grouped(Entry entry, const ir::Func& f, Scalar in_type, Scalar out_type, Tolerance tol, int& checked,
                          const std::vector<Lengths>& patterns, bool a_km = false, bool b_nk = false) {
  double worst = 0;
  for (const Lengths& L : patterns) {
    const size_t G = L.m.size();
    std::mt19937 rng(7 + static_cast<unsigned>(G));
    std::uniform_real_distribution<double> dist(-1.0, 1.0);
    std::map<std::string, Buf> bufs;
    auto lens = [&](const std::string& n, const std::vector<int32_t>& v) {
      Buf b{Scalar::I32, {}};
      b.resize(v.size());
      for (size_t i = 0; i < v.size(); ++i) b.set(i, v[i]);
      bufs[n] = b;
    };
    lens("x.m", L.m);
    lens("x.k", L.k);
    lens("x.n", L.n);
    std::vector<size_t> ao{0}, bo{0}, co{0};
    for (size_t g = 0; g < G; ++g) {
      ao.push_back(ao.back() + static_cast<size_t>(L.m[g]) * L.k[g]);
      bo.push_back(bo.back() + static_cast<size_t>(L.k[g]) * L.n[g]);
      co.push_back(co.back() + static_cast<size_t>(L.m[g]) * L.n[g]);
    }
    Buf a{in_type, {}}, b{in_type, {}}, c{out_type, {}};
    a.resize(ao.back());
    b.resize(bo.back());
    c.resize(co.back());
    for (size_t i = 0; i < ao.back(); ++i) a.set(i, dist(rng));
    for (size_t i = 0; i < bo.back(); ++i) b.set(i, dist(rng));
    bufs["x.a"] = a;
    bufs["x.b"] = b;
    bufs["out.c"] = c;
    std::vector<void*> ptrs;
    for (const auto& buf : f.buffers) {
      if (buf->kind != ir::BufferKind::Input && buf->kind != ir::BufferKind::Output) continue;
      EXPECT_TRUE(bufs.count(buf->name)) << buf->name;
      ptrs.push_back(bufs[buf->name].bytes.data());
    }
    ptrs.push_back(nullptr);
    int64_t sizes[2] = {static_cast<int64_t>(G), 0};
    int32_t status = entry(sizes, ptrs.data());
    EXPECT_EQ(status, 0);
    if (status != 0) return worst;
    const Buf& got = bufs["out.c"];
    for (size_t g = 0; g < G; ++g)
      for (int i = 0; i < L.m[g]; ++i)
        for (int j = 0; j < L.n[g]; ++j) {
          double ref = 0, mag = 0;
          for (int p = 0; p < L.k[g]; ++p) {
            double x = a.get(ao[g] + (a_km ? static_cast<size_t>(p) * L.m[g] + i : static_cast<size_t>(i) * L.k[g] + p));
            double y = b.get(bo[g] + (b_nk ? static_cast<size_t>(j) * L.k[g] + p : static_cast<size_t>(p) * L.n[g] + j));
            ref += x * y;
            mag += std::fabs(x * y);
          }
          double v = got.get(co[g] + static_cast<size_t>(i) * L.n[g] + j);
          double err = std::fabs(v - ref);
          EXPECT_LE(err, tol.of_sum * mag + tol.of_ref * std::fabs(ref))
              << f.name << " G=" << G << " group " << g << " (m " << L.m[g] << ", k " << L.k[g] << ", n " << L.n[g]
              << ") c[" << i << ", " << j << "] = " << v << ", reference " << ref;
          if (mag > 0 && tol.of_ref == 0) worst = std::max(worst, err / mag);
          ++checked;
        }
  }
  return worst;
}

}  // namespace dccc::backend::testing
