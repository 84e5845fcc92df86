//===- CudaFloat8Operands.cpp - f8 matmuls read as f8 ----------------------===//
//
// kiln-to-linalg multiplies f8 matrices as f32: each operand is decoded
// first by a generic it marks (kFloat8DecodeAttr), which kernel formation
// leaves alone. Where both decodes run right before the matmul and read
// plain f8 buffers, the wgmma kernel reads those bytes instead (f8 wgmma,
// f32 accumulation) and the decodes with their f32 buffers go.
//
//===----------------------------------------------------------------------===//
#include "CudaMatmul.h"
#include "kiln/Lowering/KilnToLinalg/Passes.h"

using namespace mlir;

namespace kiln {

/// The marked decode that writes `operand`, a buffer nothing else but the
/// matmul reads: identity maps, a contiguous f8 (i8) input starting on 16
/// bytes.
static linalg::GenericOp decodeInto(Value operand, linalg::LinalgOp matmul) {
  auto alloc = operand.getDefiningOp<memref::AllocOp>();
  if (!alloc)
    return {};
  linalg::GenericOp decode;
  for (Operation *user : operand.getUsers()) {
    auto generic = dyn_cast<linalg::GenericOp>(user);
    if (generic && generic->hasAttr(kFloat8DecodeAttr) && generic.getDpsInits()[0] == operand)
      decode = generic;
    else if (user != matmul.getOperation() && !isa<memref::DeallocOp>(user))
      return {};
  }
  if (!decode || decode.getNumDpsInputs() != 1 || !decode.hasPureBufferSemantics() ||
      decode->getBlock() != matmul->getBlock() || !decode->isBeforeInBlock(matmul) ||
      !llvm::all_of(decode.getIndexingMapsArray(), [](AffineMap m) { return m.isIdentity(); }))
    return {};
  auto input = cast<MemRefType>(decode.getDpsInputs()[0].getType());
  SmallVector<int64_t> strides;
  int64_t offset;
  if (!input.getElementType().isInteger(8) || !input.getLayout().isIdentity() ||
      failed(input.getStridesAndOffset(strides, offset)) || offset % 16 != 0)
    return {};
  return decode;
}

std::optional<Float8Operands> findFloat8Operands(linalg::LinalgOp matmul) {
  Float8Operands f8{decodeInto(matmul.getDpsInputs()[0], matmul),
                    decodeInto(matmul.getDpsInputs()[1], matmul)};
  if (!f8.decodeA || !f8.decodeB || f8.decodeA == f8.decodeB)
    return std::nullopt;
  // Nothing after the first decode writes the f8 buffers before the matmul.
  Operation *first = f8.decodeA->isBeforeInBlock(f8.decodeB) ? f8.decodeA : f8.decodeB;
  for (Operation *op = first->getNextNode(); op != matmul; op = op->getNextNode())
    if (!keepsOperandsIntact(op, matmul))
      return std::nullopt;
  return f8;
}

Type Float8Operands::typeOf(linalg::GenericOp decode) {
  return cast<TypeAttr>(decode->getAttr(kFloat8DecodeAttr)).getValue();
}

void Float8Operands::erase() {
  eraseWithBuffer(decodeA);
  eraseWithBuffer(decodeB);
}

} // namespace kiln
