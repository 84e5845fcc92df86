//===- SpirvPrepareKernels.cpp - the kiln-spirv-prepare-kernels pass -----===//
//
// What kiln-spirv-convert-kernels needs but the shared GPU pipeline does not
// produce: entry-point ABIs, all-reduces it can lower, NaN-safe vector
// reductions, defined results of zero-trip loops.
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/SPIRV/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/GPU/Utils/GPUUtils.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVAttributes.h"
#include "mlir/Dialect/SPIRV/IR/TargetAndABI.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

namespace kiln {
#define GEN_PASS_DEF_KILNSPIRVPREPAREKERNELS
#include "kiln/Lowering/SPIRV/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// kiln-spirv-convert-kernels (upstream's conversion) takes no workgroup attributions (kiln-gpu-scans
/// uses one); an allocation in Workgroup storage becomes the same
/// workgroup variable.
void workgroupAttributionsToVariables(gpu::GPUFuncOp kernel) {
  unsigned count = kernel.getNumWorkgroupAttributions();
  if (count == 0)
    return;
  OpBuilder b = OpBuilder::atBlockBegin(&kernel.getBody().front());
  auto workgroup = spirv::StorageClassAttr::get(b.getContext(), spirv::StorageClass::Workgroup);
  for (BlockArgument attribution : kernel.getWorkgroupAttributions()) {
    auto type = cast<MemRefType>(attribution.getType());
    attribution.replaceAllUsesWith(memref::AllocOp::create(
        b, attribution.getLoc(),
        MemRefType::get(type.getShape(), type.getElementType(), type.getLayout(), workgroup)));
  }
  kernel.getBody().front().eraseArguments(kernel.getFirstWorkgroupAttributionIndex(), count);
  kernel->setAttr(gpu::GPUFuncOp::getNumWorkgroupAttributionsAttrName(),
                  b.getI64IntegerAttr(0));
}

/// all_reduce(x) = combine over subgroups of subgroup_reduce(x): lane 0 of
/// each subgroup stores its subgroup's result in workgroup memory, and every
/// thread folds those few partials in order, so all threads agree.
/// Group float min/max are undefined on NaN, so a NaN anywhere in a
/// subgroup is tracked by a group max of a flag and replaces its result.
LogicalResult lowerAllReduce(gpu::AllReduceOp reduce, int64_t blockThreads) {
  std::optional<gpu::AllReduceOperation> kind = reduce.getOp();
  if (!kind)
    return reduce.emitError("kiln-spirv-prepare-kernels: all_reduce with a "
                            "region is not supported");
  OpBuilder b(reduce);
  Location loc = reduce.getLoc();
  Type type = reduce.getType();
  auto workgroup = spirv::StorageClassAttr::get(b.getContext(),
                                                spirv::StorageClass::Workgroup);
  auto partialsType = MemRefType::get({blockThreads}, type, AffineMap(), workgroup);
  Value partials = memref::AllocOp::create(b, loc, partialsType);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  vector::CombiningKind combining = gpu::convertReductionKind(*kind);
  Value x = reduce.getValue();
  Value own = gpu::SubgroupReduceOp::create(b, loc, x, *kind, /*uniform=*/false);
  bool nanAware = *kind == gpu::AllReduceOperation::MAXIMUMF ||
                  *kind == gpu::AllReduceOperation::MINIMUMF;
  if (nanAware) {
    Value isNan = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, x, x);
    Value flag = arith::ExtUIOp::create(b, loc, b.getI32Type(), isNan);
    Value anyNan = gpu::SubgroupReduceOp::create(
        b, loc, flag, gpu::AllReduceOperation::MAXUI, /*uniform=*/false);
    Value nan = arith::ConstantOp::create(
        b, loc, type,
        b.getFloatAttr(type, APFloat::getNaN(
                                 cast<FloatType>(type).getFloatSemantics())));
    Value hit = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::ne, anyNan,
        arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0));
    own = arith::SelectOp::create(b, loc, hit, nan, own);
  }
  Value subgroup = gpu::SubgroupIdOp::create(b, loc, IntegerAttr{});
  Value subgroups = gpu::NumSubgroupsOp::create(b, loc, IntegerAttr{});
  Value lane = gpu::LaneIdOp::create(b, loc, IntegerAttr{});
  Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, zero);
  scf::IfOp::create(b, loc, first, [&](OpBuilder &tb, Location l) {
    memref::StoreOp::create(tb, l, own, partials, subgroup);
    scf::YieldOp::create(tb, l);
  });
  gpu::BarrierOp::create(b, loc);
  Value init = memref::LoadOp::create(b, loc, partials, zero);
  auto fold = scf::ForOp::create(
      b, loc, one, subgroups, one, ValueRange{init},
      [&](OpBuilder &fb, Location l, Value i, ValueRange acc) {
        Value next = memref::LoadOp::create(fb, l, partials, i);
        scf::YieldOp::create(
            fb, l, vector::makeArithReduction(fb, l, combining, acc[0], next));
      });
  Value result = fold.getResult(0);
  // Nobody may overwrite the partials of a later all_reduce while another
  // thread still reads these.
  gpu::BarrierOp::create(b, loc);
  reduce.replaceAllUsesWith(result);
  reduce.erase();
  return success();
}

/// The SCF-to-SPIR-V conversion only writes a loop's results in its body, so
/// a loop that runs zero times yields undefined values, not its inits:
/// select the inits then (not needed where it surely runs, and impossible
/// for cooperative matrices, which SPIR-V cannot select).
void guardZeroTripResults(scf::ForOp loop) {
  std::optional<int64_t> lower = getConstantIntValue(loop.getLowerBound()),
                         upper = getConstantIntValue(loop.getUpperBound());
  if (loop.getNumResults() == 0 || (lower && upper && *lower < *upper))
    return;
  OpBuilder b(loop->getContext());
  b.setInsertionPointAfter(loop);
  Location loc = loop.getLoc();
  Value ran = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                    loop.getLowerBound(), loop.getUpperBound());
  for (auto [result, init] : llvm::zip(loop.getResults(), loop.getInitArgs())) {
    // A vector select takes a vector of conditions in SPIR-V 1.3.
    Value condition = ran;
    if (auto vector = dyn_cast<VectorType>(result.getType()))
      condition = vector::BroadcastOp::create(
          b, loc, VectorType::get(vector.getShape(), b.getI1Type()), ran);
    auto select = arith::SelectOp::create(b, loc, condition, result, init);
    result.replaceAllUsesExcept(select, select);
  }
}

/// vector.reduction of maximumf/minimumf becomes GLSL FMax/FMin, undefined
/// on NaN: fold the lanes with arith ops, whose conversion keeps NaN.
void unrollNanPropagatingReduction(vector::ReductionOp reduction) {
  vector::CombiningKind kind = reduction.getKind();
  if (kind != vector::CombiningKind::MAXIMUMF &&
      kind != vector::CombiningKind::MINIMUMF)
    return;
  OpBuilder b(reduction);
  Location loc = reduction.getLoc();
  Value vector = reduction.getVector();
  int64_t lanes = reduction.getSourceVectorType().getNumElements();
  Value acc = reduction.getAcc();
  for (int64_t l = 0; l < lanes; ++l) {
    Value lane = vector::ExtractOp::create(b, loc, vector, ArrayRef<int64_t>{l});
    acc = acc ? vector::makeArithReduction(b, loc, kind, acc, lane) : lane;
  }
  reduction.replaceAllUsesWith(acc);
  reduction.erase();
}

/// GLSL.std.450 has no 64-bit transcendental functions: only these math
/// ops exist for f64.
bool hasF64Lowering(Operation *op) {
  return isa<math::AbsFOp, math::CeilOp, math::FloorOp, math::SqrtOp,
             math::RsqrtOp, math::FmaOp, math::RoundOp, math::RoundEvenOp,
             math::TruncOp, math::CopySignOp>(op);
}

struct KilnSpirvPrepareKernelsPass
    : kiln::impl::KilnSpirvPrepareKernelsBase<KilnSpirvPrepareKernelsPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    // kiln-spirv-convert-kernels and convert-math-to-spirv look for the target
    // environment in this attribute, not among the module's targets.
    if (ArrayAttr targets = getOperation().getTargetsAttr())
      for (Attribute target : targets)
        if (auto env = dyn_cast<spirv::TargetEnvAttr>(target))
          getOperation()->setAttr(spirv::getTargetEnvAttrName(), env);
    for (auto kernel : getOperation().getOps<gpu::GPUFuncOp>()) {
      if (!kernel.isKernel())
        continue;
      std::optional<ArrayRef<int32_t>> size = kernel.getKnownBlockSize();
      if (!size) {
        kernel.emitError("kiln-spirv-prepare-kernels: kernel without a known "
                         "block size");
        return signalPassFailure();
      }
      kernel->setAttr(spirv::getEntryPointABIAttrName(),
                      spirv::getEntryPointABIAttr(ctx, *size));
      workgroupAttributionsToVariables(kernel);
      int64_t threads = int64_t((*size)[0]) * (*size)[1] * (*size)[2];
      SmallVector<gpu::AllReduceOp> reduces;
      kernel.walk([&](gpu::AllReduceOp r) { reduces.push_back(r); });
      for (gpu::AllReduceOp r : reduces)
        if (failed(lowerAllReduce(r, threads)))
          return signalPassFailure();
    }
    WalkResult f64Math = getOperation().walk([](Operation *op) {
      if (op->getDialect()->getNamespace() != "math" || hasF64Lowering(op) ||
          !llvm::any_of(op->getOperandTypes(), [](Type t) {
            return getElementTypeOrSelf(t).isF64();
          }))
        return WalkResult::advance();
      op->emitError() << "f64 '" << op->getName()
                      << "' is not supported on Vulkan: SPIR-V's GLSL.std.450 "
                         "has no 64-bit transcendental functions";
      return WalkResult::interrupt();
    });
    if (f64Math.wasInterrupted())
      return signalPassFailure();
    getOperation().walk(guardZeroTripResults);
    getOperation().walk(unrollNanPropagatingReduction);

  }
};

} // namespace
