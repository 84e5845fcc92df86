//===- kiln-opt.cpp - mlir-opt with the kiln dialect and passes ----------===//
#include "kiln/Dialect/KilnOps.h"
#include "kiln/Dialect/Passes.h"
#include "kiln/Lowering/Kernels/KernelOps.h"
#include "kiln/Lowering/RegisterPasses.h"

#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllToLLVMIRTranslations(registry);
  mlir::registerAllPasses();
  kiln::registerKilnDialect(registry);
  kiln::kernel::registerKilnKernelDialect(registry);
  kiln::registerKilnDialectPasses();
  kiln::registerKilnLoweringPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "kiln optimizer driver\n", registry));
}
