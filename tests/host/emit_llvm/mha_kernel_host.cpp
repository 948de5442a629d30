// Calls the kernel of examples/mha.toy compiled from `dccc --emit=llvm` text
// by llc *without* -mcpu (tests/host/emit_llvm/run.sh), on batches with
// empty and long sequences, against a float64 reference, with 1 and 4 pool
// threads. The text once lacked the target-cpu/target-features attributes:
// compiled for generic x86-64, the AVX-512 libmvec calls the optimizer chose
// got their vector arguments in the wrong registers and mha was wrong
// (max error 0.2) while `dccc -o` was right.
#include <dccrt.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

// Kernels take their sizes and buffers (inputs, outputs) then NULL: no aux
// arrays, so the kernel computes its own prelude (backend/llvm/codegen.h).
extern "C" int32_t mha__kernel(const int64_t* sizes, void* const* buffers);

int main() {
  const int64_t H = 2, D = 16;
  std::mt19937 rng(7);
  int bad = 0;
  for (std::vector<int32_t> lens : {std::vector<int32_t>{25}, {16}, {0, 33, 1, 17}, {40, 3, 0}}) {
    int64_t B = static_cast<int64_t>(lens.size()), tq = 0;
    for (int32_t l : lens) tq += l;
    std::vector<float> q(tq * H * D + 1), k(q.size()), v(q.size());
    for (auto* x : {&q, &k, &v})
      for (auto& e : *x) e = static_cast<float>(rng() % 2001) / 1000.0f - 1.0f;
    // float64 reference: softmax(q k^T / sqrt(D)) v per sequence and head.
    std::vector<double> ref(tq * H * D);
    for (int64_t b = 0, off = 0; b < B; off += lens[b], ++b)
      for (int64_t i = 0; i < lens[b]; ++i)
        for (int64_t h = 0; h < H; ++h) {
          std::vector<double> s(lens[b]);
          double m = -INFINITY, sum = 0;
          for (int64_t j = 0; j < lens[b]; ++j) {
            double a = 0;
            for (int64_t d = 0; d < D; ++d) a += double(q[((off + i) * H + h) * D + d]) * k[((off + j) * H + h) * D + d];
            s[j] = a / std::sqrt(double(D));
            m = std::max(m, s[j]);
          }
          for (auto& x : s) sum += (x = std::exp(x - m));
          for (int64_t d = 0; d < D; ++d) {
            double o = 0;
            for (int64_t j = 0; j < lens[b]; ++j) o += s[j] * v[((off + j) * H + h) * D + d];
            ref[((off + i) * H + h) * D + d] = o / sum;
          }
        }
    int64_t sizes[] = {B, H, D, 0};
    for (int threads : {1, 4}) {
      std::vector<float> out(q.size());
      dcc_set_num_threads(threads);
      void* bufs[] = {lens.data(), q.data(), lens.data(), k.data(), v.data(), out.data(), nullptr};
      if (mha__kernel(sizes, bufs) != 0) {
        std::printf("mha failed: %s\n", dcc_last_error());
        return 1;
      }
      double err = 0;
      for (size_t z = 0; z < ref.size(); ++z) err = std::max(err, std::fabs(ref[z] - out[z]));
      std::printf("B=%ld threads=%d: max error vs float64 %.3g\n", long(B), threads, err);
      if (!(err < 1e-5)) bad = 1;
    }
  }
  std::printf(bad ? "FAILED\n" : "OK\n");
  return bad;
}
