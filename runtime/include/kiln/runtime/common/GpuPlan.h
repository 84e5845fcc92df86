//===- GpuPlan.h - what a GPU program does, step by step --------*- C++ -*-===//
//
// The host side of a compiled GPU program, as data: buffers, and kernel
// launches whose arguments are views of those buffers. The runtime executes
// it without MLIR; the compiler derives it from the host function that
// remains once kernels are outlined.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_COMMON_GPUPLAN_H
#define KILN_RUNTIME_COMMON_GPUPLAN_H

#include <array>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace kiln {

/// Launch shape of a kernel.
struct LaunchShape {
  std::array<unsigned, 3> grid{1, 1, 1};
  std::array<unsigned, 3> block{1, 1, 1};
  unsigned sharedMemoryBytes = 0;
};

/// A strided view of a buffer, in elements.
struct BufferView {
  int buffer = 0;
  int64_t offset = 0;
  std::vector<int64_t> sizes, strides;
};

/// A scalar kernel parameter: its bit pattern and size in bytes.
struct ScalarArgument {
  uint64_t bits = 0;
  unsigned bytes = 8;
};

/// One kernel parameter: a scalar or a memref view, which the kernel takes
/// as the start of the view's buffer (a bare pointer on CUDA, a binding of
/// the whole buffer on Vulkan); offset and strides are static in the kernel.
using KernelArgument = std::variant<ScalarArgument, BufferView>;

struct KernelLaunch {
  int module = 0; // index into GpuPlan::modules
  std::string kernel;
  LaunchShape shape;
  std::vector<KernelArgument> arguments;
};

struct GpuPlan {
  /// Each module's binary: PTX text (CUDA) or SPIR-V words (Vulkan).
  std::vector<std::string> modules;
  /// Bytes of every buffer: the inputs, then the outputs, then temporaries.
  std::vector<size_t> bufferBytes;
  size_t inputCount = 0, outputCount = 0;
  std::vector<KernelLaunch> launches;
};

} // namespace kiln

#endif
