//===- SpirvNoContraction.cpp - the kiln-spirv-no-contraction pass --------===//
//
// SPIR-V lets a Vulkan driver fuse a multiply and an add into an fma unless
// the result is decorated NoContraction; kiln's arith ops (as on the CPU and
// in PTX) round each operation. Decorating every float add, sub and mul keeps
// results identical across targets where kiln promises it (random_normal)
// and within docs/precision.md elsewhere.
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/SPIRV/Passes.h"

#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"

namespace kiln {
#define GEN_PASS_DEF_KILNSPIRVNOCONTRACTION
#include "kiln/Lowering/SPIRV/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {
struct KilnSpirvNoContractionPass
    : kiln::impl::KilnSpirvNoContractionBase<KilnSpirvNoContractionPass> {
  void runOnOperation() override {
    // The serializer writes a `no_contraction` unit attribute as the
    // NoContraction decoration.
    auto unit = UnitAttr::get(&getContext());
    getOperation().walk([&](Operation *op) {
      if (isa<spirv::FAddOp, spirv::FSubOp, spirv::FMulOp,
              spirv::VectorTimesScalarOp>(op))
        op->setAttr("no_contraction", unit);
    });
  }
};
} // namespace
