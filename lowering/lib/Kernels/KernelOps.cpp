//===- KernelOps.cpp - kiln_kernel ops: verifiers, effects, bufferization -===//
#include "kiln/Lowering/Kernels/KernelOps.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Transforms/InliningUtils.h"

#include "kiln/Lowering/Kernels/KernelOpsDialect.cpp.inc"

#define GET_OP_CLASSES
#include "kiln/Lowering/Kernels/KernelOps.cpp.inc"

using namespace mlir;
using namespace mlir::bufferization;

namespace kiln::kernel {
namespace {
/// The ops have no regions and name no symbols, so a kernel function holding
/// one inlines into its caller like any other (the bufferization pipeline
/// inlines every kernel; a call left behind would become a one-thread GPU
/// kernel around the op's launch).
struct KilnKernelInliner : DialectInlinerInterface {
  using DialectInlinerInterface::DialectInlinerInterface;
  bool isLegalToInline(Operation *, Region *, bool, IRMapping &) const final { return true; }
};
} // namespace

void KilnKernelDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "kiln/Lowering/Kernels/KernelOps.cpp.inc"
      >();
  addInterfaces<KilnKernelInliner>();
}

LogicalResult AttentionOp::verify() {
  auto shape = [](Value v) { return cast<ShapedType>(v.getType()); };
  for (Value v : getOperands())
    if (shape(v).getRank() != 3)
      return emitOpError("takes operands of shape [batch, rows, columns]");
  // Batch and sequence lengths may be run-time sizes (`?`: equal to any
  // size here, checked when the program runs); head dims are static.
  auto q = shape(getQ()).getShape(), k = shape(getK()).getShape(), v = shape(getV()).getShape();
  if (ShapedType::isDynamic(q[2]) || ShapedType::isDynamic(v[2]))
    return emitOpError("needs static head dims");
  auto same = [](int64_t a, int64_t b) {
    return a == b || ShapedType::isDynamic(a) || ShapedType::isDynamic(b);
  };
  auto sameShape = [&](ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
    return a.size() == b.size() && llvm::all_of(llvm::zip(a, b), [&](auto p) {
             return same(std::get<0>(p), std::get<1>(p));
           });
  };
  SmallVector<int64_t, 3> out{q[0], q[1], v[2]};
  if (!same(k[0], q[0]) || !same(v[0], q[0]) || k[2] != q[2] || !same(v[1], k[1]))
    return emitOpError("needs q [B, Lq, E], k [B, Lk, E] and v [B, Lk, Ev]");
  if (!sameShape(shape(getOut()).getShape(), out) || !sameShape(shape(getAcc()).getShape(), out))
    return emitOpError("needs out and acc of shape [B, Lq, Ev]");
  Type element = shape(getQ()).getElementType();
  Type accElement = element.isF64() ? element : Float32Type::get(getContext());
  if (shape(getAcc()).getElementType() != accElement ||
      shape(getOut()).getElementType() != element)
    return emitOpError("needs out of q's element type and acc of f32 (f64 for f64 q)");
  if (Value mask = getMask()) {
    SmallVector<int64_t, 3> scores{q[0], q[1], k[1]};
    for (auto [size, full] : llvm::zip(shape(mask).getShape(), scores))
      if (size != 1 && !same(size, full))
        return emitOpError("needs a mask of shape [1 or B, 1 or Lq, 1 or Lk]");
  }
  bool onTensors = isa<RankedTensorType>(getOut().getType());
  if (getNumResults() != (onTensors ? 2u : 0u))
    return emitOpError("returns out and acc on tensors, nothing on buffers");
  return success();
}

void AttentionOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>> &effects) {
  for (OpOperand &operand : getOperation()->getOpOperands()) {
    if (!isa<MemRefType>(operand.get().getType()))
      continue;
    if (isDpsInit(&operand))
      effects.emplace_back(MemoryEffects::Write::get(), &operand, SideEffects::DefaultResource::get());
    else
      effects.emplace_back(MemoryEffects::Read::get(), &operand, SideEffects::DefaultResource::get());
  }
}

// out and acc are written whole before they are read: they bring no values in.
bool AttentionOp::bufferizesToMemoryRead(OpOperand &operand, const AnalysisState &) {
  return !isDpsInit(&operand);
}

bool AttentionOp::bufferizesToMemoryWrite(OpOperand &operand, const AnalysisState &) {
  return isDpsInit(&operand);
}

AliasingValueList AttentionOp::getAliasingValues(OpOperand &operand, const AnalysisState &) {
  if (!isDpsInit(&operand))
    return {};
  return {{getTiedOpResult(&operand), BufferRelation::Equivalent}};
}

LogicalResult AttentionOp::bufferize(RewriterBase &rewriter, const BufferizationOptions &options,
                                     BufferizationState &state) {
  SmallVector<Value> buffers;
  for (Value operand : getOperands()) {
    FailureOr<Value> buffer = getBuffer(rewriter, operand, options, state);
    if (failed(buffer))
      return failure();
    buffers.push_back(*buffer);
  }
  rewriter.setInsertionPoint(*this);
  auto onBuffers = AttentionOp::create(rewriter, getLoc(), TypeRange{}, buffers, getOperation()->getAttrs());
  replaceOpWithBufferizedValues(rewriter, *this,
                                {onBuffers.getOut(), onBuffers.getAcc()});
  return success();
}

void registerKilnKernelDialect(DialectRegistry &registry) {
  registry.insert<KilnKernelDialect>();
}

} // namespace kiln::kernel
