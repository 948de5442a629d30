// Host program for examples/pack_sequences.toy, the design document's
// packing function taking `list[[?, H, D]f32]`: includes the generated
// header, passes a list as one pointer and one length per tensor, and checks
// the packed result against packing done here by hand (offsets computed
// independently). Also checks that bad lists are rejected with a status and
// leave the output untouched.
//
//   dccc examples/pack_sequences.toy -o pack.so
//   c++ -std=c++17 -I. pack_host.cpp ./pack.so -o pack_host && ./pack_host
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "pack.h"

namespace {

int failures = 0;

void expect(bool ok, const char* what) {
  if (!ok) {
    std::printf("FAIL: %s (dcc_last_error: %s)\n", what, dcc_last_error());
    ++failures;
  }
}

/// Packs `lens.size()` random tensors [lens[b], H, D] and compares.
void run_case(std::mt19937& rng, const std::vector<int32_t>& lens, int H, int D) {
  const int64_t count = static_cast<int64_t>(lens.size());
  std::uniform_real_distribution<float> u(-100, 100);
  std::vector<std::vector<float>> tensors(lens.size());
  std::vector<const float*> ptrs(lens.size());
  for (size_t b = 0; b < lens.size(); ++b) {
    tensors[b].resize(size_t(lens[b]) * H * D);
    for (auto& x : tensors[b]) x = u(rng);
    // An empty tensor may come with a NULL pointer.
    ptrs[b] = tensors[b].empty() && b % 2 ? nullptr : tensors[b].data();
  }
  pack_sequences_sequences_t list{ptrs.data(), lens.data(), count, H, D};
  PackedSequences out{};
  expect(pack_sequences_meta(&list, &out) == DCC_OK, "meta succeeds");
  // The reference: sequence after sequence, row-major, offsets as prefix sums.
  std::vector<float> want;
  for (const auto& t : tensors) want.insert(want.end(), t.begin(), t.end());
  expect(out.data_len == int64_t(want.size()) && out.seqlen_len == count && out.B == count && out.H == H &&
             out.D == D,
         "meta gives the packed element count and the sizes");
  std::vector<float> data(std::max<int64_t>(out.data_len, 1), -1.f);
  std::vector<int32_t> seqlen(std::max<int64_t>(count, 1), -1);
  out.data = data.data();
  out.seqlen = seqlen.data();
  expect(pack_sequences(&list, &out) == DCC_OK, "pack_sequences succeeds");
  bool same = std::equal(want.begin(), want.end(), data.begin());
  bool lens_same = std::equal(lens.begin(), lens.end(), seqlen.begin());
  // Spot-check the layout with explicit offsets: element [b][i, h, d].
  int64_t offset = 0;
  for (size_t b = 0; b < lens.size() && same; ++b) {
    for (int i = 0; i < lens[b]; ++i)
      for (int h = 0; h < H; ++h)
        for (int d = 0; d < D; ++d)
          same &= data[((offset + i) * H + h) * D + d] == tensors[b][(size_t(i) * H + h) * D + d];
    offset += lens[b];
  }
  std::printf("count=%lld H=%d D=%d rows=%lld: data %s, seqlen %s\n", (long long)count, H, D, (long long)offset,
              same ? "equal" : "DIFFERENT", lens_same ? "equal" : "DIFFERENT");
  expect(same, "packed data equals the hand-packed reference");
  expect(lens_same, "seqlen equals the list's lengths");
}

void bad_lists() {
  const int H = 2, D = 3;
  std::vector<float> a(2 * H * D, 1.f), b(3 * H * D, 2.f);
  std::vector<const float*> ptrs{a.data(), b.data()};
  std::vector<int32_t> lens{2, 3};
  std::vector<float> o(5 * H * D, 7.f);
  std::vector<int32_t> os(2, 7);
  auto untouched = [&] {
    return std::all_of(o.begin(), o.end(), [](float x) { return x == 7.f; }) &&
           std::all_of(os.begin(), os.end(), [](int32_t x) { return x == 7; });
  };
  PackedSequences out{o.data(), (int64_t)o.size(), os.data(), (int64_t)os.size(), 0, 0, 0};
  pack_sequences_sequences_t good{ptrs.data(), lens.data(), 2, H, D};
  PackedSequences probe{};
  expect(pack_sequences_meta(&good, &probe) == DCC_OK && probe.data_len == 5 * H * D, "the unbroken list is accepted");
  expect(pack_sequences(nullptr, &out) == DCC_ERR_NULL_POINTER && untouched(), "NULL list rejected");
  pack_sequences_sequences_t l = good;
  l.count = -1;
  expect(pack_sequences(&l, &out) == DCC_ERR_INVALID_ARGUMENT && untouched(), "negative count rejected");
  l = good;
  l.D = -3;
  expect(pack_sequences(&l, &out) == DCC_ERR_INVALID_ARGUMENT && untouched(), "negative size rejected");
  std::vector<int32_t> neg{2, -3};
  l = good;
  l.len = neg.data();
  expect(pack_sequences(&l, &out) == DCC_ERR_NEGATIVE_LENGTH && untouched(), "negative length rejected");
  expect(std::strcmp(dcc_last_error(), "pack_sequences: sequences.len[1] is -3; lengths must be >= 0") == 0,
         "the message names the element and its length");
  l = good;
  l.len = nullptr;
  expect(pack_sequences(&l, &out) == DCC_ERR_NULL_POINTER && untouched(), "NULL len rejected");
  l = good;
  l.data = nullptr;
  expect(pack_sequences(&l, &out) == DCC_ERR_NULL_POINTER && untouched(), "NULL data rejected");
  std::vector<const float*> hole{a.data(), nullptr};
  l = good;
  l.data = hole.data();
  expect(pack_sequences(&l, &out) == DCC_ERR_NULL_POINTER && untouched(), "NULL tensor with rows rejected");
  std::vector<int32_t> huge{2147483647, 2147483647};
  l = good;
  l.len = huge.data();
  l.H = INT64_C(1) << 40;
  expect(pack_sequences(&l, &out) == DCC_ERR_OVERFLOW && untouched(), "overflowing element count rejected");
  PackedSequences small = out;
  small.data_len = 5 * H * D - 1;
  expect(pack_sequences(&good, &small) == DCC_ERR_SIZE_MISMATCH && untouched(), "small result.data rejected");
  small = out;
  small.seqlen_len = 1;
  expect(pack_sequences(&good, &small) == DCC_ERR_SIZE_MISMATCH && untouched(), "small result.seqlen rejected");
  small = out;
  small.seqlen = nullptr;
  expect(pack_sequences(&good, &small) == DCC_ERR_NULL_POINTER && untouched(), "NULL result.seqlen rejected");
  std::printf("bad lists: last message: %s\n", dcc_last_error());
}

}  // namespace

int main() {
  std::mt19937 rng(5);
  run_case(rng, {3, 0, 5, 1}, 2, 4);   // a zero-length tensor (NULL pointer)
  run_case(rng, {7}, 3, 2);            // one tensor
  run_case(rng, {}, 2, 2);             // an empty list
  run_case(rng, {0, 0}, 4, 4);         // only empty tensors
  run_case(rng, {2, 3}, 0, 4);         // H = 0: no elements at all
  run_case(rng, {1, 200, 2}, 8, 16);   // one long tensor
  std::uniform_int_distribution<int> len(0, 30);
  std::vector<int32_t> lens(40);
  for (auto& l : lens) l = len(rng);
  run_case(rng, lens, 4, 8);
  bad_lists();
  std::printf("%s\n", failures ? "pack host check: FAILED" : "pack host check: OK");
  return failures ? 1 : 0;
}
