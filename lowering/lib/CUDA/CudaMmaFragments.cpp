//===- CudaMmaFragments.cpp - mma.sync fragments for tensor-core kernels --===//
#include "CudaMmaFragments.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

namespace kiln {

SmallVector<Value> loadMatrices(OpBuilder &b, Location loc, Value stage, ValueRange indices,
                                bool transpose) {
  Type element = cast<MemRefType>(stage.getType()).getElementType();
  auto fragment = VectorType::get({4, 32 / element.getIntOrFloatBitWidth()}, element);
  Value tiles = nvgpu::LdMatrixOp::create(b, loc, fragment, stage, indices, transpose, 4);
  bool f16 = element.isF16();
  if (!f16)
    tiles = vector::BitCastOp::create(b, loc, VectorType::get({4, 1}, b.getI32Type()), tiles);
  SmallVector<Value> regs;
  for (int64_t i = 0; i < 4; ++i)
    regs.push_back(f16 ? vector::ExtractOp::create(b, loc, tiles, ArrayRef<int64_t>{i})
                       : vector::ExtractOp::create(b, loc, tiles, ArrayRef<int64_t>{i, 0}));
  return regs;
}

Value mmaSync(OpBuilder &b, Location loc, ArrayRef<Value> aRegs, ArrayRef<Value> bRegs, Value acc,
              NVVM::MMATypes type, int64_t k) {
  Type f32 = b.getF32Type();
  SmallVector<Value> c;
  for (int64_t i = 0; i < 4; ++i)
    c.push_back(vector::ExtractOp::create(b, loc, acc, ArrayRef<int64_t>{i}));
  auto resultType = LLVM::LLVMStructType::getLiteral(b.getContext(), {f32, f32, f32, f32});
  Value d = NVVM::MmaOp::create(b, loc, resultType, aRegs, bRegs, c, ArrayRef<int64_t>{16, 8, k},
                                std::nullopt, std::nullopt, std::array{type, type},
                                std::array{NVVM::MMALayout::row, NVVM::MMALayout::col});
  SmallVector<Value> out;
  for (int64_t i = 0; i < 4; ++i)
    out.push_back(LLVM::ExtractValueOp::create(b, loc, d, ArrayRef<int64_t>{i}));
  return vector::FromElementsOp::create(b, loc, acc.getType(), out);
}

} // namespace kiln
