//===- GpuKernelSizes.cpp - the kiln-gpu-kernel-sizes pass ---------------===//
//
// Kernels of programs with `?` dims take their run-time sizes as scalar
// parameters. Neither target can take a dynamically shaped buffer as one
// pointer or binding (CUDA's bare pointers need static shapes, SPIR-V
// strides must be constants), so such a buffer becomes a flat one and its
// `?` dims extra parameters; accesses are linearised in the kernel. All
// scalars go after the buffers: Vulkan binds buffer i at binding i and
// pushes the scalars as push constants (kiln-spirv-push-constants).
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/GPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace kiln {
#define GEN_PASS_DEF_KILNGPUKERNELSIZES
#include "kiln/Lowering/GPU/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// How a kernel's parameters were rearranged: the old parameters in their
/// new order (buffers, then scalars), then one size per `?` dim of a buffer.
struct NewParameters {
  SmallVector<unsigned> order;
  SmallVector<std::pair<unsigned, unsigned>> sizes; // (old parameter, dim)
};

bool isDynamicBuffer(Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  return memref && !memref.hasStaticShape();
}

/// Accesses of `buffer` (shape `type`, identity layout) rewritten onto
/// `flat`, whose dim sizes are `dims`; `b` inserts at the kernel's entry.
LogicalResult linearizeAccesses(OpBuilder &b, Value buffer, MemRefType type, Value flat,
                                ArrayRef<Value> dims) {
  Location loc = flat.getLoc();
  // Row-major strides; the innermost is 1.
  SmallVector<Value> strides(dims.size());
  Value stride = arith::ConstantIndexOp::create(b, loc, 1);
  for (int64_t d = dims.size() - 1; d >= 0; --d) {
    strides[d] = stride;
    stride = b.createOrFold<arith::MulIOp>(loc, stride, dims[d]);
  }
  auto linear = [&](OpBuilder &at, ValueRange indices) {
    Value sum = arith::ConstantIndexOp::create(at, loc, 0);
    for (auto [index, s] : llvm::zip(indices, strides))
      sum = at.createOrFold<arith::AddIOp>(
          loc, sum, at.createOrFold<arith::MulIOp>(loc, index, s));
    return sum;
  };
  for (OpOperand &use : llvm::make_early_inc_range(buffer.getUses())) {
    Operation *user = use.getOwner();
    OpBuilder at(user);
    if (auto load = dyn_cast<memref::LoadOp>(user)) {
      Value i = linear(at, load.getIndices());
      load->setOperands(ValueRange{flat, i});
    } else if (auto store = dyn_cast<memref::StoreOp>(user)) {
      Value i = linear(at, store.getIndices());
      store->setOperands(ValueRange{store.getValueToStore(), flat, i});
    } else if (auto load = dyn_cast<vector::LoadOp>(user);
               load && load.getVectorType().getRank() == 1) {
      Value i = linear(at, load.getIndices());
      load->setOperands(ValueRange{flat, i});
    } else if (auto store = dyn_cast<vector::StoreOp>(user);
               store && store.getVectorType().getRank() == 1) {
      Value i = linear(at, store.getIndices());
      store->setOperands(ValueRange{store.getValueToStore(), flat, i});
    } else if (auto copy = dyn_cast<nvgpu::DeviceAsyncCopyOp>(user);
               copy && copy.getSrc() == buffer && copy.getDst() != buffer) {
      // cp.async from global memory (CUDA's attention kernel): its source.
      Value i = linear(at, copy.getSrcIndices());
      auto flatCopy = nvgpu::DeviceAsyncCopyOp::create(
          at, copy.getLoc(), copy.getDst(), copy.getDstIndices(), flat, ValueRange{i},
          copy.getDstElementsAttr(), copy.getSrcElements(), copy.getBypassL1Attr());
      copy.replaceAllUsesWith(flatCopy.getResult());
      copy.erase();
    } else if (auto rmw = dyn_cast<memref::AtomicRMWOp>(user)) {
      Value i = linear(at, rmw.getIndices());
      rmw->setOperands(ValueRange{rmw.getValue(), flat, i});
    } else if (auto dim = dyn_cast<memref::DimOp>(user);
               dim && dim.getConstantIndex()) {
      dim.replaceAllUsesWith(dims[*dim.getConstantIndex()]);
      dim.erase();
    } else {
      return user->emitError() << "kiln-gpu-kernel-sizes: cannot run '" << user->getName()
                               << "' on a buffer of run-time size (" << type << ")";
    }
  }
  return success();
}

FailureOr<NewParameters> rewriteKernel(gpu::GPUFuncOp kernel, int64_t flatSize) {
  NewParameters p;
  unsigned count = kernel.getNumArguments();
  for (unsigned i = 0; i < count; ++i)
    if (isa<MemRefType>(kernel.getArgument(i).getType()))
      p.order.push_back(i);
  for (unsigned i = 0; i < count; ++i)
    if (!isa<MemRefType>(kernel.getArgument(i).getType()))
      p.order.push_back(i);
  SmallVector<Type> types;
  for (unsigned i : p.order) {
    Type type = kernel.getArgument(i).getType();
    if (auto memref = dyn_cast<MemRefType>(type); memref && isDynamicBuffer(memref)) {
      if (!memref.getLayout().isIdentity())
        return kernel.emitError() << "kiln-gpu-kernel-sizes: a buffer of run-time size "
                                     "must have the identity layout, got "
                                  << memref;
      type = MemRefType::get({flatSize ? flatSize : ShapedType::kDynamic},
                             memref.getElementType(), AffineMap(), memref.getMemorySpace());
      for (auto [d, size] : llvm::enumerate(memref.getShape()))
        if (ShapedType::isDynamic(size))
          p.sizes.push_back({i, static_cast<unsigned>(d)});
    }
    types.push_back(type);
  }
  Builder b(kernel.getContext());
  types.append(p.sizes.size(), b.getIndexType());
  if (p.sizes.empty() && llvm::equal(p.order, llvm::seq(0u, count)))
    return p;
  SmallVector<unsigned> at(types.size(), count);
  SmallVector<DictionaryAttr> attrs(types.size(), b.getDictionaryAttr({}));
  SmallVector<Location> locs(types.size(), kernel.getLoc());
  if (failed(kernel.insertArguments(at, types, attrs, locs)))
    return failure();
  OpBuilder entry = OpBuilder::atBlockBegin(&kernel.front());
  for (auto [n, i] : llvm::enumerate(p.order)) {
    Value old = kernel.getArgument(i), replacement = kernel.getArgument(count + n);
    auto memref = dyn_cast<MemRefType>(old.getType());
    if (!memref || !isDynamicBuffer(memref)) {
      old.replaceAllUsesWith(replacement);
      continue;
    }
    SmallVector<Value> dims;
    for (auto [d, size] : llvm::enumerate(memref.getShape())) {
      if (!ShapedType::isDynamic(size)) {
        dims.push_back(arith::ConstantIndexOp::create(entry, kernel.getLoc(), size));
        continue;
      }
      auto it = llvm::find(p.sizes, std::pair{i, static_cast<unsigned>(d)});
      dims.push_back(kernel.getArgument(count + p.order.size() + (it - p.sizes.begin())));
    }
    if (failed(linearizeAccesses(entry, old, memref, replacement, dims)))
      return failure();
  }
  llvm::BitVector erase(kernel.getNumArguments());
  erase.set(0, count);
  if (failed(kernel.eraseArguments(erase)))
    return failure();
  return p;
}

struct KilnGpuKernelSizesPass
    : kiln::impl::KilnGpuKernelSizesBase<KilnGpuKernelSizesPass> {
  using KilnGpuKernelSizesBase::KilnGpuKernelSizesBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::DenseMap<Attribute, NewParameters> rewritten;
    for (auto gpuModule : module.getOps<gpu::GPUModuleOp>())
      for (auto kernel : gpuModule.getOps<gpu::GPUFuncOp>()) {
        if (!kernel.isKernel())
          continue;
        FailureOr<NewParameters> p = rewriteKernel(kernel, flatSize);
        if (failed(p))
          return signalPassFailure();
        auto name = SymbolRefAttr::get(gpuModule.getNameAttr(),
                                       {FlatSymbolRefAttr::get(kernel.getNameAttr())});
        rewritten[name] = std::move(*p);
      }
    module.walk([&](gpu::LaunchFuncOp launch) {
      auto it = rewritten.find(launch.getKernel());
      if (it == rewritten.end())
        return;
      const NewParameters &p = it->second;
      OpBuilder b(launch);
      SmallVector<Value> old(launch.getKernelOperands()), operands;
      auto kernel = SymbolTable::lookupNearestSymbolFrom<gpu::GPUFuncOp>(
          launch, launch.getKernel());
      for (auto [n, i] : llvm::enumerate(p.order)) {
        Value operand = old[i];
        Type want = kernel.getArgument(n).getType();
        if (operand.getType() != want) {
          // The whole buffer, flat (and cast to the static length on CUDA).
          auto type = cast<MemRefType>(operand.getType());
          SmallVector<ReassociationIndices> all(1);
          for (int64_t d = 0; d < type.getRank(); ++d)
            all[0].push_back(d);
          // `?` long even where a static dim is 0 (the inferred length
          // would be a static 0 of a group with a `?` dim: invalid).
          auto flat = MemRefType::get({ShapedType::kDynamic}, type.getElementType(),
                                      AffineMap(), type.getMemorySpace());
          operand = memref::CollapseShapeOp::create(b, launch.getLoc(), flat, operand, all);
          if (operand.getType() != want)
            operand = memref::CastOp::create(b, launch.getLoc(), want, operand);
        }
        operands.push_back(operand);
      }
      for (auto [arg, dim] : p.sizes)
        operands.push_back(memref::DimOp::create(b, launch.getLoc(), old[arg], dim));
      launch.getKernelOperandsMutable().assign(operands);
    });
  }
};

} // namespace
