//===- FormKernels.cpp - the kiln-form-kernels pass ----------------------===//
//
// A kernel is one fused compute op (a linalg op, a kiln_kernel op, or a
// serial scf loop nest) together with the fill that initialises its output. Outlining each into its
// own function gives every target the same unit of compilation and launch.
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/Common/Passes.h"
#include "kiln/Lowering/KilnToLinalg/Passes.h"
#include "kiln/Lowering/Kernels/KernelOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"

namespace kiln {
#define GEN_PASS_DEF_KILNFORMKERNELS
#include "kiln/Lowering/Common/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

bool isKernelRoot(Operation *op) {
  if (isa<scf::ForOp, kiln::kernel::AttentionOp>(op))
    return true;
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp)
    return false;
  // A fill that only initialises another kernel's output belongs to it.
  if (isa<linalg::FillOp>(op) && op->hasOneUse()) {
    OpOperand &use = *op->use_begin();
    auto user = dyn_cast<linalg::LinalgOp>(use.getOwner());
    if (user && user.isDpsInit(&use))
      return false;
  }
  return true;
}

/// Ops that are cloned into each kernel that needs them, not passed in.
bool isCloneable(Operation *op) {
  return op && (isa<tensor::EmptyOp>(op) || op->hasTrait<OpTrait::ConstantLike>());
}

/// Views of a tensor (slices, reshapes) that a kernel reads go into the
/// kernel with it: the kernel then takes the whole tensor and reads the view
/// in place, where a view passed in became a copy into a buffer of its own
/// (33 slices of one input: 33 copies, and a kernel of 34 buffers, beyond
/// Vulkan's storage-buffer limit).
bool isView(Operation *op) {
  return isa_and_nonnull<tensor::ExtractSliceOp, tensor::ExpandShapeOp,
                         tensor::CollapseShapeOp>(op);
}

/// The tensor `v` reads, through views: slices of one tensor are one buffer.
Value viewedTensor(Value v) {
  while (isView(v.getDefiningOp()))
    v = v.getDefiningOp()->getOperand(0);
  return v;
}

void outlineKernel(Operation *root, func::FuncOp parent, unsigned index,
                   SymbolTable &symbols) {
  // The kernel's ops, in program order: init fills, then the root.
  SmallVector<Operation *> ops;
  for (Value init : root->getOperands())
    if (auto fill = init.getDefiningOp<linalg::FillOp>();
        fill && fill->hasOneUse() && !isKernelRoot(fill))
      ops.push_back(fill);
  ops.push_back(root);
  llvm::SmallPtrSet<Operation *, 4> members(ops.begin(), ops.end());

  // Arguments: values used by the kernel that are defined outside it.
  llvm::SetVector<Value> inputs;
  llvm::SetVector<Operation *> clones;
  // `read`: the kernel only reads `v` (an input, not an output it updates).
  std::function<void(Value, bool)> consider = [&](Value v, bool read) {
    Operation *def = v.getDefiningOp();
    if (def && members.contains(def))
      return;
    if (read && isView(def)) {
      for (Value operand : def->getOperands())
        consider(operand, true);
      clones.insert(def);
    } else if (isCloneable(def)) {
      // The `?` sizes of an empty tensor come in as index arguments.
      for (Value operand : def->getOperands())
        consider(operand, true);
      clones.insert(def);
    } else {
      inputs.insert(v);
    }
  };
  for (Operation *op : ops) {
    auto dps = dyn_cast<DestinationStyleOpInterface>(op);
    for (OpOperand &operand : op->getOpOperands())
      consider(operand.get(), dps && dps.isDpsInput(&operand));
    llvm::SetVector<Value> above;
    getUsedValuesDefinedAbove(op->getRegions(), above);
    for (Value v : above)
      consider(v, true);
  }

  OpBuilder b(parent);
  SmallVector<Type> argTypes;
  for (Value v : inputs)
    argTypes.push_back(v.getType());
  auto kernel = func::FuncOp::create(
      b, root->getLoc(),
      (parent.getSymName() + "_kernel" + std::to_string(index)).str(),
      b.getFunctionType(argTypes, root->getResultTypes()));
  kernel.setPrivate();
  kernel->setAttr("kiln.kernel", b.getUnitAttr());
  symbols.insert(kernel);

  Block *body = kernel.addEntryBlock();
  b.setInsertionPointToStart(body);
  IRMapping mapping;
  for (auto [v, arg] : llvm::zip(inputs, body->getArguments()))
    mapping.map(v, arg);
  for (Operation *op : clones)
    b.clone(*op, mapping);
  for (Operation *op : ops)
    b.clone(*op, mapping);
  func::ReturnOp::create(b, root->getLoc(),
                         llvm::map_to_vector(root->getResults(), [&](Value r) {
                           return mapping.lookup(r);
                         }));

  b.setInsertionPoint(root);
  auto call = func::CallOp::create(b, root->getLoc(), kernel,
                                   inputs.getArrayRef());
  root->replaceAllUsesWith(call.getResults());
  for (Operation *op : llvm::reverse(ops))
    op->erase();
}

/// Applies `patterns` greedily, with a bound on rewrites: patterns that
/// undo each other (upstream's rewrites of casts and empty tensors did on a
/// `?`-sized copy of a static dim) would otherwise run until memory is gone.
LogicalResult applyBounded(ModuleOp module, FrozenRewritePatternSet patterns) {
  int64_t ops = 0;
  module.walk([&](Operation *) { ++ops; });
  int64_t bound = 64 * ops + 4096;
  if (succeeded(applyPatternsGreedily(module, patterns,
                                      GreedyRewriteConfig().setMaxNumRewrites(bound))))
    return success();
  return emitError(module.getLoc(), "kernel formation did not settle (at most ")
         << bound << " rewrites in 10 rounds; a compiler bug: please report the program)";
}

struct KilnFormKernelsPass
    : kiln::impl::KilnFormKernelsBase<KilnFormKernelsPass> {
  using KilnFormKernelsBase::KilnFormKernelsBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();

    // A `?` size read off an op's result (tensor.dim, for the next op's
    // tensor.empty) is a second use of it that would keep the elementwise
    // chain from fusing: read it off the op's init instead, back to the
    // argument's dim.
    RewritePatternSet dims(ctx);
    tensor::DimOp::getCanonicalizationPatterns(dims, ctx);
    if (failed(applyBounded(module, std::move(dims))))
      return signalPassFailure();

    RewritePatternSet patterns(ctx);
    // Fuse a producer only into its single consumer, so no work is repeated,
    // and only while the fused kernel stays within maxBuffers tensors; f8
    // decodes of matmul operands and convs' padded images stay as they are
    // (kFloat8DecodeAttr, kConvImageAttr).
    unsigned limit = maxBuffers;
    linalg::populateElementwiseOpsFusionPatterns(
        patterns, [limit](OpOperand *operand) {
          Operation *producer = operand->get().getDefiningOp();
          Operation *consumer = operand->getOwner();
          auto kept = [](Operation *op) {
            return op->hasAttr(kiln::kFloat8DecodeAttr) || op->hasAttr(kiln::kConvImageAttr);
          };
          if (!producer || !producer->hasOneUse() || kept(producer) || kept(consumer))
            return false;
          if (limit == 0)
            return true;
          llvm::SmallPtrSet<Value, 16> buffers;
          for (Operation *op : {producer, consumer})
            for (OpOperand &o : op->getOpOperands())
              if (&o != operand && !o.get().getDefiningOp<tensor::EmptyOp>())
                buffers.insert(viewedTensor(o.get()));
          return buffers.size() + consumer->getNumResults() <= limit;
        });
    linalg::GenericOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::EmptyOp::getCanonicalizationPatterns(patterns, ctx);
    if (failed(applyBounded(module, std::move(patterns))))
      return signalPassFailure();

    SymbolTable symbols(module);
    SmallVector<func::FuncOp> entries;
    for (auto f : module.getOps<func::FuncOp>())
      if (!f->hasAttr("kiln.kernel") && !f.isExternal())
        entries.push_back(f);
    for (func::FuncOp f : entries) {
      SmallVector<Operation *> roots;
      for (Operation &op : f.getBody().front())
        if (isKernelRoot(&op))
          roots.push_back(&op);
      for (auto [i, root] : llvm::enumerate(roots))
        outlineKernel(root, f, i, symbols);
      // Empties, constants and views that moved into kernels are dead here
      // now.
      for (Operation &op :
           llvm::make_early_inc_range(llvm::reverse(f.getBody().front())))
        if ((isCloneable(&op) || isView(&op)) && op.use_empty())
          op.erase();
    }
  }
};

} // namespace
