//===- AsyncRuntime.cpp - libkiln-cpu-runtime.so: CPU kernels' task runtime -===//
//
// The C functions that MLIR's async lowering calls (mlirAsyncRuntime*, the
// ABI of mlir/ExecutionEngine/AsyncRuntime.h), implemented by kiln with no
// LLVM: CPU kernels run their parallel loops as tasks on this library's
// worker threads. MLIR's own implementation links all of libLLVM, which a
// process running kernels from the disk cache would otherwise load for
// nothing. The CPU device loads this library with RTLD_GLOBAL before any
// kernel, so kernels (shared objects or JIT'd objects) bind to it.
//
// Tokens, values and groups are reference counted; awaiting blocks,
// awaiting-and-executing runs the continuation on the thread that completes
// what it awaits.
//
//===----------------------------------------------------------------------===//
#include "kiln/BuildId.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace {

using Continuation = std::function<void()>;

/// How long a worker out of tasks, or a thread awaiting a kernel's tasks,
/// polls before it sleeps: a kernel's tasks and the next kernel's follow
/// one another by microseconds, and a wake-up through the kernel (a futex)
/// costs several; OpenMP runtimes poll the same way before they block.
constexpr auto kPollTime = std::chrono::microseconds(50);

/// Calls `ready` until it holds or `until` passes; whether it held.
template <typename Ready> bool pollUntil(std::chrono::steady_clock::time_point until, Ready ready) {
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (ready())
        return true;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
    if (std::chrono::steady_clock::now() > until)
      return false;
    // A thread that needs this core (more threads than cores) gets it.
    std::this_thread::yield();
  }
}

std::chrono::steady_clock::time_point pollDeadline() {
  return std::chrono::steady_clock::now() + kPollTime;
}

/// Workers that run submitted tasks in order; never destroyed, so that a
/// worker finishing a task's epilogue at process exit runs in a live pool.
/// A worker out of tasks polls (pollUntil) before it sleeps, and a submit
/// wakes one only where one sleeps.
class WorkerPool {
public:
  static WorkerPool &instance() {
    static WorkerPool *pool = new WorkerPool(std::max(1u, std::thread::hardware_concurrency()));
    return *pool;
  }
  void submit(Continuation task) {
    submitted.fetch_add(1, std::memory_order_relaxed);
    bool wake;
    {
      std::lock_guard lock(mutex);
      tasks.push_back(std::move(task));
      queued.store(tasks.size(), std::memory_order_release);
      wake = sleepers > 0;
    }
    if (wake)
      ready.notify_one();
  }
  size_t size() const { return workers; }
  uint64_t submittedCount() const { return submitted.load(std::memory_order_relaxed); }

private:
  explicit WorkerPool(unsigned count) : workers(count) {
    for (unsigned i = 0; i < count; ++i)
      std::thread([this] { work(); }).detach();
  }
  void work() {
    for (;;) {
      Continuation task;
      auto until = pollDeadline();
      for (;;) {
        bool seen = pollUntil(until, [this] { return queued.load(std::memory_order_acquire) > 0; });
        std::unique_lock lock(mutex);
        if (tasks.empty()) {
          // Another worker took it: poll on until the deadline.
          if (seen)
            continue;
          ++sleepers;
          ready.wait(lock, [this] { return !tasks.empty(); });
          --sleepers;
        }
        task = std::move(tasks.front());
        tasks.pop_front();
        queued.store(tasks.size(), std::memory_order_relaxed);
        break;
      }
      task();
    }
  }
  size_t workers;
  std::atomic<uint64_t> submitted = 0;
  std::atomic<size_t> queued = 0; // tasks.size(), read without the lock by polling workers
  std::mutex mutex;
  std::condition_variable ready;
  std::deque<Continuation> tasks;
  int sleepers = 0; // guarded by mutex
};

struct RefCounted {
  virtual ~RefCounted() = default;
  void addRef(int64_t count) { refs.fetch_add(count); }
  void dropRef(int64_t count) {
    if (refs.fetch_sub(count) == count)
      delete this;
  }
  std::atomic<int64_t> refs{1};
};

/// What tokens, values and groups share: a state that becomes final once,
/// waiters blocked on it and continuations run when it does.
struct Completion : RefCounted {
  /// Runs `then` now if complete, else when it completes.
  void whenComplete(Continuation then) {
    {
      std::lock_guard lock(mutex);
      if (!complete) {
        continuations.push_back(std::move(then));
        return;
      }
    }
    then();
  }
  void wait() {
    if (pollUntil(pollDeadline(), [this] { return complete.load(std::memory_order_acquire); }))
      return;
    std::unique_lock lock(mutex);
    done.wait(lock, [this] { return complete.load(std::memory_order_relaxed); });
  }
  void finish(bool withError) {
    std::vector<Continuation> run;
    {
      std::lock_guard lock(mutex);
      error = error || withError;
      complete.store(true, std::memory_order_release);
      run.swap(continuations);
    }
    done.notify_all();
    for (Continuation &c : run)
      c();
  }
  bool failed() {
    std::lock_guard lock(mutex);
    return error;
  }

  std::mutex mutex;
  std::condition_variable done;
  std::atomic<bool> complete = false; // written under mutex; polling waiters read it without
  bool error = false;
  std::vector<Continuation> continuations;
};

/// Tokens and values start with a second reference, the producing task's,
/// which completing them drops (the ABI: a task may outlive every other
/// holder of its token).
struct Token : Completion {
  Token() { refs = 2; }
};

struct Value : Completion {
  explicit Value(int64_t bytes) : storage(new std::byte[bytes > 0 ? bytes : 1]) { refs = 2; }
  std::unique_ptr<std::byte[]> storage;
};

void produced(Completion *c, bool withError) {
  c->finish(withError);
  c->dropRef(1);
}

/// Made for `size` tokens, which may be added later, from any thread:
/// complete once all of them are (a group of size 0 at once).
struct Group : Completion {
  explicit Group(int64_t size) : pending(size) {
    complete = size <= 0;
  }
  int64_t add(Token *token) {
    int64_t rank = added.fetch_add(1);
    addRef(1); // until the token completes
    token->whenComplete([this, token] {
      bool last;
      bool tokenFailed = token->failed();
      {
        std::lock_guard lock(mutex);
        error = error || tokenFailed;
        last = --pending == 0;
      }
      if (last)
        finish(false);
      dropRef(1);
    });
    return rank;
  }
  std::atomic<int64_t> added = 0;
  int64_t pending; // guarded by mutex
};

Continuation resumeOf(void *handle, void (*resume)(void *)) {
  return [handle, resume] { resume(handle); };
}

} // namespace

#define KILN_ASYNC_EXPORT extern "C" __attribute__((visibility("default")))

// Handles are opaque pointers in the ABI (kernels pass them as `!llvm.ptr`).
namespace {
Token *token(void *handle) { return static_cast<Token *>(handle); }
Value *value(void *handle) { return static_cast<Value *>(handle); }
Group *group(void *handle) { return static_cast<Group *>(handle); }
} // namespace

KILN_ASYNC_EXPORT void mlirAsyncRuntimeAddRef(void *object, int64_t count) {
  static_cast<RefCounted *>(object)->addRef(count);
}
KILN_ASYNC_EXPORT void mlirAsyncRuntimeDropRef(void *object, int64_t count) {
  static_cast<RefCounted *>(object)->dropRef(count);
}
KILN_ASYNC_EXPORT void *mlirAsyncRuntimeCreateToken() {
  return static_cast<RefCounted *>(new Token);
}
KILN_ASYNC_EXPORT void *mlirAsyncRuntimeCreateValue(int64_t bytes) {
  return static_cast<RefCounted *>(new Value(bytes));
}
KILN_ASYNC_EXPORT void *mlirAsyncRuntimeCreateGroup(int64_t size) {
  return static_cast<RefCounted *>(new Group(size));
}
KILN_ASYNC_EXPORT int64_t mlirAsyncRuntimeAddTokenToGroup(void *t, void *g) {
  return group(g)->add(token(t));
}
KILN_ASYNC_EXPORT void mlirAsyncRuntimeEmplaceToken(void *t) { produced(token(t), false); }
KILN_ASYNC_EXPORT void mlirAsyncRuntimeEmplaceValue(void *v) { produced(value(v), false); }
KILN_ASYNC_EXPORT void mlirAsyncRuntimeSetTokenError(void *t) { produced(token(t), true); }
KILN_ASYNC_EXPORT void mlirAsyncRuntimeSetValueError(void *v) { produced(value(v), true); }
KILN_ASYNC_EXPORT bool mlirAsyncRuntimeIsTokenError(void *t) { return token(t)->failed(); }
KILN_ASYNC_EXPORT bool mlirAsyncRuntimeIsValueError(void *v) { return value(v)->failed(); }
KILN_ASYNC_EXPORT bool mlirAsyncRuntimeIsGroupError(void *g) { return group(g)->failed(); }
KILN_ASYNC_EXPORT void mlirAsyncRuntimeAwaitToken(void *t) { token(t)->wait(); }
KILN_ASYNC_EXPORT void mlirAsyncRuntimeAwaitValue(void *v) { value(v)->wait(); }
KILN_ASYNC_EXPORT void mlirAsyncRuntimeAwaitAllInGroup(void *g) { group(g)->wait(); }
KILN_ASYNC_EXPORT void *mlirAsyncRuntimeGetValueStorage(void *v) {
  return value(v)->storage.get();
}
KILN_ASYNC_EXPORT void mlirAsyncRuntimeExecute(void *handle, void (*resume)(void *)) {
  WorkerPool::instance().submit(resumeOf(handle, resume));
}
KILN_ASYNC_EXPORT void mlirAsyncRuntimeAwaitTokenAndExecute(void *t, void *handle,
                                                            void (*resume)(void *)) {
  token(t)->whenComplete(resumeOf(handle, resume));
}
KILN_ASYNC_EXPORT void mlirAsyncRuntimeAwaitValueAndExecute(void *v, void *handle,
                                                            void (*resume)(void *)) {
  value(v)->whenComplete(resumeOf(handle, resume));
}
KILN_ASYNC_EXPORT void mlirAsyncRuntimeAwaitAllInGroupAndExecute(void *g, void *handle,
                                                                 void (*resume)(void *)) {
  group(g)->whenComplete(resumeOf(handle, resume));
}
// MLIR's name, misspelt as it is in its header.
KILN_ASYNC_EXPORT int64_t mlirAsyncRuntimGetNumWorkerThreads() {
  return static_cast<int64_t>(WorkerPool::instance().size());
}
KILN_ASYNC_EXPORT void mlirAsyncRuntimePrintCurrentThreadId() {
  std::printf("Current thread id: %zu\n", std::hash<std::thread::id>{}(std::this_thread::get_id()));
}

// Tasks handed to the workers so far: a kernel whose loops fit one task
// runs them on the calling thread and hands none (tests check it).
KILN_ASYNC_EXPORT uint64_t kiln_cpu_runtime_tasks_submitted() {
  return WorkerPool::instance().submittedCount();
}

// The table kiln's loader checks (runtime/common/KilnLibrary.h).
KILN_ASYNC_EXPORT const void *kiln_cpu_runtime_library() {
  static constexpr const char *table[] = {kiln::kBuildId};
  return table;
}
