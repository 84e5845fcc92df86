//===- GatheredOperand.cpp - matmul operands gathered, not copied ---------===//
//
// A matmul operand that a copy generic wrote just before the matmul (conv's
// im2col: B[image, (c, kh, kw), (oh, ow)] = x[image, c, oh*sh + kh*dh,
// ow*sw + kw*dw]) is read through the copy's index map by the matmul's own
// loads, so the copy is never written (implicit GEMM). Where a run of K
// (rows) is a run of the input (channels-last patches, K ordered (kh, kw,
// c)), the loads are vectors; else scalar.
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/Common/GatheredOperand.h"
#include "kiln/Lowering/Common/MatmulKernels.h"
#include "kiln/Lowering/Common/VectorUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;

namespace kiln {

linalg::GenericOp copyGenericInto(Value buffer) {
  for (Operation *user : buffer.getUsers()) {
    auto copy = dyn_cast<linalg::GenericOp>(user);
    if (!copy || copy.getDpsInits()[0] != buffer)
      continue;
    Block *body = copy.getBody();
    auto yield = cast<linalg::YieldOp>(body->getTerminator());
    if (copy.getNumDpsInputs() != 1 || copy.getNumDpsInits() != 1 ||
        body->getOperations().size() != 1 || yield.getOperand(0) != body->getArgument(0) ||
        !copy.getMatchingIndexingMap(copy.getDpsInitOperand(0)).isIdentity() ||
        !copy.hasPureBufferSemantics())
      return {};
    return copy;
  }
  return {};
}

void eraseWithBuffer(linalg::GenericOp writer) {
  Value buffer = writer.getDpsInits()[0];
  writer->erase();
  for (Operation *user : llvm::make_early_inc_range(buffer.getUsers()))
    user->erase();
  buffer.getDefiningOp()->erase();
}

/// A read of one of a view's sizes (that erase() can make the buffer's).
static bool readsSize(Operation *op) {
  auto dim = dyn_cast<memref::DimOp>(op);
  return dim && dim.getConstantIndex();
}

/// A view of a buffer whose sizes alone are read.
static bool readsSizesAlone(Operation *op) {
  return isa<memref::CollapseShapeOp>(op) && llvm::all_of(op->getUsers(), readsSize);
}

std::optional<GatheredOperand> findGatheredOperand(linalg::LinalgOp matmul, Value operand) {
  GatheredOperand gathered;
  Value buffer = operand;
  if (auto view = operand.getDefiningOp<memref::CollapseShapeOp>()) {
    gathered.view = view;
    buffer = view.getSrc();
  }
  auto alloc = buffer.getDefiningOp<memref::AllocOp>();
  gathered.copy = alloc ? copyGenericInto(buffer) : linalg::GenericOp();
  if (!gathered.copy || gathered.copy->getBlock() != matmul->getBlock() ||
      !gathered.copy->isBeforeInBlock(matmul))
    return std::nullopt;
  // Nothing but the copy, the matmul (through the view) and deallocation
  // uses the buffer, and nothing between the copy and the matmul writes
  // memory: the copy's input still holds what it read.
  // Views whose sizes alone are read (a `?` pixel count) are fine too:
  // erase() reads those sizes off the allocation.
  for (Operation *user : buffer.getUsers())
    if (user != gathered.copy && user != gathered.view && !isa<memref::DeallocOp>(user) &&
        !readsSizesAlone(user))
      return std::nullopt;
  if (gathered.view &&
      llvm::count_if(gathered.view->getUsers(), [](Operation *user) { return !readsSize(user); }) !=
          1)
    return std::nullopt;
  for (Operation *op = gathered.copy->getNextNode(); op != matmul; op = op->getNextNode())
    if (auto fill = dyn_cast<linalg::FillOp>(op); fill && fill.getDpsInits()[0] != matmul.getDpsInits()[0])
      return std::nullopt;
    else if (!fill && !isa<memref::AllocOp, memref::CollapseShapeOp, memref::ExpandShapeOp>(op) &&
             !(op->getNumRegions() == 0 && isMemoryEffectFree(op))) // constants, sizes
      return std::nullopt;
  return gathered;
}

/// The copy's dims that dim `d` of the operand collapses.
static SmallVector<int64_t> dimsOf(memref::CollapseShapeOp view, int64_t d) {
  if (!view)
    return {d};
  return llvm::to_vector(view.getReassociationIndices()[d]);
}

bool GatheredOperand::rowsAreRuns(int64_t chunk) const {
  // Op handles' accessors are not const.
  linalg::GenericOp copy = this->copy;
  memref::CollapseShapeOp view = this->view;
  OpOperand *input = copy.getDpsInputOperand(0);
  // A copy of a scalar or a 0-d buffer (a broadcast) has no runs.
  auto inputType = dyn_cast<MemRefType>(input->get().getType());
  if (!inputType || inputType.getRank() == 0)
    return false;
  auto shape = cast<MemRefType>(copy.getDpsInits()[0].getType()).getShape();
  int64_t rows = cast<MemRefType>(copy.getDpsInits()[0].getType()).getRank() - 2;
  if (view)
    rows = cast<MemRefType>(view.getType()).getRank() - 2;
  int64_t innermost = dimsOf(view, rows).back();
  AffineMap map = copy.getMatchingIndexingMap(input);
  auto last = dyn_cast<AffineDimExpr>(map.getResults().back());
  auto whole = [&](int64_t size) { return !ShapedType::isDynamic(size) && size % chunk == 0; };
  return last && last.getPosition() == innermost && whole(shape[innermost]) &&
         whole(inputType.getShape().back()) && inputType.getLayout().isIdentity() &&
         llvm::none_of(map.getResults().drop_back(), [&](AffineExpr e) {
           return e.isFunctionOfDim(innermost);
         });
}

Value GatheredOperand::load(OpBuilder &b, Location loc, ValueRange indices) const {
  auto [input, at] = source(b, loc, indices);
  return memref::LoadOp::create(b, loc, input, at);
}

std::pair<Value, SmallVector<Value>> GatheredOperand::source(OpBuilder &b, Location loc,
                                                            ValueRange indices) const {
  // Op handles' accessors are not const.
  linalg::GenericOp copy = this->copy;
  IndexBuilder x{b, loc};
  auto alloc = copy.getDpsInits()[0].getDefiningOp<memref::AllocOp>();
  MemRefType type = alloc.getType();
  // A dim's size: the allocation's operand for a run-time one (`?` images).
  auto size = [&](int64_t d) {
    return type.isDynamicDim(d) ? alloc.getDynamicSizes()[type.getDynamicDimIndex(d)]
                                : x.c(type.getDimSize(d));
  };
  // The copy's iteration indices: each index of the view splits into the
  // dims it collapses, innermost fastest.
  SmallVector<Value> ivs;
  for (auto [d, index] : llvm::enumerate(indices)) {
    SmallVector<int64_t> dims = dimsOf(view, d);
    SmallVector<Value> split(dims.size());
    Value rest = index;
    for (int64_t i = dims.size() - 1; i >= 0; --i) {
      split[i] = i == 0 ? rest : arith::RemUIOp::create(b, loc, rest, size(dims[i]));
      if (i > 0)
        rest = x.div(rest, size(dims[i]));
    }
    ivs.append(split);
  }
  OpOperand *input = copy.getDpsInputOperand(0);
  return {input->get(), indicesFor(b, loc, copy.getMatchingIndexingMap(input), ivs)};
}

/// Sizes read off `value` (the buffer `alloc`, or `view` of it) outlive
/// them: each memref.dim becomes the allocation's size, a product of its
/// sizes where the view collapses several dims.
static void replaceSizeReads(Value value, memref::AllocOp alloc, memref::CollapseShapeOp view) {
  for (Operation *user : llvm::make_early_inc_range(value.getUsers())) {
    auto dim = dyn_cast<memref::DimOp>(user);
    std::optional<int64_t> index = dim ? dim.getConstantIndex() : std::nullopt;
    if (!index)
      continue;
    OpBuilder b(dim);
    MemRefType type = alloc.getType();
    Value size = arith::ConstantIndexOp::create(b, dim.getLoc(), 1);
    for (int64_t d : value == alloc.getResult() ? SmallVector<int64_t>{*index} : dimsOf(view, *index))
      size = b.createOrFold<arith::MulIOp>(
          dim.getLoc(), size,
          type.isDynamicDim(d)
              ? alloc.getDynamicSizes()[type.getDynamicDimIndex(d)]
              : arith::ConstantIndexOp::create(b, dim.getLoc(), type.getDimSize(d)).getResult());
    dim.replaceAllUsesWith(size);
    dim.erase();
  }
}

void GatheredOperand::erase() {
  auto alloc = copy.getDpsInits()[0].getDefiningOp<memref::AllocOp>();
  for (Operation *user : llvm::make_early_inc_range(alloc->getUsers()))
    if (auto sizes = dyn_cast<memref::CollapseShapeOp>(user); sizes && sizes != view) {
      replaceSizeReads(sizes, alloc, sizes);
      sizes->erase();
    }
  if (view) {
    replaceSizeReads(view, alloc, view);
    view->erase();
  }
  replaceSizeReads(alloc, alloc, view);
  eraseWithBuffer(copy);
}

} // namespace kiln
