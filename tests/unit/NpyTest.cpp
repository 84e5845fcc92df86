//===- NpyTest.cpp - .npy reading and writing ----------------------------===//
#include "kiln/runtime/common/Npy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string_view>

using namespace kiln;

namespace {
std::string tempPath(const std::string &name) {
  return (std::filesystem::temp_directory_path() / ("kiln-npy-" + name)).string();
}

/// A version 1.0 .npy file with the header dict `dict`, followed by `data`.
std::string writeRawNpy(const std::string &name, std::string dict,
                        std::string_view data = {}) {
  dict.append((64 - (10 + dict.size() + 1) % 64) % 64, ' ');
  dict += '\n';
  std::string path = tempPath(name);
  std::ofstream out(path, std::ios::binary);
  out.write("\x93NUMPY\x01\x00", 8);
  out.put(static_cast<char>(dict.size() & 0xff))
      .put(static_cast<char>(dict.size() >> 8));
  out << dict;
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  return path;
}

void expectError(const std::string &path, const std::string &message) {
  auto t = readNpy(path);
  ASSERT_FALSE(t) << path << " was read";
  EXPECT_NE(t.error().message.find(message), std::string::npos)
      << t.error().message;
}
} // namespace

TEST(Npy, RoundTripsEveryDType) {
  for (DType t : {DType::F64, DType::F32, DType::F16, DType::I8, DType::I16,
                  DType::I32, DType::I64, DType::U8, DType::U16, DType::U32,
                  DType::U64, DType::Bool}) {
    HostTensor tensor(t, {2, 3});
    for (size_t i = 0; i < tensor.data.size(); ++i)
      tensor.data[i] = static_cast<std::byte>(t == DType::Bool ? i % 2 : i * 7);
    std::string path = tempPath(std::string(dtypeName(t)) + ".npy");
    ASSERT_TRUE(writeNpy(path, tensor));
    auto back = readNpy(path);
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_EQ(back->dtype, t);
    EXPECT_EQ(back->shape, tensor.shape);
    EXPECT_EQ(back->data, tensor.data);
  }
}

TEST(Npy, ScalarAndVectorShapes) {
  for (std::vector<int64_t> shape : {std::vector<int64_t>{}, {5}, {0, 3}}) {
    HostTensor tensor(DType::F32, shape);
    std::string path = tempPath("shape.npy");
    ASSERT_TRUE(writeNpy(path, tensor));
    auto back = readNpy(path);
    ASSERT_TRUE(back);
    EXPECT_EQ(back->shape, shape);
  }
}

TEST(Npy, FortranOrderBecomesRowMajor) {
  int32_t columnMajor[] = {0, 3, 1, 4, 2, 5}; // [[0 1 2] [3 4 5]]
  std::string path = writeRawNpy(
      "fortran.npy", "{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3), }",
      std::string_view(reinterpret_cast<const char *>(columnMajor),
                        sizeof columnMajor));
  auto t = readNpy(path);
  ASSERT_TRUE(t) << t.error().message;
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(t->as<int32_t>()[i], i);
}

TEST(Npy, CorruptFilesGiveErrorsThatNameTheProblem) {
  std::string path = tempPath("bad.npy");
  std::ofstream(path) << "not numpy";
  auto bad = readNpy(path);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("bad magic"), std::string::npos);

  HostTensor tensor(DType::F32, {4, 4});
  ASSERT_TRUE(writeNpy(path, tensor));
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 5);
  auto truncated = readNpy(path);
  ASSERT_FALSE(truncated);
  EXPECT_NE(truncated.error().message.find("truncated data"), std::string::npos);

  auto missing = readNpy(tempPath("does-not-exist.npy"));
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("cannot open"), std::string::npos);
}

TEST(Npy, ShapesWhoseSizeOverflowsAreRejected) {
  // 2^62 x 4 f32 is 2^66 bytes: a wrapped size of 0 must not pass as "no
  // data needed".
  expectError(writeRawNpy("huge.npy", "{'descr': '<f4', 'fortran_order': False, "
                                      "'shape': (4611686018427387904, 4), }"),
              "tensor<4611686018427387904x4xf32> is too large");
  expectError(writeRawNpy("huge-dim.npy", "{'descr': '<f4', 'fortran_order': "
                                          "False, 'shape': (99999999999999999999,), }"),
              "shape entry 99999999999999999999 is out of range");
}

TEST(Npy, ShapeEntriesMustBeSizes) {
  expectError(writeRawNpy("negative.npy", "{'descr': '<f4', 'fortran_order': "
                                          "False, 'shape': (-1, 3), }",
                          std::string(12, '\0')),
              "shape entry '-1' is not a size");
}

TEST(Npy, LongHeadersAreReadInOnePass) {
  // 20000 shape entries (60 KB): std::regex recursed per character here and
  // overflowed the stack.
  std::string dims;
  for (int i = 0; i < 20000; ++i)
    dims += "1, ";
  auto t = readNpy(writeRawNpy(
      "long.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }",
      std::string(4, '\0')));
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->shape.size(), 20000u);
}

TEST(Npy, EmptyTensorsHaveNoData) {
  std::string path = writeRawNpy(
      "empty.npy", "{'descr': '<f8', 'fortran_order': True, 'shape': (0, 3), }");
  auto t = readNpy(path);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->shape, (std::vector<int64_t>{0, 3}));
  EXPECT_TRUE(t->data.empty());
}

TEST(Npy, ADirectoryIsNotAFile) {
  expectError(std::filesystem::temp_directory_path().string(),
              "is a directory, not a .npy file");
}

TEST(Npy, ParsesBytesAsReadNpyReadsTheFile) {
  HostTensor tensor(DType::I16, {3, 2});
  for (size_t i = 0; i < tensor.data.size(); ++i)
    tensor.data[i] = static_cast<std::byte>(i);
  std::string path = tempPath("bytes.npy");
  ASSERT_TRUE(writeNpy(path, tensor));
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto parsed = parseNpy(bytes, "in memory");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->shape, tensor.shape);
  EXPECT_EQ(parsed->data, tensor.data);
  auto bad = parseNpy(bytes.substr(0, 8), "in memory");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message.rfind("in memory: ", 0), 0u) << bad.error().message;
}

TEST(HalfFloats, ConvertWithRoundToNearestEven) {
  EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(halfToFloat(0x3c00), 1.0f);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00); // rounds to inf
  EXPECT_EQ(halfToFloat(floatToHalf(1e-7f)), halfToFloat(0x0002));
  EXPECT_EQ(floatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16ToFloat(0x3f80), 1.0f);
}

// Every f8 pattern decodes to its value (OCP formats) and encodes back;
// between two values the nearer wins, a tie the even pattern; beyond the
// range E4M3FN gives NaN (it has no inf), E5M2 inf.
TEST(Float8, ConvertsEveryPatternAndRoundsToNearestEven) {
  for (DType type : {DType::F8E4M3FN, DType::F8E5M2}) {
    const int mantissa = type == DType::F8E5M2 ? 2 : 3, bias = type == DType::F8E5M2 ? 15 : 7;
    for (int bits = 0; bits < 256; ++bits) {
      const int exp = (bits & 0x7f) >> mantissa, man = bits & ((1 << mantissa) - 1);
      const bool nan = type == DType::F8E5M2 ? exp == 31 && man : (bits & 0x7f) == 0x7f;
      const float got = float8ToFloat(static_cast<uint8_t>(bits), type);
      if (nan) {
        EXPECT_TRUE(std::isnan(got)) << bits;
        continue;
      }
      double want = exp == 0 ? std::ldexp(man, 1 - bias - mantissa)
                             : std::ldexp(1.0 + std::ldexp(man, -mantissa), exp - bias);
      if (type == DType::F8E5M2 && exp == 31)
        want = INFINITY;
      EXPECT_EQ(got, bits & 0x80 ? -want : want) << bits;
      EXPECT_EQ(floatToFloat8(got, type), bits) << bits;
    }
  }
  EXPECT_EQ(floatToFloat8(1.0625f, DType::F8E4M3FN), 0x38);  // tie: 1.0 (even)
  EXPECT_EQ(floatToFloat8(1.1875f, DType::F8E4M3FN), 0x3a);  // tie: 1.25 (even)
  EXPECT_EQ(floatToFloat8(1.07f, DType::F8E4M3FN), 0x39);    // nearer 1.125
  EXPECT_EQ(floatToFloat8(464.0f, DType::F8E4M3FN), 0x7e);   // tie: 448
  EXPECT_EQ(floatToFloat8(470.0f, DType::F8E4M3FN), 0x7f);   // NaN
  EXPECT_EQ(floatToFloat8(-INFINITY, DType::F8E4M3FN), 0xff);
  EXPECT_EQ(floatToFloat8(61440.0f, DType::F8E5M2), 0x7c);   // tie: inf
  EXPECT_EQ(floatToFloat8(1e-9f, DType::F8E5M2), 0x00);      // below half the least
  EXPECT_EQ(floatToFloat8(std::ldexp(1.5f, -16), DType::F8E5M2), 0x02); // subnormal tie: even
  EXPECT_EQ(dtypeFromName("f8E4M3FN"), DType::F8E4M3FN);
  EXPECT_EQ(dtypeSize(DType::F8E5M2), 1u);
}
