//===- KilnOps.td - ops of the kiln dialect ----------------*- tablegen -*-===//
//
// Op and attribute names here are kiln's public contract: programs and the
// backend's apply() spell them, so a rename breaks users. Verification
// lives in C++ traits and verifiers so that every rule reports the exact
// problem.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_OPS_TD
#define KILN_OPS_TD

include "kiln/Dialect/KilnDialect.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/IR/BuiltinAttributes.td"

// Element kinds an op accepts (bit set, see ElementKind in KilnOps.h).
class KilnKinds<string kinds> {
  string value = kinds;
}
def KindsFloat : KilnKinds<"ElementKind::Float">;
def KindsFloatSigned : KilnKinds<"ElementKind::Float | ElementKind::Signed">;
def KindsNumeric : KilnKinds<"ElementKind::Float | ElementKind::Signed | ElementKind::Unsigned">;
def KindsInt : KilnKinds<"ElementKind::Signed | ElementKind::Unsigned">;
def KindsIntBool : KilnKinds<"ElementKind::Signed | ElementKind::Unsigned | ElementKind::Bool">;
def KindsAll : KilnKinds<"ElementKind::Any">;

def Kiln_ElementwiseUnaryTrait : NativeOpTrait<"ElementwiseUnary"> {
  let cppNamespace = "::kiln::OpTrait";
}
def Kiln_BroadcastBinaryTrait : NativeOpTrait<"BroadcastBinary"> {
  let cppNamespace = "::kiln::OpTrait";
}

class Kiln_WithKinds<KilnKinds kinds> {
  code kindsDecl = "static constexpr unsigned kElementKinds = " # kinds.value # ";";
}

//===----------------------------------------------------------------------===//
// Elementwise unary ops: x -> same type.
//===----------------------------------------------------------------------===//

class Kiln_UnaryOp<string mnemonic, KilnKinds kinds, list<Trait> traits = []>
    : Kiln_Op<mnemonic, traits # [Pure, SameOperandsAndResultType,
                                  Kiln_ElementwiseUnaryTrait]> {
  let arguments = (ins AnyRankedTensor:$x);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
  let extraClassDeclaration = Kiln_WithKinds<kinds>.kindsDecl;
}

foreach name = ["exp", "log", "log1p", "sqrt", "rsqrt", "recip", "sin", "cos",
                "tanh", "sigmoid", "erf", "silu", "floor", "ceil", "round"] in
  def Kiln_ # !toupper(!substr(name, 0, 1)) # !substr(name, 1) # Op
      : Kiln_UnaryOp<name, KindsFloat>;
foreach name = ["neg", "abs", "sign", "relu"] in
  def Kiln_ # !toupper(!substr(name, 0, 1)) # !substr(name, 1) # Op
      : Kiln_UnaryOp<name, KindsFloatSigned>;

def Kiln_NotOp : Kiln_UnaryOp<"not", KindsIntBool>;

def Kiln_GeluOp : Kiln_Op<"gelu", [Pure, SameOperandsAndResultType,
                                    Kiln_ElementwiseUnaryTrait]> {
  let arguments = (ins AnyRankedTensor:$x,
                   DefaultValuedAttr<StrAttr, "\"none\"">:$approximate);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
  let extraClassDeclaration = Kiln_WithKinds<KindsFloat>.kindsDecl;
  let hasVerifier = 1;
}

def Kiln_ClampOp : Kiln_Op<"clamp", [Pure, SameOperandsAndResultType,
                                      Kiln_ElementwiseUnaryTrait]> {
  let arguments = (ins AnyRankedTensor:$x, OptionalAttr<F64Attr>:$min,
                   OptionalAttr<F64Attr>:$max);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
  let extraClassDeclaration = Kiln_WithKinds<KindsNumeric>.kindsDecl;
  let hasVerifier = 1;
}

def Kiln_IsnanOp : Kiln_Op<"isnan", [Pure]> {
  let arguments = (ins AnyRankedTensor:$x);
  let results = (outs AnyRankedTensor:$result);
  let builders = [OpBuilder<(ins "::mlir::Value":$x), [{
    build($_builder, $_state, broadcastResultType({x}, $_builder.getI1Type()), x);
  }]>];
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($result)";
  let hasVerifier = 1;
}

def Kiln_CastOp : Kiln_Op<"cast", [Pure]> {
  let arguments = (ins AnyRankedTensor:$x);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Broadcasting binary ops: lhs, rhs -> broadcast shape.
//===----------------------------------------------------------------------===//

class Kiln_BinaryOp<string mnemonic, KilnKinds kinds, bit isCompare = 0>
    : Kiln_Op<mnemonic, [Pure, Kiln_BroadcastBinaryTrait]> {
  let arguments = (ins AnyRankedTensor:$lhs, AnyRankedTensor:$rhs);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let extraClassDeclaration = Kiln_WithKinds<kinds>.kindsDecl #
      "static constexpr bool kIsCompare = " # !if(isCompare, "true", "false") # ";";
  let builders = [OpBuilder<(ins "::mlir::Value":$lhs, "::mlir::Value":$rhs), [{
    ::mlir::Type elem = kIsCompare ? $_builder.getI1Type()
        : ::mlir::cast<::mlir::ShapedType>(lhs.getType()).getElementType();
    build($_builder, $_state, broadcastResultType({lhs, rhs}, elem), lhs, rhs);
  }]>];
}

foreach name = ["add", "sub", "mul", "div", "rem", "max", "min"] in
  def Kiln_ # !toupper(!substr(name, 0, 1)) # !substr(name, 1) # Op
      : Kiln_BinaryOp<name, KindsNumeric>;
def Kiln_PowOp : Kiln_BinaryOp<"pow", KindsFloat>;
foreach name = ["and", "or", "xor"] in
  def Kiln_ # !toupper(!substr(name, 0, 1)) # !substr(name, 1) # Op
      : Kiln_BinaryOp<name, KindsIntBool>;
foreach name = ["shl", "shr"] in
  def Kiln_ # !toupper(!substr(name, 0, 1)) # !substr(name, 1) # Op
      : Kiln_BinaryOp<name, KindsInt>;
foreach name = ["eq", "ne", "lt", "le", "gt", "ge"] in
  def Kiln_ # !toupper(!substr(name, 0, 1)) # !substr(name, 1) # Op
      : Kiln_BinaryOp<name, KindsAll, 1>;

def Kiln_SelectOp : Kiln_Op<"select", [Pure]> {
  let arguments = (ins AnyRankedTensor:$cond, AnyRankedTensor:$a,
                   AnyRankedTensor:$b);
  let results = (outs AnyRankedTensor:$result);
  let builders = [OpBuilder<(ins "::mlir::Value":$cond, "::mlir::Value":$a,
                                 "::mlir::Value":$b), [{
    build($_builder, $_state,
          broadcastResultType({cond, a, b},
              ::mlir::cast<::mlir::ShapedType>(a.getType()).getElementType()),
          cond, a, b);
  }]>];
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Generators.
//===----------------------------------------------------------------------===//

def Kiln_FillOp : Kiln_Op<"fill", [Pure]> {
  let arguments = (ins F64Attr:$value);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Kiln_IotaOp : Kiln_Op<"iota", [Pure]> {
  let arguments = (ins I64Attr:$dim);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Kiln_RandomUniformOp : Kiln_Op<"random_uniform", [Pure]> {
  let arguments = (ins AnyRankedTensor:$seed,
                   DefaultValuedAttr<F64Attr, "0.0">:$low,
                   DefaultValuedAttr<F64Attr, "1.0">:$high);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$seed attr-dict `:` type($seed) `->` type($result)";
  let hasVerifier = 1;
}

def Kiln_RandomNormalOp : Kiln_Op<"random_normal", [Pure]> {
  let arguments = (ins AnyRankedTensor:$seed,
                   DefaultValuedAttr<F64Attr, "0.0">:$mean,
                   DefaultValuedAttr<F64Attr, "1.0">:$std);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$seed attr-dict `:` type($seed) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Data movement.
//===----------------------------------------------------------------------===//

class Kiln_MoveOp<string mnemonic, dag attrs = (ins)>
    : Kiln_Op<mnemonic, [Pure]> {
  let arguments = !con((ins AnyRankedTensor:$x), attrs);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_ReshapeOp : Kiln_MoveOp<"reshape">;
def Kiln_BroadcastOp : Kiln_MoveOp<"broadcast">;
def Kiln_TransposeOp : Kiln_MoveOp<"transpose", (ins DenseI64ArrayAttr:$perm)> {
  let builders = [OpBuilder<(ins "::mlir::Value":$x,
                                 "::llvm::ArrayRef<int64_t>":$perm), [{
    auto in = ::mlir::cast<::mlir::RankedTensorType>(x.getType());
    ::llvm::SmallVector<int64_t> shape;
    for (int64_t p : perm)
      shape.push_back(in.getDimSize(p));
    build($_builder, $_state, withShape(x, shape), x, perm);
  }]>];
}
def Kiln_SliceOp : Kiln_MoveOp<"slice", (ins DenseI64ArrayAttr:$start,
    DenseI64ArrayAttr:$stop, OptionalAttr<DenseI64ArrayAttr>:$step)>;
def Kiln_PadOp : Kiln_MoveOp<"pad", (ins DenseI64ArrayAttr:$low,
    DenseI64ArrayAttr:$high, DefaultValuedAttr<F64Attr, "0.0">:$value)>;
def Kiln_FlipOp : Kiln_MoveOp<"flip", (ins DenseI64ArrayAttr:$dims)> {
  let builders = [OpBuilder<(ins "::mlir::Value":$x,
                                 "::llvm::ArrayRef<int64_t>":$dims), [{
    build($_builder, $_state, x.getType(), x, dims);
  }]>];
}

def Kiln_ConcatOp : Kiln_Op<"concat", [Pure]> {
  let arguments = (ins Variadic<AnyRankedTensor>:$xs, I64Attr:$dim);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$xs attr-dict `:` functional-type($xs, results)";
  let hasVerifier = 1;
}

class Kiln_IndexOp<string mnemonic, dag operands>
    : Kiln_Op<mnemonic, [Pure]> {
  let arguments = !con(operands, (ins I64Attr:$dim));
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_GatherOp : Kiln_IndexOp<"gather",
    (ins AnyRankedTensor:$x, AnyRankedTensor:$idx)> {
  let builders = [OpBuilder<(ins "::mlir::Value":$x, "::mlir::Value":$idx,
                                 "int64_t":$dim), [{
    build($_builder, $_state,
          withShape(x, ::mlir::cast<::mlir::ShapedType>(idx.getType()).getShape()),
          x, idx, dim);
  }]>];
}
def Kiln_IndexSelectOp : Kiln_IndexOp<"index_select",
    (ins AnyRankedTensor:$x, AnyRankedTensor:$idx)> {
  let builders = [OpBuilder<(ins "::mlir::Value":$x, "::mlir::Value":$idx,
                                 "int64_t":$dim), [{
    ::llvm::SmallVector<int64_t> shape(
        ::mlir::cast<::mlir::ShapedType>(x.getType()).getShape());
    shape[dim] = ::mlir::cast<::mlir::ShapedType>(idx.getType()).getDimSize(0);
    build($_builder, $_state, withShape(x, shape), x, idx, dim);
  }]>];
}
def Kiln_ScatterAddOp : Kiln_IndexOp<"scatter_add",
    (ins AnyRankedTensor:$x, AnyRankedTensor:$idx, AnyRankedTensor:$src)> {
  let builders = [OpBuilder<(ins "::mlir::Value":$x, "::mlir::Value":$idx,
                                 "::mlir::Value":$src, "int64_t":$dim), [{
    build($_builder, $_state, x.getType(), x, idx, src, dim);
  }]>];
}

//===----------------------------------------------------------------------===//
// Reductions and scans.
//===----------------------------------------------------------------------===//

class Kiln_ReduceOp<string mnemonic, KilnKinds kinds, bit boolResult = 0>
    : Kiln_Op<mnemonic, [Pure]> {
  let arguments = (ins AnyRankedTensor:$x, DenseI64ArrayAttr:$dims,
                   DefaultValuedAttr<BoolAttr, "false">:$keep_dims);
  let results = (outs AnyRankedTensor:$result);
  let builders = [OpBuilder<(ins "::mlir::Value":$x,
      "::llvm::ArrayRef<int64_t>":$dims, CArg<"bool", "false">:$keepDims), [{
    ::mlir::Type elem = }] # !if(boolResult, "$_builder.getI1Type()",
        "::mlir::cast<::mlir::ShapedType>(x.getType()).getElementType()") # [{;
    build($_builder, $_state, reducedType(x, dims, keepDims, elem), x, dims,
          keepDims);
  }]>];
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($result)";
  let hasVerifier = 1;
  let extraClassDeclaration = Kiln_WithKinds<kinds>.kindsDecl;
}

def Kiln_ReduceSumOp : Kiln_ReduceOp<"reduce_sum", KindsNumeric>;
def Kiln_ReduceProdOp : Kiln_ReduceOp<"reduce_prod", KindsNumeric>;
def Kiln_ReduceMeanOp : Kiln_ReduceOp<"reduce_mean", KindsFloat>;
def Kiln_ReduceMaxOp : Kiln_ReduceOp<"reduce_max", KindsNumeric>;
def Kiln_ReduceMinOp : Kiln_ReduceOp<"reduce_min", KindsNumeric>;
def Kiln_ReduceAnyOp : Kiln_ReduceOp<"reduce_any", KindsAll, 1>;
def Kiln_ReduceAllOp : Kiln_ReduceOp<"reduce_all", KindsAll, 1>;

class Kiln_ArgOp<string mnemonic> : Kiln_Op<mnemonic, [Pure]> {
  let arguments = (ins AnyRankedTensor:$x, I64Attr:$dim,
                   DefaultValuedAttr<BoolAttr, "false">:$keep_dims);
  let results = (outs AnyRankedTensor:$result);
  let builders = [OpBuilder<(ins "::mlir::Value":$x, "int64_t":$dim,
                                 CArg<"bool", "false">:$keepDims), [{
    build($_builder, $_state,
          reducedType(x, {dim}, keepDims, $_builder.getI64Type()), x, dim,
          keepDims);
  }]>];
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($result)";
  let hasVerifier = 1;
}
def Kiln_ArgmaxOp : Kiln_ArgOp<"argmax">;
def Kiln_ArgminOp : Kiln_ArgOp<"argmin">;

class Kiln_RowOp<string mnemonic> : Kiln_Op<mnemonic, [Pure,
    SameOperandsAndResultType]> {
  let arguments = (ins AnyRankedTensor:$x, I64Attr:$dim);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
  let hasVerifier = 1;
}
def Kiln_CumsumOp : Kiln_RowOp<"cumsum">;
def Kiln_SoftmaxOp : Kiln_RowOp<"softmax">;
def Kiln_LogSoftmaxOp : Kiln_RowOp<"log_softmax">;

//===----------------------------------------------------------------------===//
// Contractions and normalisations.
//===----------------------------------------------------------------------===//

def Kiln_MatmulOp : Kiln_Op<"matmul", [Pure]> {
  let arguments = (ins AnyRankedTensor:$a, AnyRankedTensor:$b);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$a `,` $b attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Convolution, pooling and attention (NCHW, as torch.nn.functional). Spatial
// attributes are array<i64: h, w>.
//===----------------------------------------------------------------------===//

def Kiln_Conv2dOp : Kiln_Op<"conv2d", [Pure]> {
  let summary = "torch.nn.functional.conv2d: x NCHW, w OIHW (I = C / groups), bias [O]";
  let arguments = (ins AnyRankedTensor:$x, AnyRankedTensor:$w,
                   Optional<AnyRankedTensor>:$bias,
                   DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$stride,
                   DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0}">:$padding,
                   DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilation,
                   DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

class Kiln_PoolOp<string mnemonic> : Kiln_Op<mnemonic, [Pure]> {
  let summary = "2-d pooling over x's last two dims; stride defaults to kernel";
  let arguments = (ins AnyRankedTensor:$x, DenseI64ArrayAttr:$kernel,
                   OptionalAttr<DenseI64ArrayAttr>:$stride,
                   DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0}">:$padding);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($result)";
  let hasVerifier = 1;
}
// Padding counts as -inf.
def Kiln_MaxPool2dOp : Kiln_PoolOp<"max_pool2d">;
// Padding counts as 0 and in the divisor (count_include_pad=True).
def Kiln_AvgPool2dOp : Kiln_PoolOp<"avg_pool2d">;

def Kiln_AttentionOp : Kiln_Op<"attention", [Pure]> {
  let summary = "softmax(q k^T * scale + mask) v, as scaled_dot_product_attention";
  let description = [{
    q [batch..., Lq, E], k [batch..., Lk, E], v [batch..., Lk, Ev] ->
    [batch..., Lq, Ev], batch dims equal. `mask` broadcasts to
    [batch..., Lq, Lk]: added to the scores (q's element type) or, as i1,
    keeps the scores where true. `causal` keeps key j for query i where
    j <= i. `scale` defaults to 1/sqrt(E). f16/bf16 compute in f32.
  }];
  let arguments = (ins AnyRankedTensor:$q, AnyRankedTensor:$k,
                   AnyRankedTensor:$v, Optional<AnyRankedTensor>:$mask,
                   OptionalAttr<F64Attr>:$scale,
                   DefaultValuedAttr<BoolAttr, "false">:$causal);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Symmetric int8 quantization: per tensor (rank-0 scale, no block_size) or
// per block of `block_size` elements along the last dim (scale shape: x's
// with the last dim divided by block_size). Scale element type f32, f16 or
// bf16.
//===----------------------------------------------------------------------===//

def Kiln_QuantizeOp : Kiln_Op<"quantize", [Pure]> {
  let summary = "q = clamp(round_half_even(x / scale), -127, 127) as i8; NaN -> 0";
  let arguments = (ins AnyRankedTensor:$x, AnyRankedTensor:$scale,
                   OptionalAttr<I64Attr>:$block_size);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$x `,` $scale attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_DequantizeOp : Kiln_Op<"dequantize", [Pure]> {
  let summary = "x = q * scale, in the result's float type";
  let arguments = (ins AnyRankedTensor:$q, AnyRankedTensor:$scale,
                   OptionalAttr<I64Attr>:$block_size);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$q `,` $scale attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_LayerNormOp : Kiln_Op<"layer_norm", [Pure]> {
  let arguments = (ins AnyRankedTensor:$x, AnyRankedTensor:$weight,
                   AnyRankedTensor:$bias,
                   DefaultValuedAttr<F64Attr, "1.0e-5">:$eps);
  let results = (outs AnyRankedTensor:$result);
  let builders = [OpBuilder<(ins "::mlir::Value":$x, "::mlir::Value":$weight,
      "::mlir::Value":$bias, CArg<"double", "1e-5">:$eps), [{
    build($_builder, $_state, x.getType(), x, weight, bias,
          $_builder.getF64FloatAttr(eps));
  }]>];
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_RmsNormOp : Kiln_Op<"rms_norm", [Pure]> {
  let arguments = (ins AnyRankedTensor:$x, AnyRankedTensor:$weight,
                   DefaultValuedAttr<F64Attr, "1.0e-6">:$eps);
  let results = (outs AnyRankedTensor:$result);
  let builders = [OpBuilder<(ins "::mlir::Value":$x, "::mlir::Value":$weight,
      CArg<"double", "1e-6">:$eps), [{
    build($_builder, $_state, x.getType(), x, weight,
          $_builder.getF64FloatAttr(eps));
  }]>];
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

#endif // KILN_OPS_TD
