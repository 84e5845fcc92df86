//===- KilnOps.h - ops of the kiln dialect ----------------------*- C++ -*-===//
#ifndef KILN_DIALECT_KILNOPS_H
#define KILN_DIALECT_KILNOPS_H

#include "kiln/Dialect/KilnDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <optional>

namespace kiln {

/// Classes of element types, as a bit set: what an op accepts.
/// f8 types are storage formats, as in PyTorch: they can be moved, cast and
/// multiplied (matmul), but arithmetic ops reject them.
namespace ElementKind {
enum : unsigned {
  Float = 1,    // f64 f32 f16 bf16
  Signed = 2,   // signless i8 i16 i32 i64 (kiln's signed integers)
  Unsigned = 4, // ui8 ui16 ui32 ui64
  Bool = 8,     // i1
  Any = 15,     // every type with arithmetic
  Float8 = 16,  // f8E4M3FN f8E5M2
};
} // namespace ElementKind

/// The kind of `type` if it is one of kiln's element types.
std::optional<unsigned> elementKindOf(mlir::Type type);
/// "float", "signed integer or float", ...: for diagnostics.
std::string describeElementKinds(unsigned kinds);

/// NumPy broadcasting of two or more shapes; nullopt if incompatible, with the
/// offending dimension (counted from the right) in `badDimFromRight`.
std::optional<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<llvm::ArrayRef<int64_t>> shapes,
                int64_t *badDimFromRight = nullptr);

/// Checks that every operand and result of `op` has a kiln element type.
mlir::LogicalResult verifyKilnElementTypes(mlir::Operation *op);
/// Checks that `value`'s element type is in `kinds`; names it `what`.
mlir::LogicalResult verifyElementKind(mlir::Operation *op, mlir::Value value,
                                      unsigned kinds, llvm::StringRef what);

/// Checks that `type`, if a shaped type, has an element count and a byte size
/// that fit in int64 (sizes in bytes are computed from them everywhere);
/// `what` names the value in the diagnostic.
mlir::LogicalResult
verifyTensorSize(llvm::function_ref<mlir::InFlightDiagnostic()> emitError,
                 mlir::Type type, llvm::StringRef what);

/// Where the compiler records, on fill, iota and random ops with `?` dims,
/// the input dims their sizes come from (DynamicShapes.h in the lowering).
/// Programs may not set it (kiln-verify-program); the ops accept it.
inline constexpr llvm::StringLiteral kSizeSourcesAttrName = "kiln.size_sources";

/// The rules every kiln op shares: no attribute outside `attributeNames`
/// (the op's ODS attributes: a misspelt one would otherwise be ignored) and
/// kSizeSourcesAttrName, and no operand or result whose size overflows.
mlir::LogicalResult verifyKilnOp(mlir::Operation *op,
                                 llvm::ArrayRef<llvm::StringRef> attributeNames);

/// Result types that follow from operands and attributes, for the builders
/// that need no result type. Operands must already be well-formed.
mlir::RankedTensorType broadcastResultType(mlir::ValueRange operands,
                                           mlir::Type elementType);
mlir::RankedTensorType reducedType(mlir::Value x, llvm::ArrayRef<int64_t> dims,
                                   bool keepDims, mlir::Type elementType);
mlir::RankedTensorType withShape(mlir::Value x, llvm::ArrayRef<int64_t> shape);

namespace OpTrait {
template <typename ConcreteType>
class KilnOpChecks
    : public mlir::OpTrait::TraitBase<ConcreteType, KilnOpChecks> {
public:
  static mlir::LogicalResult verifyTrait(mlir::Operation *op) {
    return verifyKilnOp(op, ConcreteType::getAttributeNames());
  }
};

template <typename ConcreteType>
class ElementwiseUnary
    : public mlir::OpTrait::TraitBase<ConcreteType, ElementwiseUnary> {
public:
  static mlir::LogicalResult verifyTrait(mlir::Operation *op) {
    if (mlir::failed(verifyKilnElementTypes(op)))
      return mlir::failure();
    return verifyElementKind(op, op->getOperand(0), ConcreteType::kElementKinds,
                             "operand");
  }
};

mlir::LogicalResult verifyBroadcastBinary(mlir::Operation *op, unsigned kinds,
                                          bool isCompare);

template <typename ConcreteType>
class BroadcastBinary
    : public mlir::OpTrait::TraitBase<ConcreteType, BroadcastBinary> {
public:
  static mlir::LogicalResult verifyTrait(mlir::Operation *op) {
    return verifyBroadcastBinary(op, ConcreteType::kElementKinds,
                                 ConcreteType::kIsCompare);
  }
};
} // namespace OpTrait
} // namespace kiln

#define GET_OP_CLASSES
#include "kiln/Dialect/KilnOps.h.inc"

namespace kiln {
/// Registers the kiln dialect (and what its programs use) in `registry`.
void registerKilnDialect(mlir::DialectRegistry &registry);
} // namespace kiln

#endif
