//===- MatmulEpilogue.cpp - elementwise consumers fused into matmuls ------===//
#include "kiln/Lowering/Common/MatmulEpilogue.h"

#include "kiln/Lowering/Common/RowReduction.h"
#include "kiln/Lowering/Common/VectorUtils.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;

namespace kiln {

linalg::GenericOp findMatmulEpilogue(linalg::LinalgOp matmul, Value c) {
  // Allocations and constants in between (e.g. the epilogue's output when
  // it is not a result) are looked past.
  SmallVector<Operation *> between;
  Operation *next = matmul->getNextNode();
  while (next && (isa<memref::AllocOp>(next) ||
                  next->hasTrait<OpTrait::ConstantLike>())) {
    between.push_back(next);
    next = next->getNextNode();
  }
  auto e = dyn_cast_or_null<linalg::GenericOp>(next);
  auto cType = cast<MemRefType>(c.getType());
  unsigned rank = cType.getRank();
  if (!e || !e.hasPureBufferSemantics() || e.getNumDpsInits() != 1 ||
      !hasScalarBody(e) || e.getNumLoops() != rank ||
      e.getNumParallelLoops() != rank)
    return {};
  if (ArrayRef(e.getStaticLoopRanges()) != cType.getShape())
    return {};
  Value out = e.getDpsInits()[0];
  if (!e.getMatchingIndexingMap(e.getDpsInitOperand(0)).isIdentity() ||
      !unitInnerStride(out) ||
      cast<MemRefType>(out.getType()).getElementTypeBitWidth() < 8)
    return {};
  bool readsC = false;
  for (OpOperand *in : e.getDpsInputOperands()) {
    AffineMap map = e.getMatchingIndexingMap(in);
    if (in->get() == c) {
      if (!map.isIdentity())
        return {};
      readsC = true;
    } else if (!classify(map, in->get(), rank - 1) ||
               cast<MemRefType>(in->get().getType()).getElementTypeBitWidth() < 8) {
      return {};
    }
  }
  // C must be dead after the epilogue: a temporary whose only other users
  // are the fill before the matmul, the matmul and deallocation. An output
  // buffer (an argument: the matmul is also a result) is read after the
  // function returns.
  if (!c.getDefiningOp<memref::AllocOp>())
    return {};
  for (Operation *user : c.getUsers())
    if (user != matmul && user != e &&
        !isa<linalg::FillOp, memref::DeallocOp>(user))
      return {};
  if (!readsC)
    return {};
  // The fused kernel is built at the matmul: what the epilogue uses must be
  // defined there. Allocations and constants depend on nothing in between.
  for (Operation *op : between)
    op->moveBefore(matmul);
  return e;
}

bool readsOperandsInPlace(linalg::LinalgOp matmul) {
  auto batched = dyn_cast<linalg::BatchMatmulOp>(matmul.getOperation());
  if (!batched)
    return !cast<linalg::MatmulOp>(matmul.getOperation()).hasUserDefinedMaps();
  // Each map is the default one, or the default one less the batch dim.
  for (auto [map, standard] : llvm::zip(batched.getIndexingMapsArray(),
                                        batched.getDefaultIndexingMaps(matmul.getContext())))
    if (map != standard && map != standard.dropResult(0))
      return false;
  return true;
}

EpilogueInvariants loadEpilogueInvariants(OpBuilder &b, Location loc, linalg::GenericOp e) {
  EpilogueInvariants invariants;
  for (OpOperand *in : e.getDpsInputOperands()) {
    AffineMap map = e.getMatchingIndexingMap(in);
    if (llvm::all_of(map.getResults(), [](AffineExpr r) { return isa<AffineConstantExpr>(r); }))
      invariants[in->get()] =
          memref::LoadOp::create(b, loc, in->get(), indicesFor(b, loc, map, {}));
  }
  return invariants;
}

void storeThroughEpilogue(OpBuilder &b, Location loc, linalg::GenericOp e, Value c,
                          Value cValue, ValueRange ivs, int64_t width,
                          const EpilogueInvariants &invariants, IntegerAttr alignment) {
  IRMapping mapping;
  for (auto [n, in] : llvm::enumerate(e.getDpsInputOperands())) {
    Value v;
    if (in->get() == c) {
      v = cValue;
    } else if (Value loaded = invariants.lookup(in->get())) {
      v = width ? vector::BroadcastOp::create(b, loc, VectorType::get({width}, loaded.getType()),
                                              loaded)
                      .getResult()
                : loaded;
    } else {
      AffineMap map = e.getMatchingIndexingMap(in);
      SmallVector<Value> idx = indicesFor(b, loc, map, ivs);
      Type elem = cast<MemRefType>(in->get().getType()).getElementType();
      if (width == 0)
        v = memref::LoadOp::create(b, loc, in->get(), idx);
      else if (classify(map, in->get(), ivs.size() - 1) == Access::Vector)
        v = vector::LoadOp::create(b, loc, VectorType::get({width}, elem), in->get(), idx);
      else
        v = vector::BroadcastOp::create(b, loc, VectorType::get({width}, elem),
                                        memref::LoadOp::create(b, loc, in->get(), idx));
    }
    mapping.map(e.getBody()->getArgument(n), v);
  }
  cloneBody(b, loc, *e.getBody(), mapping, width);
  Value result = mapping.lookup(e.getBody()->getTerminator()->getOperand(0));
  Value out = e.getDpsInits()[0];
  if (width)
    vector::StoreOp::create(b, loc, result, out, ivs, /*nontemporal=*/false, alignment);
  else
    memref::StoreOp::create(b, loc, result, out, ivs);
}

} // namespace kiln
