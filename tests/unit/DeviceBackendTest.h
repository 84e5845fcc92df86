//===- DeviceBackendTest.h - a backend on each device kind, for tests -----===//
#ifndef KILN_TESTS_UNIT_DEVICEBACKENDTEST_H
#define KILN_TESTS_UNIT_DEVICEBACKENDTEST_H

#include "kiln/backend/Backend.h"

#include <gtest/gtest.h>

/// A backend on the device a test is instantiated with ("cpu:0",
/// "vulkan:0", "cuda:0"); a device this machine lacks is skipped, saying so.
class DeviceBackendTest : public ::testing::TestWithParam<const char *> {
protected:
  void SetUp() override {
    id = *kiln::DeviceId::parse(GetParam());
    if (kiln::Backend::deviceCount(id.type) == 0)
      GTEST_SKIP() << GetParam() << ": no such device on this machine";
    auto created = kiln::Backend::create(id);
    ASSERT_TRUE(created) << created.error().message;
    backend = std::move(*created);
  }
  kiln::Tensor upload(const kiln::HostTensor &host) {
    auto t = backend->upload(host);
    EXPECT_TRUE(t) << t.error().message;
    return t ? *t : kiln::Tensor();
  }
  kiln::HostTensor download(const kiln::Tensor &t) {
    auto host = backend->download(t);
    EXPECT_TRUE(host) << host.error().message;
    return host ? *host : kiln::HostTensor();
  }
  kiln::DeviceId id;
  std::unique_ptr<kiln::Backend> backend;
};

#endif
