//===- AdoptTest.cpp - tensors over memory kiln did not allocate ----------===//
#include "kiln/backend/Backend.h"

#include <gtest/gtest.h>

using namespace kiln;

namespace {

TEST(Adopt, ATensorOverHostMemoryIsReadAndKeptAlive) {
  auto backend = *Backend::shared(DeviceId{});
  auto owner = std::make_shared<std::vector<float>>(16 + 4);
  // 16-byte aligned start inside the vector.
  float *data = owner->data();
  while (reinterpret_cast<uintptr_t>(data) % 16)
    ++data;
  for (int i = 0; i < 4; ++i)
    data[i] = static_cast<float>(i + 1);
  std::weak_ptr<std::vector<float>> watch = owner;
  auto adopted = backend->adopt(reinterpret_cast<uint64_t>(data), DType::F32, {2, 2},
                                std::move(owner));
  ASSERT_TRUE(adopted) << adopted.error().message;
  EXPECT_FALSE(watch.expired());
  auto doubled = backend->apply("kiln.add", {*adopted, *adopted}, DType::F32, {2, 2});
  ASSERT_TRUE(doubled) << doubled.error().message;
  EXPECT_EQ(backend->download(*doubled)->as<float>()[3], 8.f);
  auto address = backend->dataAddress(*adopted);
  ASSERT_TRUE(address) << address.error().message;
  EXPECT_EQ(*address, reinterpret_cast<uint64_t>(data));
  *adopted = Tensor();
  EXPECT_TRUE(watch.expired()) << "the owner outlived the last tensor over its memory";
}

TEST(Adopt, MisalignedOrNullMemoryIsRefused) {
  auto backend = *Backend::shared(DeviceId{});
  alignas(16) static float data[8];
  auto misaligned = backend->adopt(reinterpret_cast<uint64_t>(data + 1), DType::F32, {4}, nullptr);
  ASSERT_FALSE(misaligned);
  EXPECT_EQ(misaligned.error().kind, ErrorKind::InvalidArgument);
  EXPECT_NE(misaligned.error().message.find("16-byte aligned"), std::string::npos);
  auto null = backend->adopt(0, DType::F32, {4}, nullptr);
  ASSERT_FALSE(null);
  EXPECT_NE(null.error().message.find("null pointer"), std::string::npos);
}

} // namespace
