//===- EngineTest.cpp - engine, kernel cache and device ids --------------===//
#include "kiln/BuildId.h"
#include "kiln/Lowering/CompilerLibrary.h"
#include "kiln/backend/Engine.h"
#include "kiln/runtime/common/KilnLibrary.h"
#include "kiln/runtime/cuda/CudaDevice.h"
#include "kiln/runtime/vulkan/VulkanDevice.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>

using namespace kiln;

namespace {
constexpr const char *kAddProgram = R"(
func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln.add %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
})";

HostTensor vector(std::vector<float> values) {
  HostTensor t(DType::F32, {static_cast<int64_t>(values.size())});
  std::copy(values.begin(), values.end(), t.as<float>());
  return t;
}

std::unique_ptr<Engine> cpuEngine() {
  auto engine = Engine::create({DeviceType::Cpu, 0});
  EXPECT_TRUE(engine.has_value());
  return std::move(*engine);
}
} // namespace

TEST(KernelCache, SameProgramCompilesOnce) {
  auto engine = cpuEngine();
  auto first = engine->compile(kAddProgram);
  auto second = engine->compile(kAddProgram);
  ASSERT_TRUE(first && second);
  EXPECT_EQ(engine->compileCount(), 1u);
  EXPECT_EQ(engine->cacheHits(), 1u);
  EXPECT_EQ(first->get(), second->get());
  auto out = (*second)->run({vector({1, 2, 3, 4}), vector({10, 20, 30, 40})});
  ASSERT_TRUE(out);
  EXPECT_FLOAT_EQ((*out)[0].as<float>()[3], 44.0f);
}

TEST(KernelCache, ReformattedProgramHitsTheCanonicalKey) {
  auto engine = cpuEngine();
  ASSERT_TRUE(engine->compile(kAddProgram));
  std::string reformatted = R"(// the same program, other names and layout
func.func @main(%x: tensor<4xf32>,   %y: tensor<4xf32>) -> tensor<4xf32> {
  %sum = "kiln.add"(%x, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %sum : tensor<4xf32>
})";
  ASSERT_TRUE(engine->compile(reformatted));
  EXPECT_EQ(engine->compileCount(), 1u);
}

TEST(KernelCache, AMissParsesTheProgramOnce) {
  auto engine = cpuEngine();
  // The canonical key and the compile share one parse.
  ASSERT_TRUE(engine->compile(kAddProgram));
  EXPECT_EQ(engine->compileCount(), 1u);
  EXPECT_EQ(engine->parseCount(), 1u);
  // Text seen before hits without parsing.
  ASSERT_TRUE(engine->compile(kAddProgram));
  EXPECT_EQ(engine->parseCount(), 1u);
  // New text is parsed once for its canonical key, which hits.
  ASSERT_TRUE(engine->compile(std::string(kAddProgram) + "\n// reformatted\n"));
  EXPECT_EQ(engine->parseCount(), 2u);
  EXPECT_EQ(engine->compileCount(), 1u);
}

TEST(Compiler, ParsedProgramKnowsItsCanonicalTextAndCompilesOnce) {
  auto compilerOwner = createCompiler();
  Compiler &compiler = *compilerOwner;
  auto parsed = compiler.parse(kAddProgram);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_NE(parsed->canonicalText().find("\"kiln.add\"("), std::string::npos)
      << parsed->canonicalText();
  EXPECT_EQ(parsed->canonicalText().find("loc("), std::string::npos);
  auto compiled = compiler.compileForCpu(std::move(*parsed), {});
  ASSERT_TRUE(compiled) << compiled.error().message;
  EXPECT_EQ(compiler.parseCount(), 1u);
  EXPECT_EQ(compiled->stageTimes.front().stage, "parse");
  auto bad = compiler.parse("func.func @main(");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind, ErrorKind::InvalidArgument);
  EXPECT_NE(bad.error().message.find("program:1:"), std::string::npos) << bad.error().message;
}

TEST(KernelCache, OtherProgramOrEntryCompilesAgain) {
  auto engine = cpuEngine();
  ASSERT_TRUE(engine->compile(kAddProgram));
  std::string other = kAddProgram;
  other.replace(other.find("kiln.add"), 8, "kiln.mul");
  ASSERT_TRUE(engine->compile(other));
  EXPECT_EQ(engine->compileCount(), 2u);
  std::string twoEntries = std::string(kAddProgram) + R"(
func.func @neg(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln.neg %a : tensor<4xf32>
  return %0 : tensor<4xf32>
})";
  ASSERT_TRUE(engine->compile(twoEntries, {"main", ""}));
  ASSERT_TRUE(engine->compile(twoEntries, {"neg", ""}));
  EXPECT_EQ(engine->compileCount(), 4u);
}

TEST(Engine, MalformedProgramIsInvalidArgumentWithLocation) {
  auto engine = cpuEngine();
  auto program = engine->compile("func.func @main(%a: tensor<4xf32>) {\n  %0 = kiln.exp %a : tensor<4xi32>\n}");
  ASSERT_FALSE(program);
  EXPECT_EQ(program.error().kind, ErrorKind::InvalidArgument);
  EXPECT_NE(program.error().message.find("program:2:"), std::string::npos)
      << program.error().message;
}

TEST(Engine, UnknownEntryIsInvalidArgument) {
  auto engine = cpuEngine();
  auto program = engine->compile(kAddProgram, {"nope", ""});
  ASSERT_FALSE(program);
  EXPECT_EQ(program.error().kind, ErrorKind::InvalidArgument);
  EXPECT_NE(program.error().message.find("@nope"), std::string::npos);
}

TEST(Engine, WrongInputShapeIsRejectedBeforeRunning) {
  auto engine = cpuEngine();
  auto program = engine->compile(kAddProgram);
  ASSERT_TRUE(program);
  auto out = (*program)->run({vector({1, 2, 3}), vector({1, 2, 3, 4})});
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().kind, ErrorKind::InvalidArgument);
  EXPECT_NE(out.error().message.find("input #0 is tensor<3xf32>"), std::string::npos)
      << out.error().message;
}

TEST(Engine, MissingCudaAndVulkanDevicesAreClearErrors) {
  if (CudaDevice::deviceCount() == 0) {
    auto cuda = Engine::create({DeviceType::Cuda, 0});
    ASSERT_FALSE(cuda);
    EXPECT_EQ(cuda.error().kind, ErrorKind::InvalidArgument);
    EXPECT_NE(cuda.error().message.find("cuda:0 does not exist"), std::string::npos);
  }
  auto beyond = Engine::create({DeviceType::Cuda, 99});
  ASSERT_FALSE(beyond);
  EXPECT_EQ(beyond.error().kind, ErrorKind::InvalidArgument);
  auto vulkan = Engine::create({DeviceType::Vulkan, 99});
  ASSERT_FALSE(vulkan);
  EXPECT_EQ(vulkan.error().kind, ErrorKind::InvalidArgument);
  EXPECT_NE(vulkan.error().message.find("vulkan:99 does not exist"), std::string::npos);
}

TEST(Engine, VulkanRunsAProgramAndCachesIt) {
  if (VulkanDevice::deviceCount() == 0)
    GTEST_SKIP() << "no Vulkan device: " << VulkanDevice::unavailableReason();
  auto engine = Engine::create({DeviceType::Vulkan, 0});
  ASSERT_TRUE(engine) << engine.error().message;
  const char *source = R"(
    func.func @main(%a: tensor<3x5xf32>, %b: tensor<5xf32>) -> tensor<3xf32> {
      %0 = kiln.mul %a, %b : (tensor<3x5xf32>, tensor<5xf32>) -> tensor<3x5xf32>
      %1 = kiln.reduce_max %0 {dims = array<i64: 1>} : tensor<3x5xf32> -> tensor<3xf32>
      return %1 : tensor<3xf32>
    })";
  auto program = (*engine)->compile(source);
  ASSERT_TRUE(program) << program.error().message;
  HostTensor a(DType::F32, {3, 5}), b(DType::F32, {5});
  float *pa = reinterpret_cast<float *>(a.data.data());
  float *pb = reinterpret_cast<float *>(b.data.data());
  for (int i = 0; i < 15; ++i)
    pa[i] = float(i % 7) - 3;
  for (int j = 0; j < 5; ++j)
    pb[j] = float(j) * 0.5f;
  pa[7] = std::numeric_limits<float>::quiet_NaN(); // row 1: max is NaN
  auto out = (*program)->run({a, b});
  ASSERT_TRUE(out) << out.error().message;
  const float *r = reinterpret_cast<const float *>((*out)[0].data.data());
  for (int i : {0, 2}) {
    float want = -1e30f;
    for (int j = 0; j < 5; ++j)
      want = std::max(want, pa[i * 5 + j] * pb[j]);
    EXPECT_EQ(r[i], want) << "row " << i;
  }
  EXPECT_TRUE(std::isnan(r[1]));
  ASSERT_TRUE((*engine)->compile(source));
  EXPECT_EQ((*engine)->compileCount(), 1u);
  EXPECT_EQ((*engine)->cacheHits(), 1u);
}

TEST(Compiler, VulkanNamesTheFeatureAProgramLacks) {
  auto compilerOwner = createCompiler();
  Compiler &compiler = *compilerOwner;
  CompileOptions options;
  // `op` on tensor<4xT> is refused as unsupported, naming `feature`.
  auto expectRefused = [&](const std::string &type, const std::string &feature) {
    const std::string t = "tensor<4x" + type + ">";
    auto compiled = compiler.compileForVulkan(
        "func.func @main(%a: " + t + ") -> " + t + " {\n  %0 = kiln.add %a, %a : (" + t + ", " +
            t + ") -> " + t + "\n  return %0 : " + t + "\n}",
        options);
    ASSERT_FALSE(compiled) << type;
    EXPECT_EQ(compiled.error().kind, ErrorKind::Unsupported);
    EXPECT_NE(compiled.error().message.find(feature), std::string::npos)
        << compiled.error().message;
  };
  options.vulkan.float64 = false;
  expectRefused("f64", "shaderFloat64");
  // Casts of wide ints to bf16 round once without f64 (which it lacks).
  auto ints = compiler.compileForVulkan(R"(
    func.func @main(%a: tensor<4xi32>) -> tensor<4xbf16> {
      %0 = kiln.cast %a : tensor<4xi32> -> tensor<4xbf16>
      return %0 : tensor<4xbf16>
    })", options);
  EXPECT_TRUE(ints) << ints.error().message;
  // bf16 is 16-bit integer bits on Vulkan.
  options.vulkan.int16 = false;
  expectRefused("bf16", "shaderInt16");
}

TEST(DeviceId, Parses) {
  auto cuda = DeviceId::parse("cuda:3");
  ASSERT_TRUE(cuda);
  EXPECT_EQ(cuda->type, DeviceType::Cuda);
  EXPECT_EQ(cuda->index, 3);
  EXPECT_FALSE(DeviceId::parse("tpu"));
  EXPECT_FALSE(DeviceId::parse("cuda:x"));
  EXPECT_FALSE(DeviceId::parse("cpu:-1"));
  auto unknown = DeviceId::parse("tpu:0");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("expected cpu[:N], cuda[:N] or vulkan[:N]"),
            std::string::npos)
      << unknown.error().message;
}

TEST(TargetRegistry, EveryKindOnceUnderItsName) {
  std::vector<std::string> names;
  for (const TargetKind *kind : targetKinds()) {
    names.emplace_back(kind->name);
    EXPECT_EQ(&targetKind(kind->type), kind) << kind->name;
    auto id = DeviceId::parse(std::string(kind->name) + ":0");
    ASSERT_TRUE(id) << id.error().message;
    EXPECT_EQ(id->type, kind->type);
    EXPECT_EQ(id->toString(), std::string(kind->name) + ":0");
    EXPECT_GE(kind->deviceCount(), 0);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"cpu", "cuda", "vulkan"}));
}

TEST(TargetRegistry, EveryKindCompilesWithoutADevice) {
  auto compilerOwner = createCompiler();
  Compiler &compiler = *compilerOwner;
  for (const TargetKind *kind : targetKinds()) {
    auto compiled = kind->compileOffline(compiler, kAddProgram, CompileOptions{});
    ASSERT_TRUE(compiled) << kind->name << ": " << compiled.error().message;
    EXPECT_EQ(compiled->program.kernelCount, 1u) << kind->name;
    EXPECT_EQ(compiled->program.inputs.size(), 2u) << kind->name;
    EXPECT_FALSE(compiled->artifacts.empty()) << kind->name;
  }
}

TEST(TargetRegistry, CpuTargetNamesTheHost) {
  auto engine = cpuEngine();
  // The CPU target's fingerprint names the host (triple, CPU, features).
  EXPECT_EQ(engine->target().fingerprint().rfind("cpu-", 0), 0u)
      << engine->target().fingerprint();
  EXPECT_NE(engine->target().fingerprint().find('+'), std::string::npos);
  EXPECT_EQ(engine->target().model(), "host");
}

TEST(Compiler, CubinThroughPtxasFailureCarriesAReproLine) {
  auto compilerOwner = createCompiler();
  Compiler &compiler = *compilerOwner;
  CompileOptions options;
  options.ptxas = "false"; // a "ptxas" that always fails
  auto compiled = compiler.compileForCuda(kAddProgram, options);
  ASSERT_FALSE(compiled);
  EXPECT_EQ(compiled.error().kind, ErrorKind::Compile);
  EXPECT_NE(compiled.error().message.find("ptxas failed"), std::string::npos);
  EXPECT_NE(compiled.error().message.find("repro: "), std::string::npos)
      << compiled.error().message;
  options.ptxas = "no-such-ptxas-anywhere";
  auto missing = compiler.compileForCuda(kAddProgram, options);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().kind, ErrorKind::InvalidArgument);
}

// A library path named by its variable is the only one tried: a missing
// file or another build's library there is an error naming it, never a
// silent fall back to the library next to the binary (which loads when the
// variable is unset).
TEST(KilnLibrary, ANamedPathIsTheOnlyOneTried) {
  KilnLibrary compiler{"compiler", kCompilerLibraryFile, kCompilerLibrarySymbol,
                       "KILN_TEST_COMPILER_LIBRARY", "/nonexistent/lib"};
  unsetenv("KILN_TEST_COMPILER_LIBRARY");
  ASSERT_TRUE(loadKilnLibrary(compiler, kBuildId).has_value());
  setenv("KILN_TEST_COMPILER_LIBRARY", "/nonexistent/libkiln-compiler.so", 1);
  auto missing = loadKilnLibrary(compiler, kBuildId);
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().message.find("/nonexistent/libkiln-compiler.so: does not exist"),
            std::string::npos)
      << missing.error().message;
  EXPECT_NE(missing.error().message.find("KILN_TEST_COMPILER_LIBRARY"), std::string::npos);
  unsetenv("KILN_TEST_COMPILER_LIBRARY");
  // Every library found is another build's (another build id).
  auto foreign = loadKilnLibrary(compiler, "another-build");
  ASSERT_FALSE(foreign.has_value());
  EXPECT_NE(foreign.error().message.find("from another kiln build"), std::string::npos)
      << foreign.error().message;
}
