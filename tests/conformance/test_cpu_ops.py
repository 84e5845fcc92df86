"""End-to-end conformance of every kiln op on the CPU against float64
references computed by NumPy on the host."""
import math
import os
from fractions import Fraction

import numpy as np
import pytest

from kiln_harness import round_to_bf16, run_kiln, single_op_program, tensor_type

RNG = np.random.default_rng(1234)
TOL = {np.float64: (1e-10, 1e-12), np.float32: (2e-5, 2e-6), np.float16: (4e-3, 4e-3)}
erf = np.vectorize(math.erf)


def rand(shape, dtype, low=-2.0, high=2.0):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return RNG.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        lo = 0 if dtype.kind == "u" else -50
        return RNG.integers(lo, 50, shape).astype(dtype)
    return RNG.uniform(low, high, shape).astype(dtype)


def check(actual, expected, dtype):
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        rtol, atol = TOL[dtype.type]
        np.testing.assert_allclose(actual.astype(np.float64), expected, rtol=rtol,
                                   atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(actual, expected)


def run_op(inputs, op_text, result_type):
    results, _ = run_kiln(single_op_program(inputs, op_text, result_type), inputs)
    return results[0]


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


UNARY_FLOAT = {
    "exp": np.exp, "log": np.log, "log1p": np.log1p, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x), "recip": lambda x: 1 / x, "sin": np.sin,
    "cos": np.cos, "tanh": np.tanh, "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "erf": erf, "relu": lambda x: np.maximum(x, 0), "silu": lambda x: x / (1 + np.exp(-x)),
    "floor": np.floor, "ceil": np.ceil, "round": np.round, "sign": np.sign,
    "neg": np.negative, "abs": np.abs,
    "gelu": lambda x: 0.5 * x * (1 + erf(x / math.sqrt(2))),
}
POSITIVE = {"log", "log1p", "sqrt", "rsqrt", "recip"}


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("op", sorted(UNARY_FLOAT))
def test_unary_float(op, dtype):
    x = rand((7, 33), dtype, 0.1 if op in POSITIVE else -3.0, 3.0)
    if op == "round":
        x[0, :4] = np.array([0.5, 1.5, 2.5, -0.5], dtype)
    t = tensor_type(x.shape, dtype)
    got = run_op([x], f"kiln.{op} %a0 : {t}", t)
    check(got, UNARY_FLOAT[op](x.astype(np.float64)), dtype)


def test_gelu_tanh():
    x = rand((5, 17), np.float32, -4, 4)
    t = tensor_type(x.shape, np.float32)
    got = run_op([x], f'kiln.gelu %a0 {{approximate = "tanh"}} : {t}', t)
    check(got, gelu_tanh(x.astype(np.float64)), np.float32)


def test_unary_nan_and_inf():
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -1.0], np.float32)
    t = tensor_type(x.shape, np.float32)
    check(run_op([x], f"kiln.relu %a0 : {t}", t), np.array([np.nan, np.inf, 0, 0, 0]), np.float32)
    check(run_op([x], f"kiln.exp %a0 : {t}", t), np.exp(x.astype(np.float64)), np.float32)
    check(run_op([x], f"kiln.isnan %a0 : {t} -> {tensor_type(x.shape, 'i1')}",
                 tensor_type(x.shape, "i1")), np.isnan(x), np.bool_)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64])
@pytest.mark.parametrize("op,ref", [("neg", np.negative), ("abs", np.abs),
                                    ("sign", np.sign), ("relu", lambda x: np.maximum(x, 0))])
def test_unary_int(op, ref, dtype):
    x = rand((9, 5), dtype)
    t = tensor_type(x.shape, dtype)
    check(run_op([x], f"kiln.{op} %a0 : {t}", t), ref(x), dtype)


@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.uint8])
def test_not(dtype):
    x = rand((4, 37), dtype)
    t = tensor_type(x.shape, dtype)
    check(run_op([x], f"kiln.not %a0 : {t}", t), np.invert(x), dtype)


def binary(op, a, b, result_dtype=None):
    rt = tensor_type(np.broadcast_shapes(a.shape, b.shape), result_dtype or a.dtype)
    ta, tb = tensor_type(a.shape, a.dtype), tensor_type(b.shape, b.dtype)
    return run_op([a, b], f"kiln.{op} %a0, %a1 : ({ta}, {tb}) -> {rt}", rt)


BINARY_FLOAT = {"add": np.add, "sub": np.subtract, "mul": np.multiply,
                "div": np.divide, "rem": np.fmod, "pow": np.power,
                "max": np.maximum, "min": np.minimum}


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("op", sorted(BINARY_FLOAT))
def test_binary_float_broadcast(op, dtype):
    lo = 0.5 if op == "pow" else -3.0
    a, b = rand((3, 1, 5), dtype, lo, 3.0), rand((4, 5), dtype, 0.5, 3.0)
    check(binary(op, a, b), BINARY_FLOAT[op](a.astype(np.float64), b.astype(np.float64)), dtype)


def test_max_min_propagate_nan():
    a = np.array([np.nan, 1.0, 2.0, np.nan], np.float32)
    b = np.array([1.0, np.nan, 3.0, np.nan], np.float32)
    check(binary("max", a, b), np.maximum(a, b).astype(np.float64), np.float32)
    check(binary("min", a, b), np.minimum(a, b).astype(np.float64), np.float32)


def int_div(a, b):
    q = np.where(b == 0, 0, np.trunc(a.astype(np.float64) / np.where(b == 0, 1, b)))
    return q.astype(a.dtype)


def int_rem(a, b):
    return np.where(b == 0, 0, np.fmod(a, np.where(b == 0, 1, b))).astype(a.dtype)


INT_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": int_div,
              "rem": int_rem, "max": np.maximum, "min": np.minimum}


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8, np.int16])
@pytest.mark.parametrize("op", sorted(INT_BINARY))
def test_binary_int(op, dtype):
    a, b = rand((6, 7), dtype), rand((7,), dtype)
    b[0] = 0  # division by zero gives 0 instead of trapping
    with np.errstate(all="ignore"):
        check(binary(op, a, b), INT_BINARY[op](a, b), dtype)


@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.uint8])
@pytest.mark.parametrize("op,ref", [("and", np.bitwise_and), ("or", np.bitwise_or),
                                    ("xor", np.bitwise_xor)])
def test_bitwise(op, ref, dtype):
    a, b = rand((5, 8), dtype), rand((5, 8), dtype)
    check(binary(op, a, b), ref(a, b), dtype)


@pytest.mark.parametrize("dtype", [np.int32, np.uint16])
def test_shifts(dtype):
    a = rand((40,), dtype)
    a[:5] = -7 if dtype == np.int32 else 7
    s = np.arange(40).astype(dtype)  # includes shifts past the width
    w = np.dtype(dtype).itemsize * 8
    shl = np.where(s >= w, 0, np.left_shift(a, np.minimum(s, w - 1))).astype(dtype)
    if dtype == np.int32:
        shr = np.right_shift(a, np.minimum(s, w - 1)).astype(dtype)
    else:
        shr = np.where(s >= w, 0, np.right_shift(a, np.minimum(s, w - 1))).astype(dtype)
    check(binary("shl", a, s), shl, dtype)
    check(binary("shr", a, s), shr, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8])
@pytest.mark.parametrize("op,ref", [("eq", np.equal), ("ne", np.not_equal), ("lt", np.less),
                                    ("le", np.less_equal), ("gt", np.greater),
                                    ("ge", np.greater_equal)])
def test_compare(op, ref, dtype):
    # 37 columns: wider than a vector on every target, with a tail.
    a, b = rand((4, 37), dtype, -2, 2), rand((37,), dtype, -2, 2)
    a[0] = b
    if dtype == np.float32:
        a[1, 0] = np.nan
    check(binary(op, a, b, "i1"), ref(a, b), np.bool_)


def test_select_broadcast():
    c, a, b = rand((4, 1), np.bool_), rand((4, 6), np.float32), rand((6,), np.float32)
    ts = [tensor_type(x.shape, x.dtype) for x in (c, a, b)]
    rt = tensor_type((4, 6), np.float32)
    got = run_op([c, a, b], f"kiln.select %a0, %a1, %a2 : ({', '.join(ts)}) -> {rt}", rt)
    check(got, np.where(c, a, b).astype(np.float64), np.float32)


def test_clamp():
    x = rand((30,), np.float32, -10, 10)
    x[0] = np.nan
    t = tensor_type(x.shape, np.float32)
    got = run_op([x], f"kiln.clamp %a0 {{min = -1.5 : f64, max = 2.0 : f64}} : {t}", t)
    check(got, np.clip(x.astype(np.float64), -1.5, 2.0), np.float32)
    xi = rand((30,), np.int32)
    ti = tensor_type(xi.shape, np.int32)
    check(run_op([xi], f"kiln.clamp %a0 {{min = -3.0 : f64}} : {ti}", ti), np.maximum(xi, -3), np.int32)


CAST_CASES = [
    (np.float32, np.int32, [np.nan, np.inf, -np.inf, 3e9, -3e9, 2.7, -2.7, 0.0]),
    (np.float32, np.uint8, [np.nan, -5.0, 300.0, 255.4, 7.9, 0.0]),
    (np.float64, np.float16, [1.0 / 3, 70000.0, 1e-8, -2.5]),
    (np.int32, np.float32, [1, -7, 16777217, 0]),
    (np.int64, np.int8, [300, -129, 5, 127]),
    (np.uint8, np.int32, [255, 0, 128, 1]),
    (np.bool_, np.float32, [True, False]),
    (np.float32, np.bool_, [0.0, -0.0, 2.0, np.nan]),
]


def saturating_cast(x, to):
    to = np.dtype(to)
    if to == np.bool_:
        return x != 0
    if to.kind in "iu" and x.dtype.kind == "f":
        info = np.iinfo(to)
        # Clip in f64, where the integer bounds are exact.
        y = np.where(np.isnan(x), 0, np.clip(x.astype(np.float64), info.min, info.max))
        return np.trunc(y).astype(to)
    with np.errstate(all="ignore"):
        return x.astype(to)


@pytest.mark.parametrize("src,dst,values", CAST_CASES)
def test_cast(src, dst, values):
    x = np.array(values, dtype=src)
    got = run_op([x], f"kiln.cast %a0 : {tensor_type(x.shape, src)} -> "
                      f"{tensor_type(x.shape, dst)}", tensor_type(x.shape, dst))
    want = saturating_cast(x, dst)
    if np.dtype(dst).kind == "f":
        check(got, want.astype(np.float64), dst)
    else:
        check(got, want, dst)


# (significand bits after the point, smallest normal exponent, overflow at 2^k)
NARROW_FORMATS = {"bf16": (7, -126, 128), "f16": (10, -14, 16)}


def rounded_once(x, dtype):
    """x (a Python int or float) rounded to the nearest `dtype` value, ties
    to even, in exact rational arithmetic."""
    if isinstance(x, float) and not math.isfinite(x):
        return x
    q = Fraction(x)
    if q == 0:
        return 0.0
    fraction_bits, min_exponent, overflow = NARROW_FORMATS[dtype]
    e = math.frexp(float(abs(q)))[1] - 1
    e += (Fraction(2) ** (e + 1) <= abs(q)) - (Fraction(2) ** e > abs(q))
    quantum = Fraction(2) ** (max(e, min_exponent) - fraction_bits)
    y = round(q / quantum) * quantum  # Fraction rounds half to even
    return math.copysign(math.inf, x) if abs(y) >= 2 ** overflow else float(y)


# Values whose nearest f32 is a midpoint of the narrow type: through f32
# they rounded twice, to the even neighbour (1 + 2^-8 + 2^-30 became 1 in
# bf16, not 1 + 2^-7; 1 + 2^-11 + 2^-40 became 1 in f16 on lavapipe).
TWICE_ROUNDED = {
    ("bf16", np.float64): [
        1 + 2**-8 + 2**-30, 1 + 2**-8 - 2**-30, -(1 + 2**-8 + 2**-40),
        (1 + 3 * 2**-8 + 2**-35) * 2**20, 3.3961e38, 3.4e38, 1e39, -1e39, 1 / 3, -2.5, 65504.0,
        1e-30, np.nan, np.inf, 2**-126 * (1 - 2**-30), -2**-126 * (1 - 2**-40)],
    ("bf16", np.int32): [2**24 + 2**16 + 1, 2**24 + 2**16, -(2**24 + 2**16 + 1),
                         2**30 + 2**22 + 1, 2**31 - 1, -2**31, 7, 0, 257],
    ("bf16", np.int64): [2**40 + 2**32 + 1, 2**60 + 2**52 + 1, -(2**60 + 2**52 + 1),
                         2**60 + 2**52, 2**63 - 1, -2**63, 2**53 + 1, 12345],
    ("f16", np.float64): [1 + 2**-11 + 2**-40, -(1 + 2**-11 + 2**-40), 1 + 2**-11 - 2**-40,
                          65519.99, 65520.0, 2**-24 * 1.5 + 2**-60, 1e10, 1 / 3, np.nan, -np.inf],
    ("f16", np.int64): [2049, 2051, -2049, 65519, 65520, 2**40 + 1, 0],
    ("f16", np.int32): [2049, 4097, -4099, 65519, 2**31 - 1, -2**31],
    ("bf16", np.uint32): [2**24 + 2**16 + 1, 2**32 - 1, 2**31 + 2**23 + 1, 255],
}


@pytest.mark.parametrize("dst,src", list(TWICE_ROUNDED),
                         ids=lambda t: t if isinstance(t, str) else np.dtype(t).name)
def test_narrowing_casts_round_once(dst, src):
    values = TWICE_ROUNDED[(dst, src)]
    x = np.array(values, src)
    n = len(values)
    prog = (f"func.func @main(%a: {tensor_type(x.shape, src)}) -> tensor<{n}xf32> {{\n"
            f"  %b = kiln.cast %a : {tensor_type(x.shape, src)} -> tensor<{n}x{dst}>\n"
            f"  %c = kiln.cast %b : tensor<{n}x{dst}> -> tensor<{n}xf32>\n"
            f"  return %c : tensor<{n}xf32>\n}}\n")
    (got,), _ = run_kiln(prog, [x])
    want = np.array([rounded_once(v if src == np.float64 else int(v), dst) for v in values],
                    np.float32)
    np.testing.assert_array_equal(got, want, err_msg=f"{src.__name__} -> {dst} of {values}")


# bf16 subnormals (2^-133 the smallest, 2^-134 a tie to zero, 3 * 2^-134 one
# to 2^-132) and values that round to them or to the smallest normal.
BF16_SUBNORMALS = [3e-39, -3e-39, 1e-40, 9.2e-41, 2.0**-133, 2.0**-134, 3 * 2.0**-134,
                   -2.0**-127, 1.17e-38, 2.0**-126 * (1 - 2.0**-9), 1e-45]


@pytest.mark.parametrize("src", [np.float32, np.float64], ids=["f32", "f64"])
def test_bf16_subnormals_kept(src):
    """Casts to bf16 keep subnormals, as torch does: the CPU flushed them to
    zero where LLVM converted with vcvtneps2bf16 (hosts with AVX512_BF16),
    and kept them elsewhere."""
    x = np.array(BF16_SUBNORMALS, src)
    n = len(BF16_SUBNORMALS)
    t = tensor_type(x.shape, src)
    prog = (f"func.func @main(%a: {t}) -> (tensor<{n}xf32>, tensor<{n}xf32>) {{\n"
            f"  %b = kiln.cast %a : {t} -> tensor<{n}xbf16>\n"
            f"  %c = kiln.cast %b : tensor<{n}xbf16> -> tensor<{n}xf32>\n"
            f"  %d = kiln.add %b, %b : (tensor<{n}xbf16>, tensor<{n}xbf16>) -> tensor<{n}xbf16>\n"
            f"  %e = kiln.cast %d : tensor<{n}xbf16> -> tensor<{n}xf32>\n"
            f"  return %c, %e : tensor<{n}xf32>, tensor<{n}xf32>\n}}\n")
    (got, doubled), _ = run_kiln(prog, [x])
    want = np.array([rounded_once(float(v), "bf16") for v in x], np.float32)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(doubled, 2 * want)


# f32 values whose f16 is a tie, an overflow, a subnormal, a NaN, ...
F16_EDGES = [2049.0, 4097.0, -4099.0, 65504.0, 65519.0, 65520.0, -1e6, 2.0**-24, 2.0**-25,
             3 * 2.0**-26, 2.0**-14, 2.0**-14 * (1 - 2.0**-11), 1e-30, -0.0, math.inf, -math.inf,
             math.nan, 0.1, 1 / 3]


def test_f16_round_trips_in_registers():
    """An f16 rounded and widened again inside one kernel is rounded: NVIDIA's
    Vulkan driver dropped the f32 -> f16 -> f32 conversions (2049 stayed
    2049, 65520 stayed 65520), as it did f16 sums read by the next op."""
    x = np.array(F16_EDGES, np.float32)
    n = len(F16_EDGES)
    t32, t16 = f"tensor<{n}xf32>", f"tensor<{n}xf16>"
    prog = (f"func.func @main(%a: {t32}, %h: {t16}) -> ({t32}, {t32}) {{\n"
            f"  %b = kiln.cast %a : {t32} -> {t16}\n"
            f"  %c = kiln.cast %b : {t16} -> {t32}\n"
            f"  %s = kiln.add %h, %h : ({t16}, {t16}) -> {t16}\n"
            f"  %d = kiln.add %s, %h : ({t16}, {t16}) -> {t16}\n"
            f"  %e = kiln.cast %d : {t16} -> {t32}\n"
            f"  return %c, %e : {t32}, {t32}\n}}\n")
    h = np.array([683.0] * n, np.float16)  # 683 + 683 + 683 = 2049 -> 2048
    (got, sums), _ = run_kiln(prog, [x, h])
    with np.errstate(over="ignore"):  # 65520 and -1e6 become infinities
        want = x.astype(np.float16).astype(np.float32)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(sums, np.full(n, 2048.0, np.float32))


def test_fill_and_iota():
    t = tensor_type((3, 4), np.int32)
    check(run_kiln(f"func.func @main() -> {t} {{\n  %r = \"kiln.fill\"() {{value = 3.0 : f64}} : () -> {t}\n"
                   f"  return %r : {t}\n}}\n", [])[0][0], np.full((3, 4), 3, np.int32), np.int32)
    t = tensor_type((3, 4), np.float32)
    got = run_kiln(f"func.func @main() -> {t} {{\n  %r = kiln.iota {{dim = 1}} : {t}\n"
                   f"  return %r : {t}\n}}\n", [])[0][0]
    check(got, np.broadcast_to(np.arange(4.0), (3, 4)), np.float32)


def random_program(op, attrs, dtype, shape):
    t = tensor_type(shape, dtype)
    return (f"func.func @main(%s: tensor<i64>) -> {t} {{\n"
            f"  %r = kiln.{op} %s {{{attrs}}} : tensor<i64> -> {t}\n  return %r : {t}\n}}\n")


def test_random_uniform_statistics_and_determinism():
    prog = random_program("random_uniform", "low = -1.0 : f64, high = 3.0 : f64", "f32", (256, 256))
    a = run_kiln(prog, [np.array(7, np.int64)])[0][0]
    b = run_kiln(prog, [np.array(7, np.int64)])[0][0]
    c = run_kiln(prog, [np.array(8, np.int64)])[0][0]
    assert np.array_equal(a, b), "same seed must give identical bits"
    assert not np.array_equal(a, c)
    assert a.min() >= -1.0 and a.max() < 3.0
    assert abs(a.mean() - 1.0) < 0.02 and abs(a.std() - 4 / math.sqrt(12)) < 0.02


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_random_normal_statistics(dtype):
    prog = random_program("random_normal", "mean = 2.0 : f64, std = 0.5 : f64", dtype, (512, 256))
    a = run_kiln(prog, [np.array(3, np.int64)])[0][0]
    assert abs(a.mean() - 2.0) < 0.01 and abs(a.std() - 0.5) < 0.01
    assert np.isfinite(a).all()


def movement(x, op_text, result_shape, dtype=None):
    rt = tensor_type(result_shape, dtype or x.dtype)
    return run_op([x], op_text.format(t=tensor_type(x.shape, x.dtype), rt=rt), rt)


def test_reshape_broadcast_transpose_flip():
    x = rand((2, 3, 4), np.float32)
    check(movement(x, "kiln.reshape %a0 : {t} -> {rt}", (4, 6)), x.reshape(4, 6), np.float32)
    check(movement(x, "kiln.broadcast %a0 : {t} -> {rt}", (5, 2, 3, 4)),
          np.broadcast_to(x, (5, 2, 3, 4)), np.float32)
    check(movement(x, "kiln.transpose %a0 {{perm = array<i64: 2, 0, 1>}} : {t} -> {rt}", (4, 2, 3)),
          x.transpose(2, 0, 1), np.float32)
    check(movement(x, "kiln.flip %a0 {{dims = array<i64: 0, 2>}} : {t} -> {rt}", (2, 3, 4)),
          np.flip(x, (0, 2)), np.float32)


# Transposes in the innermost dim run on the CPU in blocks of squares of
# vectors transposed in registers (kiln-cpu-transpose-blocks; a square is
# 16 lanes of f32 with AVX-512, 8 of f64, 16 of narrower types), with what
# the squares leave over as scalar loops: sizes on both sides of a square
# and of two, every element width, and a bool (a byte each in memory).
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int8, np.int64,
                                   np.bool_])
@pytest.mark.parametrize("shape", [(16, 16), (32, 64), (67, 129), (33, 17), (1, 100),
                                   (100, 1), (15, 40)])
def test_transpose_2d(dtype, shape):
    x = rand(shape, dtype)
    got = movement(x, "kiln.transpose %a0 {{perm = array<i64: 1, 0>}} : {t} -> {rt}",
                   shape[::-1])
    np.testing.assert_array_equal(got, x.T)


@pytest.mark.parametrize("perm,shape", [((0, 2, 1), (3, 37, 41)), ((2, 0, 1), (33, 5, 48)),
                                        ((1, 2, 0), (40, 3, 36)), ((1, 0, 2), (20, 30, 7)),
                                        ((0, 3, 1, 2), (2, 19, 3, 34)),
                                        ((3, 2, 1, 0), (17, 2, 3, 35))])
def test_permute(perm, shape):
    x = rand(shape, np.float32)
    p = ", ".join(map(str, perm))
    got = movement(x, f"kiln.transpose %a0 {{{{perm = array<i64: {p}>}}}} : {{t}} -> {{rt}}",
                   tuple(shape[d] for d in perm))
    np.testing.assert_array_equal(got, x.transpose(perm))


# Elementwise ops fused with a transposed input: the body runs on the
# transposed vectors beside inputs read along rows, a row value broadcast
# and a column broadcast.
@pytest.mark.parametrize("shape", [(48, 80), (50, 37)])
def test_elementwise_of_a_transpose(shape):
    m, n = shape
    a, b = rand((n, m), np.float32), rand((m, n), np.float32)
    r, c = rand((m, 1), np.float32), rand((n,), np.float32)
    t = lambda s: tensor_type(s, np.float32)
    prog = (f"func.func @main(%a: {t((n, m))}, %b: {t((m, n))}, %r: {t((m, 1))}, %c: {t((n,))})"
            f" -> {t((m, n))} {{\n"
            f"  %at = kiln.transpose %a {{perm = array<i64: 1, 0>}} : {t((n, m))} -> {t((m, n))}\n"
            f"  %s = kiln.add %at, %b : ({t((m, n))}, {t((m, n))}) -> {t((m, n))}\n"
            f"  %p = kiln.mul %s, %r : ({t((m, n))}, {t((m, 1))}) -> {t((m, n))}\n"
            f"  %q = kiln.sub %p, %c : ({t((m, n))}, {t((n,))}) -> {t((m, n))}\n"
            f"  %e = kiln.exp %q : {t((m, n))}\n"
            f"  return %e : {t((m, n))}\n}}\n")
    (got,), _ = run_kiln(prog, [a, b, r, c])
    want = np.exp((a.T.astype(np.float64) + b) * r - c)
    check(got, want, np.float32)


# Copies, flips and tails on the CPU (kiln-copies-to-linalg, kiln-vectorize):
# a pad's interior and a strided slice are copies into or out of a view,
# vectorised with the rows' last size % lanes elements as one shorter
# vector; a flip of the innermost dim reads reversed vectors (and its tail
# the input at the shifted index). Rows on both sides of a vector's lanes
# for every element width; bool stays scalar.
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int8, np.int64,
                                   np.bool_])
@pytest.mark.parametrize("shape", [(3, 1), (4, 15), (5, 16), (3, 17), (2, 56), (3, 100),
                                   (2, 3, 67)])
def test_flips_pads_and_strided_slices_of_rows(dtype, shape):
    x = rand(shape, dtype)
    rank = len(shape)
    arr = lambda v: ", ".join(map(str, v))
    flip_dims = [rank - 1] if rank == 2 else [0, rank - 1]
    got = movement(x, f"kiln.flip %a0 {{{{dims = array<i64: {arr(flip_dims)}>}}}} : {{t}} -> {{rt}}",
                   shape)
    np.testing.assert_array_equal(got, np.flip(x, flip_dims))
    low, high = [0] * (rank - 2) + [1, 3], [0] * (rank - 2) + [2, 5]
    padded = tuple(s + lo + hi for s, lo, hi in zip(shape, low, high))
    got = movement(x, f"kiln.pad %a0 {{{{low = array<i64: {arr(low)}>, high = array<i64: "
                      f"{arr(high)}>, value = 1.0 : f64}}}} : {{t}} -> {{rt}}", padded)
    np.testing.assert_array_equal(
        got, np.pad(x, list(zip(low, high)), constant_values=np.array(1).astype(dtype)))
    step = [1] * (rank - 1) + [2]
    sliced = tuple(-(-s // st) for s, st in zip(shape, step))
    got = movement(x, f"kiln.slice %a0 {{{{start = array<i64: {arr([0] * rank)}>, stop = "
                      f"array<i64: {arr(shape)}>, step = array<i64: {arr(step)}>}}}} : "
                      f"{{t}} -> {{rt}}", sliced)
    np.testing.assert_array_equal(got, x[..., ::2])


# A flip fused with arithmetic: the body runs on the reversed vectors
# beside a row read in order.
@pytest.mark.parametrize("shape", [(4, 48), (3, 37)])
def test_elementwise_of_a_flip(shape):
    a, b = rand(shape, np.float32), rand(shape, np.float32)
    t = tensor_type(shape, np.float32)
    prog = (f"func.func @main(%a: {t}, %b: {t}) -> {t} {{\n"
            f"  %f = kiln.flip %a {{dims = array<i64: 1>}} : {t} -> {t}\n"
            f"  %s = kiln.mul %f, %b : ({t}, {t}) -> {t}\n"
            f"  %e = kiln.exp %s : {t}\n"
            f"  return %e : {t}\n}}\n")
    (got,), _ = run_kiln(prog, [a, b])
    check(got, np.exp(a[:, ::-1].astype(np.float64) * b), np.float32)


# index_select over rows (an embedding lookup): on the CPU each picked row
# is read as vectors (kiln-vectorize's row reads), the row index once per
# row; rows on both sides of a vector's lanes, every element width, and an
# op fused after the lookup.
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int8, np.int64])
@pytest.mark.parametrize("shape", [(9, 16), (6, 37), (4, 100), (3, 2, 64)])
def test_index_select_rows(dtype, shape):
    x = rand(shape, dtype)
    sel = RNG.integers(0, shape[0], 11).astype(np.int64)
    rt = tensor_type((11,) + shape[1:], dtype)
    got = run_op([x, sel], f"kiln.index_select %a0, %a1 {{dim = 0}} : ({tensor_type(x.shape, dtype)}, "
                           f"{tensor_type(sel.shape, sel.dtype)}) -> {rt}", rt)
    np.testing.assert_array_equal(got, x[sel])
    if dtype != np.float32:
        return
    w = rand(shape[1:], dtype)
    xt, st, wt = (tensor_type(a.shape, a.dtype) for a in (x, sel, w))
    prog = (f"func.func @main(%x: {xt}, %s: {st}, %w: {wt}) -> {rt} {{\n"
            f"  %e = kiln.index_select %x, %s {{dim = 0}} : ({xt}, {st}) -> {rt}\n"
            f"  %m = kiln.mul %e, %w : ({rt}, {wt}) -> {rt}\n"
            f"  return %m : {rt}\n}}\n")
    (got,), _ = run_kiln(prog, [x, sel, w])
    check(got, x[sel].astype(np.float64) * w, np.float32)


def test_slice_with_steps_and_pad():
    x = rand((5, 7), np.int32)
    got = movement(x, "kiln.slice %a0 {{start = array<i64: 1, 0>, stop = array<i64: 5, 7>, "
                      "step = array<i64: 2, 3>}} : {t} -> {rt}", (2, 3))
    check(got, x[1:5:2, 0:7:3], np.int32)
    got = movement(x, "kiln.pad %a0 {{low = array<i64: 1, 0>, high = array<i64: 2, 3>, "
                      "value = 9.0 : f64}} : {t} -> {rt}", (8, 10))
    check(got, np.pad(x, ((1, 2), (0, 3)), constant_values=9), np.int32)


def test_concat():
    a, b = rand((2, 3), np.float16), rand((2, 5), np.float16)
    rt = tensor_type((2, 8), np.float16)
    got = run_op([a, b], f"kiln.concat %a0, %a1 {{dim = 1}} : ({tensor_type(a.shape, a.dtype)}, "
                         f"{tensor_type(b.shape, b.dtype)}) -> {rt}", rt)
    check(got, np.concatenate([a, b], 1).astype(np.float64), np.float16)


def test_gather_index_select_scatter_add():
    x = rand((4, 6), np.float32)
    idx = RNG.integers(0, 6, (4, 3)).astype(np.int64)
    rt = tensor_type((4, 3), np.float32)
    got = run_op([x, idx], f"kiln.gather %a0, %a1 {{dim = 1}} : ({tensor_type(x.shape, x.dtype)}, "
                           f"{tensor_type(idx.shape, idx.dtype)}) -> {rt}", rt)
    check(got, np.take_along_axis(x, idx, 1).astype(np.float64), np.float32)
    sel = np.array([3, 0, 3], np.int32)
    rt = tensor_type((3, 6), np.float32)
    got = run_op([x, sel], f"kiln.index_select %a0, %a1 {{dim = 0}} : ({tensor_type(x.shape, x.dtype)}, "
                           f"{tensor_type(sel.shape, sel.dtype)}) -> {rt}", rt)
    check(got, x[sel].astype(np.float64), np.float32)
    src = rand((4, 3), np.float32)
    rt = tensor_type(x.shape, np.float32)
    got = run_op([x, idx, src], f"kiln.scatter_add %a0, %a1, %a2 {{dim = 1}} : ("
                 f"{tensor_type(x.shape, x.dtype)}, {tensor_type(idx.shape, idx.dtype)}, "
                 f"{tensor_type(src.shape, src.dtype)}) -> {rt}", rt)
    want = x.astype(np.float64).copy()
    for i in range(4):
        for j in range(3):
            want[i, idx[i, j]] += src[i, j]
    check(got, want, np.float32)



# Gathers along the last dim whose rows are vectors and a tail: on the CPU,
# vector gathers of the row at the indices (clamped: -3 and 99 read the
# row's ends) of 16-, 8- and 64-bit elements too; gathers along dim 0 stay
# scalar.
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64, np.int32, np.int64,
                                   np.int8])
@pytest.mark.parametrize("index_type", [np.int64, np.int32])
def test_gathers_along_rows(dtype, index_type):
    x = rand((5, 40), dtype)
    idx = RNG.integers(0, 40, (5, 37)).astype(index_type)
    idx[0, :3] = [-3, 99, 39]
    rt = tensor_type(idx.shape, x.dtype)
    got = run_op([x, idx], f"kiln.gather %a0, %a1 {{dim = 1}} : ({tensor_type(x.shape, x.dtype)}, "
                           f"{tensor_type(idx.shape, idx.dtype)}) -> {rt}", rt)
    want = np.take_along_axis(x, np.clip(idx, 0, 39), 1)
    check(got, want.astype(np.float64) if want.dtype.kind == "f" else want, dtype)
    rows = RNG.integers(0, 5, (3, 40)).astype(index_type)
    rt = tensor_type(rows.shape, x.dtype)
    got = run_op([x, rows], f"kiln.gather %a0, %a1 {{dim = 0}} : ({tensor_type(x.shape, x.dtype)}, "
                            f"{tensor_type(rows.shape, rows.dtype)}) -> {rt}", rt)
    want = np.take_along_axis(x, rows, 0)
    check(got, want.astype(np.float64) if want.dtype.kind == "f" else want, dtype)


# Scatter-adds with many collisions, which GPUs run in parallel
# (kiln-gpu-scatter-adds): atomically where the target adds the type so
# (CUDA f32/f64/i32/i64; Vulkan i32, and f32/f64 where the device has
# VK_EXT_shader_atomic_float: lavapipe f32), else a thread per output column
# that adds in index order (f16 here, checked bit for bit against that order).
def test_many_scatter_adds():
    def scatter(x, idx, src, dim):
        t = lambda a: tensor_type(a.shape, a.dtype)
        return run_op([x, idx, src], f"kiln.scatter_add %a0, %a1, %a2 {{dim = {dim}}} : "
                      f"({t(x)}, {t(idx)}, {t(src)}) -> {t(x)}", t(x))

    def reference(x, idx, src, dim):
        want = x.astype(np.float64 if x.dtype.kind == "f" else x.dtype).copy()
        at = list(np.indices(idx.shape))
        at[dim] = np.clip(idx, 0, x.shape[dim] - 1)  # out-of-range indices clamp
        np.add.at(want, tuple(at), src[tuple(slice(0, n) for n in idx.shape)])
        return want

    x, src = rand((1000, 64), np.float32), rand((5000, 64), np.float32)
    idx = RNG.integers(0, 1000, (5000, 64))
    np.testing.assert_allclose(scatter(x, idx, src, 0), reference(x, idx, src, 0),
                               rtol=1e-5, atol=1e-5)
    counts, ones = np.zeros(100, np.int32), np.ones(100000, np.int32)
    idx = RNG.integers(-5, 105, 100000)
    check(scatter(counts, idx, ones, 0), reference(counts, idx, ones, 0), np.int32)
    x, src = rand((50,), np.float64), rand((20000,), np.float64)
    idx = RNG.integers(0, 50, 20000)
    np.testing.assert_allclose(scatter(x, idx, src, 0), reference(x, idx, src, 0), rtol=1e-12,
                               atol=1e-12)
    x, src = rand((64, 300), np.float16), rand((64, 2000), np.float16)
    idx = RNG.integers(0, 300, (64, 2000))
    want = x.copy()
    for j in range(2000):  # in index order, rounded to f16 after each add
        rows = np.arange(64)
        want[rows, idx[:, j]] = (want[rows, idx[:, j]].astype(np.float32) +
                                 src[:, j].astype(np.float32)).astype(np.float16)
    np.testing.assert_array_equal(scatter(x, idx, src, 1), want)


def test_empty_index_into_empty_dims():
    # An empty index reads and writes nothing, also on an empty dim (a
    # non-empty one is a verifier error: no element to read).
    x, idx, sel = np.zeros((4, 0), np.float32), np.zeros((4, 0), np.int64), np.zeros(0, np.int32)
    y, j = rand((3, 5), np.float32), np.zeros((0, 5), np.int64)
    t = lambda a: tensor_type(a.shape, a.dtype)
    program = f"""func.func @main(%x: {t(x)}, %idx: {t(idx)}, %sel: {t(sel)}, %y: {t(y)}, %j: {t(j)})
    -> ({t(x)}, {t(x)}, {t(x)}, tensor<0x5xf32>, {t(y)}) {{
  %g = kiln.gather %x, %idx {{dim = 1}} : ({t(x)}, {t(idx)}) -> {t(x)}
  %is = kiln.index_select %x, %sel {{dim = 1}} : ({t(x)}, {t(sel)}) -> {t(x)}
  %sa = kiln.scatter_add %x, %idx, %x {{dim = 1}} : ({t(x)}, {t(idx)}, {t(x)}) -> {t(x)}
  %g2 = kiln.gather %y, %j {{dim = 0}} : ({t(y)}, {t(j)}) -> tensor<0x5xf32>
  %s2 = kiln.scatter_add %y, %j, %y {{dim = 0}} : ({t(y)}, {t(j)}, {t(y)}) -> {t(y)}
  return %g, %is, %sa, %g2, %s2 : {t(x)}, {t(x)}, {t(x)}, tensor<0x5xf32>, {t(y)}
}}
"""
    results, _ = run_kiln(program, [x, idx, sel, y, j])
    assert [r.shape for r in results] == [(4, 0), (4, 0), (4, 0), (0, 5), (3, 5)]
    np.testing.assert_array_equal(results[4], y)

REDUCE = {"reduce_sum": np.sum, "reduce_prod": np.prod, "reduce_mean": np.mean,
          "reduce_max": np.max, "reduce_min": np.min}


# reduce_mean is float-only (a verifier rule), so it has no int cases.
@pytest.mark.parametrize("op,dtype", [(op, dt) for op in sorted(REDUCE)
                                      for dt in (np.float32, np.float16, np.int32, np.uint8)
                                      if op != "reduce_mean" or dt in (np.float32, np.float16)])
@pytest.mark.parametrize("dims,keep", [((1,), False), ((0, 2), True), ((2,), False)])
def test_reductions(op, dtype, dims, keep):
    x = rand((3, 5, 37), dtype, 0.5, 1.5) if op == "reduce_prod" else rand((3, 5, 37), dtype)
    if op == "reduce_prod" and np.dtype(dtype).kind in "iu":
        x = rand((3, 5, 37), dtype) % 3
    want = REDUCE[op](x.astype(np.float64) if np.dtype(dtype).kind == "f" else x,
                      axis=dims, keepdims=keep)
    if np.dtype(dtype).kind in "iu":
        want = want.astype(dtype)
    shape = want.shape
    dims_text = ", ".join(str(d) for d in dims)
    keep_text = ", keep_dims = true" if keep else ""
    got = movement(x, f"kiln.{op} %a0 {{{{dims = array<i64: {dims_text}>{keep_text}}}}} : {{t}} -> {{rt}}", shape)
    check(got, want, dtype)



# Reductions over outer dims of a longer innermost dim (the CPU vectorises
# them across that dim, four vectors a step, then one, then scalars; over
# 64 rows or more, in blocks of up to 8 KiB of columns before those, the
# last block shorter where the vectors do not divide evenly):
# columns that leave each of those tails, a middle dim, integers (exact),
# a NaN in one column (it must reach that column's max), and softmax over
# dim 0 and over a middle dim.
@pytest.mark.parametrize("op,dtype", [("reduce_sum", np.float32), ("reduce_max", np.float32),
                                      ("reduce_sum", np.int32), ("reduce_mean", np.float16),
                                      ("reduce_prod", np.float64)])
@pytest.mark.parametrize("shape,dims", [((37, 1000), (0,)), ((3, 50, 130), (1,)),
                                        ((130, 3, 70), (0, 1)), ((100, 1100), (0,)),
                                        ((4, 80, 600), (1,)), ((64, 5000), (0,))])
def test_reductions_over_outer_dims(op, dtype, shape, dims):
    # Sums of positive values: up to 390 terms in f32 added in order, where
    # cancellation would leave a sum near 0 with the rounding of large ones.
    low, high = {"reduce_prod": (0.9, 1.1), "reduce_max": (-2, 2)}.get(op, (0.5, 1.5))
    x = rand(shape, dtype, low, high)
    if op == "reduce_max":
        x.flat[7 * shape[-1] + 11] = np.nan
    want = REDUCE[op](x.astype(np.float64) if np.dtype(dtype).kind == "f" else x, axis=dims)
    if np.dtype(dtype).kind in "iu":
        want = want.astype(dtype)
    dims_text = ", ".join(str(d) for d in dims)
    got = movement(x, f"kiln.{op} %a0 {{{{dims = array<i64: {dims_text}>}}}} : {{t}} -> {{rt}}",
                   want.shape)
    check(got, want, dtype)
    if op != "reduce_sum" or dtype != np.float32:
        return
    t = tensor_type(shape, np.float32)
    got = run_op([x], f"kiln.softmax %a0 {{dim = {dims[-1]}}} : {t}", t)
    check(got, softmax(x.astype(np.float64), dims[-1]), np.float32)

def test_reduce_any_all_and_nan_and_empty():
    b = rand((4, 7), np.bool_)
    check(movement(b, "kiln.reduce_any %a0 {{dims = array<i64: 1>}} : {t} -> {rt}", (4,)), b.any(1), np.bool_)
    check(movement(b, "kiln.reduce_all %a0 {{dims = array<i64: 0>}} : {t} -> {rt}", (7,)), b.all(0), np.bool_)
    x = rand((3, 4), np.float32)
    x[1, 2] = np.nan
    check(movement(x, "kiln.reduce_max %a0 {{dims = array<i64: 1>}} : {t} -> {rt}", (3,)),
          np.max(x.astype(np.float64), 1), np.float32)
    e = np.zeros((3, 0), np.float32)
    check(movement(e, "kiln.reduce_sum %a0 {{dims = array<i64: 1>}} : {t} -> {rt}", (3,)),
          np.zeros(3), np.float32)


@pytest.mark.parametrize("op,ref", [("argmax", np.argmax), ("argmin", np.argmin)])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_arg_reductions(op, ref, dtype):
    x = rand((6, 9), dtype)
    x[0, 3] = x[0, 7] = x.max() + 1 if op == "argmax" else x.min() - 1  # ties: first wins
    if dtype == np.float32:
        x[2, 4] = np.nan
    want = ref(x, axis=1)
    check(movement(x, f"kiln.{op} %a0 {{{{dim = 1}}}} : {{t}} -> {{rt}}", (6,), "i64"), want, np.int64)
    check(movement(x, f"kiln.{op} %a0 {{{{dim = 0, keep_dims = true}}}} : {{t}} -> {{rt}}", (1, 9), "i64"),
          ref(x, axis=0, keepdims=True), np.int64)


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.float16])
def test_cumsum(dtype):
    x = rand((4, 9), dtype)
    for dim in (0, 1):
        got = movement(x, f"kiln.cumsum %a0 {{{{dim = {dim}}}}} : {{t}}", x.shape)
        want = np.cumsum(x.astype(np.float64) if np.dtype(dtype).kind == "f" else x, axis=dim)
        check(got, want, dtype)


# Scans over an outer dim run on the CPU as a parallel loop over 4
# registers of columns (64 f32 lanes with AVX-512, 32 of f64, 256 of i8)
# carried down the rows, the columns past the last whole step as scalar
# loops (kiln-cpu-scans): widths on both sides of a step, a middle dim,
# f16 summed in f32, integers exact (i8 wraps as NumPy's does).
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64, np.int32, np.int8])
@pytest.mark.parametrize("shape,dim", [((50, 300), 0), ((7, 64), 0), ((3, 40, 70), 1),
                                       ((9, 5, 260), 0), ((6, 33, 130), 2)])
def test_cumsum_over_rows_of_vectors(dtype, shape, dim):
    x = rand(shape, dtype, 0.5, 1.5) if np.dtype(dtype).kind == "f" else rand(shape, dtype)
    got = movement(x, f"kiln.cumsum %a0 {{{{dim = {dim}}}}} : {{t}}", x.shape)
    if np.dtype(dtype).kind == "f":
        want = np.cumsum(x.astype(np.float64), axis=dim)
        if dtype == np.float16:
            # Sums in f32, each rounded to f16 on its own.
            want = np.cumsum(x.astype(np.float32), axis=dim).astype(np.float16)
    else:
        want = np.cumsum(x, axis=dim, dtype=dtype)
    check(got, want.astype(np.float64) if np.dtype(dtype).kind == "f" else want, dtype)


# Long reductions and scans, which GPUs split across blocks
# (kiln-gpu-split-reductions, kiln-gpu-scans): 64 slices of 16384 plus a
# tail of one (its value large, so that losing it shows), or 4 slices per
# row; a cumsum of 513 chunks of 2048, the last one 3 long, along dim 0
# and dim 1. Positive values, so that a lost or doubled chunk is far
# outside the rounding of 2^20 float sums.
LONG = 2**20


def test_long_full_and_few_row_reductions():
    x = rand((LONG + 1,), np.float32, 0.5, 1.5)
    x[-1], x[5] = 1000.0, -3.0
    rows = rand((3, 65536), np.float32, 0.5, 1.5)
    t, tr = tensor_type(x.shape, x.dtype), tensor_type(rows.shape, rows.dtype)
    s, r3 = tensor_type((), np.float32), tensor_type((3,), np.float32)
    ops = [("reduce_sum", "0", s), ("reduce_mean", "0", s), ("reduce_max", "0", s),
           ("reduce_min", "0", s)]
    body = "\n".join(f"  %r{i} = kiln.{op} %a0 {{dims = array<i64: {d}>}} : {t} -> {rt}"
                     for i, (op, d, rt) in enumerate(ops))
    program = (f"func.func @main(%a0: {t}, %a1: {tr}) -> ({s}, {s}, {s}, {s}, {r3}) {{\n{body}\n"
               f"  %r4 = kiln.reduce_sum %a1 {{dims = array<i64: 1>}} : {tr} -> {r3}\n"
               f"  return %r0, %r1, %r2, %r3, %r4 : {s}, {s}, {s}, {s}, {r3}\n}}\n")
    got, _ = run_kiln(program, [x, rows])
    xd = x.astype(np.float64)
    np.testing.assert_allclose(got[0], xd.sum(), rtol=1e-4)
    np.testing.assert_allclose(got[1], xd.mean(), rtol=1e-4)
    assert got[2] == 1000.0 and got[3] == -3.0
    np.testing.assert_allclose(got[4], rows.astype(np.float64).sum(1), rtol=1e-4)
    # A device's reduction order is fixed: the same result every run.
    again, _ = run_kiln(program, [x, rows])
    assert got[0].tobytes() == again[0].tobytes() and got[4].tobytes() == again[4].tobytes()


def test_long_cumsum():
    x = rand((LONG + 3,), np.float32, 0.5, 1.5)
    got = movement(x, "kiln.cumsum %a0 {{dim = 0}} : {t}", x.shape)
    np.testing.assert_allclose(got, np.cumsum(x.astype(np.float64)), rtol=2e-4)
    cols = rand((5000, 3), np.float32, 0.5, 1.5)
    got = movement(cols, "kiln.cumsum %a0 {{dim = 0}} : {t}", cols.shape)
    np.testing.assert_allclose(got, np.cumsum(cols.astype(np.float64), 0), rtol=2e-4)
    ints = rand((2, 4099), np.int64)
    check(movement(ints, "kiln.cumsum %a0 {{dim = 1}} : {t}", ints.shape), np.cumsum(ints, 1),
          np.int64)
    # 8193 chunks of 1024 i64: blocks take segments of two chunks, the last
    # segment one chunk and an empty one.
    many = rand((8 * LONG + 5,), np.int64)
    check(movement(many, "kiln.cumsum %a0 {{dim = 0}} : {t}", many.shape), np.cumsum(many),
          np.int64)


# Long argmax/argmin, which GPUs run a block per row and split into slices
# (kiln-gpu-arg-reductions): ties and NaNs in different slices, where only
# the combining of partials decides which comes first.
@pytest.mark.parametrize("op,ref", [("argmax", np.argmax), ("argmin", np.argmin)])
def test_long_arg_reductions(op, ref):
    def arg(x, dim, keep=False):
        shape = list(x.shape)
        if keep:
            shape[dim] = 1
        else:
            del shape[dim]
        keep_text = ", keep_dims = true" if keep else ""
        return movement(x, f"kiln.{op} %a0 {{{{dim = {dim}{keep_text}}}}} : {{t}} -> {{rt}}",
                        tuple(shape), "i64")

    extreme = 1000.0 if op == "argmax" else -1000.0
    x = rand((LONG + 1,), np.float32)
    x[[700001, 40000, LONG]] = extreme  # the first of three, in the fourth slice
    check(arg(x, 0), ref(x), np.int64)
    x[[900000, 300000]] = np.nan  # NaN counts as the extreme: the first NaN
    check(arg(x, 0), np.int64(300000), np.int64)
    rows = rand((3, 65536 + 5), np.float32)
    rows[1, [65539, 17000]] = extreme
    rows[2, :] = -np.inf if op == "argmax" else np.inf  # nothing beats the start: 0
    check(arg(rows, 1), ref(rows, 1), np.int64)
    # Two long rows, which the CPU cuts into slices for its threads: in one
    # nothing beats the start (0), in the other the very last element (a
    # tail) wins.
    few = np.full((2, 3 * 65536 + 7), -np.inf if op == "argmax" else np.inf, np.float32)
    few[1, -1] = extreme
    check(arg(few, 1), np.array([0, few.shape[1] - 1], np.int64), np.int64)
    cols = rand((70000, 3), np.int32)  # along a strided dim, a few columns
    cols[[66000, 5], 2] = 99 if op == "argmax" else -99
    check(arg(cols, 0, keep=True), ref(cols, 0, keepdims=True), np.int64)
    for dtype, shape in [(np.float16, (4, 50000)), (np.int8, (2, 40000)),
                         (np.float32, (5000, 300)), (np.float32, (100, 40))]:
        many = rand(shape, dtype)
        check(arg(many, 1), ref(many, 1), np.int64)


def softmax(x, dim):
    e = np.exp(x - x.max(dim, keepdims=True))
    return e / e.sum(dim, keepdims=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
def test_softmax_and_log_softmax(dtype):
    x = rand((5, 37), dtype, -5, 5)
    for dim in (0, 1):
        check(movement(x, f"kiln.softmax %a0 {{{{dim = {dim}}}}} : {{t}}", x.shape),
              softmax(x.astype(np.float64), dim), dtype)
        check(movement(x, f"kiln.log_softmax %a0 {{{{dim = {dim}}}}} : {{t}}", x.shape),
              np.log(softmax(x.astype(np.float64), dim)), dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_layer_norm_and_rms_norm(dtype):
    x, w, b = rand((6, 50), dtype), rand((50,), dtype), rand((50,), dtype)
    ts = [tensor_type(v.shape, v.dtype) for v in (x, w, b)]
    xd, wd, bd = (v.astype(np.float64) for v in (x, w, b))
    mean, var = xd.mean(-1, keepdims=True), xd.var(-1, keepdims=True)
    got = run_op([x, w, b], f"kiln.layer_norm %a0, %a1, %a2 {{eps = 1.0e-5 : f64}} : "
                            f"({', '.join(ts)}) -> {ts[0]}", ts[0])
    check(got, (xd - mean) / np.sqrt(var + 1e-5) * wd + bd, dtype)
    got = run_op([x, w], f"kiln.rms_norm %a0, %a1 {{eps = 1.0e-6 : f64}} : "
                         f"({ts[0]}, {ts[1]}) -> {ts[0]}", ts[0])
    check(got, xd / np.sqrt((xd**2).mean(-1, keepdims=True) + 1e-6) * wd, dtype)


# GPU row kernels keep a row of up to 32 elements per thread in registers
# (256 threads, 4 lanes: up to 8192 f32), read once: rows of whole chunks,
# a last chunk cut by the row's end (1100, and 333 scalar), and rows that
# loop instead (16384, 20000), whose loops compute an earlier stage's
# values again (f16: the widened row, then the centred one) rather than
# reading them from a temporary.
@pytest.mark.parametrize("length,dtype", [(333, np.float32), (1100, np.float32),
                                          (2048, np.float32), (8192, np.float32),
                                          (16384, np.float32), (20000, np.float16)])
def test_row_kernels_over_rows_kept_in_registers(length, dtype):
    x = rand((3, length), np.float32, -5, 5).astype(dtype)
    w, b = rand((length,), np.float32).astype(dtype), rand((length,), np.float32).astype(dtype)
    t = tensor_type(x.shape, x.dtype)
    xd, wd, bd = (v.astype(np.float64) for v in (x, w, b))
    check(movement(x, f"kiln.softmax %a0 {{{{dim = 1}}}} : {{t}}", x.shape), softmax(xd, 1), dtype)
    check(movement(x, f"kiln.log_softmax %a0 {{{{dim = 1}}}} : {{t}}", x.shape),
          np.log(softmax(xd, 1)), dtype)
    ts = [t, tensor_type(w.shape, w.dtype), tensor_type(b.shape, b.dtype)]
    mean, var = xd.mean(-1, keepdims=True), xd.var(-1, keepdims=True)
    got = run_op([x, w, b], f"kiln.layer_norm %a0, %a1, %a2 {{eps = 1.0e-5 : f64}} : "
                            f"({', '.join(ts)}) -> {t}", t)
    check(got, (xd - mean) / np.sqrt(var + 1e-5) * wd + bd, dtype)
    got = run_op([x, w], f"kiln.rms_norm %a0, %a1 {{eps = 1.0e-6 : f64}} : ({t}, {ts[1]}) -> {t}", t)
    check(got, xd / np.sqrt((xd**2).mean(-1, keepdims=True) + 1e-6) * wd, dtype)


# The CPU runs chains of row stages (softmax, norms, and ops over the same
# rows before and after them) as one loop over rows (kiln-cpu-row-kernels):
# rows shorter than a vector, of a vector and a tail, of temporaries past
# the 64 KiB kept on the stack (20000 f32), outer dims of run-time size; a
# chain that writes a program output it reads again (exp), one that reads
# an input across rows (a transpose) and a softmax of a softmax.
@pytest.mark.parametrize("shape,dtype", [((300, 5), np.float32), ((70, 37), np.float32),
                                         ((2, 3, 129), np.float32), ((3, 20000), np.float32),
                                         ((1, 16), np.float32), ((70, 37), np.float16),
                                         ((2, 3, 129), np.float64)])
def test_row_chains(shape, dtype):
    x = rand(shape, dtype, -4, 4)
    w, b = rand(shape[-1:], dtype), rand(shape[-1:], dtype)
    xd, wd, bd = (v.astype(np.float64) for v in (x, w, b))
    tw = tensor_type(shape[-1:], dtype)
    dyn = tensor_type(("?",) + shape[1:], dtype)
    last = len(shape) - 1
    results, _ = run_kiln(
        f"func.func @main(%x: {dyn}, %w: {tw}, %b: {tw}) -> ({dyn}, {dyn}, {dyn}, {dyn}) {{\n"
        f"  %e = kiln.exp %x : {dyn}\n"
        f"  %s = kiln.softmax %e {{dim = {last}}} : {dyn}\n"
        f"  %ss = kiln.softmax %s {{dim = {last}}} : {dyn}\n"
        f"  %n = kiln.layer_norm %x, %w, %b {{eps = 1.0e-5 : f64}} : ({dyn}, {tw}, {tw}) -> {dyn}\n"
        f"  %r = kiln.rms_norm %n, %w {{eps = 1.0e-6 : f64}} : ({dyn}, {tw}) -> {dyn}\n"
        f"  %l = kiln.log_softmax %r {{dim = {last}}} : {dyn}\n"
        f"  return %e, %ss, %r, %l : {dyn}, {dyn}, {dyn}, {dyn}\n}}\n", [x, w, b])
    e = np.exp(xd)
    n = (xd - xd.mean(-1, keepdims=True)) / np.sqrt(xd.var(-1, keepdims=True) + 1e-5) * wd + bd
    r = n / np.sqrt((n**2).mean(-1, keepdims=True) + 1e-6) * wd
    if dtype == np.float16:  # each op rounds its result to f16 first
        e = e.astype(np.float16).astype(np.float64)
        n = n.astype(np.float16).astype(np.float64)
        r = (n / np.sqrt((n**2).mean(-1, keepdims=True) + 1e-6) * wd).astype(np.float16)
        r = r.astype(np.float64)
    s = softmax(e, last)
    if dtype == np.float16:
        s = s.astype(np.float16).astype(np.float64)
    for got, want in zip(results, [e, softmax(s, last), r, np.log(softmax(r, last))]):
        check(got, want, dtype)
    if shape[-1] not in (37, 129) or dtype != np.float32:
        return
    square = rand((shape[-1], shape[-1]), np.float32)
    ts = tensor_type(square.shape, np.float32)
    results, _ = run_kiln(
        f"func.func @main(%x: {ts}) -> {ts} {{\n"
        f"  %t = kiln.transpose %x {{perm = array<i64: 1, 0>}} : {ts} -> {ts}\n"
        f"  %a = kiln.add %x, %t : ({ts}, {ts}) -> {ts}\n"
        f"  %s = kiln.softmax %a {{dim = 1}} : {ts}\n"
        f"  return %s : {ts}\n}}\n", [square])
    sd = square.astype(np.float64)
    check(results[0], softmax(sd + sd.T, 1), np.float32)


# Chains reduced over an outer dim (softmax over dim 0 or over an NCHW
# image's channels, a mean taken out along it) run on the CPU as one loop
# over slabs of columns (kiln-cpu-row-kernels' column chains): slabs that
# divide the columns (1024), a narrower last one (3000, 300), columns of
# run-time size, dims inside the reduced one collapsed into one row of
# columns (4D, 5D), 1024 f32 rows (slabs of 256-byte rows) and 2048 (the stages kept apart),
# temporaries on the stack and past it, f16 and f64.
@pytest.mark.parametrize("shape,dim,dtype", [((21, 3000), 0, np.float32),
                                             ((2, 21, 1024), 1, np.float32),
                                             ((3, 7, 5, 200), 1, np.float32),
                                             ((2, 21, 4, 6, 50), 1, np.float32),
                                             ((1024, 300), 0, np.float32),
                                             ((2048, 100), 0, np.float32),
                                             ((21, 3000), 0, np.float16),
                                             ((33, 1000), 0, np.float64)])
def test_column_chains(shape, dim, dtype):
    x = rand(shape, dtype, -4, 4)
    xd = x.astype(np.float64)
    kept = tuple(1 if d == dim else n for d, n in enumerate(shape))
    for columns in (shape[-1], "?"):
        t = tensor_type(shape[:-1] + (columns,), dtype)
        tk = tensor_type(kept[:-1] + (columns,), dtype)
        results, _ = run_kiln(
            f"func.func @main(%x: {t}) -> ({t}, {t}, {t}) {{\n"
            f"  %s = kiln.softmax %x {{dim = {dim}}} : {t}\n"
            f"  %l = kiln.log_softmax %s {{dim = {dim}}} : {t}\n"
            f"  %m = kiln.reduce_mean %x {{dims = array<i64: {dim}>, keep_dims = true}} : {t} -> {tk}\n"
            f"  %c = kiln.sub %x, %m : ({t}, {tk}) -> {t}\n"
            f"  return %s, %l, %c : {t}, {t}, {t}\n}}\n", [x])
        s = softmax(xd, dim)
        if dtype == np.float16:  # each op rounds its result to f16 first
            s = s.astype(np.float16).astype(np.float64)
        for got, want in zip(results, [softmax(xd, dim), np.log(softmax(s, dim)),
                                       xd - xd.mean(dim, keepdims=True)]):
            check(got, want, dtype)


def test_column_chain_columns_apart():
    """A channel softmax times a weight per column: the weight holds W but
    not H, so H and W are not collapsed (slabs of W's columns)."""
    x = rand((2, 21, 8, 200), np.float32, -4, 4)
    w = rand((200,), np.float32)
    t, tw = tensor_type(x.shape, np.float32), tensor_type(w.shape, np.float32)
    results, _ = run_kiln(
        f"func.func @main(%x: {t}, %w: {tw}) -> {t} {{\n"
        f"  %s = kiln.softmax %x {{dim = 1}} : {t}\n"
        f"  %m = kiln.mul %s, %w : ({t}, {tw}) -> {t}\n"
        f"  return %m : {t}\n}}\n", [x, w])
    check(results[0], softmax(x.astype(np.float64), 1) * w.astype(np.float64), np.float32)


def test_column_chain_bf16():
    """A bf16 softmax over dim 0 as a column chain (its stages widen to f32)."""
    x = rand((21, 3000), np.float32, -4, 4)
    x = (x.view(np.uint32) & 0xFFFF0000).view(np.float32)  # exact in bf16
    t, tb = tensor_type(x.shape, np.float32), tensor_type(x.shape, "bf16")
    results, _ = run_kiln(
        f"func.func @main(%x: {t}) -> {t} {{\n"
        f"  %b = kiln.cast %x : {t} -> {tb}\n"
        f"  %s = kiln.softmax %b {{dim = 0}} : {tb}\n"
        f"  %f = kiln.cast %s : {tb} -> {t}\n"
        f"  return %f : {t}\n}}\n", [x])
    np.testing.assert_allclose(results[0], softmax(x.astype(np.float64), 0), rtol=8e-3, atol=1e-6)


# Shapes cover the register-blocked CPU kernel's full blocks, leftover rows,
# leftover whole vectors, leftover scalar columns and batches, column blocks
# past 1024 cut to equal widths (1025, 2100), and the GPU kernel's 128x128
# tiles with partial tiles and a K that is no multiple of 8. One row of A
# (a gemv; on the CPU an outer reduction in blocks of B's columns): with
# 64+ rows of B, fewer, batched, and A shared by a batch of B. Two to four
# rows (on the CPU the rows inside each block of B's columns): blocks with
# a short last one and a tail, and too few rows of B for blocks, batched.
# Three or four rows and few columns for the threads: K in slices summed
# apart (on 2 threads, 2 slices of 512 and 1024 rows), with a tail of
# columns.
@pytest.mark.parametrize("a_shape,b_shape", [((17, 33), (33, 9)), ((2, 1, 5, 8), (3, 8, 4)),
                                             ((1, 300), (300, 1000)), ((1, 40), (40, 37)),
                                             ((3, 1, 70), (3, 70, 130)), ((1, 64), (5, 64, 50)),
                                             ((1, 1), (1, 1)), ((64, 128), (128, 96)),
                                             ((7, 100), (100, 150)), ((3, 13, 20), (3, 20, 70)),
                                             ((12, 0), (0, 64)), ((300, 203), (203, 260)),
                                             ((2, 130, 21), (2, 21, 257)),
                                             ((13, 40), (40, 1025)), ((9, 30), (30, 2100)),
                                             ((4, 300), (300, 1000)), ((3, 100), (100, 2100)),
                                             ((2, 2, 70), (2, 70, 130)),
                                             ((3, 1024), (1024, 1000)), ((4, 2048), (2048, 130))])
def test_matmul_f32(a_shape, b_shape):
    a, b = rand(a_shape, np.float32), rand(b_shape, np.float32)
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    got = binary_matmul(a, b, want.shape, "f32")
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def binary_matmul(a, b, shape, out):
    rt = tensor_type(shape, out)
    return run_op([a, b], f"kiln.matmul %a0, %a1 : ({tensor_type(a.shape, a.dtype)}, "
                          f"{tensor_type(b.shape, b.dtype)}) -> {rt}", rt)


# f16/bf16 inputs accumulating in f32: on CUDA the tensor-core kernel
# (wgmma on sm_90a, mma.sync elsewhere), on Vulkan devices with cooperative
# matrices their kernel (f16, K and N multiples of 4), with partial 128-row
# and 128/256-column tiles, a K with a partial step, a long K that cycles the
# copy pipeline's stages many times, a K of one 16-byte chunk, batches (one
# with a B shared by every batch), a tiny case and a K of 18 (a loop nest on
# Vulkan); on sm_90a TMA boxes wholly past N (72 columns in a 256-column
# tile) and past K read zeros, and K that is no whole 16-byte units (18,
# 511, 36) takes wgmma through zero-padded copies of A and B; a K of 0
# (C = 0) the SIMT kernel (TMA takes no empty dim).
@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("a_shape,b_shape", [((300, 72), (72, 264)), ((64, 1024), (1024, 128)),
                                             ((2, 130, 40), (2, 40, 136)), ((5, 16), (16, 8)),
                                             ((1000, 2048), (2048, 520)), ((129, 8), (8, 264)),
                                             ((2, 200, 520), (2, 520, 72)), ((3, 70, 24), (24, 36)),
                                             ((33, 18), (18, 70)), ((300, 511), (511, 257)),
                                             ((2, 100, 36), (36, 72)), ((4, 0), (0, 8))])
def test_matmul_half_inputs(dtype, a_shape, b_shape):
    a, b = rand(a_shape, np.float32), rand(b_shape, np.float32)
    if dtype == "f16":
        a, b = a.astype(np.float16), b.astype(np.float16)
    else:  # kiln-run reads f32 .npy into a bf16 input
        a, b = round_to_bf16(a), round_to_bf16(b)
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    ta, tb, tr = (tensor_type(a.shape, dtype), tensor_type(b.shape, dtype),
                  tensor_type(want.shape, "f32"))
    program = (f"func.func @main(%a: {ta}, %b: {tb}) -> {tr} {{\n"
               f"  %r = kiln.matmul %a, %b : ({ta}, {tb}) -> {tr}\n"
               f"  return %r : {tr}\n}}\n")
    results, _ = run_kiln(program, [a, b])
    np.testing.assert_allclose(results[0], want, rtol=1e-4, atol=1e-3)


ON_CUDA = os.environ.get("KILN_DEVICE", "cpu").startswith("cuda")


# --tf32: f32 inputs lose all but 10 mantissa bits on the tensor cores, so
# each product is off by at most ~2^-9 of |a||b|; 1 + 2^-15 is 1 in tf32,
# which tells the tensor-core path from the f32 one (column 0 of B is e_0).
# On sm_90a the wgmma kernel takes them (B copied transposed first; K 36 a
# partial step, N 264 a partial tile; N 77 with static sizes: C's odd rows
# stored element by element), `?` dims too; a `?` matmul of odd N runs the
# f32 SIMT kernel instead (exact); K 37 takes tf32 through zero-padded
# copies.
@pytest.mark.skipif(not ON_CUDA, reason="--tf32 is an option of CUDA targets")
@pytest.mark.parametrize("a_shape,b_shape,dynamic",
                         [((300, 72), (72, 264), False), ((64, 1024), (1024, 128), False),
                          ((2, 130, 40), (2, 40, 136), False), ((300, 36), (36, 264), False),
                          ((300, 72), (72, 264), True), ((2, 130, 40), (2, 40, 136), True),
                          ((100, 64), (64, 77), True), ((100, 64), (64, 77), False),
                          ((50, 37), (37, 40), False)])
def test_matmul_f32_as_tf32_on_cuda(a_shape, b_shape, dynamic):
    a, b = rand(a_shape, np.float32), rand(b_shape, np.float32)
    a.flat[0] = 1 + 2.0**-15
    b[..., :, 0] = 0
    b[..., 0, 0] = 1
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    bound = np.matmul(np.abs(a).astype(np.float64), np.abs(b).astype(np.float64)) * 2.0**-9
    ta, tb, tr = (tensor_type(x.shape if not dynamic else ("?",) * x.ndim, "f32")
                  for x in (a, b, want))
    program = (f"func.func @main(%a: {ta}, %b: {tb}) -> {tr} {{\n"
               f"  %r = kiln.matmul %a, %b : ({ta}, {tb}) -> {tr}\n"
               f"  return %r : {tr}\n}}\n")
    got = run_kiln(program, [a, b], extra_args=["--tf32"])[0][0]
    assert np.all(np.abs(got - want) <= bound + 1e-6)
    f32 = dynamic and b_shape[-1] % 2  # the SIMT kernel
    # a[0,0] * b[0,0] with a[0,0] rounded to tf32, or exact
    assert got.flat[0] == (np.float32(1 + 2.0**-15) if f32 else 1.0)


# More than 1024 outputs with short rows: the CPU splits the loop nest into
# blocks across threads; each output must be accumulated exactly once (a
# block aligned to the rows once redid them all, doubling sums).
@pytest.mark.parametrize("dtype,out", [("i8", "i32"), ("f16", "f32")])
@pytest.mark.parametrize("m,k,n", [(7, 16, 150), (13, 5, 100)])
def test_matmul_split_across_threads(dtype, out, m, k, n):
    npdtype = {"i8": np.int8, "f16": np.float16}[dtype]
    a, b = rand((m, k), npdtype), rand((k, n), npdtype)
    want = a.astype(np.float64) @ b.astype(np.float64)
    got = binary_matmul(a, b, want.shape, out)
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=1e-4, atol=1e-3)


def test_matmul_f16_accumulates_in_f32_and_ints():
    a, b = rand((8, 300), np.float16), rand((300, 5), np.float16)
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    np.testing.assert_allclose(binary_matmul(a, b, want.shape, "f32"), want, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(binary_matmul(a, b, want.shape, "f16").astype(np.float64), want,
                               rtol=2e-3, atol=2e-2)
    ai, bi = rand((4, 6), np.int8), rand((6, 3), np.int8)
    check(binary_matmul(ai, bi, (4, 3), "i32"), ai.astype(np.int32) @ bi.astype(np.int32), np.int32)


def test_size_zero_and_size_one_dims():
    a, b = rand((0, 3), np.float32), rand((1, 3), np.float32)
    check(binary("add", a, b), np.zeros((0, 3)), np.float32)
    s = rand((), np.float32)
    check(binary("mul", s, rand((2, 2), np.float32)) * 0, np.zeros((2, 2)), np.float32)


def test_empty_slices_at_the_end_and_empty_concat_inputs():
    # x[3:] of 3 rows and a concat whose last input has no rows failed to
    # compile (tensor.extract_slice / insert_slice offsets at the end).
    x, e = rand((3, 4), np.float32), rand((0, 4), np.float32)
    t, te = tensor_type(x.shape, x.dtype), tensor_type(e.shape, e.dtype)
    prog = (f"func.func @main(%x: {t}, %e: {te}) -> ({te}, {t}, {t}) {{\n"
            f"  %s = kiln.slice %x {{start = array<i64: 3, 0>, stop = array<i64: 3, 4>}} : {t} -> {te}\n"
            f"  %c = kiln.concat %x, %e {{dim = 0}} : ({t}, {te}) -> {t}\n"
            f"  %d = kiln.concat %e, %x, %e {{dim = 0}} : ({te}, {t}, {te}) -> {t}\n"
            f"  return %s, %c, %d : {te}, {t}, {t}\n}}\n")
    results, _ = run_kiln(prog, [x, e])
    assert results[0].shape == (0, 4)
    np.testing.assert_array_equal(results[1], x)
    np.testing.assert_array_equal(results[2], x)


def test_fused_chain_matches_reference():
    x, w, b = rand((64, 32), np.float32), rand((32,), np.float32), rand((32,), np.float32)
    t, tv = tensor_type(x.shape, x.dtype), tensor_type(w.shape, w.dtype)
    prog = (f"func.func @main(%x: {t}, %w: {tv}, %b: {tv}) -> {t} {{\n"
            f"  %0 = kiln.mul %x, %w : ({t}, {tv}) -> {t}\n"
            f"  %1 = kiln.add %0, %b : ({t}, {tv}) -> {t}\n"
            f"  %2 = kiln.gelu %1 : {t}\n  return %2 : {t}\n}}\n")
    results, proc = run_kiln(prog, [x, w, b])
    assert "1 kernel(s)" in proc.stdout, proc.stdout  # the whole chain is one kernel
    xd = x.astype(np.float64) * w + b
    check(results[0], 0.5 * xd * (1 + erf(xd / math.sqrt(2))), np.float32)


def f8_table(kind):
    """Every finite f8 value with its bit pattern (NaN patterns left out)."""
    values = {}
    for bits in range(256):
        sign = -1.0 if bits & 0x80 else 1.0
        if kind == "f8E5M2":
            e, m = (bits >> 2) & 0x1F, bits & 3
            if e == 31:
                continue
            v = m * 2.0**-16 if e == 0 else (1 + m / 4) * 2.0**(e - 15)
        else:
            e, m = (bits >> 3) & 0xF, bits & 7
            if e == 15 and m == 7:
                continue
            v = m * 2.0**-9 if e == 0 else (1 + m / 8) * 2.0**(e - 7)
        values[bits] = sign * v
    return values


def f8_round(x, kind):
    """Round to nearest f8 value, ties to the even pattern; out of range gives
    inf (E5M2) or NaN (E4M3FN)."""
    table = f8_table(kind)
    limit = 61440.0 if kind == "f8E5M2" else 464.0
    out = []
    for v in x:
        if math.isnan(v) or (kind == "f8E4M3FN" and abs(v) > limit) or math.isinf(v) and kind == "f8E4M3FN":
            out.append(math.nan)
            continue
        if kind == "f8E5M2" and abs(v) >= limit:
            out.append(math.copysign(math.inf, v))
            continue
        best = min(table.items(), key=lambda kv: (abs(kv[1] - v), kv[0] & 1))
        out.append(best[1])
    return np.array(out)


@pytest.mark.parametrize("kind", ["f8E4M3FN", "f8E5M2"])
def test_f8_cast_round_trip(kind):
    x = np.concatenate([rand((200,), np.float32, -20, 20), rand((50,), np.float32, -0.02, 0.02),
                        np.array([0.0, -0.0, 448.0, 464.0, 470.0, 500.0, 57344.0, 61440.0, 70000.0,
                                  np.inf, -np.inf, np.nan], np.float32)]).astype(np.float32)
    t, t8 = tensor_type(x.shape, np.float32), tensor_type(x.shape, kind)
    prog = (f"func.func @main(%x: {t}) -> {t} {{\n"
            f"  %0 = kiln.cast %x : {t} -> {t8}\n"
            f"  %1 = kiln.transpose %0 {{perm = array<i64: 0>}} : {t8} -> {t8}\n"
            f"  %2 = kiln.cast %1 : {t8} -> {t}\n  return %2 : {t}\n}}\n")
    got = run_kiln(prog, [x])[0][0]
    np.testing.assert_array_equal(got, f8_round(x.astype(np.float64), kind).astype(np.float32))


def test_f8_matmul_and_fill():
    a, b = rand((5, 24), np.float32, -2, 2), rand((24, 7), np.float32, -2, 2)
    ta, tb, tr = tensor_type(a.shape, np.float32), tensor_type(b.shape, np.float32), tensor_type((5, 7), np.float32)
    a8, b8 = tensor_type(a.shape, "f8E4M3FN"), tensor_type(b.shape, "f8E4M3FN")
    prog = (f"func.func @main(%a: {ta}, %b: {tb}) -> {tr} {{\n"
            f"  %0 = kiln.cast %a : {ta} -> {a8}\n  %1 = kiln.cast %b : {tb} -> {b8}\n"
            f"  %2 = kiln.matmul %0, %1 : ({a8}, {b8}) -> {tr}\n  return %2 : {tr}\n}}\n")
    got = run_kiln(prog, [a, b])[0][0]
    want = f8_round(a.ravel().astype(np.float64), "f8E4M3FN").reshape(a.shape) @ \
        f8_round(b.ravel().astype(np.float64), "f8E4M3FN").reshape(b.shape)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    t8, t = tensor_type((3,), "f8E5M2"), tensor_type((3,), np.float32)
    prog = (f"func.func @main() -> {t} {{\n  %0 = \"kiln.fill\"() {{value = 2.6 : f64}} : () -> {t8}\n"
            f"  %1 = kiln.cast %0 : {t8} -> {t}\n  return %1 : {t}\n}}\n")
    check(run_kiln(prog, [])[0][0], np.full(3, 2.5), np.float32)


def rand_f8(shape, kind):
    """Random f8 values, as float32 (exact): multiples of 0.5 up to 2 in
    magnitude, so that sums of up to 128 products need no more than 11
    bits; Hopper's tensor cores keep only about 14 bits of an f8 wgmma's
    sums (kiln, as cuBLAS, adds each 128-long K step's sums to an f32
    accumulator: bench/matmul_vs_torch.py --dtype f8 compares the errors)."""
    values = np.array([v for v in f8_table(kind).values() if abs(v) <= 2 and v * 2 == int(v * 2)],
                      np.float32)
    return RNG.choice(values, shape)


# f8 program arguments and results go in and out of .npy files as f32
# (kiln-run rounds them, as a cast does: f8_round): values, out-of-range
# ones and ties.
@pytest.mark.parametrize("kind", ["f8E4M3FN", "f8E5M2"])
def test_f8_program_arguments_and_results(kind):
    x = np.concatenate([rand((300,), np.float32, -20, 20),
                        np.array([0.0, -0.0, 1.0625, 1.1875, 448.0, 470.0, 500.0, 57344.0,
                                  70000.0, np.nan], np.float32)]).astype(np.float32)
    t8, t = tensor_type(x.shape, kind), tensor_type(x.shape, np.float32)
    prog = (f"func.func @main(%x: {t8}) -> ({t}, {t8}) {{\n"
            f"  %0 = kiln.cast %x : {t8} -> {t}\n"
            f"  %1 = kiln.flip %x {{dims = array<i64: 0>}} : {t8} -> {t8}\n"
            f"  return %0, %1 : {t}, {t8}\n}}\n")
    got, flipped = run_kiln(prog, [x])[0]
    want = f8_round(x.astype(np.float64), kind).astype(np.float32)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(flipped, want[::-1])


# f8 matrices multiplied with f32 accumulation, E4M3 and E5M2 also mixed
# (as torch._scaled_mm takes them). On sm_90a the wgmma kernel reads the
# f8 bytes where both decodes run right before the matmul (K a multiple of
# 16: 128 one step, 80 and 1040 partial steps, 264 a partial tile of N,
# batched); elsewhere, and for K 24, the matmul runs on the decoded f32.
@pytest.mark.parametrize("kinds", [("f8E4M3FN", "f8E4M3FN"), ("f8E5M2", "f8E5M2"),
                                   ("f8E4M3FN", "f8E5M2")])
@pytest.mark.parametrize("a_shape,b_shape", [((5, 24), (24, 7)), ((256, 128), (128, 256)),
                                             ((300, 80), (80, 264)), ((130, 1040), (1040, 64)),
                                             ((2, 130, 48), (2, 48, 136))])
def test_f8_matmul(kinds, a_shape, b_shape):
    a, b = rand_f8(a_shape, kinds[0]), rand_f8(b_shape, kinds[1])
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    ta, tb, tr = (tensor_type(x.shape, t) for x, t in ((a, kinds[0]), (b, kinds[1]),
                                                       (want, "f32")))
    prog = (f"func.func @main(%a: {ta}, %b: {tb}) -> {tr} {{\n"
            f"  %r = kiln.matmul %a, %b : ({ta}, {tb}) -> {tr}\n  return %r : {tr}\n}}\n")
    assert_f8_product(run_kiln(prog, [a, b])[0][0], a, b)


def assert_f8_product(got, a, b):
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


# torch's _scaled_mm: the product times per-tensor scales, cast to bf16,
# which the matmul kernel runs before its stores.
@pytest.mark.parametrize("a_shape,b_shape", [((5, 24), (24, 7)), ((300, 80), (80, 264))])
def test_f8_scaled_matmul(a_shape, b_shape):
    kind = "f8E4M3FN"
    a, b = rand_f8(a_shape, kind), rand_f8(b_shape, kind)
    out_shape = (a_shape[0], b_shape[1])
    ta, tb, s = tensor_type(a.shape, kind), tensor_type(b.shape, kind), tensor_type((), np.float32)
    tr, tc = tensor_type(out_shape, np.float32), tensor_type(out_shape, "bf16")
    prog = (f"func.func @main(%a: {ta}, %b: {tb}, %sa: {s}, %sb: {s}) -> {tc} {{\n"
            f"  %r = kiln.matmul %a, %b : ({ta}, {tb}) -> {tr}\n"
            f"  %s = kiln.mul %sa, %sb : ({s}, {s}) -> {s}\n"
            f"  %sr = kiln.broadcast %s : {s} -> {tr}\n"
            f"  %m = kiln.mul %r, %sr : ({tr}, {tr}) -> {tr}\n"
            f"  %c = kiln.cast %m : {tr} -> {tc}\n  return %c : {tc}\n}}\n")
    got = run_kiln(prog, [a, b, np.array(0.75, np.float32), np.array(-1.5, np.float32)])[0][0]
    want = np.matmul(a.astype(np.float64), b.astype(np.float64)) * -1.125
    np.testing.assert_allclose(got, want, rtol=2.0**-8, atol=1e-3)  # bf16's rounding


def matmul_inputs(dtype, a_shape, b_shape):
    """Random A and B of `dtype` (f32, f16, bf16, f8E4M3FN or tf32) as the .npy
    kiln-run reads, and the element type the program declares; tf32 skips
    where the target is not CUDA."""
    if dtype == "tf32" and not ON_CUDA:
        pytest.skip("--tf32 is an option of CUDA targets")
    if dtype == "f8E4M3FN":
        return rand_f8(a_shape, dtype), rand_f8(b_shape, dtype), dtype
    a, b = rand(a_shape, np.float32), rand(b_shape, np.float32)
    a, b = (x.astype(np.float16) if dtype == "f16" else round_to_bf16(x) if dtype == "bf16"
            else x for x in (a, b))
    return a, b, "f32" if dtype == "tf32" else dtype


# x @ W^T (torch's Linear: W stored N x K): on sm_90a the wgmma kernel reads
# W K-major where it stands (the transpose is never written; for tf32 and
# f8 neither is the copy the kernel would otherwise make), batched too, and
# of odd N (an LM head's vocabulary) for 16-bit and tf32 inputs.
@pytest.mark.parametrize("dtype", ["f16", "bf16", "f8E4M3FN", "tf32"])
@pytest.mark.parametrize("a_shape,w_shape", [((300, 80), (264, 80)), ((2, 130, 48), (2, 136, 48)),
                                             ((20, 64), (257, 64))])
def test_matmul_of_transposed_weights(dtype, a_shape, w_shape):
    a, w, element = matmul_inputs(dtype, a_shape, w_shape)
    wt = np.swapaxes(w, -1, -2)
    want = np.matmul(a.astype(np.float64), wt.astype(np.float64))
    ta, tw, twt, tr = (tensor_type(x.shape, e) for x, e in
                       ((a, element), (w, element), (wt, element), (want, "f32")))
    perm = "0, 2, 1" if w.ndim == 3 else "1, 0"
    prog = (f"func.func @main(%a: {ta}, %w: {tw}) -> {tr} {{\n"
            f"  %wt = kiln.transpose %w {{perm = array<i64: {perm}>}} : {tw} -> {twt}\n"
            f"  %r = kiln.matmul %a, %wt : ({ta}, {twt}) -> {tr}\n  return %r : {tr}\n}}\n")
    got = run_kiln(prog, [a, w], extra_args=["--tf32"] if dtype == "tf32" else [])[0][0]
    if dtype == "f8E4M3FN":
        return assert_f8_product(got, a, wt)
    tol = 2.0**-9 * np.matmul(np.abs(a).astype(np.float64), np.abs(wt).astype(np.float64))
    assert np.all(np.abs(got - want) <= (tol if dtype == "tf32" else 1e-5 * np.abs(want) + 1e-4))


# Few output tiles over a long K: on sm_90a the wgmma kernel splits K into
# parts, each a block of its own (so that the GPU fills), and a second
# kernel adds their partial sums in order through the epilogue (bias, gelu
# and, for 16-bit inputs, the cast to bf16): a decode step's M of 16, a K
# whose last step is partial and whose parts differ in length, batches
# (unfused epilogue; one with an A every batch shares), x @ W^T (one of
# odd N: partial sums' rows padded, C's stored one by one), tf32 and f8.
# f32 (no tf32) takes CUDA's SIMT kernel, which splits K the same way: 8
# parts of a K of 4096 on 32x32 tiles (M of 16), 4 of a K of 3000 on 64x64
# tiles (the last part shorter, its last step partial), x @ W^T of odd N
# (4 parts), batches (unsplit: the adding kernel fuses no batched
# epilogue).
# Every target computes the same.
@pytest.mark.parametrize("dtype,a_shape,b_shape,weights", [
    ("bf16", (16, 4096), (4096, 512), False), ("f16", (96, 3000), (3000, 136), False),
    ("bf16", (2, 64, 2048), (2, 2048, 72), False), ("bf16", (16, 2048), (256, 2048), True),
    ("tf32", (64, 2048), (2048, 128), False), ("f8E4M3FN", (32, 4096), (256, 4096), True),
    ("bf16", (16, 2048), (257, 2048), True), ("f16", (64, 2048), (2, 2048, 72), False),
    ("f32", (16, 4096), (4096, 512), False), ("f32", (33, 3000), (3000, 70), False),
    ("f32", (16, 2048), (257, 2048), True), ("f32", (2, 64, 2048), (2, 2048, 72), False)])
def test_matmul_split_k(dtype, a_shape, b_shape, weights):
    a, b, element = matmul_inputs(dtype, a_shape, b_shape)
    bt = np.swapaxes(b, -1, -2) if weights else b
    product = np.matmul(a.astype(np.float64), bt.astype(np.float64))
    bias = rand(product.shape[-1:], np.float32)
    x = product + bias
    want = 0.5 * x * (1 + erf(x / math.sqrt(2)))
    out = "bf16" if dtype in ("bf16", "f16") else "f32"
    ta, tb, tbt, tr, tv, to = (tensor_type(v.shape, e) for v, e in (
        (a, element), (b, element), (bt, element), (product, "f32"), (bias, "f32"),
        (product, out)))
    lines = [f"func.func @main(%a: {ta}, %b: {tb}, %v: {tv}) -> {to} {{"]
    if weights:
        lines.append(f"  %bt = kiln.transpose %b {{perm = array<i64: 1, 0>}} : {tb} -> {tbt}")
    lines += [f"  %r = kiln.matmul %a, {'%bt' if weights else '%b'} : ({ta}, {tbt}) -> {tr}",
              f"  %x = kiln.add %r, %v : ({tr}, {tv}) -> {tr}",
              f"  %g = kiln.gelu %x : {tr}"]
    lines.append(f"  %o = kiln.cast %g : {tr} -> {to}\n  return %o : {to}\n}}" if out != "f32"
                 else f"  return %g : {tr}\n}}")
    got = run_kiln("\n".join(lines) + "\n", [a, b, bias],
                   extra_args=["--tf32"] if dtype == "tf32" else [])[0][0].astype(np.float64)
    # The product's error (f8: exact sums; tf32: 10-bit inputs; else f32
    # sums) through gelu (slope at most 1.13), then bf16's rounding.
    magnitude = np.matmul(np.abs(a).astype(np.float64), np.abs(bt).astype(np.float64))
    error = {"tf32": 2.0**-9, "f8E4M3FN": 1e-7}.get(dtype, 1e-6) * magnitude
    rounding = 2.0**-8 * np.abs(want) if out == "bf16" else 1e-6 * np.abs(want)
    assert np.all(np.abs(got - want) <= 1.2 * error + rounding + 1e-5)
