//===- GpuPlanExtraction.cpp - host function -> GpuPlan ------------------===//
#include "kiln/Lowering/GPU/GpuPlanExtraction.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;

namespace kiln {

namespace {
size_t elementBytes(MemRefType type) {
  unsigned bits = type.getElementTypeBitWidth();
  return bits < 8 ? 1 : bits / 8; // i1 is stored as a byte
}

/// The view a memref type describes of buffer `buffer`.
FailureOr<BufferView> viewOf(Operation *op, int buffer, MemRefType type) {
  SmallVector<int64_t> strides;
  int64_t offset;
  // An empty view is never read; its layout may not even be strided.
  if (type.hasStaticShape() && type.getNumElements() == 0)
    return BufferView{buffer, 0,
                      std::vector<int64_t>(type.getShape().begin(),
                                           type.getShape().end()),
                      std::vector<int64_t>(type.getRank(), 0)};
  if (failed(type.getStridesAndOffset(strides, offset)) ||
      ShapedType::isDynamic(offset) ||
      llvm::any_of(strides, ShapedType::isDynamic) || !type.hasStaticShape())
    return op->emitError() << "GPU programs need static views, got " << type;
  return BufferView{buffer, offset,
                    std::vector<int64_t>(type.getShape().begin(),
                                         type.getShape().end()),
                    std::vector<int64_t>(strides.begin(), strides.end())};
}
} // namespace

FailureOr<GpuPlan>
extractGpuPlan(func::FuncOp entry, size_t inputCount,
               const llvm::StringMap<std::string> &kernelModules) {
  GpuPlan plan;
  plan.inputCount = inputCount;
  llvm::StringMap<int> moduleIndex;

  DenseMap<Value, BufferView> views;
  DenseMap<Value, ScalarArgument> scalars;
  for (auto [i, arg] : llvm::enumerate(entry.getArguments())) {
    auto type = cast<MemRefType>(arg.getType());
    plan.bufferBytes.push_back(type.getNumElements() * elementBytes(type));
    auto view = viewOf(entry, i, type);
    if (failed(view))
      return failure();
    views[arg] = *view;
  }
  plan.outputCount = entry.getNumArguments() - inputCount;

  for (Operation &op : entry.getBody().front()) {
    if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
      Attribute value = constant.getValue();
      if (!constant.getType().isIntOrIndexOrFloat())
        continue; // only scalars can be kernel parameters; others stay unused
      unsigned bits = constant.getType().isIndex()
                          ? 64
                          : constant.getType().getIntOrFloatBitWidth();
      ScalarArgument s{0, std::max(1u, (bits + 7) / 8)};
      if (auto i = dyn_cast<IntegerAttr>(value))
        s.bits = i.getValue().zextOrTrunc(64).getZExtValue();
      else if (auto f = dyn_cast<FloatAttr>(value))
        s.bits = f.getValue().bitcastToAPInt().zextOrTrunc(64).getZExtValue();
      scalars[constant] = s;
      continue;
    }
    if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
      int buffer = plan.bufferBytes.size();
      plan.bufferBytes.push_back(alloc.getType().getNumElements() *
                                 elementBytes(alloc.getType()));
      auto view = viewOf(alloc, buffer, alloc.getType());
      if (failed(view))
        return failure();
      views[alloc] = *view;
      continue;
    }
    if (isa<memref::SubViewOp, memref::ExpandShapeOp, memref::CollapseShapeOp,
            memref::ReinterpretCastOp, memref::CastOp>(op)) {
      Value source = op.getOperand(0);
      if (!views.count(source))
        return op.emitError() << "view of an unknown buffer";
      auto view = viewOf(&op, views[source].buffer,
                         cast<MemRefType>(op.getResult(0).getType()));
      if (failed(view))
        return failure();
      views[op.getResult(0)] = *view;
      continue;
    }
    if (auto launch = dyn_cast<gpu::LaunchFuncOp>(op)) {
      KernelLaunch step;
      StringRef name = launch.getKernelModuleName();
      auto binary = kernelModules.find(name);
      if (binary == kernelModules.end())
        return launch.emitError() << "no binary for kernel module " << name;
      auto [index, added] = moduleIndex.try_emplace(name, plan.modules.size());
      if (added)
        plan.modules.push_back(binary->second);
      step.module = index->second;
      step.kernel = launch.getKernelName().str();
      auto dims = [&](gpu::KernelDim3 d, std::array<unsigned, 3> &out) {
        Value values[] = {d.x, d.y, d.z};
        for (int i = 0; i < 3; ++i) {
          if (!scalars.count(values[i]))
            return failure();
          out[i] = static_cast<unsigned>(scalars[values[i]].bits);
        }
        return success();
      };
      if (failed(dims(launch.getGridSizeOperandValues(), step.shape.grid)) ||
          failed(dims(launch.getBlockSizeOperandValues(), step.shape.block)))
        return launch.emitError() << "launch shape is not constant";
      if (Value shared = launch.getDynamicSharedMemorySize()) {
        if (!scalars.count(shared))
          return launch.emitError() << "dynamic shared memory size is not constant";
        step.shape.sharedMemoryBytes = static_cast<unsigned>(scalars[shared].bits);
      }
      for (Value arg : launch.getKernelOperands()) {
        if (views.count(arg))
          step.arguments.push_back(views[arg]);
        else if (scalars.count(arg))
          step.arguments.push_back(scalars[arg]);
        else
          return launch.emitError() << "kernel argument is neither a buffer "
                                       "nor a constant";
      }
      plan.launches.push_back(std::move(step));
      continue;
    }
    if (isa<memref::DeallocOp, func::ReturnOp>(op))
      continue;
    return op.emitError() << "cannot run '" << op.getName()
                          << "' on the host of a GPU program";
  }
  return plan;
}

} // namespace kiln
