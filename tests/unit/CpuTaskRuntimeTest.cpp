// kiln's task runtime for CPU kernels (runtime/cpu/AsyncRuntime.cpp), through
// the C functions MLIR's async lowering calls, as the kernels use them.
#include "kiln/runtime/cpu/SharedKernel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <dlfcn.h>
#include <thread>
#include <vector>

namespace kiln {
namespace {

/// The runtime's functions, found as a kernel finds them (global symbols).
struct TaskRuntime {
  static bool load() {
    auto loaded = loadCpuKernelRuntime();
    EXPECT_TRUE(loaded) << loaded.error().message;
    return loaded.has_value();
  }
  bool loaded = load(); // before the members below look the functions up
  template <typename F> F *fn(const char *name) {
    void *symbol = dlsym(RTLD_DEFAULT, name);
    EXPECT_NE(symbol, nullptr) << name;
    return reinterpret_cast<F *>(symbol);
  }
  void *(*createToken)() = fn<void *()>("mlirAsyncRuntimeCreateToken");
  void *(*createGroup)(int64_t) = fn<void *(int64_t)>("mlirAsyncRuntimeCreateGroup");
  int64_t (*addToGroup)(void *, void *) =
      fn<int64_t(void *, void *)>("mlirAsyncRuntimeAddTokenToGroup");
  void (*emplace)(void *) = fn<void(void *)>("mlirAsyncRuntimeEmplaceToken");
  void (*setError)(void *) = fn<void(void *)>("mlirAsyncRuntimeSetTokenError");
  bool (*groupError)(void *) = fn<bool(void *)>("mlirAsyncRuntimeIsGroupError");
  void (*dropRef)(void *, int64_t) = fn<void(void *, int64_t)>("mlirAsyncRuntimeDropRef");
  void (*execute)(void *, void (*)(void *)) =
      fn<void(void *, void (*)(void *))>("mlirAsyncRuntimeExecute");
  void (*awaitGroup)(void *) = fn<void(void *)>("mlirAsyncRuntimeAwaitAllInGroup");
  void (*awaitTokenAndExecute)(void *, void *, void (*)(void *)) =
      fn<void(void *, void *, void (*)(void *))>("mlirAsyncRuntimeAwaitTokenAndExecute");
};

struct Task {
  TaskRuntime *runtime;
  void *token;
  std::atomic<int> *done;
  bool fail = false;
  std::chrono::microseconds work{50};
};

void runTask(void *handle) {
  auto *task = static_cast<Task *>(handle);
  std::this_thread::sleep_for(task->work);
  task->done->fetch_add(1);
  // Completing a token drops the task's own reference to it.
  (task->fail ? task->runtime->setError : task->runtime->emplace)(task->token);
  delete task;
}

// Workers and waiters poll for 50 us before they sleep: tasks submitted
// after the workers slept (a pause of 2 ms), long enough that the waiter
// sleeps too (1 ms), all run and wake it. A lost wake-up hangs (ctest's
// timeout).
TEST(CpuTaskRuntime, TasksRunAfterWorkersAndTheWaiterSlept) {
  TaskRuntime rt;
  for (int round = 0; round < 20; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    std::atomic<int> done = 0;
    void *group = rt.createGroup(4);
    for (int i = 0; i < 4; ++i) {
      void *token = rt.createToken();
      rt.execute(new Task{&rt, token, &done, false, std::chrono::milliseconds(1)}, runTask);
      rt.addToGroup(token, group);
      rt.dropRef(token, 1);
    }
    rt.awaitGroup(group);
    EXPECT_EQ(done.load(), 4) << "round " << round;
    rt.dropRef(group, 1);
  }
}

TEST(CpuTaskRuntime, AGroupWaitsForAsManyTokensAsItWasMadeFor) {
  TaskRuntime rt;
  for (int round = 0; round < 200; ++round) {
    std::atomic<int> done = 0;
    void *group = rt.createGroup(8);
    // Tokens join the group after the wait has begun, from another thread,
    // as recursive parallel-for dispatch adds them.
    std::thread adder([&] {
      for (int i = 0; i < 8; ++i) {
        void *token = rt.createToken();
        rt.execute(new Task{&rt, token, &done}, runTask);
        EXPECT_EQ(rt.addToGroup(token, group), i);
        rt.dropRef(token, 1); // the caller's reference; the task keeps its own
      }
    });
    rt.awaitGroup(group);
    EXPECT_EQ(done.load(), 8) << "round " << round;
    EXPECT_FALSE(rt.groupError(group));
    adder.join();
    rt.dropRef(group, 1);
  }
}

TEST(CpuTaskRuntime, AFailedTokenFailsItsGroup) {
  TaskRuntime rt;
  std::atomic<int> done = 0;
  void *group = rt.createGroup(2);
  for (bool fail : {false, true}) {
    void *token = rt.createToken();
    rt.execute(new Task{&rt, token, &done, fail}, runTask);
    rt.addToGroup(token, group);
    rt.dropRef(token, 1);
  }
  rt.awaitGroup(group);
  EXPECT_TRUE(rt.groupError(group));
  rt.dropRef(group, 1);
}

TEST(CpuTaskRuntime, ContinuationsRunOnceTheTokenIsDone) {
  TaskRuntime rt;
  std::atomic<int> done = 0, resumed = 0;
  void *token = rt.createToken();
  rt.awaitTokenAndExecute(token, &resumed, [](void *counter) {
    static_cast<std::atomic<int> *>(counter)->fetch_add(1);
  });
  EXPECT_EQ(resumed.load(), 0);
  void *group = rt.createGroup(1);
  rt.addToGroup(token, group);
  rt.execute(new Task{&rt, token, &done}, runTask);
  rt.dropRef(token, 1);
  rt.awaitGroup(group);
  EXPECT_EQ(resumed.load(), 1);
  rt.dropRef(group, 1);
}

// What a parallel kernel does, from several threads at once (kernels run
// concurrently from a framework's threads): a task splits its range and
// submits the halves as tasks of the same group (recursive dispatch), the
// leaves complete tokens, continuations resume on the completing thread.
// Under ThreadSanitizer (kiln-task-runtime-tsan-tests) any race fails it.
struct Split {
  TaskRuntime *runtime;
  void *group;
  void *token;
  int size;
  std::atomic<int> *leaves;
};

void runSplit(void *handle) {
  auto *split = static_cast<Split *>(handle);
  TaskRuntime &rt = *split->runtime;
  for (int half = 0; split->size > 1 && half < 2; ++half) {
    void *token = rt.createToken();
    rt.addToGroup(token, split->group); // before this task's own token completes
    rt.execute(new Split{&rt, split->group, token, split->size / 2, split->leaves}, runSplit);
    rt.dropRef(token, 1);
  }
  if (split->size <= 1)
    split->leaves->fetch_add(1);
  rt.emplace(split->token);
  delete split;
}

TEST(CpuTaskRuntime, ThreadsSplittingTasksRecursivelyAtOnce) {
  TaskRuntime rt;
  std::vector<std::thread> callers;
  for (int caller = 0; caller < 4; ++caller)
    callers.emplace_back([&rt, caller] {
      for (int round = 0; round < 25; ++round) {
        std::atomic<int> leaves = 0, resumed = 0;
        // 32 leaves and 31 inner tasks, joining the group as they split.
        void *group = rt.createGroup(63);
        void *root = rt.createToken();
        // Registered first, so it runs before the group learns the root is done.
        rt.awaitTokenAndExecute(root, &resumed, [](void *counter) {
          static_cast<std::atomic<int> *>(counter)->fetch_add(1);
        });
        rt.addToGroup(root, group);
        rt.execute(new Split{&rt, group, root, 32, &leaves}, runSplit);
        rt.dropRef(root, 1);
        rt.awaitGroup(group);
        EXPECT_EQ(leaves.load(), 32) << "caller " << caller << ", round " << round;
        EXPECT_EQ(resumed.load(), 1) << "caller " << caller << ", round " << round;
        EXPECT_FALSE(rt.groupError(group));
        rt.dropRef(group, 1);
      }
    });
  for (std::thread &caller : callers)
    caller.join();
}

} // namespace
} // namespace kiln
