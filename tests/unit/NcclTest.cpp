//===- NcclTest.cpp - collectives through NCCL ----------------------------===//
//
// Without NCCL or a GPU (CI): no communicators and a reason, a missing or
// foreign library named, the dtype mapping, unique ids, the timeout
// setting, the arrival board and the argument checks that need no device.
// With NCCL and a GPU (the GPU machine, KILN_NCCL_LIBRARY pointing at
// torch's libnccl.so.2): every collective and dtype over the local GPUs
// (one rank on one GPU) against host references, graph capture and
// replay, abort, and a rank that never joins. The rest skips visibly.
//
//===----------------------------------------------------------------------===//
#include "kiln/backend/Distributed.h"
#include "kiln/runtime/common/HostTensor.h"
#include "kiln/runtime/cuda/CudaDevice.h"

#include "cuda/ArrivalBoard.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>

using namespace kiln;
using namespace std::chrono_literals;

namespace {
constexpr DType kAllDTypes[] = {DType::F64, DType::F32, DType::F16, DType::BF16, DType::I8,
                                DType::I16, DType::I32, DType::I64, DType::U8,   DType::U16,
                                DType::U32, DType::U64, DType::Bool};
constexpr ReduceOp kAllOps[] = {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min,
                                ReduceOp::Avg};

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

/// Runs `check` in a fresh process (NCCL is loaded once per process), with
/// KILN_NCCL_LIBRARY set to `library`; the child exits 0 when it holds.
#define EXPECT_IN_FRESH_PROCESS(library, check)                                \
  do {                                                                         \
    GTEST_FLAG_SET(death_test_style, "threadsafe");                            \
    EXPECT_EXIT(                                                               \
        {                                                                      \
          setenv("KILN_NCCL_LIBRARY", library, 1);                             \
          std::exit((check) ? 0 : 1);                                          \
        },                                                                     \
        ::testing::ExitedWithCode(0), "");                                     \
  } while (false)
} // namespace

TEST(Nccl, WithoutNcclOrAGpuThereAreNoCommunicatorsAndAReason) {
  if (communicatorDeviceCount() > 0)
    GTEST_SKIP() << "NCCL " << ncclStatus().versionText() << " and "
                 << communicatorDeviceCount() << " GPU(s) here";
  if (ncclStatus().available) {
    EXPECT_GT(ncclStatus().version, 21400) << "kiln needs NCCL 2.14+";
    EXPECT_TRUE(contains(communicatorUnavailableReason(), "no CUDA device"))
        << communicatorUnavailableReason();
    return;
  }
  EXPECT_TRUE(contains(communicatorUnavailableReason(), "libnccl.so.2"))
      << communicatorUnavailableReason();
  auto id = NcclUniqueId::create();
  ASSERT_FALSE(id);
  EXPECT_EQ(id.error().kind, ErrorKind::Unsupported);
  EXPECT_TRUE(contains(id.error().message, "NCCL is not available")) << id.error().message;
}

TEST(Nccl, AMissingLibraryIsNamed) {
  EXPECT_IN_FRESH_PROCESS("/nonexistent/libnccl.so.2",
                          !ncclStatus().available && communicatorDeviceCount() == 0 &&
                              contains(ncclStatus().unavailable, "/nonexistent/libnccl.so.2") &&
                              contains(ncclStatus().unavailable, "KILN_NCCL_LIBRARY"));
}

TEST(Nccl, ALibraryThatIsNotNcclIsRefusedNamingTheSymbol) {
  EXPECT_IN_FRESH_PROCESS("libm.so.6",
                          !ncclStatus().available &&
                              contains(ncclStatus().unavailable, "libm.so.6 has no ncclGetVersion"));
}

TEST(Nccl, ReductionTypesFollowNcclsAbi) {
  constexpr int v227 = 22703;
  struct Case {
    DType type;
    int nccl;
  } cases[] = {{DType::I8, 0},  {DType::U8, 1},  {DType::I32, 2},  {DType::U32, 3},
               {DType::I64, 4}, {DType::U64, 5}, {DType::F16, 6},  {DType::F32, 7},
               {DType::F64, 8}, {DType::BF16, 9}};
  for (const Case &c : cases) {
    auto type = ncclReductionType(c.type, ReduceOp::Sum, v227);
    ASSERT_TRUE(type) << dtypeName(c.type) << ": " << type.error().message;
    EXPECT_EQ(*type, c.nccl) << dtypeName(c.type);
  }
  for (DType type : {DType::I16, DType::U16, DType::Bool}) {
    auto refused = ncclReductionType(type, ReduceOp::Max, v227);
    ASSERT_FALSE(refused) << dtypeName(type);
    EXPECT_EQ(refused.error().kind, ErrorKind::Unsupported);
    EXPECT_TRUE(contains(refused.error().message, "(max) of " + std::string(dtypeName(type))))
        << refused.error().message;
  }
  auto avgOfInts = ncclReductionType(DType::I32, ReduceOp::Avg, v227);
  ASSERT_FALSE(avgOfInts);
  EXPECT_TRUE(contains(avgOfInts.error().message, "(avg) of i32")) << avgOfInts.error().message;
  EXPECT_TRUE(ncclReductionType(DType::BF16, ReduceOp::Avg, v227));
  auto oldBf16 = ncclReductionType(DType::BF16, ReduceOp::Sum, 20903);
  ASSERT_FALSE(oldBf16);
  EXPECT_TRUE(contains(oldBf16.error().message, "NCCL 2.10")) << oldBf16.error().message;
}

TEST(Nccl, ReduceOpsHaveNames) {
  for (ReduceOp op : kAllOps)
    EXPECT_EQ(reduceOpFromName(reduceOpName(op)), op);
  EXPECT_FALSE(reduceOpFromName("mean"));
}

TEST(Nccl, UniqueIdsTravelAsHexAndBytes) {
  NcclUniqueId id;
  for (size_t i = 0; i < NcclUniqueId::kBytes; ++i)
    id.bytes[i] = static_cast<uint8_t>(i * 37 + 5);
  std::string hex = id.toHex();
  ASSERT_EQ(hex.size(), 256u);
  auto back = NcclUniqueId::fromHex(hex);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->bytes, id.bytes);
  auto fromBytes = NcclUniqueId::fromBytes(id.bytes);
  ASSERT_TRUE(fromBytes);
  EXPECT_EQ(fromBytes->bytes, id.bytes);

  auto short_ = NcclUniqueId::fromHex(hex.substr(2));
  ASSERT_FALSE(short_);
  EXPECT_EQ(short_.error().kind, ErrorKind::InvalidArgument);
  EXPECT_TRUE(contains(short_.error().message, "256 characters, got 254"));
  std::string bad = hex;
  bad[10] = 'x';
  auto notHex = NcclUniqueId::fromHex(bad);
  ASSERT_FALSE(notHex);
  EXPECT_TRUE(contains(notHex.error().message, "at character 10")) << notHex.error().message;
  std::vector<uint8_t> few(12);
  auto tooFew = NcclUniqueId::fromBytes(few);
  ASSERT_FALSE(tooFew);
  EXPECT_TRUE(contains(tooFew.error().message, "128 bytes, got 12"));
}

TEST(Nccl, TimeoutSettingIsParsedStrictly) {
  const char *saved = std::getenv("KILN_NCCL_TIMEOUT_MS");
  std::string keep = saved ? saved : "";
  unsetenv("KILN_NCCL_TIMEOUT_MS");
  EXPECT_EQ(ncclTimeoutSetting().value(), std::chrono::milliseconds(300000));
  setenv("KILN_NCCL_TIMEOUT_MS", "250", 1);
  EXPECT_EQ(ncclTimeoutSetting().value(), std::chrono::milliseconds(250));
  for (const char *bad : {"abc", "-5", "0", "12ms", "99999999999999999999"}) {
    setenv("KILN_NCCL_TIMEOUT_MS", bad, 1);
    auto parsed = ncclTimeoutSetting();
    ASSERT_FALSE(parsed) << bad;
    EXPECT_EQ(parsed.error().kind, ErrorKind::InvalidArgument);
    EXPECT_TRUE(contains(parsed.error().message, std::string("KILN_NCCL_TIMEOUT_MS=") + bad));
  }
  if (saved)
    setenv("KILN_NCCL_TIMEOUT_MS", keep.c_str(), 1);
  else
    unsetenv("KILN_NCCL_TIMEOUT_MS");
}

namespace {
std::vector<uint8_t> randomId() {
  std::random_device device;
  std::vector<uint8_t> id(NcclUniqueId::kBytes);
  for (uint8_t &b : id)
    b = static_cast<uint8_t>(device());
  return id;
}
} // namespace

TEST(ArrivalBoard, NamesTheRanksBehindAndThoseNeverSeen) {
  auto id = randomId();
  auto rank0 = ArrivalBoard::open(id, 4);
  auto rank2 = ArrivalBoard::open(id, 4); // another rank's view of the same board
  ASSERT_TRUE(rank0 && rank2) << "no POSIX shared memory here";
  rank0->post(0, 0);
  EXPECT_EQ(rank0->missing(0, false), "missing rank(s) 1, 2, 3 (never seen on this host)");
  rank2->post(2, 0);
  rank0->post(0, 5);
  rank2->post(2, 4);
  EXPECT_EQ(rank0->missing(5, true),
            "missing rank(s) 2 (last at #4); rank(s) 1, 3 on another host: unknown");
  rank2->post(2, 5);
  EXPECT_EQ(rank0->missing(5, true), "rank(s) 1, 3 on another host: unknown");
  // A board of another communicator size is not this communicator's.
  EXPECT_EQ(ArrivalBoard::open(id, 3), nullptr);
}

TEST(Communicator, OnlyCudaBackendsTakePart) {
  auto cpu = Backend::shared({DeviceType::Cpu, 0});
  ASSERT_TRUE(cpu) << cpu.error().message;
  NcclUniqueId id;
  auto comm = Communicator::create(*cpu, id, 0, 1);
  ASSERT_FALSE(comm);
  EXPECT_EQ(comm.error().kind, ErrorKind::Unsupported);
  EXPECT_TRUE(contains(comm.error().message, "cpu:0 is not one")) << comm.error().message;
  auto local = Communicator::createLocal({*cpu});
  ASSERT_FALSE(local);
  EXPECT_EQ(local.error().kind, ErrorKind::Unsupported);
  auto none = Communicator::create(nullptr, id, 0, 1);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().kind, ErrorKind::InvalidArgument);
  auto negative = Communicator::create(*cpu, id, 0, 1, std::chrono::milliseconds(-1));
  ASSERT_FALSE(negative);
  EXPECT_TRUE(contains(negative.error().message, "timeout must be positive"));
}

//===----------------------------------------------------------------------===//
// On a GPU with NCCL
//===----------------------------------------------------------------------===//

#define REQUIRE_NCCL()                                                         \
  if (communicatorDeviceCount() == 0)                                          \
  GTEST_SKIP() << "no communicators: " << communicatorUnavailableReason()

namespace {
/// Backends of their own (not the process's shared ones): the tests that
/// poison a device leave the other tests' devices alone.
std::vector<std::shared_ptr<Backend>> localBackends(int count) {
  std::vector<std::shared_ptr<Backend>> backends;
  for (int i = 0; i < count; ++i) {
    auto b = Backend::create({DeviceType::Cuda, i});
    if (!b) {
      ADD_FAILURE() << b.error().message;
      return {};
    }
    backends.push_back(std::move(*b));
  }
  return backends;
}

/// 1s and some 2s (at most two ranks' 2s meet on an element, so sums and
/// products of 8 ranks stay exact in every dtype), different per rank;
/// bools 1 and 0.
HostTensor rankInput(DType type, const std::vector<int64_t> &shape, int rank) {
  HostTensor host(type, shape);
  for (int64_t i = 0; i < host.numElements(); ++i) {
    int64_t v = 1 + ((i * 7 + rank * 3) % 5 == 0);
    if (type == DType::Bool)
      v = v % 2;
    double d = static_cast<double>(v);
    std::byte *at = host.data.data() + i * dtypeSize(type);
    switch (type) {
    case DType::F64: std::memcpy(at, &d, 8); break;
    case DType::F32: { float f = static_cast<float>(d); std::memcpy(at, &f, 4); break; }
    case DType::F16: { uint16_t h = floatToHalf(static_cast<float>(d)); std::memcpy(at, &h, 2); break; }
    case DType::BF16: { uint16_t h = floatToBf16(static_cast<float>(d)); std::memcpy(at, &h, 2); break; }
    default: std::memcpy(at, &v, dtypeSize(type)); break; // little-endian: low bytes
    }
  }
  return host;
}

double reduce(ReduceOp op, const std::vector<double> &values) {
  double r = values[0];
  for (size_t i = 1; i < values.size(); ++i) {
    double v = values[i];
    r = op == ReduceOp::Prod ? r * v
        : op == ReduceOp::Max ? std::max(r, v)
        : op == ReduceOp::Min ? std::min(r, v)
                              : r + v;
  }
  return op == ReduceOp::Avg ? r / values.size() : r;
}

void expectElements(const HostTensor &got, const std::vector<double> &want, const std::string &what) {
  ASSERT_EQ(got.numElements(), static_cast<int64_t>(want.size())) << what;
  double tolerance = got.dtype == DType::BF16 ? 1e-2 : got.dtype == DType::F16 ? 1e-3 : 0;
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_LE(std::abs(got.elementAsDouble(i) - want[i]), tolerance * std::abs(want[i]))
        << what << " element " << i;
}
} // namespace

TEST(Communicator, EveryCollectiveAndDtypeMatchesHostReferences) {
  REQUIRE_NCCL();
  int n = CudaDevice::deviceCount();
  auto backends = localBackends(n);
  ASSERT_EQ(backends.size(), static_cast<size_t>(n));
  auto comms = Communicator::createLocal(backends, 60s);
  ASSERT_TRUE(comms) << comms.error().message;
  const std::vector<int64_t> shape = {2 * n, 3};
  for (DType type : kAllDTypes) {
    std::string name(dtypeName(type));
    std::vector<HostTensor> host;
    std::vector<Tensor> x;
    for (int r = 0; r < n; ++r) {
      host.push_back(rankInput(type, shape, r));
      // Through a kernel first: the collective must queue after it.
      HostTensor flat = host.back();
      flat.shape = {flat.numElements()};
      auto uploaded = backends[r]->upload(flat);
      ASSERT_TRUE(uploaded) << uploaded.error().message;
      auto copy = backends[r]->apply("kiln.reshape", {*uploaded}, type, shape);
      ASSERT_TRUE(copy) << name << ": " << copy.error().message;
      x.push_back(*copy);
    }
    int64_t count = host[0].numElements();
    auto column = [&](int64_t i) {
      std::vector<double> values;
      for (int r = 0; r < n; ++r)
        values.push_back(host[r].elementAsDouble(i));
      return values;
    };
    for (ReduceOp op : kAllOps) {
      std::string what = name + " " + reduceOpName(op);
      bool reducible = ncclReductionType(type, op, ncclStatus().version).has_value();
      std::vector<Tensor> reduced(n), scattered(n);
      Expected<void> grouped = Communicator::group([&]() -> Expected<void> {
        for (int r = 0; r < n; ++r) {
          auto all = (*comms)[r]->allReduce(x[r], op);
          auto part = (*comms)[r]->reduceScatter(x[r], op);
          if (!all)
            return std::unexpected(all.error());
          if (!part)
            return std::unexpected(part.error());
          reduced[r] = *all;
          scattered[r] = *part;
        }
        return {};
      });
      if (!reducible) {
        ASSERT_FALSE(grouped) << what;
        EXPECT_EQ(grouped.error().kind, ErrorKind::Unsupported) << what;
        EXPECT_TRUE(contains(grouped.error().message, "of " + name)) << grouped.error().message;
        continue;
      }
      ASSERT_TRUE(grouped) << what << ": " << grouped.error().message;
      std::vector<double> want;
      for (int64_t i = 0; i < count; ++i)
        want.push_back(reduce(op, column(i)));
      for (int r = 0; r < n; ++r) {
        auto all = backends[r]->download(reduced[r]);
        ASSERT_TRUE(all) << all.error().message;
        expectElements(*all, want, what + " all_reduce on rank " + std::to_string(r));
        auto part = backends[r]->download(scattered[r]);
        ASSERT_TRUE(part) << part.error().message;
        int64_t partCount = count / n;
        expectElements(*part, {want.begin() + r * partCount, want.begin() + (r + 1) * partCount},
                       what + " reduce_scatter on rank " + std::to_string(r));
      }
    }
    // Data movement: every dtype.
    std::vector<Tensor> gathered(n), broadcast(n), received(n);
    auto moved = Communicator::group([&]() -> Expected<void> {
      for (int r = 0; r < n; ++r) {
        auto g = (*comms)[r]->allGather(x[r]);
        auto b = (*comms)[r]->broadcast(x[r], n - 1);
        if (!g || !b)
          return std::unexpected(!g ? g.error() : b.error());
        gathered[r] = *g;
        broadcast[r] = *b;
        // A ring: rank r sends to r+1 and receives from r-1.
        if (auto ok = (*comms)[r]->send(x[r], (r + 1) % n); !ok)
          return ok;
        auto in = (*comms)[r]->recv(type, shape, (r + n - 1) % n);
        if (!in)
          return std::unexpected(in.error());
        received[r] = *in;
      }
      return {};
    });
    ASSERT_TRUE(moved) << name << ": " << moved.error().message;
    std::vector<double> all;
    for (int r = 0; r < n; ++r)
      for (int64_t i = 0; i < count; ++i)
        all.push_back(host[r].elementAsDouble(i));
    for (int r = 0; r < n; ++r) {
      auto g = backends[r]->download(gathered[r]);
      ASSERT_TRUE(g) << g.error().message;
      EXPECT_EQ(g->shape, (std::vector<int64_t>{2 * n * n, 3})) << name;
      expectElements(*g, all, name + " all_gather");
      auto b = backends[r]->download(broadcast[r]);
      ASSERT_TRUE(b) << b.error().message;
      expectElements(*b, {all.end() - count, all.end()}, name + " broadcast");
      auto in = backends[r]->download(received[r]);
      ASSERT_TRUE(in) << in.error().message;
      int from = (r + n - 1) % n;
      expectElements(*in, {all.begin() + from * count, all.begin() + (from + 1) * count},
                     name + " recv");
    }
  }
}

TEST(Communicator, ArgumentsAreCheckedNamingWhatIsWrong) {
  REQUIRE_NCCL();
  auto backends = localBackends(1);
  ASSERT_EQ(backends.size(), 1u);
  auto id = NcclUniqueId::create();
  ASSERT_TRUE(id) << id.error().message;
  auto comm = Communicator::create(backends[0], *id, 0, 1, 60s);
  ASSERT_TRUE(comm) << comm.error().message;
  auto x = backends[0]->upload(rankInput(DType::F32, {3, 2}, 0));
  ASSERT_TRUE(x);
  auto root = (*comm)->broadcast(*x, 1);
  ASSERT_FALSE(root);
  EXPECT_TRUE(contains(root.error().message, "root 1 is not a rank")) << root.error().message;
  auto peer = (*comm)->send(*x, -1);
  ASSERT_FALSE(peer);
  EXPECT_TRUE(contains(peer.error().message, "peer -1")) << peer.error().message;
  auto other = Backend::create({DeviceType::Cuda, 0});
  ASSERT_TRUE(other);
  auto foreign = (*other)->upload(rankInput(DType::F32, {3, 2}, 0));
  ASSERT_TRUE(foreign);
  auto refused = (*comm)->allReduce(*foreign, ReduceOp::Sum);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, ErrorKind::InvalidArgument);
  EXPECT_TRUE(contains(refused.error().message, "all_reduce: the tensor belongs to another backend"))
      << refused.error().message;
  auto scalar = backends[0]->upload(rankInput(DType::F32, {}, 0));
  ASSERT_TRUE(scalar);
  auto unsplit = (*comm)->reduceScatter(*scalar, ReduceOp::Sum);
  ASSERT_FALSE(unsplit);
  EXPECT_TRUE(contains(unsplit.error().message, "does not split along dim 0"));
  EXPECT_EQ((*comm)->sequence(), 0u) << "refused calls are not numbered";
}

TEST(Communicator, CapturedCollectivesReplayAndAreNumberedPerReplay) {
  REQUIRE_NCCL();
  auto backends = localBackends(1);
  ASSERT_EQ(backends.size(), 1u);
  Backend &b = *backends[0];
  auto id = NcclUniqueId::create();
  ASSERT_TRUE(id) << id.error().message;
  auto comm = Communicator::create(backends[0], *id, 0, 1, 60s);
  ASSERT_TRUE(comm) << comm.error().message;
  ASSERT_TRUE(b.graphPrepare());
  auto x = b.upload(rankInput(DType::F32, {4, 8}, 0));
  ASSERT_TRUE(x);
  // Compiled before the capture, which then only records its launch.
  ASSERT_TRUE(b.apply("kiln.add", {*x, *x}, DType::F32, {4, 8}));
  ASSERT_TRUE(b.graphStartCapture());
  auto doubled = b.apply("kiln.add", {*x, *x}, DType::F32, {4, 8});
  ASSERT_TRUE(doubled) << doubled.error().message;
  auto reduced = (*comm)->allReduce(*doubled, ReduceOp::Max);
  ASSERT_TRUE(reduced) << reduced.error().message;
  auto gathered = (*comm)->allGather(*reduced);
  ASSERT_TRUE(gathered) << gathered.error().message;
  auto graph = b.graphStopCapture();
  ASSERT_TRUE(graph) << graph.error().message;
  EXPECT_EQ((*comm)->sequence(), 0u) << "captured ops are numbered when replayed";
  for (int replay = 1; replay <= 3; ++replay) {
    HostTensor input = rankInput(DType::F32, {4, 8}, replay);
    ASSERT_TRUE(b.write(*x, input));
    ASSERT_TRUE(b.graphReplay(*graph));
    auto out = b.download(*gathered);
    ASSERT_TRUE(out) << out.error().message;
    std::vector<double> want;
    for (int64_t i = 0; i < input.numElements(); ++i)
      want.push_back(2 * input.elementAsDouble(i));
    expectElements(*out, want, "replay " + std::to_string(replay));
    EXPECT_EQ((*comm)->sequence(), 2u * replay);
  }
}

TEST(Communicator, AbortPoisonsTheCommunicatorAndItsDevice) {
  REQUIRE_NCCL();
  auto backends = localBackends(1);
  ASSERT_EQ(backends.size(), 1u);
  auto id = NcclUniqueId::create();
  ASSERT_TRUE(id) << id.error().message;
  auto comm = Communicator::create(backends[0], *id, 0, 1, 60s);
  ASSERT_TRUE(comm) << comm.error().message;
  auto x = backends[0]->upload(rankInput(DType::F32, {16}, 0));
  ASSERT_TRUE(x);
  ASSERT_TRUE((*comm)->allReduce(*x, ReduceOp::Sum));
  (*comm)->abort();
  EXPECT_TRUE((*comm)->poisoned());
  auto after = (*comm)->allReduce(*x, ReduceOp::Sum);
  ASSERT_FALSE(after);
  EXPECT_EQ(after.error().kind, ErrorKind::DevicePoisoned);
  auto sync = backends[0]->sync();
  ASSERT_FALSE(sync);
  EXPECT_EQ(sync.error().kind, ErrorKind::DevicePoisoned);
  EXPECT_TRUE(contains(sync.error().message, "NCCL")) << sync.error().message;
}

TEST(Communicator, ARankThatNeverJoinsEndsInitNamingIt) {
  REQUIRE_NCCL();
  auto backends = localBackends(1);
  ASSERT_EQ(backends.size(), 1u);
  auto id = NcclUniqueId::create();
  ASSERT_TRUE(id) << id.error().message;
  auto start = std::chrono::steady_clock::now();
  auto comm = Communicator::create(backends[0], *id, 0, 2, 1500ms);
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(comm);
  EXPECT_EQ(comm.error().kind, ErrorKind::Launch);
  EXPECT_TRUE(contains(comm.error().message, "did not complete within 1500 ms"))
      << comm.error().message;
  EXPECT_TRUE(contains(comm.error().message, "missing rank(s) 1")) << comm.error().message;
  EXPECT_LT(took, 30s) << "the timeout bounds the wait";
  // The device is untouched: it still runs kernels.
  auto x = backends[0]->upload(rankInput(DType::F32, {4}, 0));
  ASSERT_TRUE(x);
  ASSERT_TRUE(backends[0]->apply("kiln.add", {*x, *x}, DType::F32, {4}));
  EXPECT_TRUE(backends[0]->sync());
}

TEST(Communicator, ARankThatSkipsACollectiveTimesOutNamingIt) {
  REQUIRE_NCCL();
  if (CudaDevice::deviceCount() < 2)
    GTEST_SKIP() << "needs 2 GPUs (NCCL puts one rank on a GPU); this machine has "
                 << CudaDevice::deviceCount();
  auto backends = localBackends(2);
  ASSERT_EQ(backends.size(), 2u);
  auto comms = Communicator::createLocal(backends, 2000ms);
  ASSERT_TRUE(comms) << comms.error().message;
  auto x = backends[0]->upload(rankInput(DType::F32, {1024}, 0));
  ASSERT_TRUE(x);
  // Rank 0 issues all_reduce #1; rank 1 never does. Where NCCL connects
  // lazily the call itself waits for rank 1; otherwise the sync returns
  // once the watchdog aborted it.
  auto issued = (*comms)[0]->allReduce(*x, ReduceOp::Sum);
  Expected<void> sync = issued ? backends[0]->sync() : std::unexpected(issued.error());
  ASSERT_FALSE(sync);
  EXPECT_EQ(sync.error().kind, ErrorKind::DevicePoisoned);
  EXPECT_TRUE(contains(sync.error().message, "all_reduce #1")) << sync.error().message;
  EXPECT_TRUE(contains(sync.error().message, "missing rank(s) 1 (last at #0)"))
      << sync.error().message;
  auto later = (*comms)[0]->allGather(*x);
  ASSERT_FALSE(later);
  EXPECT_EQ(later.error().kind, ErrorKind::DevicePoisoned);
}
