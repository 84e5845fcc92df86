//===- KilnDialect.cpp - the kiln dialect and its registration -----------===//
#include "kiln/Dialect/KilnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include "kiln/Dialect/KilnDialect.cpp.inc"

using namespace mlir;

void kiln::KilnDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "kiln/Dialect/KilnOps.cpp.inc"
      >();
}

void kiln::registerKilnDialect(DialectRegistry &registry) {
  registry.insert<KilnDialect, func::FuncDialect, arith::ArithDialect,
                  tensor::TensorDialect>();
}
