//===- Tuned.cpp - a kernel's tuned configuration, from the module -------===//
#include "kiln/Lowering/Common/Tuned.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;

namespace kiln {

std::string tuneDtypeName(Type type) {
  if (type.isBF16())
    return "bf16";
  std::string s;
  llvm::raw_string_ostream os(s);
  type.print(os);
  return s;
}

namespace {

std::string keyText(const TuneSpace &space, std::string kind, std::vector<std::string> dtypes,
                    llvm::ArrayRef<int64_t> shape) {
  TuneKey key{space.name, space.hash(), std::move(kind), std::move(dtypes), {}};
  for (int64_t d : shape)
    key.shape.push_back(anchorToPowerOfTwo(d));
  return key.text();
}

/// The outermost module of `op`, which the tune attributes live on, and
/// the key text of its (batch) matmul.
std::pair<ModuleOp, std::string> matmulKey(linalg::LinalgOp op, const TuneSpace &space,
                                           bool tf32) {
  auto a = cast<MemRefType>(op.getDpsInputs()[0].getType());
  auto b = cast<MemRefType>(op.getDpsInputs()[1].getType());
  auto c = cast<MemRefType>(op.getDpsInits()[0].getType());
  bool batched = isa<linalg::BatchMatmulOp>(op);
  auto cShape = c.getShape();
  SmallVector<int64_t> shape;
  if (batched)
    shape.push_back(cShape[0]);
  shape.append({cShape[cShape.size() - 2], cShape.back(), a.getShape().back()});
  // "tf32" names the inputs' precision, which no MLIR type says.
  auto input = [&](MemRefType t) {
    return tf32 && t.getElementType().isF32() ? std::string("tf32")
                                              : tuneDtypeName(t.getElementType());
  };
  auto module = op->getParentOfType<ModuleOp>();
  while (auto outer = module->getParentOfType<ModuleOp>())
    module = outer;
  return {module, keyText(space, batched ? "batch_matmul" : "matmul",
                          {input(a), input(b), tuneDtypeName(c.getElementType())}, shape)};
}

std::optional<std::vector<int64_t>> tunedConfigOf(ModuleOp module, Operation *op,
                                                  const TuneSpace &space,
                                                  const std::string &text) {
  MLIRContext *ctx = module.getContext();
  SmallVector<Attribute> used;
  if (auto list = module->getAttrOfType<ArrayAttr>("kiln.tune_keys"))
    used.assign(list.begin(), list.end());
  auto textAttr = StringAttr::get(ctx, text);
  if (!llvm::is_contained(used, textAttr)) {
    used.push_back(textAttr);
    module->setAttr("kiln.tune_keys", ArrayAttr::get(ctx, used));
  }
  auto tuned = module->getAttrOfType<DictionaryAttr>("kiln.tuned");
  auto config = tuned ? tuned.getAs<StringAttr>(text) : StringAttr();
  if (!config)
    return std::nullopt;
  auto values = space.parseConfig(config.getValue());
  if (!values)
    op->emitWarning() << "tuned config '" << config.getValue() << "' of " << text
                      << " is not one of " << space.name << "'s candidates; using the default";
  return values;
}

} // namespace

std::optional<std::vector<int64_t>> tunedConfig(ModuleOp module, Operation *op,
                                                const TuneSpace &space, std::string kind,
                                                std::vector<std::string> dtypes,
                                                llvm::ArrayRef<int64_t> shape) {
  return tunedConfigOf(module, op, space,
                       keyText(space, std::move(kind), std::move(dtypes), shape));
}

std::optional<std::vector<int64_t>> tunedMatmulConfig(linalg::LinalgOp op,
                                                      const TuneSpace &space, bool tf32) {
  auto [module, text] = matmulKey(op, space, tf32);
  return tunedConfigOf(module, op, space, text);
}

void recordUntunedMatmulConfig(linalg::LinalgOp op, const TuneSpace &space,
                               const std::vector<int64_t> &config) {
  if (!llvm::is_contained(space.candidates, config))
    return;
  auto [module, text] = matmulKey(op, space, /*tf32=*/false);
  MLIRContext *ctx = module.getContext();
  NamedAttrList untuned;
  if (auto known = module->getAttrOfType<DictionaryAttr>("kiln.untuned"))
    untuned.assign(known.getValue());
  untuned.set(StringAttr::get(ctx, text), StringAttr::get(ctx, TuneSpace::configText(config)));
  module->setAttr("kiln.untuned", untuned.getDictionary(ctx));
}

} // namespace kiln
