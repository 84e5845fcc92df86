//===- AttentionToLoops.cpp - the kiln-attention-to-loops pass ------------===//
//
// One query row per iteration of a parallel loop, its keys in order: the
// score s = q.k * scale (+ mask) in f32 (f64 for f64 inputs); when s raises
// the running max m, the row's sums and l are scaled by exp(m_old - s) (rare
// after the first keys: the expected number of new maxima of n random scores
// is ln n); p = exp(s - m) joins l unrounded and, rounded to q's type as
// flash kernels round it, multiplies v into the sums. Masked keys (s = -inf) are
// skipped; a row whose keys are all masked ends 0 / 0 = NaN, as in torch;
// the head-dim loops (q.k, the sums' updates) move `lanes` elements a step
// where the option asks (the CPU's vectors; the GPUs' threads keep scalars);
// no keys at all give 0 (an empty sum, as torch's math). Batch and
// sequence lengths may be run-time sizes (memref.dim).
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/Common/Passes.h"
#include "kiln/Lowering/Common/VectorUtils.h"
#include "kiln/Lowering/Kernels/KernelOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <limits>

namespace kiln {
#define GEN_PASS_DEF_KILNATTENTIONTOLOOPS
#include "kiln/Lowering/Common/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// Size `dim` of `buffer`: a constant, or memref.dim where it is `?`.
Value sizeOf(OpBuilder &b, Location loc, Value buffer, unsigned dim) {
  return b.createOrFold<memref::DimOp>(loc, buffer, dim);
}

/// Whether dim `dim` of `buffer` is a static 1 (a mask's broadcast dim).
bool isOne(Value buffer, unsigned dim) {
  return cast<MemRefType>(buffer.getType()).getDimSize(dim) == 1;
}

/// Lanes of the head-dim loops: `lanes` where both head dims are whole
/// multiples of it and q, k, v, out and acc are contiguous there, else 1.
int64_t lanesFor(kiln::kernel::AttentionOp op, int64_t lanes) {
  int64_t depth = cast<MemRefType>(op.getQ().getType()).getDimSize(2);
  int64_t width = cast<MemRefType>(op.getV().getType()).getDimSize(2);
  bool contiguous = llvm::all_of(
      ValueRange{op.getQ(), op.getK(), op.getV(), op.getOut(), op.getAcc()}, kiln::unitInnerStride);
  return lanes > 1 && depth % lanes == 0 && width % lanes == 0 && contiguous ? lanes : 1;
}

void lowerToLoops(kiln::kernel::AttentionOp op, int64_t lanes, int64_t maxIterations) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  auto index = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(b, loc, v); };
  // Scores and sums in acc's type: f32, or f64 for f64 inputs.
  Type compute = cast<MemRefType>(op.getAcc().getType()).getElementType();
  Type element = cast<MemRefType>(op.getQ().getType()).getElementType();
  // The head-dim loops move `lanes` elements a step: compute (or vector<lanes x
  // compute>) values.
  Type computes = lanes == 1 ? compute : Type(VectorType::get({lanes}, compute));
  auto computeConst = [&](OpBuilder &ob, double v) -> Value {
    return arith::ConstantOp::create(ob, loc, ob.getFloatAttr(compute, v));
  };
  auto splat = [&](OpBuilder &ob, Value scalar) -> Value {
    return lanes == 1 ? scalar : vector::BroadcastOp::create(ob, loc, computes, scalar).getResult();
  };
  auto widen = [&](OpBuilder &ob, Value v) -> Value {
    Type to = isa<VectorType>(v.getType()) ? computes : compute;
    return v.getType() == to ? v : arith::ExtFOp::create(ob, loc, to, v);
  };
  // `lanes` elements of `buffer` from `at` (innermost), in the compute type.
  auto load = [&](OpBuilder &ob, Value buffer, ValueRange at) -> Value {
    if (lanes == 1)
      return widen(ob, memref::LoadOp::create(ob, loc, buffer, at));
    Type stored = cast<MemRefType>(buffer.getType()).getElementType();
    return widen(ob, vector::LoadOp::create(ob, loc, VectorType::get({lanes}, stored), buffer, at));
  };
  auto store = [&](OpBuilder &ob, Value value, Value buffer, ValueRange at) {
    Type stored = cast<MemRefType>(buffer.getType()).getElementType();
    if (stored != compute)
      value = arith::TruncFOp::create(
          ob, loc, lanes == 1 ? stored : Type(VectorType::get({lanes}, stored)), value);
    if (lanes == 1)
      memref::StoreOp::create(ob, loc, value, buffer, at);
    else
      vector::StoreOp::create(ob, loc, value, buffer, at);
  };
  Value batch = sizeOf(b, loc, op.getQ(), 0), rows = sizeOf(b, loc, op.getQ(), 1);
  Value keys = sizeOf(b, loc, op.getK(), 1), depth = sizeOf(b, loc, op.getQ(), 2);
  Value width = sizeOf(b, loc, op.getV(), 2);
  const double minusInf = -std::numeric_limits<double>::infinity();
  Value acc = op.getAcc();

  // for d < count, `lanes` at a time: body(d), at the builder's point.
  auto forEachChunk = [&](OpBuilder &ob, Value count, auto body) {
    scf::ForOp::create(ob, loc, index(0), count, index(lanes), ValueRange{},
                       [&](OpBuilder &fb, Location, Value d, ValueRange) {
                         body(fb, d);
                         scf::YieldOp::create(fb, loc);
                       });
  };

  // Keys [from, to) of query row (n, i) (from >= to: none) into the
  // sums at `sums`[at(d)], zeroed first: the row's running max and total.
  auto runKeys = [&](OpBuilder &pb, Value n, Value i, Value from, Value to, Value sums,
                     function_ref<SmallVector<Value>(Value)> at) {
    forEachChunk(pb, width, [&](OpBuilder &fb, Value d) {
      store(fb, splat(fb, computeConst(fb, 0.0)), sums, at(d));
    });
    return scf::ForOp::create(
        pb, loc, from, to, index(1), ValueRange{computeConst(pb, minusInf), computeConst(pb, 0.0)},
        [&](OpBuilder &kb, Location, Value j, ValueRange state) {
          Value m = state[0], l = state[1];
          // q.k, `lanes` products at a time, summed across lanes last.
          auto dot = scf::ForOp::create(
              kb, loc, index(0), depth, index(lanes), ValueRange{splat(kb, computeConst(kb, 0.0))},
              [&](OpBuilder &db, Location, Value e, ValueRange sum) {
                Value prod = arith::MulFOp::create(db, loc, load(db, op.getQ(), {n, i, e}),
                                                   load(db, op.getK(), {n, j, e}));
                scf::YieldOp::create(db, loc,
                                     ValueRange{arith::AddFOp::create(db, loc, sum[0], prod)});
              });
          Value qk = dot.getResult(0);
          if (lanes > 1)
            qk = vector::ReductionOp::create(kb, loc, vector::CombiningKind::ADD, qk);
          Value s =
              arith::MulFOp::create(kb, loc, qk, computeConst(kb, op.getScale().convertToDouble()));
          if (Value mask = op.getMask()) {
            // A mask dim of static size 1 broadcasts (a `?` one is the
            // scores' own).
            SmallVector<Value> maskAt, ivs{n, i, j};
            for (auto [dim, iv] : llvm::enumerate(ivs))
              maskAt.push_back(isOne(mask, dim) ? index(0) : iv);
            Value bit = memref::LoadOp::create(kb, loc, mask, maskAt);
            s = bit.getType().isInteger(1)
                    ? Value(arith::SelectOp::create(kb, loc, bit, s, computeConst(kb, minusInf)))
                    : Value(arith::AddFOp::create(kb, loc, s, widen(kb, bit)));
          }
          // NaN scores are not skipped: they make the row NaN.
          Value live = arith::CmpFOp::create(kb, loc, arith::CmpFPredicate::UNE, s,
                                             computeConst(kb, minusInf));
          auto update = scf::IfOp::create(
              kb, loc, live,
              [&](OpBuilder &ub, Location) {
                Value grows = arith::CmpFOp::create(ub, loc, arith::CmpFPredicate::OGT, s, m);
                auto rescale = scf::IfOp::create(
                    ub, loc, grows,
                    [&](OpBuilder &rb, Location) {
                      Value alpha =
                          math::ExpOp::create(rb, loc, arith::SubFOp::create(rb, loc, m, s));
                      forEachChunk(rb, width, [&](OpBuilder &fb, Value d) {
                        Value sum = load(fb, sums, at(d));
                        store(fb, arith::MulFOp::create(fb, loc, sum, splat(fb, alpha)), sums,
                              at(d));
                      });
                      scf::YieldOp::create(rb, loc,
                                           ValueRange{arith::MulFOp::create(rb, loc, l, alpha)});
                    },
                    [&](OpBuilder &rb, Location) { scf::YieldOp::create(rb, loc, ValueRange{l}); });
                Value max = arith::SelectOp::create(ub, loc, grows, s, m);
                Value p = math::ExpOp::create(ub, loc, arith::SubFOp::create(ub, loc, s, max));
                Value rounded = p;
                if (element != compute)
                  rounded = widen(ub, arith::TruncFOp::create(ub, loc, element, p));
                forEachChunk(ub, width, [&](OpBuilder &fb, Value d) {
                  Value sum = load(fb, sums, at(d));
                  Value next = arith::AddFOp::create(
                      fb, loc, sum,
                      arith::MulFOp::create(fb, loc, splat(fb, rounded),
                                            load(fb, op.getV(), {n, j, d})));
                  store(fb, next, sums, at(d));
                });
                Value total = arith::AddFOp::create(ub, loc, rescale.getResult(0), p);
                scf::YieldOp::create(ub, loc, ValueRange{max, total});
              },
              [&](OpBuilder &ub, Location) { scf::YieldOp::create(ub, loc, ValueRange{m, l}); });
          scf::YieldOp::create(kb, loc, update.getResults());
        });
  };
  // Causal: query i sees keys 0..i.
  auto endOf = [&](OpBuilder &pb, Value i) {
    return op.getCausal()
               ? Value(arith::MinUIOp::create(pb, loc, keys, arith::AddIOp::create(pb, loc, i, index(1))))
               : keys;
  };

  // A thread runs some (1 + depth + 2 width) iterations a key (the dot
  // product, the sums' update, a rescale at worst; half the bound is kept
  // for the sums' zeroing and a second round where a grid dim is capped). Where `maxIterations`
  // bounds a thread's loops (lavapipe ends an invocation's loops after
  // 65535 iterations in all, silently), a row's keys run in chunks of at
  // most so many, a thread per row and chunk, into partial sums, maxima
  // and totals; then a thread per output element combines its row's
  // chunks (a loop over the chunks).
  std::optional<int64_t> staticKeys = getConstantIntValue(keys),
                         staticDepth = getConstantIntValue(depth),
                         staticWidth = getConstantIntValue(width);
  int64_t perKey = 1 + staticDepth.value_or(0) + 2 * staticWidth.value_or(0);
  int64_t chunk = std::max<int64_t>(1, maxIterations / perKey);
  if (maxIterations > 0 && lanes == 1 && staticDepth && staticWidth &&
      !(staticKeys && *staticKeys <= chunk)) {
    Value chunkSize = index(chunk);
    Value chunks = arith::CeilDivSIOp::create(b, loc, keys, chunkSize);
    auto alloc = [&](ArrayRef<Value> sizes) {
      SmallVector<int64_t> shape(sizes.size(), ShapedType::kDynamic);
      return memref::AllocOp::create(b, loc, MemRefType::get(shape, compute), sizes).getResult();
    };
    Value partialSums = alloc({batch, rows, chunks, width});
    Value partialMax = alloc({batch, rows, chunks}), partialTotal = alloc({batch, rows, chunks});
    // Rows innermost, on the grid's x (2^24 threads): a grid dim past its
    // cap gives each thread several rounds, each a chunk's budget.
    auto chunkLoop = scf::ParallelOp::create(
        b, loc, ValueRange{index(0), index(0), index(0)}, ValueRange{batch, chunks, rows},
        ValueRange{index(1), index(1), index(1)}, [&](OpBuilder &pb, Location, ValueRange ivs) {
          Value n = ivs[0], c = ivs[1], i = ivs[2];
          Value from = arith::MulIOp::create(pb, loc, c, chunkSize);
          Value to = arith::MinUIOp::create(pb, loc, endOf(pb, i),
                                            arith::AddIOp::create(pb, loc, from, chunkSize));
          auto keyLoop = runKeys(pb, n, i, from, to, partialSums, [&](Value d) {
            return SmallVector<Value>{n, i, c, d};
          });
          memref::StoreOp::create(pb, loc, keyLoop.getResult(0), partialMax, ValueRange{n, i, c});
          memref::StoreOp::create(pb, loc, keyLoop.getResult(1), partialTotal, ValueRange{n, i, c});
          scf::ReduceOp::create(pb, loc);
        });
    chunkLoop->setAttr(kiln::kMinTaskSizeAttr, b.getIndexAttr(1));
    scf::ParallelOp::create(
        b, loc, ValueRange{index(0), index(0), index(0)}, ValueRange{batch, width, rows},
        ValueRange{index(1), index(1), index(1)}, [&](OpBuilder &pb, Location, ValueRange ivs) {
          Value n = ivs[0], d = ivs[1], i = ivs[2];
          auto overChunks = [&](ValueRange inits, auto body) {
            return scf::ForOp::create(pb, loc, index(0), chunks, index(1), inits,
                                      [&](OpBuilder &fb, Location, Value c, ValueRange state) {
                                        scf::YieldOp::create(fb, loc, body(fb, c, state));
                                      })
                .getResults();
          };
          Value m = overChunks(ValueRange{computeConst(pb, minusInf)},
                               [&](OpBuilder &fb, Value c, ValueRange state) {
                                 Value mc = memref::LoadOp::create(fb, loc, partialMax,
                                                                   ValueRange{n, i, c});
                                 return SmallVector<Value>{
                                     arith::MaximumFOp::create(fb, loc, state[0], mc)};
                               })[0];
          // A chunk without live keys (max -inf) adds nothing; all of them
          // so leave 0 / 0 = NaN, as one loop over the keys does.
          ValueRange combined = overChunks(
              ValueRange{computeConst(pb, 0.0), computeConst(pb, 0.0)},
              [&](OpBuilder &fb, Value c, ValueRange state) {
                Value mc = memref::LoadOp::create(fb, loc, partialMax, ValueRange{n, i, c});
                Value empty = arith::CmpFOp::create(fb, loc, arith::CmpFPredicate::OEQ, mc,
                                                    computeConst(fb, minusInf));
                Value weight = arith::SelectOp::create(
                    fb, loc, empty, computeConst(fb, 0.0),
                    math::ExpOp::create(fb, loc, arith::SubFOp::create(fb, loc, mc, m)));
                Value lc = memref::LoadOp::create(fb, loc, partialTotal, ValueRange{n, i, c});
                Value sc = memref::LoadOp::create(fb, loc, partialSums, ValueRange{n, i, c, d});
                auto weighted = [&](Value sum, Value v) -> Value {
                  return arith::AddFOp::create(fb, loc, sum,
                                               arith::MulFOp::create(fb, loc, v, weight));
                };
                return SmallVector<Value>{weighted(state[0], lc), weighted(state[1], sc)};
              });
          // Compared here: an i1 kernel argument would be a bool push
          // constant, which SPIR-V does not allow.
          Value none = arith::CmpIOp::create(pb, loc, arith::CmpIPredicate::eq, chunks, index(0));
          Value o = arith::SelectOp::create(
              pb, loc, none, computeConst(pb, 0.0),
              arith::DivFOp::create(pb, loc, combined[1], combined[0]));
          store(pb, o, op.getOut(), ValueRange{n, i, d});
          scf::ReduceOp::create(pb, loc);
        });
    op->erase();
    return;
  }

  Value noKeys = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, keys, index(0));
  // A row runs over all its keys: a task's worth on its own.
  kiln::buildTaskLoop(b, loc, {batch, rows}, [&](OpBuilder &pb, ValueRange ivs) {
    Value n = ivs[0], i = ivs[1];
    Value end = endOf(pb, i);
    auto keyLoop = runKeys(pb, n, i, index(0), end, acc,
                           [&](Value d) { return SmallVector<Value>{n, i, d}; });
    Value l = keyLoop.getResult(1);
    forEachChunk(pb, width, [&](OpBuilder &fb, Value d) {
      Value sum = load(fb, acc, {n, i, d});
      Value o = arith::SelectOp::create(fb, loc, noKeys, splat(fb, computeConst(fb, 0.0)),
                                        arith::DivFOp::create(fb, loc, sum, splat(fb, l)));
      store(fb, o, op.getOut(), ValueRange{n, i, d});
    });
  });
  op->erase();
}

struct KilnAttentionToLoopsPass
    : kiln::impl::KilnAttentionToLoopsBase<KilnAttentionToLoopsPass> {
  using KilnAttentionToLoopsBase::KilnAttentionToLoopsBase;
  void runOnOperation() override {
    SmallVector<kiln::kernel::AttentionOp> ops;
    getOperation()->walk([&](kiln::kernel::AttentionOp op) {
      if (isa<MemRefType>(op.getOut().getType()))
        ops.push_back(op);
    });
    for (auto op : ops)
      lowerToLoops(op, lanesFor(op, lanes), maxThreadIterations);
  }
};

} // namespace
