//===- CpuEntry.cpp - the kiln-cpu-entry pass ----------------------------===//
//
// The runtime calls every CPU program as
// `void _kiln_entry(void **buffers, const int64_t *sizes)`: one data pointer
// per argument of the bufferized entry function (inputs, then outputs), and
// every dim of those arguments in the same order (docs/dynamic-shapes.md).
// The wrapper rebuilds each memref descriptor from the static shape, reading
// only `?` dims from `sizes`, so no descriptor layout leaks into the
// MLIR-free runtime.
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/CPU/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace kiln {
#define GEN_PASS_DEF_KILNCPUENTRY
#include "kiln/Lowering/CPU/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {
struct KilnCpuEntryPass : kiln::impl::KilnCpuEntryBase<KilnCpuEntryPass> {
  using KilnCpuEntryBase::KilnCpuEntryBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto target = module.lookupSymbol<func::FuncOp>(entry);
    if (!target) {
      module.emitError() << "no entry function '" << entry << "'";
      return signalPassFailure();
    }
    MLIRContext *ctx = &getContext();
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    Location loc = target.getLoc();
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    auto i64 = b.getI64Type();
    auto wrapper = func::FuncOp::create(b, loc, "_kiln_entry",
                                        b.getFunctionType({ptr, ptr}, {}));
    Block *body = wrapper.addEntryBlock();
    b.setInsertionPointToStart(body);
    auto i64c = [&](int64_t v) {
      return LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(v));
    };
    // Dim `d` of an argument: its static size, else sizes[first + d].
    int32_t first = 0;
    auto dimSize = [&](MemRefType memref, int64_t d) -> Value {
      if (!memref.isDynamicDim(d))
        return i64c(memref.getDimSize(d));
      Value slot = LLVM::GEPOp::create(b, loc, ptr, i64, body->getArgument(1),
                                       ArrayRef<LLVM::GEPArg>{first + int32_t(d)});
      return LLVM::LoadOp::create(b, loc, i64, slot);
    };
    SmallVector<Value> args;
    for (auto [i, type] : llvm::enumerate(target.getArgumentTypes())) {
      auto memref = dyn_cast<MemRefType>(type);
      if (!memref || !memref.getLayout().isIdentity() || target.getNumResults() != 0) {
        target.emitError() << "kiln-cpu-entry: the entry function must take "
                              "contiguous memrefs and return nothing";
        return signalPassFailure();
      }
      Value slot = LLVM::GEPOp::create(b, loc, ptr, ptr, body->getArgument(0),
                                       ArrayRef<LLVM::GEPArg>{int32_t(i)});
      Value data = LLVM::LoadOp::create(b, loc, ptr, slot);
      int64_t rank = memref.getRank();
      SmallVector<Type> fields = {ptr, ptr, i64};
      if (rank > 0) {
        fields.push_back(LLVM::LLVMArrayType::get(i64, rank));
        fields.push_back(LLVM::LLVMArrayType::get(i64, rank));
      }
      auto descType = LLVM::LLVMStructType::getLiteral(ctx, fields);
      Value desc = LLVM::UndefOp::create(b, loc, descType);
      desc = LLVM::InsertValueOp::create(b, loc, desc, data, ArrayRef<int64_t>{0});
      desc = LLVM::InsertValueOp::create(b, loc, desc, data, ArrayRef<int64_t>{1});
      desc = LLVM::InsertValueOp::create(b, loc, desc, i64c(0), ArrayRef<int64_t>{2});
      Value stride = i64c(1);
      for (int64_t d = rank - 1; d >= 0; --d) {
        Value size = dimSize(memref, d);
        desc = LLVM::InsertValueOp::create(b, loc, desc, size, ArrayRef<int64_t>{3, d});
        desc = LLVM::InsertValueOp::create(b, loc, desc, stride, ArrayRef<int64_t>{4, d});
        stride = LLVM::MulOp::create(b, loc, stride, size);
      }
      first += static_cast<int32_t>(rank);
      args.push_back(
          UnrealizedConversionCastOp::create(b, loc, memref, desc).getResult(0));
    }
    func::CallOp::create(b, loc, target, args);
    func::ReturnOp::create(b, loc);
  }
};
} // namespace
