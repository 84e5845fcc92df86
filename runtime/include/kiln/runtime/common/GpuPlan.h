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

#include "kiln/runtime/common/Error.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
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

/// A scalar kernel parameter: its bit pattern and size in bytes, or (a
/// program with `?` dims) a run-time size: value `size` of the plan's
/// SizeSteps, evaluated at launch.
struct ScalarArgument {
  uint64_t bits = 0;
  unsigned bytes = 8;
  int size = -1;
};

/// A TMA tensor map of a view (CUDA, sm_90), which the kernel takes by
/// value (128 bytes, `__grid_constant__`): it copies tiles of `box`
/// elements (one size per view dim, outermost first) into shared memory in
/// the `swizzleBytes` swizzle (0, 32, 64 or 128); reads outside the view
/// are zeros. The runtime encodes it at launch from the buffer's address.
/// A view of run-time size (a program with `?` dims) has, per view dim, -1
/// or the SizeSteps value that is its size and likewise its stride, which
/// GpuPlan::at fills in.
struct TensorMapArgument {
  BufferView view;
  unsigned elementBytes = 2;
  std::vector<int64_t> box;
  unsigned swizzleBytes = 128;
  std::vector<int> sizeValues, strideValues;
};

/// One kernel parameter: a scalar or a memref view, which the kernel takes
/// as the start of the view's buffer (a bare pointer on CUDA, a binding of
/// the whole buffer on Vulkan; offset and strides are static in the
/// kernel), or a tensor map.
using KernelArgument = std::variant<ScalarArgument, BufferView, TensorMapArgument>;

struct KernelLaunch {
  int module = 0; // index into GpuPlan::modules
  std::string kernel;
  LaunchShape shape;
  /// Per grid dim, -1 or the SizeStep value it is at run time.
  std::array<int, 3> gridSizes{-1, -1, -1};
  std::vector<KernelArgument> arguments;
  /// The scalar arguments packed as Vulkan push constants: in order, each
  /// at the next offset aligned to its size (kiln-spirv-push-constants).
  std::vector<std::byte> pushConstants() const;
};

/// One step of the host's integer arithmetic on run-time sizes (launch
/// grids, kernel size parameters, buffer bytes); step i computes value i
/// from earlier values `a`, `b` (and `c`: Select is a ? b : c; a comparison
/// is 1 or 0), from the run's dim `a` (every dim of every input, then of
/// every output: RunTimeSizes::dims), or is constant `a`.
struct SizeStep {
  enum class Kind : uint8_t {
    Constant, Dim, Add, Sub, Mul, DivS, CeilDivS, RemS, MinS, MaxS, Less, LessEqual,
    Equal, Select
  };
  Kind kind = Kind::Constant;
  int64_t a = 0, b = 0, c = 0;
};

struct GpuPlan {
  /// Each module's binary: PTX text (CUDA) or SPIR-V words (Vulkan).
  std::vector<std::string> modules;
  /// Bytes of every buffer: the inputs, then the outputs, then temporaries.
  std::vector<size_t> bufferBytes;
  size_t inputCount = 0, outputCount = 0;
  std::vector<KernelLaunch> launches;

  /// A program with `?` dims: its sizes' arithmetic, and per buffer -1 or
  /// the value that is its byte count at run time.
  std::vector<SizeStep> sizeSteps;
  std::vector<int> bufferSizes;
  bool hasRunTimeSizes() const { return !sizeSteps.empty(); }
  /// InvalidArgument unless every value a plan of `dimCount` run-time dims
  /// refers to exists (plans come from disk caches too).
  Expected<void> checkSizeSteps(size_t dimCount) const;
  /// The static plan of one run, whose every dim is in `dims`: grids,
  /// size parameters and buffer bytes evaluated (a grid may be empty: an
  /// empty tensor). InvalidArgument on arithmetic that overflows or divides
  /// by zero.
  Expected<GpuPlan> at(std::span<const int64_t> dims) const;
  /// at() without the modules: what a launch on device buffers takes (the
  /// kernels are loaded already), cheap enough for every launch.
  Expected<GpuPlan> launchesAt(std::span<const int64_t> dims) const;
};

} // namespace kiln

#endif
