#include "support/large_stack.h"

#include <pthread.h>

namespace dccc {
namespace {

struct Call {
  const std::function<int()>* fn;
  int result = 0;
};

void* trampoline(void* p) {
  auto* call = static_cast<Call*>(p);
  call->result = (*call->fn)();
  return nullptr;
}

}  // namespace

int run_on_large_stack(const std::function<int()>& fn) {
  Call call{&fn};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, kFrontEndStackBytes);
  pthread_t thread;
  if (pthread_create(&thread, &attr, trampoline, &call) != 0) {
    call.result = fn();
  } else {
    pthread_join(thread, nullptr);
  }
  pthread_attr_destroy(&attr);
  return call.result;
}

}  // namespace dccc
