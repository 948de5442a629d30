// Running the front end on a thread with a large stack.
//
// The parser and checker recurse over the tree; the parser's limits
// (bracket nesting, tokens per statement), not the default thread stack,
// must bound that recursion. 1 GiB of reserved address space covers a
// 20,000-token operator chain with AddressSanitizer's large frames many
// times over; only the pages actually used are committed.
#pragma once

#include <cstddef>
#include <functional>

namespace dccc {

inline constexpr size_t kFrontEndStackBytes = size_t{1} << 30;

/// Runs `fn` on a new thread with a kFrontEndStackBytes stack and returns its
/// result (on the calling thread if no such thread can be created).
int run_on_large_stack(const std::function<int()>& fn);

}  // namespace dccc
