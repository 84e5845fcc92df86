//===- Scan.h - matching kiln.cumsum's loop nest on buffers ------*- C++ -*-===//
//
// kiln.cumsum lowers to a serial loop nest (loops over the other dims around
// a loop that carries the running sum along the scan dim); each target's
// scan pass matches it here and rebuilds it in parallel.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LOWERING_COMMON_SCAN_H
#define KILN_LOWERING_COMMON_SCAN_H

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <optional>

namespace kiln {

/// A matched scan: out[.., i, ..] = store(acc_i), acc_i = acc_{i-1} + elem(x[.., i, ..]).
struct Scan {
  mlir::scf::ForOp nest;                     // the top-level loop, replaced
  llvm::SmallVector<mlir::scf::ForOp> outer; // loops over the other dims, in dim order
  mlir::scf::ForOp loop;                     // the loop along the scan dim
  mlir::memref::LoadOp load;
  mlir::memref::StoreOp store;
  mlir::Operation *add; // the running sum's addition
  mlir::Value element;  // the add's operand computed from the load
  int64_t dim;
  llvm::SmallVector<mlir::OpFoldResult> sizes; // the buffers' dims: constants or run-time values
};

/// Matches the nest rooted at `top` as a scan with a zero start.
std::optional<Scan> matchScan(mlir::scf::ForOp top);

} // namespace kiln

#endif
