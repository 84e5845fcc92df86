//===- CudaTransposedOperand.cpp - B read K-major through a copy ----------===//
//
// A B that a copy wrote transposed (x @ W^T, torch's Linear) is read
// K-major from the copy's input by the wgmma kernel, so the copy is never
// run.
//
//===----------------------------------------------------------------------===//
#include "CudaMatmul.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;

namespace kiln {

bool keepsOperandsIntact(Operation *op, linalg::LinalgOp matmul) {
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects)
    return !op->getNumRegions() && isMemoryEffectFree(op);
  SmallVector<MemoryEffects::EffectInstance> list;
  effects.getEffects(list);
  return llvm::all_of(list, [&](const MemoryEffects::EffectInstance &e) {
    if (!isa<MemoryEffects::Write, MemoryEffects::Free>(e.getEffect()))
      return true;
    Value v = e.getValue();
    return v && (v.getDefiningOp<memref::AllocOp>() || v == matmul.getDpsInits()[0]);
  });
}

std::optional<TransposedOperand> findTransposedOperand(linalg::LinalgOp matmul, Value b) {
  auto alloc = b.getDefiningOp<memref::AllocOp>();
  linalg::GenericOp copy = alloc ? copyGenericInto(b) : linalg::GenericOp();
  if (!copy || copy->getBlock() != matmul->getBlock() || !copy->isBeforeInBlock(matmul))
    return std::nullopt;
  // The copy reads a whole [batch,] N x K buffer (16-byte aligned, rows
  // contiguous) with the last two dims swapped.
  OpOperand *input = copy.getDpsInputOperand(0);
  auto type = cast<MemRefType>(input->get().getType());
  const int64_t rank = type.getRank();
  SmallVector<unsigned> swapped = llvm::to_vector(llvm::seq<unsigned>(0, rank));
  if (rank < 2)
    return std::nullopt;
  std::swap(swapped[rank - 1], swapped[rank - 2]);
  SmallVector<int64_t> strides;
  int64_t offset;
  if (copy.getMatchingIndexingMap(input) !=
          AffineMap::getPermutationMap(swapped, matmul.getContext()) ||
      !type.getLayout().isIdentity() || failed(type.getStridesAndOffset(strides, offset)) ||
      offset * std::max<int64_t>(1, type.getElementTypeBitWidth() / 8) % 16 != 0)
    return std::nullopt;
  // The copy's buffer is read once (by the matmul or its f8 decode), and
  // nothing after the copy writes the copy's input before the matmul.
  int64_t readers = 0;
  for (Operation *user : b.getUsers())
    if (user != copy && !isa<memref::DeallocOp>(user))
      ++readers;
  if (readers != 1)
    return std::nullopt;
  for (Operation *op = copy->getNextNode(); op != matmul; op = op->getNextNode())
    if (!keepsOperandsIntact(op, matmul))
      return std::nullopt;
  return TransposedOperand{copy};
}

void TransposedOperand::erase() { eraseWithBuffer(copy); }

} // namespace kiln
