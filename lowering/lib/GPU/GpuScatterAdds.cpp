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
//   index order, so the result is the serial loop's;
// - unless that leaves no parallel loop or a thread more than
//   kMaxSerialScatter (or a run-time count of) indices (slow, and lavapipe
//   ends an invocation's loops after 65535 iterations, silently) and the
//   target adds a wider type atomically (f16/bf16 in f32, i8/i16 in i32):
//   then the output is widened into a temporary, the adds are atomic
//   there, and the sums are rounded back once (more exact than rounding
//   after each add; integers wrap as before).
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/GPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
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
  if (!isa_and_nonnull<arith::AddFOp, arith::AddIOp>(add) || !add->hasOneUse() ||
      !nest.current.getResult().hasOneUse())
    return {};
  Value current = nest.current.getResult();
  if (add->getOperand(0) == current)
    return add->getOperand(1);
  return add->getOperand(1) == current ? add->getOperand(0) : Value();
}

/// A load-add-store that adds in a wider type than it stores: the stored
/// element, the add's other operand in the wider type, and the ops the
/// atomic add replaces.
struct WideAdd {
  Type wide;
  Value addend;
  SmallVector<Operation *> replaced;
};

/// The type that `elem`'s atomic adds may be done in, if the target has no
/// atomic add of `elem` itself.
Type widerAtomicType(Type elem, ArrayRef<std::string> atomicTypes) {
  auto available = [&](StringRef name) { return llvm::is_contained(atomicTypes, name); };
  MLIRContext *ctx = elem.getContext();
  if ((elem.isF16() || elem.isBF16()) && available("f32"))
    return Float32Type::get(ctx);
  if ((elem.isInteger(8) || elem.isInteger(16)) && available("i32"))
    return IntegerType::get(ctx, 32);
  return {};
}

/// The nest's add done in `wide`: current + addend in the element type (the
/// addend is extended), or f16/bf16's trunc(ext(current) + addend).
std::optional<WideAdd> matchWideAdd(ScatterNest nest, Type wide) {
  Operation *stored = nest.store.getValueToStore().getDefiningOp();
  if (Value addend = atomicAddend(nest))
    return WideAdd{wide, addend, {nest.current, stored, nest.store}};
  auto trunc = dyn_cast_or_null<arith::TruncFOp>(stored);
  auto add = trunc ? trunc.getIn().getDefiningOp<arith::AddFOp>() : arith::AddFOp();
  if (!add || add.getType() != wide || !add->hasOneUse() || !trunc->hasOneUse() ||
      !nest.current->hasOneUse())
    return std::nullopt;
  for (auto [mine, other] : {std::pair{add.getLhs(), add.getRhs()}, {add.getRhs(), add.getLhs()}}) {
    auto ext = mine.getDefiningOp<arith::ExtFOp>();
    if (ext && ext.getIn() == nest.current.getResult() && ext->hasOneUse())
      return WideAdd{wide, other, {nest.current, ext, add, trunc, nest.store}};
  }
  return std::nullopt;
}

/// The product of the static trip counts of `loops`; nullopt if one is a
/// run-time count.
std::optional<int64_t> tripCount(ArrayRef<scf::ForOp> loops) {
  int64_t trips = 1;
  for (scf::ForOp loop : loops) {
    std::optional<int64_t> lb = getConstantIntValue(loop.getLowerBound()),
                           ub = getConstantIntValue(loop.getUpperBound()),
                           step = getConstantIntValue(loop.getStep());
    if (!lb || !ub || !step || *step <= 0)
      return std::nullopt;
    trips *= std::max<int64_t>(0, llvm::divideCeilSigned(*ub - *lb, *step));
  }
  return trips;
}

/// `from` converted elementwise into `to` (same shape): a linalg.generic.
void convertInto(OpBuilder &b, Location loc, Value from, Value to) {
  unsigned rank = cast<MemRefType>(from.getType()).getRank();
  AffineMap identity = b.getMultiDimIdentityMap(rank);
  Type target = getElementTypeOrSelf(to.getType());
  linalg::GenericOp::create(
      b, loc, TypeRange{}, ValueRange{from}, ValueRange{to},
      SmallVector<AffineMap>{identity, identity},
      SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
      [&](OpBuilder &nb, Location l, ValueRange args) {
        Value v = args[0];
        unsigned width = v.getType().getIntOrFloatBitWidth(),
                 targetWidth = target.getIntOrFloatBitWidth();
        if (isa<FloatType>(target))
          v = width < targetWidth ? Value(arith::ExtFOp::create(nb, l, target, v))
                                  : Value(arith::TruncFOp::create(nb, l, target, v));
        else
          v = width < targetWidth ? Value(arith::ExtSIOp::create(nb, l, target, v))
                                  : Value(arith::TruncIOp::create(nb, l, target, v));
        linalg::YieldOp::create(nb, l, v);
      });
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

/// A thread of the in-order mapping adds at most this many indices.
constexpr int64_t kMaxSerialScatter = 32768;

/// The nest as one parallel loop nest of atomic adds of `addend` (in the
/// body) into `into` at the store's indices, without the `replaced` ops.
void rebuildAtomic(ScatterNest nest, Value addend, ArrayRef<Operation *> replaced, Value into) {
  Block *innermost = nest.loops.back().getBody();
  Type elem = getElementTypeOrSelf(into.getType());
  auto kind = isa<FloatType>(elem) ? arith::AtomicRMWKind::addf : arith::AtomicRMWKind::addi;
  rebuild(nest, nest.loops, [&](OpBuilder &ob, IRMapping &mapping) {
    for (Operation &op : innermost->without_terminator())
      if (!llvm::is_contained(replaced, &op))
        ob.clone(op, mapping);
    SmallVector<Value> indices;
    for (Value index : nest.store.getIndices())
      indices.push_back(mapping.lookupOrDefault(index));
    Location loc = nest.store.getLoc();
    Value value = mapping.lookupOrDefault(addend); // may be defined outside
    if (value.getType() != elem)
      value = isa<FloatType>(elem) ? Value(arith::ExtFOp::create(ob, loc, elem, value))
                                   : Value(arith::ExtSIOp::create(ob, loc, elem, value));
    memref::AtomicRMWOp::create(ob, loc, kind, value, into, indices);
  });
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
      SmallVector<scf::ForOp> columns, scattered;
      for (scf::ForOp loop : nest.loops)
        (llvm::is_contained(nest.store.getIndices(), loop.getInductionVar()) ? columns
                                                                             : scattered)
            .push_back(loop);
      Value out = nest.store.getMemRef();
      Type elem = getElementTypeOrSelf(out.getType());
      if (Value addend = atomicAddend(nest);
          addend && !scattered.empty() && llvm::is_contained(atomicTypes, typeName(elem))) {
        rebuildAtomic(nest, addend,
                      {nest.current, nest.store.getValueToStore().getDefiningOp(), nest.store},
                      out);
        continue;
      }
      // A run-time count of indices may be long.
      std::optional<int64_t> serial = tripCount(scattered);
      if (Type wide = widerAtomicType(elem, atomicTypes);
          wide && (columns.empty() || !serial || *serial > kMaxSerialScatter))
        if (std::optional<WideAdd> add = matchWideAdd(nest, wide)) {
          OpBuilder b(nest.top);
          Location loc = nest.top.getLoc();
          auto type = cast<MemRefType>(out.getType());
          SmallVector<Value> sizes;
          for (int64_t d = 0; d < type.getRank(); ++d)
            if (type.isDynamicDim(d))
              sizes.push_back(memref::DimOp::create(b, loc, out, d));
          Value sums = memref::AllocOp::create(b, loc, MemRefType::get(type.getShape(), wide),
                                               sizes);
          convertInto(b, loc, out, sums);
          b.setInsertionPointAfter(nest.top);
          convertInto(b, loc, sums, out);
          rebuildAtomic(nest, add->addend, add->replaced, sums);
          continue;
        }
      if (columns.empty())
        continue; // one scattered dim and no atomics: the serial loop stays
      Block *innermost = nest.loops.back().getBody();
      rebuild(nest, columns, [&](OpBuilder &ob, IRMapping &mapping) {
        for (Operation &op : innermost->without_terminator())
          ob.clone(op, mapping);
      });
    }
  }
};

} // namespace
