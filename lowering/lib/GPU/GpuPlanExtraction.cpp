//===- GpuPlanExtraction.cpp - host function -> GpuPlan ------------------===//
#include "kiln/Lowering/GPU/GpuPlanExtraction.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "llvm/ADT/TypeSwitch.h"

#include <functional>

using namespace mlir;

namespace kiln {

namespace {
size_t elementBytes(MemRefType type) {
  unsigned bits = type.getElementTypeBitWidth();
  return bits < 8 ? 1 : bits / 8; // i1 is stored as a byte
}

/// The view a memref type describes of buffer `buffer`. A buffer of
/// run-time size is viewed whole (kiln-gpu-kernel-sizes passes it flat):
/// its view has its type's sizes (`?` as ShapedType::kDynamic), no strides.
FailureOr<BufferView> viewOf(Operation *op, int buffer, MemRefType type) {
  SmallVector<int64_t> strides;
  int64_t offset;
  if (!type.hasStaticShape() && type.getLayout().isIdentity())
    return BufferView{buffer, 0,
                      std::vector<int64_t>(type.getShape().begin(), type.getShape().end()),
                      {}};
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
/// The host's index arithmetic on run-time sizes, as the plan's SizeSteps.
class SizeSteps {
public:
  SizeSteps(GpuPlan &plan) : steps(plan.sizeSteps) {}

  /// The value of `v`: a constant, or a size computed before.
  std::optional<int> valueOf(Value v) {
    if (auto it = values.find(v); it != values.end())
      return it->second;
    if (std::optional<int64_t> c = getConstantIntValue(v))
      return values[v] = add({SizeStep::Kind::Constant, *c, 0});
    return std::nullopt;
  }
  int add(SizeStep step) {
    steps.push_back(step);
    return steps.size() - 1;
  }
  int define(Value v, int value) { return values[v] = value; }
  /// A value of `op` (index arithmetic), or failure for an op it is not.
  std::optional<int> arithmetic(Operation *op) {
    using enum SizeStep::Kind;
    if (auto select = dyn_cast<arith::SelectOp>(op)) {
      std::optional<int> c = valueOf(select.getCondition()),
                         t = valueOf(select.getTrueValue()),
                         f = valueOf(select.getFalseValue());
      if (!c || !t || !f || !select.getType().isIndex())
        return std::nullopt;
      return define(select, add({Select, *c, *t, *f}));
    }
    if (auto cmp = dyn_cast<arith::CmpIOp>(op)) {
      std::optional<int> a = valueOf(cmp.getLhs()), b = valueOf(cmp.getRhs());
      if (!a || !b || !cmp.getLhs().getType().isIndex())
        return std::nullopt;
      using P = arith::CmpIPredicate;
      switch (cmp.getPredicate()) {
      case P::slt: return define(cmp, add({Less, *a, *b}));
      case P::sle: return define(cmp, add({LessEqual, *a, *b}));
      case P::sgt: return define(cmp, add({Less, *b, *a}));
      case P::sge: return define(cmp, add({LessEqual, *b, *a}));
      case P::eq: return define(cmp, add({Equal, *a, *b}));
      default: return std::nullopt;
      }
    }
    std::optional<SizeStep::Kind> kind =
        llvm::TypeSwitch<Operation *, std::optional<SizeStep::Kind>>(op)
            .Case([](arith::AddIOp) { return Add; })
            .Case([](arith::SubIOp) { return Sub; })
            .Case([](arith::MulIOp) { return Mul; })
            .Case([](arith::DivSIOp) { return DivS; })
            .Case([](arith::CeilDivSIOp) { return CeilDivS; })
            .Case([](arith::RemSIOp) { return RemS; })
            .Case([](arith::MinSIOp) { return MinS; })
            .Case([](arith::MaxSIOp) { return MaxS; })
            .Default([](Operation *) { return std::nullopt; });
    if (!kind || !op->getResult(0).getType().isIndex())
      return std::nullopt;
    std::optional<int> a = valueOf(op->getOperand(0)), b = valueOf(op->getOperand(1));
    if (!a || !b)
      return std::nullopt;
    return define(op->getResult(0), add({*kind, *a, *b}));
  }

private:
  std::vector<SizeStep> &steps;
  DenseMap<Value, int> values;
};
} // namespace

FailureOr<GpuPlan>
extractGpuPlan(func::FuncOp entry, size_t inputCount,
               const llvm::StringMap<std::string> &kernelModules, unsigned indexBytes) {
  GpuPlan plan;
  plan.inputCount = inputCount;
  llvm::StringMap<int> moduleIndex;
  SizeSteps sizes(plan);

  DenseMap<Value, BufferView> views;
  DenseMap<Value, ScalarArgument> scalars;
  DenseMap<Value, TensorMapArgument> tensorMaps;
  // Where each argument's dims start in a run's dims.
  DenseMap<Value, int64_t> firstDim;
  int64_t dimCount = 0;
  // A buffer's byte count, static or at run time.
  auto addBuffer = [&](MemRefType type, ValueRange dynamicSizes) -> LogicalResult {
    if (type.hasStaticShape()) {
      plan.bufferBytes.push_back(type.getNumElements() * elementBytes(type));
      plan.bufferSizes.push_back(-1);
      return success();
    }
    plan.bufferBytes.push_back(0);
    std::optional<int> bytes =
        sizes.add({SizeStep::Kind::Constant, static_cast<int64_t>(elementBytes(type)), 0});
    auto dynamic = dynamicSizes.begin();
    for (int64_t d : type.getShape()) {
      std::optional<int> size =
          ShapedType::isDynamic(d) ? sizes.valueOf(*dynamic++)
                                   : sizes.add({SizeStep::Kind::Constant, d, 0});
      if (!size)
        return failure();
      bytes = sizes.add({SizeStep::Kind::Mul, *bytes, *size});
    }
    plan.bufferSizes.push_back(*bytes);
    return success();
  };
  // Dim `d` of a host buffer or view as a value: the run's dims of the
  // arguments, allocations' sizes, products or parts of them through
  // reshapes.
  std::function<std::optional<int>(Value, int64_t)> dimOf =
      [&](Value v, int64_t d) -> std::optional<int> {
    auto type = cast<MemRefType>(v.getType());
    if (!type.isDynamicDim(d))
      return sizes.add({SizeStep::Kind::Constant, type.getDimSize(d), 0});
    if (firstDim.count(v))
      return sizes.add({SizeStep::Kind::Dim, firstDim[v] + d, 0});
    if (auto alloc = v.getDefiningOp<memref::AllocOp>())
      return sizes.valueOf(alloc.getDynamicSizes()[type.getDynamicDimIndex(d)]);
    if (auto cast = v.getDefiningOp<memref::CastOp>())
      return dimOf(cast.getSource(), d);
    if (auto expand = v.getDefiningOp<memref::ExpandShapeOp>())
      return sizes.valueOf(cast<Value>(expand.getMixedOutputShape()[d]));
    if (auto collapse = v.getDefiningOp<memref::CollapseShapeOp>()) {
      std::optional<int> product = sizes.add({SizeStep::Kind::Constant, 1, 0});
      // A copy: the range of a temporary's element dies with it (C++20).
      SmallVector<ReassociationIndices> groups = collapse.getReassociationIndices();
      for (int64_t s : groups[d]) {
        std::optional<int> part = dimOf(collapse.getSrc(), s);
        if (!part)
          return std::nullopt;
        product = sizes.add({SizeStep::Kind::Mul, *product, *part});
      }
      return product;
    }
    return std::nullopt;
  };
  for (auto [i, arg] : llvm::enumerate(entry.getArguments())) {
    auto type = cast<MemRefType>(arg.getType());
    firstDim[arg] = dimCount;
    if (!type.hasStaticShape()) {
      plan.bufferBytes.push_back(0);
      int bytes = sizes.add({SizeStep::Kind::Constant, static_cast<int64_t>(elementBytes(type)), 0});
      for (int64_t d = 0; d < type.getRank(); ++d) {
        int size = ShapedType::isDynamic(type.getDimSize(d))
                       ? sizes.add({SizeStep::Kind::Dim, dimCount + d, 0})
                       : sizes.add({SizeStep::Kind::Constant, type.getDimSize(d), 0});
        bytes = sizes.add({SizeStep::Kind::Mul, bytes, size});
      }
      plan.bufferSizes.push_back(bytes);
    } else if (failed(addBuffer(type, {}))) {
      return failure();
    }
    dimCount += type.getRank();
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
                          ? indexBytes * 8
                          : constant.getType().getIntOrFloatBitWidth();
      ScalarArgument s{0, std::max(1u, (bits + 7) / 8)};
      if (auto i = dyn_cast<IntegerAttr>(value))
        s.bits = i.getValue().zextOrTrunc(64).getZExtValue();
      else if (auto f = dyn_cast<FloatAttr>(value))
        s.bits = f.getValue().bitcastToAPInt().zextOrTrunc(64).getZExtValue();
      scalars[constant] = s;
      continue;
    }
    if (auto dim = dyn_cast<memref::DimOp>(op)) {
      std::optional<int64_t> d = dim.getConstantIndex();
      std::optional<int> size = d ? dimOf(dim.getSource(), *d) : std::nullopt;
      if (!size)
        return dim.emitError() << "a run-time size the GPU plan cannot evaluate";
      sizes.define(dim, *size);
      continue;
    }
    if (sizes.arithmetic(&op))
      continue;
    if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
      int buffer = plan.bufferBytes.size();
      if (failed(addBuffer(alloc.getType(), alloc.getDynamicSizes())))
        return alloc.emitError() << "a buffer size the GPU plan cannot evaluate";
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
      if (isa<UnrankedMemRefType>(op.getResult(0).getType())) {
        // (A copy first: inserting may move the map's entries.)
        BufferView view = views[source];
        views[op.getResult(0)] = std::move(view); // a tensor map's operand
        continue;
      }
      auto view = viewOf(&op, views[source].buffer,
                         cast<MemRefType>(op.getResult(0).getType()));
      if (failed(view))
        return failure();
      views[op.getResult(0)] = *view;
      continue;
    }
    // A TMA tensor map (CUDA): the runtime encodes it per launch, and
    // the kernel takes it as a pointer (to its parameter).
    if (auto create = dyn_cast<nvgpu::TmaCreateDescriptorOp>(op)) {
      auto type = create.getTensorMap().getType();
      TensorMapArgument map;
      if (!views.count(create.getTensor()))
        return create.emitError() << "tensor map of an unknown buffer";
      map.view = views[create.getTensor()];
      map.elementBytes = elementBytes(type.getTensor());
      map.swizzleBytes = type.getSwizzle() == nvgpu::TensorMapSwizzleKind::SWIZZLE_NONE
                             ? 0
                             : 16u << static_cast<unsigned>(type.getSwizzle());
      for (Value box : create.getBoxDimensions()) {
        std::optional<int64_t> size = getConstantIntValue(box);
        if (!size)
          return create.emitError() << "a tensor map box that is not constant";
        map.box.push_back(*size);
      }
      // A buffer of run-time size (viewed whole, row-major): its sizes and
      // strides at run time.
      auto ranked = create.getTensor().getDefiningOp<memref::CastOp>();
      if (auto source = ranked ? dyn_cast<MemRefType>(ranked.getSource().getType()) : nullptr;
          source && !source.hasStaticShape()) {
        int64_t rank = source.getRank();
        map.sizeValues.assign(rank, -1);
        map.strideValues.assign(rank, -1);
        int stride = sizes.add({SizeStep::Kind::Constant, 1, 0});
        for (int64_t d = rank - 1; d >= 0; --d) {
          std::optional<int> size = dimOf(ranked.getSource(), d);
          if (!size)
            return create.emitError() << "a tensor map size the GPU plan cannot evaluate";
          map.sizeValues[d] = *size;
          map.strideValues[d] = stride;
          stride = sizes.add({SizeStep::Kind::Mul, stride, *size});
        }
      }
      tensorMaps[create] = std::move(map);
      continue;
    }
    if (auto cast = dyn_cast<UnrealizedConversionCastOp>(op);
        cast && cast->getNumOperands() == 1 && tensorMaps.count(cast.getOperand(0))) {
      // A copy first: inserting may move the map's entries (a dangling
      // reference copied a freed view when CSE shared a descriptor's cast).
      TensorMapArgument map = tensorMaps[cast.getOperand(0)];
      tensorMaps[cast.getResult(0)] = std::move(map);
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
      // Grids may be run-time sizes; blocks are constants.
      auto dims = [&](gpu::KernelDim3 d, std::array<unsigned, 3> &out,
                      std::array<int, 3> *runTime) {
        Value values[] = {d.x, d.y, d.z};
        for (int i = 0; i < 3; ++i) {
          if (scalars.count(values[i])) {
            out[i] = static_cast<unsigned>(scalars[values[i]].bits);
            continue;
          }
          std::optional<int> size = runTime ? sizes.valueOf(values[i]) : std::nullopt;
          if (!size)
            return failure();
          (*runTime)[i] = *size;
        }
        return success();
      };
      if (failed(dims(launch.getGridSizeOperandValues(), step.shape.grid, &step.gridSizes)) ||
          failed(dims(launch.getBlockSizeOperandValues(), step.shape.block, nullptr)))
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
        else if (tensorMaps.count(arg))
          step.arguments.push_back(tensorMaps[arg]);
        else if (std::optional<int> size = sizes.valueOf(arg))
          step.arguments.push_back(ScalarArgument{0, indexBytes, *size});
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
  if (!plan.hasRunTimeSizes())
    plan.bufferSizes.clear();
  return plan;
}

} // namespace kiln
