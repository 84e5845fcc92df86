//===- BackendTest.cpp - the backend API on every device present ---------===//
//
// Each test runs on cpu:0, vulkan:0 and cuda:0; a device this machine lacks
// is skipped, saying so.
//
//===----------------------------------------------------------------------===//
#include "kiln/backend/Backend.h"
#include "kiln/runtime/cpu/CpuDevice.h"
#include "DeviceBackendTest.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>

using namespace kiln;

namespace {

HostTensor filled(std::vector<int64_t> shape, float start, float step) {
  HostTensor t(DType::F32, std::move(shape));
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.as<float>()[i] = start + step * static_cast<float>(i % 97);
  return t;
}

class BackendTest : public DeviceBackendTest {
protected:
  Tensor binary(const char *op, const Tensor &a, const Tensor &b) {
    auto r = backend->apply(op, {a, b}, DType::F32, a.shape());
    EXPECT_TRUE(r) << r.error().message;
    return r ? *r : Tensor();
  }
  size_t pagesInPools() {
    size_t pages = 0;
    for (const PoolReport &r : backend->memoryPoolReport())
      pages += r.pages;
    return pages;
  }
};

TEST_P(BackendTest, NameSaysTheDevice) {
  EXPECT_EQ(backend->name().rfind(GetParam(), 0), 0u) << backend->name();
}

TEST_P(BackendTest, OpsRunOnDeviceTensors) {
  Tensor a = upload(filled({64, 33}, 1, 0.5f)), b = upload(filled({64, 33}, -3, 0.25f));
  HostTensor sum = download(binary("kiln.add", a, b));
  HostTensor ha = filled({64, 33}, 1, 0.5f), hb = filled({64, 33}, -3, 0.25f);
  for (int64_t i = 0; i < sum.numElements(); ++i)
    ASSERT_EQ(sum.as<float>()[i], ha.as<float>()[i] + hb.as<float>()[i]) << i;
  auto reduced = backend->apply("kiln.reduce_sum", {a}, DType::F32, {64}, "dims = array<i64: 1>");
  ASSERT_TRUE(reduced) << reduced.error().message;
  EXPECT_EQ(download(*reduced).shape, std::vector<int64_t>{64});
}

// Ops on empty tensors launch nothing (fuzz-capi: Vulkan reset a descriptor
// pool it had never made and crashed in the driver).
TEST_P(BackendTest, OpsOnEmptyTensorsLaunchNothing) {
  Tensor a = upload(HostTensor(DType::F32, {0, 3}));
  auto negated = backend->apply("kiln.neg", {a}, DType::F32, {0, 3});
  ASSERT_TRUE(negated) << negated.error().message;
  EXPECT_EQ(download(*negated).shape, (std::vector<int64_t>{0, 3}));
  auto summed = backend->apply("kiln.reduce_sum", {a}, DType::F32, {3}, "dims = array<i64: 0>");
  ASSERT_TRUE(summed) << summed.error().message;
  HostTensor zeros = download(*summed);
  for (int64_t i = 0; i < 3; ++i)
    EXPECT_EQ(zeros.as<float>()[i], 0.0f);
}

// Three kernels with an intermediate buffer between them (the matmul's
// result), and a unary op in the generic form apply() writes.
TEST_P(BackendTest, ProgramsWithIntermediateBuffersRunOnDeviceTensors) {
  HostTensor a = filled({64, 32}, -0.5f, 0.01f), b = filled({32, 16}, 0.25f, -0.005f);
  auto results = backend->run(
      "func.func @main(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>) -> tensor<64xf32> {\n"
      "  %0 = kiln.matmul %a, %b : (tensor<64x32xf32>, tensor<32x16xf32>) -> tensor<64x16xf32>\n"
      "  %1 = kiln.exp %0 : tensor<64x16xf32>\n"
      "  %2 = kiln.reduce_sum %1 {dims = array<i64: 1>} : tensor<64x16xf32> -> tensor<64xf32>\n"
      "  return %2 : tensor<64xf32>\n}\n",
      {upload(a), upload(b)});
  ASSERT_TRUE(results) << results.error().message;
  HostTensor got = download(results->front());
  for (int64_t i = 0; i < 64; ++i) {
    double want = 0;
    for (int64_t j = 0; j < 16; ++j) {
      double dot = 0;
      for (int64_t k = 0; k < 32; ++k)
        dot += double(a.as<float>()[i * 32 + k]) * b.as<float>()[k * 16 + j];
      want += std::exp(dot);
    }
    ASSERT_NEAR(got.as<float>()[i], want, 1e-4 * want) << i;
  }
  auto exp = backend->apply("kiln.exp", {upload(a)}, DType::F32, {64, 32});
  ASSERT_TRUE(exp) << exp.error().message;
  EXPECT_FLOAT_EQ(download(*exp).as<float>()[0], std::exp(a.as<float>()[0]));
}

TEST_P(BackendTest, BadInputsAreClearErrors) {
  Tensor a = upload(filled({4, 4}, 0, 1)), b = upload(filled({4, 5}, 0, 1));
  auto mismatched = backend->apply("kiln.add", {a, b}, DType::F32, {4, 4});
  ASSERT_FALSE(mismatched);
  EXPECT_EQ(mismatched.error().kind, ErrorKind::InvalidArgument);
  auto wrongWrite = backend->write(a, filled({2, 2}, 0, 1));
  ASSERT_FALSE(wrongWrite);
  EXPECT_NE(wrongWrite.error().message.find("tensor<4x4xf32>"), std::string::npos);
  auto other = Backend::create(*DeviceId::parse("cpu"));
  ASSERT_TRUE(other);
  if (std::string(GetParam()) != "cpu:0") {
    auto foreign = (*other)->apply("kiln.add", {a, a}, DType::F32, {4, 4});
    ASSERT_FALSE(foreign);
    EXPECT_NE(foreign.error().message.find("lives on"), std::string::npos)
        << foreign.error().message;
  }
}

TEST_P(BackendTest, MemoryPoolSteadyLoopAllocatesNoNewPages) {
  Tensor a = upload(filled({256, 256}, 1, 1)), b = upload(filled({256, 256}, 2, 1));
  size_t pagesAfterFirst = 0;
  for (int i = 0; i < 20; ++i) {
    Tensor c = binary("kiln.mul", a, b);
    Tensor d = binary("kiln.add", c, a);
    ASSERT_TRUE(backend->sync());
    if (i == 0)
      pagesAfterFirst = pagesInPools();
    EXPECT_EQ(pagesInPools(), pagesAfterFirst) << "iteration " << i;
  }
  MemoryUsage usage = backend->memoryPoolUsage();
  EXPECT_EQ(usage.numberAllocs, 2u); // a and b
  EXPECT_GE(usage.bytesReserved, usage.bytesInUse);
}

TEST_P(BackendTest, OutOfMemoryIsReportedAndThePoolStaysUsable) {
  Tensor a = upload(filled({1024}, 1, 1));
  // 2^42 floats: 16 TiB, more than any device here has. (Vulkan refuses to
  // compile it first: its kernels index with 32 bits.)
  auto huge = backend->randomUniform(DType::F32, {1 << 21, 1 << 21}, 0, 1);
  ASSERT_FALSE(huge);
  if (std::string(GetParam()) != "vulkan:0") {
    EXPECT_EQ(huge.error().kind, ErrorKind::OutOfMemory) << huge.error().message;
  }
  HostTensor sum = download(binary("kiln.add", a, a));
  EXPECT_EQ(sum.as<float>()[3], 2 * filled({1024}, 1, 1).as<float>()[3]);
}

TEST_P(BackendTest, MemoryCleanupReleasesFreePages) {
  {
    Tensor big = upload(filled({1024, 1024}, 0, 1));
    EXPECT_GE(backend->memoryPoolUsage().bytesReserved, 4u << 20);
  }
  backend->memoryCleanup();
  EXPECT_EQ(backend->memoryPoolUsage().bytesReserved, 0u);
  EXPECT_EQ(pagesInPools(), 0u);
}

TEST_P(BackendTest, PersistentAllocationsAreExactAndReported) {
  backend->memoryPersistentAllocations(true);
  Tensor t = upload(filled({1000}, 0, 1));
  MemoryUsage usage = backend->memoryPoolUsage();
  EXPECT_EQ(usage.bytesInUse, 4000u);
  EXPECT_EQ(usage.bytesReserved, 4000u);
  EXPECT_EQ(backend->memoryPoolReport().back().name, "persistent");
  EXPECT_EQ(backend->memoryPoolReport().back().largestAlloc, 4000u);
}

TEST_P(BackendTest, ProfilingWindowMeasuresWorkOnItsClock) {
  Tensor a = upload(filled({512, 512}, 1, 1));
  auto token = backend->profileStart();
  ASSERT_TRUE(token) << token.error().message;
  for (int i = 0; i < 5; ++i)
    a = binary("kiln.add", a, a);
  auto window = backend->profileEnd(*token);
  ASSERT_TRUE(window) << window.error().message;
  ASSERT_TRUE(window->milliseconds.has_value());
  EXPECT_GT(*window->milliseconds, 0.0);
  std::string device = GetParam();
  EXPECT_EQ(window->clock, device == "cuda:0"     ? "cuda-events"
                           : device == "vulkan:0" ? "vulkan-timestamps"
                                                  : "host");
}

TEST_P(BackendTest, ProfilingAroundWorkAbandonsTheWindowWhenItFails) {
  Tensor a = upload(filled({256, 256}, 1, 1));
  auto timed = backend->profile([&]() -> Expected<void> {
    auto b = backend->apply("kiln.mul", {a, a}, DType::F32, a.shape());
    if (!b)
      return std::unexpected(b.error());
    return {};
  });
  ASSERT_TRUE(timed) << timed.error().message;
  EXPECT_TRUE(timed->milliseconds.has_value());
  auto failed = backend->profile([&]() -> Expected<void> {
    return makeError(ErrorKind::InvalidArgument, "work failed");
  });
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().message, "work failed");
}

TEST_P(BackendTest, ProfilingAbandonedOrForeignTokensAreRefused) {
  auto token = backend->profileStart();
  ASSERT_TRUE(token);
  backend->profileAbandon(*token);
  auto ended = backend->profileEnd(*token);
  ASSERT_FALSE(ended);
  EXPECT_NE(ended.error().message.find("no open window"), std::string::npos);
  auto other = backend->profileStart();
  ASSERT_TRUE(other);
  auto wrongStream = backend->profileEnd(ProfileToken{other->id, other->stream + 1});
  EXPECT_FALSE(wrongStream);
}

TEST_P(BackendTest, ProfilingAcrossACaptureIsNoMeasurementNotZero) {
  Tensor a = upload(filled({64}, 1, 1));
  auto token = backend->profileStart();
  ASSERT_TRUE(token);
  ASSERT_TRUE(backend->graphStartCapture());
  Tensor b = binary("kiln.add", a, a);
  ASSERT_TRUE(backend->graphStopCapture());
  auto window = backend->profileEnd(*token);
  ASSERT_TRUE(window) << window.error().message;
  EXPECT_FALSE(window->milliseconds.has_value());
}

// 100 launches captured once, replayed on refreshed inputs, against the same
// sequence run eagerly: identical bits.
TEST_P(BackendTest, GraphReplayOf100KernelsMatchesEager) {
  const std::vector<int64_t> shape{128, 64};
  auto sequence = [&](Tensor x, const Tensor &w) {
    for (int i = 0; i < 50; ++i) {
      x = binary("kiln.mul", x, w);
      x = binary("kiln.add", x, w);
    }
    return x;
  };
  ASSERT_TRUE(backend->graphPrepare());
  Tensor x = upload(filled(shape, 0.5f, 0.01f)), w = upload(filled(shape, 0.99f, 0.0001f));
  ASSERT_TRUE(backend->graphStartCapture());
  Tensor y = sequence(x, w);
  auto graph = backend->graphStopCapture();
  ASSERT_TRUE(graph) << graph.error().message;
  EXPECT_EQ(graph->launchCount(), 100u);
  EXPECT_EQ(graph->device().toString(), GetParam());

  for (float start : {0.25f, -1.5f}) {
    HostTensor input = filled(shape, start, 0.02f);
    ASSERT_TRUE(backend->write(x, input));
    ASSERT_TRUE(backend->graphReplay(*graph));
    HostTensor replayed = download(y);
    HostTensor eager = download(sequence(upload(input), w));
    ASSERT_EQ(replayed.data.size(), eager.data.size());
    EXPECT_EQ(0, std::memcmp(replayed.data.data(), eager.data.data(), eager.data.size()))
        << "replay from start " << start;
  }
}

TEST_P(BackendTest, GraphReplayOnAnotherBackendIsRefused) {
  Tensor a = upload(filled({8}, 1, 1));
  ASSERT_TRUE(backend->graphStartCapture());
  Tensor b = binary("kiln.add", a, a);
  auto graph = backend->graphStopCapture();
  ASSERT_TRUE(graph);
  auto cpu = Backend::create(*DeviceId::parse("cpu"));
  ASSERT_TRUE(cpu);
  auto refused = (*cpu)->graphReplay(*graph);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find(std::string("captured on ") + GetParam()),
            std::string::npos)
      << refused.error().message;
}

TEST_P(BackendTest, GraphCaptureRefusesHostTransfersAndNesting) {
  Tensor a = upload(filled({8}, 1, 1));
  ASSERT_TRUE(backend->graphStartCapture());
  EXPECT_FALSE(backend->download(a));
  EXPECT_FALSE(backend->graphStartCapture());
  ASSERT_TRUE(backend->graphStopCapture());
  EXPECT_FALSE(backend->graphStopCapture());
  EXPECT_TRUE(backend->download(a));
}

// Launches are queued without waits (Vulkan: in batches): each op reads
// what the one before it wrote, a download mid-chain sees exactly the ops
// before it, and a write waits for queued ops that read the old contents.
TEST_P(BackendTest, QueuedLaunchesKeepTheirOrder) {
  const std::vector<int64_t> shape{1024};
  Tensor w = upload(filled(shape, 1, 0)), chain = upload(filled(shape, 0, 0));
  for (int i = 1; i <= 300; ++i) {
    chain = binary("kiln.add", chain, w);
    if (i == 150)
      ASSERT_EQ(download(chain).as<float>()[1023], 150.0f);
  }
  Tensor before = binary("kiln.add", chain, w);
  ASSERT_TRUE(backend->write(w, filled(shape, 2, 0)));
  Tensor after = binary("kiln.add", chain, w);
  ASSERT_TRUE(backend->flush());
  EXPECT_EQ(download(before).as<float>()[1023], 301.0f);
  EXPECT_EQ(download(after).as<float>()[1023], 302.0f);
  EXPECT_EQ(download(chain).as<float>()[0], 300.0f);
  ASSERT_TRUE(backend->sync());
}

// Transfers larger than a batch's staging (Vulkan: beyond 16 MiB they wait
// for earlier work and reuse one large staging buffer) round-trip exactly,
// uploads queued back to back included.
TEST_P(BackendTest, LargeTransfersRoundTrip) {
  const std::vector<int64_t> shape{5, 1 << 20}; // 20 MiB of f32
  HostTensor a = filled(shape, 1, 0.5f), b = filled(shape, -7, 0.25f);
  Tensor da = upload(a), db = upload(b);
  Tensor sum = binary("kiln.add", da, db);
  HostTensor back = download(db), total = download(sum);
  ASSERT_EQ(back.data.size(), b.data.size());
  EXPECT_EQ(0, std::memcmp(back.data.data(), b.data.data(), b.data.size()));
  for (int64_t i = 0; i < total.numElements(); i += 4099)
    ASSERT_EQ(total.as<float>()[i], a.as<float>()[i] + b.as<float>()[i]) << i;
}

// A launch returns before its work is done (the CPU runs it as it is
// made): matmuls grow until four of them keep the device busy for 100 ms.
TEST_P(BackendTest, LaunchesReturnBeforeTheirWorkIsDone) {
  if (std::string(GetParam()) == "cpu:0")
    GTEST_SKIP() << "CPU launches run as they are made";
  using Clock = std::chrono::steady_clock;
  for (int64_t n = 128;; n *= 2) {
    Tensor a = upload(filled({n, n}, 0, 0.001f));
    auto matmul = [&] {
      auto c = backend->apply("kiln.matmul", {a, a}, DType::F32, {n, n});
      EXPECT_TRUE(c) << c.error().message;
    };
    matmul(); // compiles it
    ASSERT_TRUE(backend->sync());
    auto start = Clock::now();
    for (int i = 0; i < 4; ++i)
      matmul();
    auto queued = Clock::now();
    ASSERT_TRUE(backend->sync());
    auto done = Clock::now();
    if (done - start < std::chrono::milliseconds(100) && n < 8192)
      continue;
    EXPECT_LT(queued - start, (done - start) / 2) << "four matmuls of " << n << "^3";
    break;
  }
}

// Attribute values any double can take, written so MLIR parses them
// (decimal 1e+20 is not an MLIR float literal).
TEST_P(BackendTest, RandomOpsTakeAnyFiniteBounds) {
  auto t = backend->randomUniform(DType::F32, {64}, -1e20, 1e20);
  ASSERT_TRUE(t) << t.error().message;
  HostTensor h = download(*t);
  for (int64_t i = 0; i < h.numElements(); ++i) {
    EXPECT_GE(h.as<float>()[i], -1e20f);
    EXPECT_LE(h.as<float>()[i], 1e20f);
  }
  auto n = backend->randomNormal(DType::F32, {64}, 1e-300, 2.5e10);
  EXPECT_TRUE(n) << n.error().message;
}

TEST_P(BackendTest, SeedMakesRandomOpsReproducible) {
  auto draw = [&] {
    auto t = backend->randomUniform(DType::F32, {1000}, -1, 1);
    EXPECT_TRUE(t) << t.error().message;
    return t ? download(*t) : HostTensor(DType::F32, {1000});
  };
  backend->seed(42);
  HostTensor first = draw(), second = draw();
  backend->seed(42);
  HostTensor again = draw();
  EXPECT_EQ(0, std::memcmp(first.data.data(), again.data.data(), first.data.size()));
  EXPECT_NE(0, std::memcmp(first.data.data(), second.data.data(), first.data.size()));
}

TEST_P(BackendTest, QuantizedTensorsPerBlockRoundTrip) {
  HostTensor x(DType::F32, {4, 16}), scale(DType::F32, {4, 2});
  for (int64_t i = 0; i < x.numElements(); ++i)
    x.as<float>()[i] = static_cast<float>(i % 16) - 8.0f;
  for (int64_t i = 0; i < scale.numElements(); ++i)
    scale.as<float>()[i] = 0.5f;
  auto q = backend->quantize(upload(x), upload(scale));
  ASSERT_TRUE(q) << q.error().message;
  EXPECT_EQ(q->blockSize, 8);
  EXPECT_EQ(q->values.dtype(), DType::I8);
  HostTensor values = download(q->values);
  EXPECT_EQ(values.as<int8_t>()[0], -16); // -8 / 0.5
  auto back = backend->dequantize(*q);
  ASSERT_TRUE(back) << back.error().message;
  HostTensor restored = download(*back);
  for (int64_t i = 0; i < x.numElements(); ++i)
    ASSERT_EQ(restored.as<float>()[i], x.as<float>()[i]) << i;
  auto wrongBlocks = backend->quantize(upload(x), upload(HostTensor(DType::F32, {4, 3})));
  ASSERT_FALSE(wrongBlocks);
  EXPECT_NE(wrongBlocks.error().message.find("block"), std::string::npos);
}

TEST_P(BackendTest, SharedBackendIsWhereATensorsWorkGoes) {
  auto shared = Backend::shared(*DeviceId::parse(GetParam()));
  ASSERT_TRUE(shared) << shared.error().message;
  auto again = Backend::shared(*DeviceId::parse(GetParam()));
  EXPECT_EQ(shared->get(), again->get());
  auto t = (*shared)->upload(filled({16}, 1, 1));
  ASSERT_TRUE(t);
  auto owner = Backend::shared(t->device());
  ASSERT_TRUE(owner);
  auto doubled = (*owner)->apply("kiln.add", {*t, *t}, DType::F32, {16});
  ASSERT_TRUE(doubled) << doubled.error().message;
  auto host = (*owner)->download(*doubled);
  ASSERT_TRUE(host);
  EXPECT_EQ(host->as<float>()[5], 12.0f);
}

TEST_P(BackendTest, DtypeCapabilityQueries) {
  EXPECT_TRUE(backend->supportsDtype(DataType{ElementType::F32}));
  EXPECT_FALSE(backend->supportsDtype(DataType{ElementType::Bool, /*nativeBool=*/true}));
  EXPECT_TRUE(backend->dtypeUsage(DataType{ElementType::F32}).contains(DTypeUsage::Arithmetic));
}

TEST_P(BackendTest, StagingBufferHoldsData) {
  auto staging = backend->staging(1 << 20);
  ASSERT_TRUE(staging) << staging.error().message;
  std::memset(staging->data(), 7, staging->size());
  EXPECT_EQ(static_cast<unsigned char *>(staging->data())[12345], 7);
}

// A tensor's buffer is an address in its own backend's memory; another
// backend of the same device has its own buffer at that address (Vulkan:
// its own VkDevice and pages) and read it, returning success.
TEST_P(BackendTest, TensorsOfAnotherBackendOfTheSameDeviceAreRefused) {
  auto second = Backend::create(backend->device());
  ASSERT_TRUE(second) << second.error().message;
  Backend &other = **second;
  Tensor mine = upload(filled({64}, 1, 1));
  auto theirs = other.upload(filled({64}, -5, 0.5f));
  ASSERT_TRUE(theirs);
  auto expectRefused = [](const auto &result, const char *what) {
    ASSERT_FALSE(result) << what << " of another backend's tensor succeeded";
    EXPECT_EQ(result.error().kind, ErrorKind::InvalidArgument) << what;
    EXPECT_NE(result.error().message.find("another backend of"), std::string::npos)
        << what << ": " << result.error().message;
  };
  expectRefused(other.download(mine), "download");
  expectRefused(other.write(mine, filled({64}, 0, 0)), "write");
  expectRefused(other.apply("kiln.add", {mine, *theirs}, DType::F32, {64}), "apply");
  expectRefused(other.run("func.func @main(%a: tensor<64xf32>) -> tensor<64xf32> {\n"
                          "  return %a : tensor<64xf32>\n}\n",
                          {mine}),
                "run");
  expectRefused(backend->download(*theirs), "download");
  // The tensor outlives its backend: still refused by the other one, and
  // its own data was never touched.
  EXPECT_EQ(download(mine).as<float>()[3], 4.0f);
  backend.reset();
  expectRefused(other.download(mine), "download after its backend went");
  auto own = other.download(*theirs);
  ASSERT_TRUE(own) << own.error().message;
  EXPECT_EQ(own->as<float>()[3], -3.5f);
}

// Every entry point that takes a tensor checks its device first (write did
// not: a Vulkan tensor written through the CPU backend crashed).
TEST_P(BackendTest, TensorsOfAnotherDeviceAreRefusedEverywhere) {
  const char *otherName = std::string(GetParam()) == "cpu:0" ? "vulkan:0" : "cpu:0";
  DeviceId otherId = *DeviceId::parse(otherName);
  if (Backend::deviceCount(otherId.type) == 0)
    GTEST_SKIP() << otherName << ": no such device on this machine";
  auto created = Backend::create(otherId);
  ASSERT_TRUE(created) << created.error().message;
  Backend &other = **created;
  Tensor mine = upload(filled({8}, 1, 1));
  auto expectRefused = [&](const auto &result, const char *what) {
    ASSERT_FALSE(result) << what;
    EXPECT_NE(result.error().message.find(std::string("lives on ") + GetParam()),
              std::string::npos)
        << what << ": " << result.error().message;
  };
  expectRefused(other.write(mine, filled({8}, 0, 0)), "write");
  expectRefused(other.download(mine), "download");
  expectRefused(other.apply("kiln.neg", {mine}, DType::F32, {8}), "apply");
  expectRefused(other.quantize(mine, mine), "quantize");
  EXPECT_EQ(download(mine).as<float>()[0], 1.0f);
}

TEST_P(BackendTest, SizesThatOverflowAreRefused) {
  const std::vector<int64_t> wraps = {int64_t(1) << 62, 4}; // 2^66 bytes of f32
  auto bytes = tensorBytes(DType::F32, wraps);
  ASSERT_FALSE(bytes) << "sized " << *bytes;
  EXPECT_NE(bytes.error().message.find("overflows"), std::string::npos) << bytes.error().message;
  EXPECT_FALSE(tensorBytes(DType::F32, {4, -1}));
  EXPECT_EQ(tensorBytes(DType::I64, {0, int64_t(1) << 62}).value(), 0u);
  EXPECT_THROW(HostTensor(DType::F32, wraps), std::length_error);
  for (const std::vector<int64_t> &shape :
       {wraps, std::vector<int64_t>{int64_t(1) << 31, int64_t(1) << 31, 4}}) {
    auto random = backend->randomUniform(DType::F32, shape, 0, 1);
    ASSERT_FALSE(random);
    EXPECT_EQ(random.error().kind, ErrorKind::InvalidArgument) << random.error().message;
  }
  Tensor a = upload(filled({4}, 1, 1));
  auto applied = backend->apply("kiln.broadcast", {a}, DType::F32, {int64_t(1) << 62, 4});
  ASSERT_FALSE(applied);
  EXPECT_EQ(applied.error().kind, ErrorKind::InvalidArgument) << applied.error().message;
  // A host tensor whose data does not match its shape.
  HostTensor shortData(DType::F32, {4});
  shortData.shape = {4096};
  auto uploaded = backend->upload(shortData);
  ASSERT_FALSE(uploaded);
  EXPECT_NE(uploaded.error().message.find("bytes"), std::string::npos)
      << uploaded.error().message;
  auto written = backend->write(upload(filled({4096}, 0, 0)), shortData);
  ASSERT_FALSE(written);
  EXPECT_NE(written.error().message.find("bytes"), std::string::npos) << written.error().message;
}

// kiln_seed reached randomUniform only: random ops through apply and run
// took whatever key they were given.
TEST_P(BackendTest, SeedReachesEveryRandomOpPath) {
  const char *program =
      "func.func @main(%k: tensor<i64>) -> tensor<64xf32> {\n"
      "  %0 = kiln.random_normal %k {mean = 1.0 : f64, std = 2.0 : f64} : tensor<i64> -> "
      "tensor<64xf32>\n"
      "  return %0 : tensor<64xf32>\n}\n";
  auto draws = [&](uint64_t seed) {
    backend->seed(seed);
    std::vector<HostTensor> out;
    auto uniform = backend->apply("kiln.random_uniform", {}, DType::F32, {64});
    EXPECT_TRUE(uniform) << uniform.error().message;
    auto normal = backend->apply("kiln.random_normal", {}, DType::F32, {64}, "std = 3.0 : f64");
    EXPECT_TRUE(normal) << normal.error().message;
    auto method = backend->randomNormal(DType::F32, {64}, 0, 1);
    EXPECT_TRUE(method) << method.error().message;
    auto key = backend->randomKey();
    EXPECT_TRUE(key) << key.error().message;
    auto ran = key ? backend->run(program, {*key}) : std::unexpected(key.error());
    EXPECT_TRUE(ran) << ran.error().message;
    for (const auto *t : {uniform ? &*uniform : nullptr, normal ? &*normal : nullptr,
                          method ? &*method : nullptr, ran ? &ran->front() : nullptr})
      out.push_back(t ? download(*t) : HostTensor(DType::F32, {64}));
    return out;
  };
  std::vector<HostTensor> first = draws(7), again = draws(7), other = draws(8);
  for (size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(0, std::memcmp(first[i].data.data(), again[i].data.data(), first[i].data.size()))
        << "path " << i << ": the same seed gave other bits";
    EXPECT_NE(0, std::memcmp(first[i].data.data(), other[i].data.data(), first[i].data.size()))
        << "path " << i << ": another seed gave the same bits";
  }
  // Two draws of one seed differ from each other.
  EXPECT_NE(0, std::memcmp(first[1].data.data(), first[2].data.data(), first[1].data.size()));
}

INSTANTIATE_TEST_SUITE_P(Devices, BackendTest,
                         ::testing::Values("cpu:0", "vulkan:0", "cuda:0"),
                         [](const auto &info) {
                           std::string name = info.param;
                           return name.substr(0, name.find(':'));
                         });

} // namespace

namespace {
// Each CPU backend made a JIT that is never freed (the async runtime's
// workers may still run in its code); a framework that creates backends
// over and over grew without bound.
TEST(BackendLifetime, RepeatedCpuBackendsShareOneJitAndOneCopyOfEachProgram) {
  auto cycle = [] {
    auto created = Backend::create(*DeviceId::parse("cpu"));
    ASSERT_TRUE(created) << created.error().message;
    auto x = (*created)->upload(filled({16}, 1, 1));
    ASSERT_TRUE(x);
    auto y = (*created)->apply("kiln.mul", {*x, *x}, DType::F32, {16});
    ASSERT_TRUE(y) << y.error().message;
    EXPECT_EQ((*created)->download(*y)->as<float>()[2], 9.0f);
  };
  cycle();
  size_t loaded = CpuDevice::loadedObjectCount();
  for (int i = 0; i < 30; ++i)
    cycle();
  EXPECT_EQ(CpuDevice::loadedObjectCount(), loaded);
}
} // namespace
