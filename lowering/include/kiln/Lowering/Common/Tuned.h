//===- Tuned.h - a kernel's tuned configuration, from the module -*- C++ -*-===//
//
// The passes that instantiate a tunable template ask here for the
// configuration of their kernel: the module attribute `kiln.tuned` maps tune
// key texts to configs (the compiler sets it from CompileOptions::tuned; a
// lit test may write it), and every key asked for is recorded in
// `kiln.tune_keys`, which the compiler moves into CompiledProgram::tuneKeys.
// Where a template's untuned choice depends on the shape and is one of its
// candidates, its pass records that choice in `kiln.untuned` (key -> config
// text), which becomes CompiledProgram::untunedConfigs: the tuner times it
// first. (Where it is none of them, the default candidate stands for it.)
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LOWERING_COMMON_TUNED_H
#define KILN_LOWERING_COMMON_TUNED_H

#include "kiln/runtime/common/Tuning.h"

#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/IR/BuiltinOps.h"

namespace kiln {

/// The tuned configuration of the kernel `op` (in `module`) of template
/// `space`, op kind `kind`, element types `dtypes` (tuneDtypeName) and
/// shape `shape` (not yet anchored); nullopt: the template's default. A
/// config that is not one of the candidates is a warning on `op`, and the
/// default.
std::optional<std::vector<int64_t>> tunedConfig(mlir::ModuleOp module, mlir::Operation *op,
                                                const TuneSpace &space, std::string kind,
                                                std::vector<std::string> dtypes,
                                                llvm::ArrayRef<int64_t> shape);

/// The same for a (batch) matmul on buffers: op "matmul" or
/// "batch_matmul", dtypes of A, B and C (f32 inputs as "tf32" with `tf32`),
/// shape M x N x K (B x M x N x K).
std::optional<std::vector<int64_t>> tunedMatmulConfig(mlir::linalg::LinalgOp op,
                                                      const TuneSpace &space, bool tf32 = false);

/// Records `config` as what the kernel of matmul `op` takes untuned, under
/// the key tunedMatmulConfig names (f32 inputs as f32), where it is one of
/// `space`'s candidates (else nothing: the tuner then times the default
/// first).
void recordUntunedMatmulConfig(mlir::linalg::LinalgOp op, const TuneSpace &space,
                               const std::vector<int64_t> &config);

/// "f32", "bf16", "i8", ... as tune keys write element types.
std::string tuneDtypeName(mlir::Type type);

} // namespace kiln

#endif
