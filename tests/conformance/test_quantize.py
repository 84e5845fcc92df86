"""kiln.quantize / kiln.dequantize against NumPy: symmetric int8, per tensor
and per block, f32/f16/bf16 scales, and a matmul on dequantized values."""
import numpy as np
import pytest

from kiln_harness import round_to_bf16, run_kiln, tensor_type


def as_scale_type(s, scale_type):
    s = np.asarray(s, np.float32)
    if scale_type == "f16":
        return s.astype(np.float16)
    if scale_type == "bf16":
        return round_to_bf16(s)  # kiln-run reads f32 .npy into a bf16 input
    return s


def effective(s, scale_type):
    """The scale's value once stored in its type, as f32."""
    s = np.asarray(s, np.float32)
    return np.float16(s).astype(np.float32) if scale_type == "f16" else (
        round_to_bf16(s) if scale_type == "bf16" else s)


def quantize_ref(x, s):
    q = np.rint(x.astype(np.float32) / s.astype(np.float32))
    q = np.clip(q, -127, 127)
    return np.where(np.isnan(q), 0, q).astype(np.int8)


def block_scales(scale, block):
    return np.repeat(scale, block, axis=-1)


def program(op, in_t, scale_t, out_t, block):
    attr = f" {{block_size = {block}}}" if block else ""
    return (f"func.func @main(%a: {in_t}, %s: {scale_t}) -> {out_t} {{\n"
            f"  %r = kiln.{op} %a, %s{attr} : ({in_t}, {scale_t}) -> {out_t}\n"
            f"  return %r : {out_t}\n}}\n")


@pytest.mark.parametrize("scale_type", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("block", [None, 16])
def test_quantize_and_dequantize(scale_type, block):
    rng = np.random.default_rng(7)
    x = rng.uniform(-3, 3, (4, 64)).astype(np.float32)
    x[0, :4] = [np.nan, 1e6, -1e6, 0.0]  # NaN -> 0, saturation both ways
    scale = rng.uniform(0.01, 0.05, (4, 64 // block) if block else ()).astype(np.float32)
    s_in = as_scale_type(scale, scale_type)
    s_eff = effective(scale, scale_type)
    s_full = block_scales(s_eff, block) if block else s_eff
    scale_t = tensor_type(np.shape(scale), scale_type)
    q_want = quantize_ref(x, np.broadcast_to(s_full, x.shape))
    (q,), _ = run_kiln(program("quantize", tensor_type(x.shape, np.float32), scale_t,
                               tensor_type(x.shape, "i8"), block), [x, np.asarray(s_in)])
    np.testing.assert_array_equal(q, q_want)
    assert q[0, 0] == 0 and q[0, 1] == 127 and q[0, 2] == -127
    (back,), _ = run_kiln(program("dequantize", tensor_type(x.shape, "i8"), scale_t,
                                  tensor_type(x.shape, np.float32), block),
                          [q_want, np.asarray(s_in)])
    want = q_want.astype(np.float32) * np.broadcast_to(s_full, x.shape).astype(np.float32)
    np.testing.assert_array_equal(back, want)


def test_matmul_on_dequantized_weights():
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (5, 32)).astype(np.float32)
    q = rng.integers(-127, 128, (32, 24), dtype=np.int8)
    scale = rng.uniform(0.001, 0.01, (32, 3)).astype(np.float32)
    prog = ("func.func @main(%x: tensor<5x32xf32>, %q: tensor<32x24xi8>, "
            "%s: tensor<32x3xf32>) -> tensor<5x24xf32> {\n"
            "  %w = kiln.dequantize %q, %s {block_size = 8} : "
            "(tensor<32x24xi8>, tensor<32x3xf32>) -> tensor<32x24xf32>\n"
            "  %y = kiln.matmul %x, %w : (tensor<5x32xf32>, tensor<32x24xf32>) -> tensor<5x24xf32>\n"
            "  return %y : tensor<5x24xf32>\n}\n")
    (y,), _ = run_kiln(prog, [x, q, scale])
    w = q.astype(np.float64) * np.repeat(scale, 8, axis=1)
    np.testing.assert_allclose(y, x.astype(np.float64) @ w, rtol=1e-5, atol=1e-6)
