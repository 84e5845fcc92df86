//===- GpuColumnChains.cpp - the kiln-gpu-column-chains pass -------------===//
//
// A softmax over dim 0 (or over an NCHW image's channels) reaches the GPU
// as a chain of reductions over that dim and elementwise ops reading them
// (kiln::ReductionChain): the max, the exponentials, their sum, the
// quotient. kiln-gpu-normalize-reductions would give each reduction a
// thread per output, serially over the reduced dim (loads coalesced across
// threads), and each elementwise op its own kernel: four passes over the
// tensor, the exponentials written to a temporary and read back twice.
// Where the reduced dim is short, this pass runs the chain so instead:
// one scf.parallel over the columns (every loop but the reduced one), each
// column taking the stages in turn as serial loops over the reduced dim. A
// column's statistics (temporaries without the reduced dim) stay in
// registers, a temporary whose last reader writes the output elementwise
// lives in the output, and the later stages find the column in the cache.
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/Common/ReductionChain.h"
#include "kiln/Lowering/GPU/Passes.h"
#include "kiln/Lowering/GPU/SerialReductions.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/IRMapping.h"

namespace kiln {
#define GEN_PASS_DEF_KILNGPUCOLUMNCHAINS
#include "kiln/Lowering/GPU/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// A column chain as one parallel loop over its columns.
class ColumnChain {
public:
  explicit ColumnChain(kiln::ReductionChain chain) : chain(std::move(chain)) {}

  /// Checks the chain and rewrites it. The temporaries it no longer needs
  /// and their deallocations (which a later chain of the block may hold)
  /// go into `erased`, to be erased once the block is done.
  LogicalResult run(IRRewriter &rewriter, SmallVectorImpl<Operation *> &erased) {
    if (failed(chain.analyze()) || !chain.isColumnChain())
      return failure();
    row = chain.reducedLoop();
    last = chain.innermostLoop();
    ArrayRef<int64_t> ranges = chain.ranges();
    if (llvm::any_of(ranges, ShapedType::isDynamic))
      return failure();
    // Short columns only (which kiln-gpu-normalize-reductions gives a
    // thread each however few they are): their re-reads hit L1/L2, and a
    // thread's loops stay far inside lavapipe's 65535 iterations. Longer
    // ones would run every stage serially where the elementwise ones ran a
    // thread per element, on as few threads as columns (a 1024 x 16384
    // softmax: 16384).
    if (ranges[row] > kiln::kShortReduction)
      return failure();
    // A fill converting its value (linalg.fill's implicit cast) is left to
    // the generic mapping.
    for (Operation *op : chain.ops())
      if (auto fill = dyn_cast<linalg::FillOp>(op);
          fill && fill.value().getType() != getElementTypeOrSelf(fill.output().getType()))
        return failure();
    rewrite(rewriter, erased);
    return success();
  }

private:
  /// Whether `buffer` holds one value per column (no reduced dim).
  bool isPerColumn(Value buffer) const {
    return cast<MemRefType>(buffer.getType()).getRank() == static_cast<int64_t>(last);
  }

  /// The indices `map` (or all loops but the reduced one, for a buffer
  /// per column) picks of `ivs`.
  SmallVector<Value> indices(AffineMap map, ArrayRef<Value> ivs) const {
    return llvm::map_to_vector(map.getResults(), [&](AffineExpr e) {
      return ivs[cast<AffineDimExpr>(e).getPosition()];
    });
  }
  SmallVector<Value> columnIndices(ArrayRef<Value> ivs) const {
    SmallVector<Value> at;
    for (unsigned d = 0; d <= last; ++d)
      if (d != row)
        at.push_back(ivs[d]);
    return at;
  }

  /// A serial loop over the reduced dim carrying `init` (if any); `body`
  /// yields what it carries on.
  Value serialLoop(OpBuilder &b, Location loc, ArrayRef<Value> ivs, Value init,
                   function_ref<Value(OpBuilder &, SmallVectorImpl<Value> &, Value)> body) {
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    Value length = arith::ConstantIndexOp::create(b, loc, chain.ranges()[row]);
    SmallVector<Value> inits;
    if (init)
      inits.push_back(init);
    auto loop = scf::ForOp::create(
        b, loc, zero, length, one, inits,
        [&](OpBuilder &lb, Location ll, Value r, ValueRange carried) {
          SmallVector<Value> at(ivs);
          at[row] = r;
          Value next = body(lb, at, carried.empty() ? Value() : carried.front());
          scf::YieldOp::create(lb, ll, next ? ValueRange{next} : ValueRange{});
        });
    serialLoops.push_back(loop);
    return init ? loop.getResult(0) : Value();
  }

  /// `g`'s body at the loop indices `at`, its output's value `out` (if
  /// read): its inputs from registers or memory.
  Value applyBody(OpBuilder &b, linalg::GenericOp g, ArrayRef<Value> at, Value out) {
    Location loc = g.getLoc();
    IRMapping mapping;
    Block *body = g.getBody();
    for (OpOperand *in : g.getDpsInputOperands()) {
      Value v = in->get();
      Value arg = body->getArgument(in->getOperandNumber());
      if (!isa<MemRefType>(v.getType()))
        mapping.map(arg, v);
      else if (Value scalar = scalars.lookup(v))
        mapping.map(arg, scalar);
      else
        mapping.map(arg, memref::LoadOp::create(b, loc, memoryOf(v),
                                                indices(g.getMatchingIndexingMap(in), at)));
    }
    if (out)
      mapping.map(body->getArgument(g.getNumDpsInputs()), out);
    for (Operation &op : body->without_terminator())
      b.clone(op, mapping);
    return mapping.lookupOrDefault(body->getTerminator()->getOperand(0));
  }

  /// Where `buffer`'s values live: the output a temporary shares, or itself.
  Value memoryOf(Value buffer) const {
    Value shared = sharedWith.lookup(buffer);
    return shared ? shared : buffer;
  }

  /// Stores `value` to `buffer` at the column (with the reduced dim at
  /// `at`) unless it is a statistic kept in registers.
  void store(OpBuilder &b, Location loc, Value value, Value buffer, ArrayRef<Value> at) {
    if (isPerColumn(buffer)) {
      scalars[buffer] = value;
      if (!inRegisters.contains(buffer))
        memref::StoreOp::create(b, loc, value, buffer, columnIndices(at));
      return;
    }
    memref::StoreOp::create(b, loc, value, memoryOf(buffer), at);
  }

  void rewrite(IRRewriter &rewriter, SmallVectorImpl<Operation *> &erased) {
    ArrayRef<Operation *> ops = chain.ops();
    Operation *start = ops.front();
    Location loc = start->getLoc();
    SmallVector<Operation *> after = chain.moveOutOfTheWay(rewriter);
    SmallVector<memref::AllocOp> temporaries = chain.temporaries();
    SmallVector<memref::AllocOp> gone;
    llvm::SmallPtrSet<Value, 4> shared;
    for (memref::AllocOp alloc : temporaries) {
      Value t = alloc.getResult();
      if (isPerColumn(t)) {
        inRegisters.insert(t);
        gone.push_back(alloc);
      } else if (Value out = chain.sharedOutput(t, temporaries, shared)) {
        shared.insert(out);
        sharedWith[t] = out;
        gone.push_back(alloc);
      }
    }

    rewriter.setInsertionPoint(start);
    SmallVector<Value> lbs, ubs, steps;
    for (unsigned d = 0; d <= last; ++d) {
      if (d == row)
        continue;
      lbs.push_back(arith::ConstantIndexOp::create(rewriter, loc, 0));
      ubs.push_back(arith::ConstantIndexOp::create(rewriter, loc, chain.ranges()[d]));
      steps.push_back(arith::ConstantIndexOp::create(rewriter, loc, 1));
    }
    auto columns = scf::ParallelOp::create(rewriter, loc, lbs, ubs, steps);
    rewriter.setInsertionPoint(columns.getBody()->getTerminator());
    SmallVector<Value> ivs(last + 1);
    auto columnIvs = columns.getInductionVars();
    for (unsigned d = 0, i = 0; d <= last; ++d)
      ivs[d] = d == row ? Value() : columnIvs[i++];

    for (Operation *op : ops) {
      if (auto fill = dyn_cast<linalg::FillOp>(op)) {
        Value out = fill.output();
        if (isPerColumn(out)) {
          store(rewriter, fill.getLoc(), fill.value(), out, ivs);
          continue;
        }
        serialLoop(rewriter, fill.getLoc(), ivs, Value(),
                   [&](OpBuilder &b, SmallVectorImpl<Value> &at, Value) {
                     store(b, fill.getLoc(), fill.value(), out, at);
                     return Value();
                   });
        continue;
      }
      auto g = dyn_cast<linalg::GenericOp>(op);
      if (!g)
        continue;
      Value out = g.getDpsInits()[0];
      Location gl = g.getLoc();
      bool readsOut = g.payloadUsesValueFromOperand(g.getDpsInitOperand(0));
      if (g.getNumReductionLoops() != 0) {
        // The accumulator starts from the column's value and is carried in
        // a register through the loop.
        Value init = scalars.lookup(out);
        if (!init)
          init = memref::LoadOp::create(rewriter, gl, out, columnIndices(ivs));
        Value result = serialLoop(rewriter, gl, ivs, init,
                                  [&](OpBuilder &b, SmallVectorImpl<Value> &at, Value acc) {
                                    return applyBody(b, g, at, acc);
                                  });
        store(rewriter, gl, result, out, ivs);
        continue;
      }
      serialLoop(rewriter, gl, ivs, Value(), [&](OpBuilder &b, SmallVectorImpl<Value> &at, Value) {
        Value old = readsOut ? memref::LoadOp::create(b, gl, memoryOf(out), at).getResult()
                             : Value();
        store(b, gl, applyBody(b, g, at, old), out, at);
        return Value();
      });
    }

    // Unrolled so that their loads are in flight together; last, since an
    // unrolled loop's results move to its remainder's, which their uses
    // must then read.
    if (chain.ranges()[row] >= kiln::kSerialUnroll)
      for (scf::ForOp loop : serialLoops)
        (void)loopUnrollByFactor(loop, static_cast<uint64_t>(kiln::kSerialUnroll));

    chain.eraseStages(rewriter);
    for (memref::AllocOp alloc : gone) {
      kiln::ReductionChain::appendDeallocations(alloc, erased);
      erased.push_back(alloc);
    }
    for (Operation *op : llvm::reverse(after))
      rewriter.moveOpAfter(op, columns);
  }

  kiln::ReductionChain chain;
  unsigned row = 0;  // the reduced loop
  unsigned last = 0; // the innermost loop
  /// Per-column temporaries (statistics), kept in registers.
  llvm::SmallPtrSet<Value, 4> inRegisters;
  /// The values per column written so far, by buffer.
  DenseMap<Value, Value> scalars;
  /// Temporaries that live in an output.
  DenseMap<Value, Value> sharedWith;
  /// The stages' loops over the reduced dim.
  SmallVector<scf::ForOp> serialLoops;
};

struct KilnGpuColumnChainsPass
    : kiln::impl::KilnGpuColumnChainsBase<KilnGpuColumnChainsPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    SmallVector<Block *> blocks;
    getOperation().walk([&](func::FuncOp f) {
      for (Block &block : f.getBody())
        blocks.push_back(&block);
    });
    for (Block *block : blocks) {
      SmallVector<Operation *> erased;
      for (kiln::ReductionChain &candidate : kiln::ReductionChain::chainsIn(*block))
        (void)ColumnChain(std::move(candidate)).run(rewriter, erased);
      for (Operation *op : erased)
        rewriter.eraseOp(op);
    }
  }
};

} // namespace
