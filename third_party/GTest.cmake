# GoogleTest (Debian: libgtest-dev): the unit tests. Imported targets
# GTest::gtest, GTest::gtest_main; gtest_discover_tests from CMake's module.
find_package(GTest 1.10 REQUIRED CONFIG)
include(GoogleTest)
