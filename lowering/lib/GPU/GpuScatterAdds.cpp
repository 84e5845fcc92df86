//===- GpuScatterAdds.cpp - the kiln-gpu-scatter-adds pass ---------------===//
//
// A scatter_add arrives as a serial loop nest over the index tensor whose
// body loads one output element, adds to it and stores it back
// (kiln-convert-to-linalg's ScatterAddToLoops). Left alone it runs on one
// GPU thread. Here:
//
// - where the target adds the element type atomically (`atomic-types`),
//   every loop becomes parallel and the load-add-store one memref.atomic_rmw;
//   additions into one element then come in any order, as in torch on CUDA;
// - otherwise the loops whose iv indexes the output directly (those of every
//   dim but the scattered one) become parallel around the others: their
//   iterations write distinct elements, and each runs its scattered dim in
//   index order, so the result is the serial loop's.
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/GPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"

namespace kiln {
#define GEN_PASS_DEF_KILNGPUSCATTERADDS
#include "kiln/Lowering/GPU/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// A loop nest whose innermost body reads and writes one buffer only at the
/// element it stores: out[i] = f(out[i], read-only inputs).
struct ScatterNest {
  scf::ForOp top;
  SmallVector<scf::ForOp> loops; // outermost first
  memref::LoadOp current;        // the element before
  memref::StoreOp store;         // ... and after
};

std::optional<ScatterNest> matchNest(scf::ForOp top) {
  ScatterNest nest{top, {}, {}, {}};
  scf::ForOp loop = top;
  while (true) {
    if (loop.getNumRegionIterArgs() != 0)
      return std::nullopt;
    nest.loops.push_back(loop);
    auto ops = loop.getBody()->without_terminator();
    auto inner = std::distance(ops.begin(), ops.end()) == 1 ? dyn_cast<scf::ForOp>(*ops.begin())
                                                            : scf::ForOp();
    if (!inner)
      break;
    loop = inner;
  }
  for (Operation &op : loop.getBody()->without_terminator()) {
    if (auto store = dyn_cast<memref::StoreOp>(op)) {
      if (nest.store)
        return std::nullopt;
      nest.store = store;
    } else if (!isa<memref::LoadOp>(op) &&
               (!isa_and_nonnull<arith::ArithDialect>(op.getDialect()) ||
                op.getNumRegions() != 0)) {
      return std::nullopt;
    }
  }
  if (!nest.store)
    return std::nullopt;
  // The loops are reordered, so their bounds must come from outside.
  for (scf::ForOp l : nest.loops)
    for (Value bound : {l.getLowerBound(), l.getUpperBound(), l.getStep()})
      if (top->isAncestor(bound.getParentRegion()->getParentOp()))
        return std::nullopt;
  for (auto load : loop.getBody()->getOps<memref::LoadOp>()) {
    if (load.getMemRef() != nest.store.getMemRef())
      continue;
    if (nest.current || load.getIndices() != nest.store.getIndices())
      return std::nullopt;
    nest.current = load;
  }
  if (!nest.current)
    return std::nullopt;
  return nest;
}

/// The addend, if the nest stores current + addend with one add.
Value atomicAddend(ScatterNest nest) {
  Operation *add = nest.store.getValueToStore().getDefiningOp();
  if (!isa_and_nonnull<arith::AddFOp, arith::AddIOp>(add) ||
      !nest.current.getResult().hasOneUse())
    return {};
  Value current = nest.current.getResult();
  if (add->getOperand(0) == current)
    return add->getOperand(1);
  return add->getOperand(1) == current ? add->getOperand(0) : Value();
}

std::string typeName(Type type) {
  std::string name;
  llvm::raw_string_ostream os(name);
  type.print(os);
  return name;
}

/// An scf.parallel over `parallel`'s ranges at the nest's place, with the
/// other loops inside it in their order; `body` builds the innermost body.
void rebuild(ScatterNest nest, ArrayRef<scf::ForOp> parallel,
             function_ref<void(OpBuilder &, IRMapping &)> body) {
  OpBuilder b(nest.top);
  Location loc = nest.top.getLoc();
  SmallVector<Value> lbs, ubs, steps;
  for (scf::ForOp loop : parallel) {
    lbs.push_back(loop.getLowerBound());
    ubs.push_back(loop.getUpperBound());
    steps.push_back(loop.getStep());
  }
  auto outer = scf::ParallelOp::create(b, loc, lbs, ubs, steps);
  IRMapping mapping;
  for (auto [loop, iv] : llvm::zip(parallel, outer.getInductionVars()))
    mapping.map(scf::ForOp(loop).getInductionVar(), iv);
  OpBuilder ib = OpBuilder::atBlockBegin(outer.getBody());
  std::function<void(OpBuilder &, unsigned)> nestFrom = [&](OpBuilder &ob, unsigned k) {
    if (k == nest.loops.size())
      return body(ob, mapping);
    scf::ForOp loop = nest.loops[k];
    if (llvm::is_contained(parallel, loop))
      return nestFrom(ob, k + 1);
    scf::ForOp::create(ob, loc, mapping.lookupOrDefault(loop.getLowerBound()),
                       mapping.lookupOrDefault(loop.getUpperBound()),
                       mapping.lookupOrDefault(loop.getStep()), ValueRange{},
                       [&](OpBuilder &fb, Location, Value iv, ValueRange) {
                         mapping.map(loop.getInductionVar(), iv);
                         nestFrom(fb, k + 1);
                         scf::YieldOp::create(fb, loc);
                       });
  };
  nestFrom(ib, 0);
  nest.top.erase();
}

struct KilnGpuScatterAddsPass : kiln::impl::KilnGpuScatterAddsBase<KilnGpuScatterAddsPass> {
  using KilnGpuScatterAddsBase::KilnGpuScatterAddsBase;

  void runOnOperation() override {
    SmallVector<ScatterNest> nests;
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (!func.isExternal())
        for (auto loop : func.getBody().front().getOps<scf::ForOp>())
          if (std::optional<ScatterNest> nest = matchNest(loop))
            nests.push_back(*nest);
    for (ScatterNest nest : nests) {
      Block *innermost = nest.loops.back().getBody();
      SmallVector<scf::ForOp> columns;
      for (scf::ForOp loop : nest.loops)
        if (llvm::is_contained(nest.store.getIndices(), loop.getInductionVar()))
          columns.push_back(loop);
      Type elem = nest.store.getValueToStore().getType();
      Value addend = atomicAddend(nest);
      if (columns.size() < nest.loops.size() && addend &&
          llvm::is_contained(atomicTypes, typeName(elem))) {
        Operation *add = nest.store.getValueToStore().getDefiningOp();
        auto kind = isa<FloatType>(elem) ? arith::AtomicRMWKind::addf : arith::AtomicRMWKind::addi;
        rebuild(nest, nest.loops, [&](OpBuilder &ob, IRMapping &mapping) {
          for (Operation &op : innermost->without_terminator())
            if (&op != nest.current && &op != add && &op != nest.store)
              ob.clone(op, mapping);
          SmallVector<Value> indices;
          for (Value index : nest.store.getIndices())
            indices.push_back(mapping.lookupOrDefault(index));
          memref::AtomicRMWOp::create(ob, nest.store.getLoc(), kind, mapping.lookup(addend),
                                      nest.store.getMemRef(), indices);
        });
        continue;
      }
      if (columns.empty())
        continue; // one scattered dim and no atomics: the serial loop stays
      rebuild(nest, columns, [&](OpBuilder &ob, IRMapping &mapping) {
        for (Operation &op : innermost->without_terminator())
          ob.clone(op, mapping);
      });
    }
  }
};

} // namespace
