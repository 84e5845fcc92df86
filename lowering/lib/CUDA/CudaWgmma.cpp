//===- CudaWgmma.cpp - pieces of the Hopper (sm_90a) kernels --------------===//
#include "CudaWgmma.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

using namespace mlir;

namespace kiln {

// How long a thread waiting on an mbarrier may sleep before it looks
// again (ns; CUTLASS's value): waiting warps leave the issue slots free.
constexpr int64_t kWaitHintNs = 10'000'000;

Value toI64(OpBuilder &b, Location loc, Value index) {
  return arith::IndexCastUIOp::create(b, loc, b.getI64Type(), index);
}

Value toI32(OpBuilder &b, Location loc, Value index) {
  return arith::IndexCastUIOp::create(b, loc, b.getI32Type(), index);
}

Value i32(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIntOp::create(b, loc, v, 32);
}

Value sharedPointer(OpBuilder &b, Location loc, Value address) {
  return LLVM::IntToPtrOp::create(b, loc, LLVM::LLVMPointerType::get(b.getContext(), 3),
                                  toI64(b, loc, address));
}

Value tensorMap(OpBuilder &b, Location loc, Value matrix, int64_t boxRows, int64_t boxCols) {
  auto type = cast<MemRefType>(matrix.getType());
  SmallVector<int64_t> box = {boxRows, boxCols};
  if (type.getRank() == 3)
    box.insert(box.begin(), 1);
  auto workgroup = IntegerAttr::get(b.getI64Type(), 3);
  auto descriptorType = nvgpu::TensorMapDescriptorType::get(
      b.getContext(), MemRefType::get(box, type.getElementType(), AffineMap(), workgroup),
      nvgpu::TensorMapSwizzleKind::SWIZZLE_128B, nvgpu::TensorMapL2PromoKind::L2PROMO_256B,
      nvgpu::TensorMapOOBKind::OOB_ZERO, nvgpu::TensorMapInterleaveKind::INTERLEAVE_NONE);
  Value unranked = memref::CastOp::create(
      b, loc, UnrankedMemRefType::get(type.getElementType(), type.getMemorySpace()), matrix);
  SmallVector<Value> boxSizes;
  for (int64_t size : box)
    boxSizes.push_back(arith::ConstantIndexOp::create(b, loc, size));
  Value descriptor =
      nvgpu::TmaCreateDescriptorOp::create(b, loc, descriptorType, unranked, boxSizes);
  return UnrealizedConversionCastOp::create(
             b, loc, LLVM::LLVMPointerType::get(b.getContext()), descriptor)
      .getResult(0);
}

void tmaLoad(OpBuilder &b, Location loc, Value map, ValueRange coordinates, Value to,
             Value barrier) {
  SmallVector<Value> at;
  for (Value c : coordinates)
    at.push_back(toI32(b, loc, c));
  // A block's own shared memory is shared::cluster memory too.
  Value dst = LLVM::AddrSpaceCastOp::create(b, loc, LLVM::LLVMPointerType::get(b.getContext(), 7),
                                            sharedPointer(b, loc, to));
  NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
      b, loc, dst, map, at, barrier, ValueRange{}, Value(), Value(),
      NVVM::TMALoadMode::TILE, false, nullptr, Value());
}

void waitBarrier(OpBuilder &b, Location loc, Value barrier, Value parity) {
  NVVM::MBarrierTryWaitParityOp::create(b, loc, sharedPointer(b, loc, barrier),
                                        toI32(b, loc, parity), i32(b, loc, kWaitHintNs));
}

int64_t descriptorBits(int64_t leading, int64_t stride) {
  return (leading / 16) << 16 | (stride / 16) << 32 | int64_t(1) << 62;
}

Value matrixDescriptor(OpBuilder &b, Location loc, Value start, int64_t bits) {
  Value field = toI64(b, loc, arith::DivUIOp::create(
                                  b, loc, start, arith::ConstantIndexOp::create(b, loc, 16)));
  return arith::OrIOp::create(b, loc, field, arith::ConstantIntOp::create(b, loc, bits, 64));
}

NVVM::WGMMATypes wgmmaTypeOf(Type element) {
  if (element.isBF16())
    return NVVM::WGMMATypes::bf16;
  if (element.isF16())
    return NVVM::WGMMATypes::f16;
  if (isa<Float8E4M3FNType>(element))
    return NVVM::WGMMATypes::e4m3;
  if (isa<Float8E5M2Type>(element))
    return NVVM::WGMMATypes::e5m2;
  return NVVM::WGMMATypes::tf32;
}

} // namespace kiln
