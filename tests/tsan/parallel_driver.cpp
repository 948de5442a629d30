// The by-hand ThreadSanitizer check of parallel loops (scripts/tsan_check.sh):
// the generated mha and ragged_div kernels, instrumented by LLVM's tsan pass,
// on a TSan build of libdccrt's pool. mha on 4 threads must equal 1 thread
// bit for bit on ragged batches with empty sequences; a division by zero
// inside a parallel body must come back as a status. With --race, two host
// threads run mha (on one pool thread each) into the same output at once: a
// real race that TSan must report (proof that the kernels are instrumented). Kernels take their
// buffers then a NULL: no aux arrays, the kernel computes its prelude
// (backend/llvm/codegen.h).
#include <dccrt.h>
#include <cstdio>
#include <cstring>
#include <latch>
#include <random>
#include <string>
#include <thread>
#include <vector>
extern "C" int32_t mha__kernel(const int64_t*, void* const*);
extern "C" int32_t ragged_div__kernel(const int64_t*, void* const*);
int race() {
  const int64_t B = 4, H = 2, D = 16;
  std::vector<int32_t> l(B, 20);
  std::vector<float> q(B * 20 * H * D, 0.5f), out(B * 20 * H * D);
  int64_t sizes[] = {B, H, D, 0};
  void* bufs[] = {l.data(), q.data(), l.data(), q.data(), q.data(), out.data(), nullptr};
  // One thread: each call runs its loops serially on its own host thread, so
  // the pool's locks order nothing between the two calls' writes.
  dcc_set_num_threads(1);
  // Both threads start together and stay alive until both are done, so
  // TSan cannot hand the first one's thread id to the second.
  std::latch start(2), done(2);
  auto call = [&] {
    start.arrive_and_wait();
    mha__kernel(sizes, bufs);
    done.arrive_and_wait();
  };
  std::thread a(call);
  std::thread b(call);
  a.join();
  b.join();
  return 0;
}
int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--race") return race();
  std::mt19937 rng(1);
  int bad = 0;
  for (int64_t B : {1, 3, 8, 16}) {
    const int64_t H = 2, D = 16;
    std::vector<int32_t> ql(B), kl(B);
    int64_t tq = 0, tk = 0;
    for (int64_t b = 0; b < B; ++b) {
      ql[b] = b % 3 == 1 ? 0 : rng() % 30;
      kl[b] = b % 4 == 2 ? 0 : rng() % 30 + 1;
      tq += ql[b]; tk += kl[b];
    }
    std::vector<float> q(tq * H * D + 1), k(tk * H * D + 1), v(tk * H * D + 1);
    for (auto* x : {&q, &k, &v}) for (auto& e : *x) e = (rng() % 2001) / 1000.0f - 1;
    std::vector<float> out1(tq * H * D + 1), out4(tq * H * D + 1);
    int64_t sizes[] = {B, H, D, 0};
    for (int t : {1, 4}) {
      dcc_set_num_threads(t);
      void* bufs[] = {ql.data(), q.data(), kl.data(), k.data(), v.data(), t == 1 ? out1.data() : out4.data(), nullptr};
      if (mha__kernel(sizes, bufs) != 0) { std::printf("mha failed: %s\n", dcc_last_error()); return 1; }
    }
    if (std::memcmp(out1.data(), out4.data(), out1.size() * 4) != 0) { std::printf("B=%ld: 4 threads differ\n", (long)B); bad = 1; }
  }
  // ragged_div: an error inside the parallel body.
  for (int zero : {0, 1}) {
    const int64_t B = 40;
    std::vector<int32_t> len(B), data, out;
    for (int64_t b = 0; b < B; ++b) { len[b] = b % 5 == 0 ? 0 : 50; for (int i = 0; i < len[b]; ++i) data.push_back(1 + i % 7); }
    if (zero) data[data.size() * 2 / 3] = 0;
    out.assign(data.size() + 1, 0);
    int64_t sizes[] = {B, 0};
    void* bufs[] = {len.data(), data.data(), out.data(), nullptr};
    dcc_set_num_threads(4);
    dcc_clear_error();
    int32_t st = ragged_div__kernel(sizes, bufs);
    std::printf("ragged_div zero=%d: status %d, '%s'\n", zero, st, dcc_last_error());
    if ((st != 0) != (zero == 1)) bad = 1;
  }
  std::printf(bad ? "FAILED\n" : "OK\n");
  return bad;
}
// LLVM 19's tsan pass calls these; clang 14's TSan runtime predates them.
// Forwarding to the intercepted libc functions keeps the accesses checked.
extern "C" void* __tsan_memset(void* d, int c, size_t n) { return memset(d, c, n); }
extern "C" void* __tsan_memcpy(void* d, const void* s, size_t n) { return memcpy(d, s, n); }
extern "C" void* __tsan_memmove(void* d, const void* s, size_t n) { return memmove(d, s, n); }
