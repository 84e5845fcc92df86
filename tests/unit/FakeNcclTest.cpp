//===- FakeNcclTest.cpp - NCCL failure handling without a GPU -------------===//
//
// kiln's NcclCommunicator over a fake libcuda.so.1 and a fake NCCL
// (tests/unit/fake/): what happens when a rank never joins, when a
// collective never completes, and that completed ones stop being watched,
// groups are closed, captured collectives numbered at replay. The test
// loads the fakes before kiln looks: the fake driver by path (kiln's
// dlopen("libcuda.so.1") then finds it loaded, by its soname), the fake
// NCCL through KILN_NCCL_LIBRARY.
//
//===----------------------------------------------------------------------===//
#include "kiln/runtime/cuda/CudaDevice.h"
#include "kiln/runtime/cuda/Nccl.h"

#include "cuda/ArrivalBoard.h"

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <thread>

using namespace kiln;
using namespace std::chrono_literals;

namespace {
bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

/// A function of the fake libraries (already loaded by kiln).
template <typename F> F *fake(const char *library, const char *name) {
  void *handle = dlopen(library, RTLD_NOW | RTLD_NOLOAD);
  return handle ? reinterpret_cast<F *>(dlsym(handle, name)) : nullptr;
}

class FakeNccl : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    dlopen(KILN_FAKE_CUDA_PATH, RTLD_NOW | RTLD_GLOBAL);
    setenv("KILN_NCCL_LIBRARY", KILN_FAKE_NCCL_PATH, 1);
  }

  void SetUp() override {
    if (!ncclStatus().available || ncclStatus().version != 29901 ||
        CudaDevice::deviceCount() != 1)
      GTEST_SKIP() << "the fake libcuda.so.1 and NCCL did not load (a real driver first?)";
    auto created = CudaDevice::create(0);
    ASSERT_TRUE(created) << created.error().message;
    ASSERT_EQ((*created)->properties().name, "kiln fake GPU");
    device = std::move(*created);
    hang = fake<void(int)>("libcuda.so.1", "fakeCudaHang");
    join = fake<void(int)>(ncclStatus().library.c_str(), "fakeNcclJoin");
    count = fake<int(const char *)>(ncclStatus().library.c_str(), "fakeNcclCount");
    ASSERT_TRUE(hang && join && count);
    hang(0);
    join(0);
  }

  std::unique_ptr<CudaDevice> device;
  void (*hang)(int) = nullptr;
  void (*join)(int) = nullptr;
  int (*count)(const char *) = nullptr;
};
} // namespace

TEST_F(FakeNccl, ARankThatNeverJoinsEndsInitNamingIt) {
  auto id = NcclUniqueId::create();
  ASSERT_TRUE(id);
  int aborts = count("abort");
  auto start = std::chrono::steady_clock::now();
  auto comm = NcclCommunicator::create(*device, *id, 0, 3, 200ms);
  ASSERT_FALSE(comm);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 200ms);
  EXPECT_EQ(comm.error().kind, ErrorKind::Launch);
  EXPECT_TRUE(contains(comm.error().message,
                       "nccl init of rank 0 of 3 on kiln fake GPU did not complete within 200 ms: "
                       "missing rank(s) 1, 2 (never seen on this host); the communicator is "
                       "aborted"))
      << comm.error().message;
  EXPECT_EQ(count("abort"), aborts + 1);
  EXPECT_FALSE(device->poisoned()) << "nothing was queued";
}

TEST_F(FakeNccl, ACollectiveThatNeverCompletesPoisonsNamingTheMissingRank) {
  auto id = NcclUniqueId::create();
  ASSERT_TRUE(id);
  // Rank 1 of this host joined (it posted init) but never issues a collective.
  auto peer = ArrivalBoard::open(id->bytes, 2);
  ASSERT_TRUE(peer);
  peer->post(1, 0);
  join(1);
  auto comm = NcclCommunicator::create(*device, *id, 0, 2, 300ms);
  ASSERT_TRUE(comm) << comm.error().message;
  auto buffer = device->allocate(64);
  ASSERT_TRUE(buffer);
  hang(1);
  ASSERT_TRUE((*comm)->allReduce(*buffer, *buffer, 16, DType::F32, ReduceOp::Sum));
  EXPECT_EQ((*comm)->sequence(), 1u);
  for (int i = 0; i < 500 && !(*comm)->poisoned(); ++i)
    std::this_thread::sleep_for(10ms);
  ASSERT_TRUE((*comm)->poisoned()) << "the watchdog did not act within 5 s";
  auto later = (*comm)->allGather(*buffer, *buffer, 4, DType::F32);
  ASSERT_FALSE(later);
  EXPECT_EQ(later.error().kind, ErrorKind::DevicePoisoned);
  EXPECT_TRUE(contains(later.error().message,
                       "all_reduce #1 (rank 0 of 2) did not complete within 300 ms: missing "
                       "rank(s) 1 (last at #0); the communicator is aborted"))
      << later.error().message;
  auto sync = device->sync();
  ASSERT_FALSE(sync);
  EXPECT_EQ(sync.error().kind, ErrorKind::DevicePoisoned);
  EXPECT_TRUE(contains(sync.error().message, "an aborted NCCL collective (all_reduce #1"))
      << sync.error().message;
  hang(0);
}

TEST_F(FakeNccl, CompletedCollectivesAreNotWatchedAnyLonger) {
  auto id = NcclUniqueId::create();
  ASSERT_TRUE(id);
  auto comm = NcclCommunicator::create(*device, *id, 0, 1, 100ms);
  ASSERT_TRUE(comm) << comm.error().message;
  auto buffer = device->allocate(64);
  ASSERT_TRUE(buffer);
  for (int i = 0; i < 100; ++i)
    ASSERT_TRUE((*comm)->allReduce(*buffer, *buffer, 16, DType::F32, ReduceOp::Max));
  std::this_thread::sleep_for(300ms);
  EXPECT_FALSE((*comm)->poisoned());
  EXPECT_EQ((*comm)->sequence(), 100u);
  EXPECT_TRUE(device->sync());
}

TEST_F(FakeNccl, GroupsAreClosedAlsoWhenACallInsideFails) {
  auto id = NcclUniqueId::create();
  ASSERT_TRUE(id);
  auto comm = NcclCommunicator::create(*device, *id, 0, 1, 1000ms);
  ASSERT_TRUE(comm) << comm.error().message;
  auto buffer = device->allocate(64);
  ASSERT_TRUE(buffer);
  int starts = count("groupStart"), ends = count("groupEnd");
  auto ok = NcclCommunicator::group([&]() -> Expected<void> {
    if (auto sent = (*comm)->send(*buffer, 8, DType::I16, 0); !sent)
      return sent;
    return (*comm)->recv(*buffer, 8, DType::I16, 0);
  });
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ((*comm)->sequence(), 2u);
  auto failed = NcclCommunicator::group([&]() -> Expected<void> {
    return (*comm)->allReduce(*buffer, *buffer, 8, DType::Bool, ReduceOp::Sum);
  });
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().kind, ErrorKind::Unsupported);
  EXPECT_TRUE(contains(failed.error().message, "(sum) of i1")) << failed.error().message;
  EXPECT_EQ(count("groupStart"), starts + 2);
  EXPECT_EQ(count("groupEnd"), ends + 2);
  EXPECT_EQ((*comm)->sequence(), 2u) << "a refused call is not numbered";
}

TEST_F(FakeNccl, CapturedCollectivesAreNumberedWhenReplayed) {
  auto id = NcclUniqueId::create();
  ASSERT_TRUE(id);
  auto comm = NcclCommunicator::create(*device, *id, 0, 1, 1000ms);
  ASSERT_TRUE(comm) << comm.error().message;
  auto buffer = device->allocate(64);
  ASSERT_TRUE(buffer);
  (*comm)->setCapturing(true);
  ASSERT_TRUE((*comm)->allReduce(*buffer, *buffer, 16, DType::F32, ReduceOp::Sum));
  ASSERT_TRUE((*comm)->broadcast(*buffer, *buffer, 16, DType::F32, 0));
  (*comm)->setCapturing(false);
  EXPECT_EQ((*comm)->sequence(), 0u);
  ASSERT_TRUE((*comm)->replayed({"all_reduce", "broadcast"}));
  ASSERT_TRUE((*comm)->replayed({"all_reduce", "broadcast"}));
  EXPECT_EQ((*comm)->sequence(), 4u);
}
