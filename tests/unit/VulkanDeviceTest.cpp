//===- VulkanDeviceTest.cpp - Vulkan device enumeration ------------------===//
//
// CI installs Mesa's lavapipe, a Vulkan device on the CPU, so these run
// there; without a loader or device they check the reported reason instead.
//
//===----------------------------------------------------------------------===//
#include "kiln/runtime/VulkanDevice.h"

#include <gtest/gtest.h>

using namespace kiln;

TEST(VulkanDevice, NoDeviceGivesAReasonNotAnError) {
  if (VulkanDevice::deviceCount() > 0)
    GTEST_SKIP() << "this machine has Vulkan devices";
  EXPECT_FALSE(VulkanDevice::unavailableReason().empty());
  auto device = VulkanDevice::create(0);
  ASSERT_FALSE(device);
  EXPECT_EQ(device.error().kind, ErrorKind::InvalidArgument);
}

TEST(VulkanDevice, PropertiesComeFromTheDevice) {
  if (VulkanDevice::deviceCount() == 0)
    GTEST_SKIP() << "no Vulkan device: " << VulkanDevice::unavailableReason();
  auto device = VulkanDevice::create(0);
  ASSERT_TRUE(device) << device.error().message;
  const VulkanDeviceProperties &p = (*device)->properties();
  std::printf("vulkan:0 is %s, subgroup %u, shared %u B, %s\n", p.name.c_str(),
              p.subgroupSize, p.maxSharedMemoryBytes, p.fingerprint().c_str());
  EXPECT_FALSE(p.name.empty());
  ASSERT_GT(p.subgroupSize, 0u);
  EXPECT_EQ(p.subgroupSize & (p.subgroupSize - 1), 0u) << "a power of two";
  EXPECT_GE(p.maxSharedMemoryBytes, 16384u);
  EXPECT_GE(p.maxWorkgroupInvocations, 128u);
  EXPECT_EQ(p.fingerprint().rfind("vulkan-", 0), 0u);
  auto beyond = VulkanDevice::create(VulkanDevice::deviceCount());
  ASSERT_FALSE(beyond);
  EXPECT_EQ(beyond.error().kind, ErrorKind::InvalidArgument);
}
