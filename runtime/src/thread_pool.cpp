// The process-wide thread pool behind dcc_parallel_for.
//
// One loop runs on the pool at a time. Its caller publishes a Job, wakes the
// workers and claims chunks like them from an atomic counter; a worker joins
// a job under the pool mutex (so it never touches a job that has finished)
// and leaves it under the mutex. The caller retires the job (no more joins)
// and waits until every worker that joined has left, which means every chunk
// has completed. Loops started while the pool is busy, or from inside a body,
// run serially on their own thread: no caller ever waits for unrelated work,
// so nesting cannot deadlock.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "error.h"

namespace dccc::rt {
namespace {

constexpr int kMaxThreads = 1024;
constexpr const char* kFn = "dcc_parallel_for";

// True on pool workers, and on any thread while it runs a loop body.
thread_local bool t_in_parallel = false;

int default_num_threads() noexcept {
  if (const char* env = std::getenv("DCC_NUM_THREADS")) {
    char* end = nullptr;
    const long n = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && n > 0)
      return static_cast<int>(std::min<long>(n, kMaxThreads));
  }
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(std::min<unsigned>(hw, kMaxThreads));
}

struct Job {
  dcc_parallel_body body;
  void* ctx;
  std::int64_t n;
  std::int64_t grain;
  std::int64_t chunks;
  std::atomic<std::int64_t> next{0};
  std::atomic<bool> failed{false};
  // Written once, by the thread that set `failed` first.
  std::string error;
  dcc_status error_status = DCC_OK;
  int active = 0;  // workers inside the job; guarded by Pool::mutex_
};

// Claims and runs chunks until none is left or one has failed.
void work_on(Job& job) noexcept {
  for (;;) {
    if (job.failed.load(std::memory_order_relaxed)) return;
    const std::int64_t k = job.next.fetch_add(1, std::memory_order_relaxed);
    if (k >= job.chunks) return;
    const std::int64_t begin = k * job.grain;
    const std::int64_t end = begin + std::min(job.grain, job.n - begin);
    try {
      job.body(job.ctx, begin, end);
    } catch (...) {
      if (!job.failed.exchange(true)) {
        job.error_status = fail_from_exception(kFn);
        try {
          job.error = dcc_last_error();
        } catch (...) {
        }
      }
      return;
    }
  }
}

class Pool {
 public:
  Pool() = default;
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  ~Pool() {
    // At exit (or dlclose). If another thread is still running a loop, do not
    // wait for it: leave the workers be rather than hang the exit.
    std::unique_lock<std::mutex> run(run_mutex_, std::try_to_lock);
    if (run.owns_lock()) {
      stop_workers();
    } else {
      for (std::thread& t : workers_) t.detach();
    }
  }

  int desired() noexcept {
    int n = desired_.load(std::memory_order_relaxed);
    if (n == 0) {
      int expected = 0;
      n = default_num_threads();
      if (!desired_.compare_exchange_strong(expected, n)) n = expected;
    }
    return n;
  }

  void set_desired(int n) noexcept {
    desired_.store(n <= 0 ? default_num_threads() : std::min(n, kMaxThreads),
                   std::memory_order_relaxed);
  }

  dcc_status parallel_for(std::int64_t n, std::int64_t grain, dcc_parallel_body body,
                          void* ctx) noexcept {
    const int threads = desired();
    if (grain <= 0) {
      // About four chunks per thread, to even out unequal chunks.
      const std::int64_t parts = std::int64_t{threads} * 4;
      grain = n / parts + (n % parts != 0);
    }
    const std::int64_t chunks = n / grain + (n % grain != 0);
    if (threads <= 1 || chunks <= 1 || t_in_parallel) return run_serially(n, grain, body, ctx);
    std::unique_lock<std::mutex> run(run_mutex_, std::try_to_lock);
    if (!run.owns_lock()) return run_serially(n, grain, body, ctx);
    try {
      resize(threads - 1);
    } catch (...) {
      // Could not start (all) threads: run with those that did start.
    }
    if (workers_.empty()) return run_serially(n, grain, body, ctx);

    Job job;
    job.body = body;
    job.ctx = ctx;
    job.n = n;
    job.grain = grain;
    job.chunks = chunks;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = &job;
      ++generation_;
    }
    wake_.notify_all();
    t_in_parallel = true;
    work_on(job);
    t_in_parallel = false;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      job_ = nullptr;
      left_.wait(lock, [&] { return job.active == 0; });
    }
    if (job.failed.load()) {
      return set_error(job.error_status == DCC_OK ? DCC_ERR_INTERNAL : job.error_status, job.error);
    }
    return DCC_OK;
  }

 private:
  static dcc_status run_serially(std::int64_t n, std::int64_t grain, dcc_parallel_body body,
                                 void* ctx) noexcept {
    const bool outer = t_in_parallel;
    t_in_parallel = true;
    dcc_status status = DCC_OK;
    try {
      // Written so that begin + grain is never formed past n (no overflow).
      for (std::int64_t begin = 0;;) {
        const std::int64_t step = std::min(grain, n - begin);
        body(ctx, begin, begin + step);
        if (step == n - begin) break;
        begin += step;
      }
    } catch (...) {
      status = fail_from_exception(kFn);
    }
    t_in_parallel = outer;
    return status;
  }

  // Requires run_mutex_.
  void resize(int workers) {
    if (static_cast<int>(workers_.size()) == workers) return;
    stop_workers();
    workers_.reserve(workers);
    // A new worker must join the next job even if it starts running only
    // after that job was published, so it starts from the generation now.
    std::uint64_t generation = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      generation = generation_;
    }
    for (int i = 0; i < workers; ++i) {
      workers_.emplace_back([this, generation] { worker_main(generation); });
    }
  }

  // Requires run_mutex_ (so no job is running).
  void stop_workers() noexcept {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : workers_) {
      // A worker that is exiting the process runs this destructor itself.
      if (t.get_id() == std::this_thread::get_id()) {
        t.detach();
      } else if (t.joinable()) {
        t.join();
      }
    }
    workers_.clear();
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = false;
  }

  void worker_main(std::uint64_t seen) noexcept {
    t_in_parallel = true;
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stopping_ || (job_ != nullptr && generation_ != seen); });
      if (stopping_) return;
      seen = generation_;
      Job& job = *job_;
      ++job.active;
      lock.unlock();
      work_on(job);
      lock.lock();
      if (--job.active == 0) left_.notify_all();
    }
  }

  std::atomic<int> desired_{0};  // 0: not yet read from the environment
  std::mutex run_mutex_;         // held by the loop that owns the pool
  std::vector<std::thread> workers_;

  std::mutex mutex_;  // guards what follows
  std::condition_variable wake_;
  std::condition_variable left_;
  Job* job_ = nullptr;
  std::uint64_t generation_ = 0;
  bool stopping_ = false;
};

Pool& pool() {
  static Pool p;
  return p;
}

}  // namespace
}  // namespace dccc::rt

using namespace dccc::rt;

extern "C" {

dcc_status dcc_parallel_for(int64_t n, int64_t grain, dcc_parallel_body body, void* ctx) noexcept {
  if (n < 0) return fail(DCC_ERR_INVALID_ARGUMENT, "{}: n is {}; n must be >= 0", kFn, n);
  if (n == 0) return DCC_OK;
  if (body == nullptr) return fail(DCC_ERR_NULL_POINTER, "{}: body is NULL", kFn);
  return pool().parallel_for(n, grain, body, ctx);
}

void dcc_set_num_threads(int n) noexcept { pool().set_desired(n); }

int dcc_get_num_threads(void) noexcept { return pool().desired(); }

}  // extern "C"
