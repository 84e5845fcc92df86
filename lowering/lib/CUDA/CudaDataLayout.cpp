//===- CudaDataLayout.cpp - the kiln-cuda-data-layout pass ---------------===//
//
// gpu-module-to-binary translates a kernel module to LLVM IR under the
// module's own data layout and sets NVPTX's only afterwards, so a load or
// store without an explicit alignment took LLVM's default ABI alignment,
// 4 bytes for i64: NVPTX then split every i64 access into two 32-bit ones
// (scatter_add's indices, gather's, argmax's results). Giving each kernel
// module NVPTX's layout first keeps them 8-byte accesses.
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/CUDA/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

namespace kiln {
#define GEN_PASS_DEF_KILNCUDADATALAYOUT
#include "kiln/Lowering/CUDA/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// NVPTXTargetMachine's layout for 64-bit pointers (LLVM 22).
constexpr llvm::StringLiteral kNvptx64DataLayout =
    "e-p6:32:32-i64:64-i128:128-v16:16-v32:32-n16:32:64";

struct KilnCudaDataLayoutPass : kiln::impl::KilnCudaDataLayoutBase<KilnCudaDataLayoutPass> {
  void runOnOperation() override {
    getOperation()->setAttr(LLVM::LLVMDialect::getDataLayoutAttrName(),
                            StringAttr::get(&getContext(), kNvptx64DataLayout));
  }
};

} // namespace
