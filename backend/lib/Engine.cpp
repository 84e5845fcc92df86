//===- Engine.cpp - compile kiln programs and run them on a device -------===//
#include "kiln/backend/Engine.h"

#include <charconv>

#ifndef KILN_VERSION
#define KILN_VERSION "dev"
#endif

namespace kiln {

Expected<DeviceId> DeviceId::parse(std::string_view text) {
  DeviceId id;
  std::string_view kind = text.substr(0, text.find(':'));
  if (kind == "cpu")
    id.type = DeviceType::Cpu;
  else if (kind == "cuda")
    id.type = DeviceType::Cuda;
  else if (kind == "vulkan")
    id.type = DeviceType::Vulkan;
  else
    return makeError(ErrorKind::InvalidArgument,
                     "unknown device '" + std::string(text) +
                         "' (expected cpu, cuda[:N] or vulkan[:N])");
  if (kind.size() < text.size()) {
    std::string_view n = text.substr(kind.size() + 1);
    auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), id.index);
    if (ec != std::errc() || end != n.data() + n.size() || id.index < 0)
      return makeError(ErrorKind::InvalidArgument,
                       "bad device index in '" + std::string(text) + "'");
  }
  return id;
}

std::string DeviceId::toString() const {
  const char *names[] = {"cpu", "cuda", "vulkan"};
  return std::string(names[static_cast<int>(type)]) + ":" + std::to_string(index);
}

Expected<std::vector<HostTensor>>
Program::run(const std::vector<HostTensor> &inputs) const {
  const auto &want = compiled.inputs;
  if (inputs.size() != want.size())
    return makeError(ErrorKind::InvalidArgument,
                     "program takes " + std::to_string(want.size()) +
                         " inputs, got " + std::to_string(inputs.size()));
  std::vector<void *> buffers;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].dtype != want[i].dtype || inputs[i].shape != want[i].shape)
      return makeError(ErrorKind::InvalidArgument,
                       "input #" + std::to_string(i) + " is " +
                           describeTensorType(inputs[i].dtype, inputs[i].shape) +
                           ", the program expects " +
                           describeTensorType(want[i].dtype, want[i].shape));
    buffers.push_back(const_cast<std::byte *>(inputs[i].data.data()));
  }
  std::vector<HostTensor> outputs;
  outputs.reserve(compiled.outputs.size());
  for (const TensorSignature &s : compiled.outputs) {
    outputs.emplace_back(s.dtype, s.shape);
    buffers.push_back(outputs.back().data.data());
  }
  if (auto ok = runner(buffers.data()); !ok)
    return std::unexpected(ok.error());
  return outputs;
}

/// The intermediate buffers of `plan`: after its inputs and outputs.
static std::vector<size_t> temporariesOf(const GpuPlan &plan) {
  return {plan.bufferBytes.begin() + plan.inputCount + plan.outputCount,
          plan.bufferBytes.end()};
}

Program::Program(CompiledProgram compiled, std::shared_ptr<VulkanProgram> vulkan)
    : compiled(std::move(compiled)),
      runner([vulkan](void **buffers) { return vulkan->run(buffers); }),
      temporaries(temporariesOf(vulkan->gpuPlan())), vulkan(vulkan) {}

Expected<void> Program::launch(const std::vector<uint64_t> &deviceBuffers) const {
  if (launcher)
    return launcher(deviceBuffers);
  if (vulkan)
    return makeError(ErrorKind::InvalidArgument,
                     "a Vulkan program launches on device buffers through a VulkanExecutor");
  std::vector<void *> pointers;
  for (uint64_t address : deviceBuffers)
    pointers.push_back(reinterpret_cast<void *>(address));
  return runner(pointers.data());
}

Expected<std::unique_ptr<Engine>> Engine::create(DeviceId device) {
  std::unique_ptr<Engine> engine(new Engine(device));
  switch (device.type) {
  case DeviceType::Cpu: {
    if (device.index != 0)
      return makeError(ErrorKind::InvalidArgument,
                       "device " + device.toString() +
                           " does not exist (one CPU device: cpu:0)");
    auto cpu = CpuDevice::create();
    if (!cpu)
      return std::unexpected(cpu.error());
    engine->cpu = std::move(*cpu);
    return engine;
  }
  case DeviceType::Cuda: {
    auto cuda = CudaDevice::create(device.index);
    if (!cuda)
      return std::unexpected(cuda.error());
    engine->cuda = std::move(*cuda);
    return engine;
  }
  case DeviceType::Vulkan: {
    auto vulkan = VulkanDevice::create(device.index);
    if (!vulkan)
      return std::unexpected(vulkan.error());
    engine->vulkan = std::move(*vulkan);
    return engine;
  }
  }
  return makeError(ErrorKind::InvalidArgument, "unknown device type");
}

DeviceCapabilities Engine::capabilities() const {
  if (cuda)
    return DeviceCapabilities::cuda(cuda->properties().computeMajor,
                                    cuda->properties().computeMinor);
  if (vulkan)
    return DeviceCapabilities::vulkan(vulkan->properties());
  return DeviceCapabilities::cpu();
}

namespace {
/// Loads a compiled GPU program on `device` (CudaProgram or VulkanProgram)
/// and wraps it as a Program.
template <typename GpuProgram, typename Device>
Expected<std::shared_ptr<Program>> loadGpuProgram(Device &device,
                                                  Expected<CompiledGpuProgram> compiled) {
  if (!compiled)
    return std::unexpected(compiled.error());
  auto program = GpuProgram::load(device, std::move(compiled->plan));
  if (!program)
    return std::unexpected(program.error());
  std::shared_ptr<GpuProgram> shared = std::move(*program);
  if constexpr (std::is_same_v<GpuProgram, VulkanProgram>) {
    return std::make_shared<Program>(std::move(*compiled), shared);
  } else {
    return std::make_shared<Program>(
        std::move(*compiled), [shared](void **buffers) { return shared->run(buffers); },
        [shared](const std::vector<uint64_t> &buffers) { return shared->launchAll(buffers); },
        temporariesOf(shared->gpuPlan()));
  }
}
} // namespace

VulkanTarget vulkanTargetOf(const VulkanDeviceProperties &device) {
  return {device.float16,
          device.float64,
          device.int8,
          device.int16,
          device.int64,
          device.storage8,
          device.storage16,
          {device.maxWorkgroupCount[0], device.maxWorkgroupCount[1],
           device.maxWorkgroupCount[2]},
          device.preserveNan16,
          device.preserveNan32,
          device.preserveNan64,
          std::min(device.maxStorageBuffersPerStage, device.maxStorageBuffersPerSet)};
}

Expected<std::shared_ptr<Program>>
Engine::build(ParsedProgram program, const CompileOptions &options) {
  CompileOptions target = options;
  if (cuda) {
    target.chip = cuda->properties().chip();
    return loadGpuProgram<CudaProgram>(*cuda,
                                       compiler.compileForCuda(std::move(program), target));
  }
  if (vulkan) {
    target.vulkan = vulkanTargetOf(vulkan->properties());
    return loadGpuProgram<VulkanProgram>(
        *vulkan, compiler.compileForVulkan(std::move(program), target));
  }
  auto compiled = compiler.compileForCpu(std::move(program), options);
  if (!compiled)
    return std::unexpected(compiled.error());
  auto executable = cpu->load(compiled->object);
  if (!executable)
    return std::unexpected(executable.error());
  return std::make_shared<Program>(
      std::move(*compiled),
      [exe = std::move(*executable)](void **buffers) -> Expected<void> {
        exe->run(buffers);
        return {};
      });
}

Expected<std::shared_ptr<Program>> Engine::compile(std::string_view source,
                                                   const CompileOptions &options) {
  std::lock_guard lock(mutex);
  std::string target = cuda     ? "cuda-" + cuda->properties().chip()
                       : vulkan ? vulkan->properties().fingerprint()
                                : compiler.targetFingerprint();
  std::string suffix = "|" + options.entry + "|" + target + "|" + options.codegenKey() +
                       "|" + KILN_VERSION;
  auto hash = [](std::string_view text) {
    return std::to_string(std::hash<std::string_view>{}(text));
  };
  // Fast path: this exact text was seen before. A dump request always
  // compiles, so that every stage is written.
  std::string textKey = "text:" + hash(source) + suffix;
  bool dump = !options.dumpDir.empty();
  if (!dump) {
    if (auto it = cache.find(textKey); it != cache.end()) {
      ++hits;
      return it->second;
    }
  }
  // The key proper hashes the canonical IR, so reformatted text hits too;
  // on a miss the compile takes the same parse.
  auto parsed = compiler.parse(source);
  if (!parsed)
    return std::unexpected(parsed.error());
  std::string key = "ir:" + hash(parsed->canonicalText()) + suffix;
  if (!dump) {
    if (auto it = cache.find(key); it != cache.end()) {
      ++hits;
      cache[textKey] = it->second;
      return it->second;
    }
  }
  auto program = build(std::move(*parsed), options);
  if (!program)
    return std::unexpected(program.error());
  ++compiles;
  cache[key] = cache[textKey] = *program;
  return *program;
}

} // namespace kiln
