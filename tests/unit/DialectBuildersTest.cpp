//===- DialectBuildersTest.cpp - builders that infer result types --------===//
#include "kiln/Dialect/KilnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"

#include <gtest/gtest.h>

using namespace mlir;

namespace {
class DialectBuilders : public ::testing::Test {
protected:
  DialectBuilders() {
    DialectRegistry registry;
    kiln::registerKilnDialect(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  /// A function with arguments of `types`, built into by `body`.
  template <typename Fn> bool buildAndVerify(ArrayRef<Type> types, Fn body) {
    OpBuilder b(&context);
    auto module = ModuleOp::create(b.getUnknownLoc());
    b.setInsertionPointToEnd(module.getBody());
    auto f = func::FuncOp::create(b, b.getUnknownLoc(), "f",
                                  b.getFunctionType(types, {}));
    Block *entry = f.addEntryBlock();
    b.setInsertionPointToEnd(entry);
    body(b, entry->getArguments());
    func::ReturnOp::create(b, b.getUnknownLoc());
    bool ok = succeeded(verify(module));
    module->erase();
    return ok;
  }

  RankedTensorType tensor(ArrayRef<int64_t> shape, Type elem) {
    return RankedTensorType::get(shape, elem);
  }

  MLIRContext context;
};
} // namespace

TEST_F(DialectBuilders, InferBroadcastAndCompareResults) {
  Type f32 = Float32Type::get(&context);
  EXPECT_TRUE(buildAndVerify(
      {tensor({4, 1}, f32), tensor({3}, f32)}, [&](OpBuilder &b, ValueRange a) {
        auto add = kiln::AddOp::create(b, b.getUnknownLoc(), a[0], a[1]);
        EXPECT_EQ(add.getType(), tensor({4, 3}, f32));
        auto lt = kiln::LtOp::create(b, b.getUnknownLoc(), a[0], a[1]);
        EXPECT_EQ(lt.getType(), tensor({4, 3}, b.getI1Type()));
        auto sel = kiln::SelectOp::create(b, b.getUnknownLoc(), lt, a[0], a[1]);
        EXPECT_EQ(sel.getType(), tensor({4, 3}, f32));
        auto nan = kiln::IsnanOp::create(b, b.getUnknownLoc(), a[1]);
        EXPECT_EQ(nan.getType(), tensor({3}, b.getI1Type()));
        kiln::ExpOp::create(b, b.getUnknownLoc(), a[1]);
      }));
}

TEST_F(DialectBuilders, InferReductionAndMovementResults) {
  Type f16 = Float16Type::get(&context);
  Type i64 = IntegerType::get(&context, 64);
  EXPECT_TRUE(buildAndVerify(
      {tensor({2, 3, 5}, f16), tensor({2, 3, 4}, i64), tensor({7}, i64)},
      [&](OpBuilder &b, ValueRange a) {
        Location loc = b.getUnknownLoc();
        EXPECT_EQ(kiln::ReduceSumOp::create(b, loc, a[0], {1}, true).getType(),
                  tensor({2, 1, 5}, f16));
        EXPECT_EQ(kiln::ReduceAnyOp::create(b, loc, a[0], {0, 2}).getType(),
                  tensor({3}, b.getI1Type()));
        EXPECT_EQ(kiln::ArgmaxOp::create(b, loc, a[0], 2).getType(),
                  tensor({2, 3}, i64));
        EXPECT_EQ(kiln::TransposeOp::create(b, loc, a[0], {2, 0, 1}).getType(),
                  tensor({5, 2, 3}, f16));
        EXPECT_EQ(kiln::GatherOp::create(b, loc, a[0], a[1], 2).getType(),
                  tensor({2, 3, 4}, f16));
        EXPECT_EQ(kiln::IndexSelectOp::create(b, loc, a[0], a[2], 2).getType(),
                  tensor({2, 3, 7}, f16));
        kiln::FlipOp::create(b, loc, a[0], {1});
      }));
}
