//===- OpsTest.cpp - typed ops: coverage, inferred types, errors, caching -===//
#include "kiln/backend/Ops.h"

#include "kiln/Dialect/TypedOps.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <dlfcn.h>
#include <set>

using namespace kiln;

namespace {

Tensor upload(std::vector<int64_t> shape, DType type = DType::F32) {
  HostTensor host(type, std::move(shape));
  for (int64_t i = 0; i < host.numElements(); ++i) {
    if (type == DType::F32)
      host.as<float>()[i] = static_cast<float>(i);
    else if (type == DType::I64)
      host.as<int64_t>()[i] = 0;
    else if (type == DType::I32)
      host.as<int32_t>()[i] = static_cast<int32_t>(i);
  }
  auto t = (*Backend::shared(DeviceId{}))->upload(host);
  EXPECT_TRUE(t) << t.error().message;
  return *t;
}

HostTensor download(const Tensor &t) { return *(*Backend::shared(t.device()))->download(t); }

TEST(Ops, EveryDialectOpHasATypedCall) {
  std::set<std::string_view> covered(ops::coveredOps().begin(), ops::coveredOps().end());
  std::vector<std::string> dialect = dialectOpNames();
  ASSERT_GT(dialect.size(), 60u);
  for (const std::string &name : dialect)
    EXPECT_TRUE(covered.count(name)) << name << " has no typed op in kiln/backend/Ops.h";
  EXPECT_EQ(dialect.size(), covered.size()) << "Ops.h names an op the dialect lacks";
}

TEST(Ops, ResultTypesComeFromTheDialect) {
  Tensor a = upload({2, 3}), row = upload({3}), b = upload({3, 4});
  auto sum = ops::add(a, row);
  ASSERT_TRUE(sum) << sum.error().message;
  EXPECT_EQ(sum->shape(), (std::vector<int64_t>{2, 3}));
  auto mm = ops::matmul(a, b);
  ASSERT_TRUE(mm) << mm.error().message;
  EXPECT_EQ(mm->shape(), (std::vector<int64_t>{2, 4}));
  auto reduced = ops::reduce_sum(a, {1}, false);
  ASSERT_TRUE(reduced) << reduced.error().message;
  EXPECT_EQ(reduced->shape(), (std::vector<int64_t>{2}));
  HostTensor r = download(*reduced);
  EXPECT_EQ(r.as<float>()[0], 0.f + 1.f + 2.f);
  EXPECT_EQ(r.as<float>()[1], 3.f + 4.f + 5.f);
  auto less = ops::lt(a, row);
  ASSERT_TRUE(less) << less.error().message;
  EXPECT_EQ(less->dtype(), DType::Bool);
  auto arg = ops::argmax(a, 1, true);
  ASSERT_TRUE(arg) << arg.error().message;
  EXPECT_EQ(arg->dtype(), DType::I64);
  EXPECT_EQ(arg->shape(), (std::vector<int64_t>{2, 1}));
  auto sliced = ops::slice(a, {0, 1}, {2, 3}, {1, 2});
  ASSERT_TRUE(sliced) << sliced.error().message;
  EXPECT_EQ(sliced->shape(), (std::vector<int64_t>{2, 1}));
  auto joined = ops::concat({a, a}, 0);
  ASSERT_TRUE(joined) << joined.error().message;
  EXPECT_EQ(joined->shape(), (std::vector<int64_t>{4, 3}));
  auto casted = ops::cast(a, DType::F16);
  ASSERT_TRUE(casted) << casted.error().message;
  EXPECT_EQ(casted->dtype(), DType::F16);
  auto filled = ops::fill(DeviceId{}, DType::I32, {2, 2}, 7.0);
  ASSERT_TRUE(filled) << filled.error().message;
  EXPECT_EQ(download(*filled).as<int32_t>()[3], 7);
}

TEST(Ops, BadOperandsGiveTheVerifiersMessage) {
  Tensor a = upload({2, 3}), b = upload({4}), i = upload({2, 3}, DType::I32);
  auto mismatch = ops::add(a, b);
  ASSERT_FALSE(mismatch);
  EXPECT_EQ(mismatch.error().kind, ErrorKind::InvalidArgument);
  EXPECT_NE(mismatch.error().message.find("kiln.add"), std::string::npos)
      << mismatch.error().message;
  EXPECT_NE(mismatch.error().message.find("broadcast"), std::string::npos)
      << mismatch.error().message;
  auto types = ops::add(a, i);
  ASSERT_FALSE(types);
  EXPECT_NE(types.error().message.find("no implicit promotion"), std::string::npos)
      << types.error().message;
  auto dim = ops::softmax(a, 5);
  ASSERT_FALSE(dim);
  EXPECT_EQ(dim.error().kind, ErrorKind::InvalidArgument);
  EXPECT_NE(dim.error().message.find("out of range for rank 2"), std::string::npos)
      << dim.error().message;
  auto contraction = ops::matmul(a, a);
  ASSERT_FALSE(contraction);
  EXPECT_NE(contraction.error().message.find("contraction sizes differ"), std::string::npos)
      << contraction.error().message;
}

TEST(Ops, ConvPoolsAndAttention) {
  // x[n, c, h, w] = its linear index; a 2x2 box filter of ones per group.
  Tensor x = upload({1, 2, 4, 4}), w = *ops::fill(DeviceId{}, DType::F32, {2, 1, 2, 2}, 1.0);
  Tensor bias = *ops::fill(DeviceId{}, DType::F32, {2}, 0.5);
  auto conv = ops::conv2d(x, w, bias, {2, 2}, {0, 0}, {1, 1}, 2);
  ASSERT_TRUE(conv) << conv.error().message;
  EXPECT_EQ(conv->shape(), (std::vector<int64_t>{1, 2, 2, 2}));
  EXPECT_EQ(download(*conv).as<float>()[0], 0.f + 1.f + 4.f + 5.f + 0.5f);
  auto maxed = ops::max_pool2d(x, {3, 3}, ops::Pair{2, 2}, {1, 1});
  ASSERT_TRUE(maxed) << maxed.error().message;
  EXPECT_EQ(maxed->shape(), (std::vector<int64_t>{1, 2, 2, 2}));
  EXPECT_EQ(download(*maxed).as<float>()[0], 5.f);
  auto averaged = ops::avg_pool2d(x, {2, 2});
  ASSERT_TRUE(averaged) << averaged.error().message;
  EXPECT_EQ(download(*averaged).as<float>()[0], (0.f + 1.f + 4.f + 5.f) / 4);
  // One key: the output is its value whatever the scores.
  Tensor q = upload({3, 4}), k = upload({1, 4}), v = upload({1, 2});
  auto att = ops::attention(q, k, v, {}, false, 0.25);
  ASSERT_TRUE(att) << att.error().message;
  EXPECT_EQ(att->shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(download(*att).as<float>()[5], 1.f);
  auto groups = ops::conv2d(x, w, {}, {1, 1}, {0, 0}, {1, 1}, 3);
  ASSERT_FALSE(groups);
  EXPECT_EQ(groups.error().kind, ErrorKind::InvalidArgument);
  EXPECT_NE(groups.error().message.find("groups = 3 does not divide the input channels 2"),
            std::string::npos)
      << groups.error().message;
  auto heads = ops::attention(q, upload({1, 3}), v);
  ASSERT_FALSE(heads);
  EXPECT_NE(heads.error().message.find("mismatched head dims"), std::string::npos)
      << heads.error().message;
}

TEST(Ops, ARepeatedCallInfersAndCompilesNothing) {
  Tensor a = upload({5, 7}), b = upload({5, 7});
  ASSERT_TRUE(ops::mul(a, b));
  size_t inferred = ops::inferredSignatures();
  Engine &engine = (*Backend::shared(DeviceId{}))->kernels();
  size_t compiled = engine.compileCount();
  for (int i = 0; i < 10; ++i)
    ASSERT_TRUE(ops::mul(a, b));
  EXPECT_EQ(ops::inferredSignatures(), inferred);
  EXPECT_EQ(engine.compileCount(), compiled);
}

TEST(Ops, ASmallCpuOpRunsOnTheCallingThread) {
  // The CPU kernels' task runtime (libkiln-cpu-runtime.so, loaded global
  // by the CPU backend) counts the tasks it hands to its workers.
  Tensor small = upload({4}), large = upload({1 << 20});
  auto *tasksSubmitted = reinterpret_cast<uint64_t (*)()>(
      dlsym(RTLD_DEFAULT, "kiln_cpu_runtime_tasks_submitted"));
  ASSERT_NE(tasksSubmitted, nullptr);
  ASSERT_TRUE(ops::add(small, small));
  uint64_t before = tasksSubmitted();
  for (int i = 0; i < 100; ++i)
    ASSERT_TRUE(ops::add(small, small));
  EXPECT_EQ(tasksSubmitted(), before) << "a 4-element add woke worker threads";
  // The counter sees a loop that is worth splitting.
  ASSERT_TRUE(ops::add(large, large));
  EXPECT_GT(tasksSubmitted(), before);
}

} // namespace
