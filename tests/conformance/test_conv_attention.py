"""conv2d, max_pool2d, avg_pool2d and attention end to end against float64
references written with NumPy (torch.nn.functional semantics)."""
import os

import numpy as np
import pytest

from kiln_harness import attention_ref, round_to_bf16, run_kiln, tensor_type

RNG = np.random.default_rng(77)
# Inputs are exact in their type, so the error is the f32 accumulation and
# the final rounding (bf16: 8 bits; attention also rounds the probabilities).
TOL = {"f32": (1e-4, 1e-4), "f16": (2e-3, 2e-3), "bf16": (1e-2, 1e-2), "f64": (1e-10, 1e-10)}


def rand(shape, dtype, low=-1.0, high=1.0):
    """Random values exactly representable in `dtype` (a kiln type name),
    as the NumPy array kiln-run reads for it."""
    x = RNG.uniform(low, high, shape).astype(np.float32)
    if dtype == "f16":
        return x.astype(np.float16)
    if dtype == "bf16":
        return round_to_bf16(x)  # kiln-run reads f32 .npy into a bf16 input
    return x.astype(np.float64) if dtype == "f64" else x


def run(op_text, inputs, dtypes, result_shape, dtype):
    """One op on `inputs` (arrays, each with its kiln type in `dtypes`)."""
    types = [tensor_type(x.shape, t) for x, t in zip(inputs, dtypes)]
    rt = tensor_type(result_shape, dtype)
    args = ", ".join(f"%a{i}: {t}" for i, t in enumerate(types))
    operands = ", ".join(f"%a{i}" for i in range(len(inputs)))
    sig = f"({', '.join(types)}) -> {rt}" if "pool" not in op_text else f"{types[0]} -> {rt}"
    program = (f"func.func @main({args}) -> {rt} {{\n"
               f"  %r = {op_text.format(operands=operands, sig=sig)}\n"
               f"  return %r : {rt}\n}}\n")
    results, _ = run_kiln(program, inputs)
    return results[0].astype(np.float64)


def check(actual, expected, dtype):
    rtol, atol = TOL[dtype]
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)


def spatial(name, values):
    return f"{name} = array<i64: {values[0]}, {values[1]}>"


def windows(x, kernel, stride, dilation, out):
    """x [..., H, W] -> the window taps: (i, j, view [..., OH, OW])."""
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            h0, w0 = i * dilation[0], j * dilation[1]
            yield i, j, x[..., h0:h0 + stride[0] * (out[0] - 1) + 1:stride[0],
                          w0:w0 + stride[1] * (out[1] - 1) + 1:stride[1]]


def out_size(size, kernel, stride, padding, dilation=1):
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def conv2d_ref(x, w, b, stride, padding, dilation, groups):
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (padding[0],) * 2, (padding[1],) * 2))
    w = w.astype(np.float64)
    n, o, cg = x.shape[0], w.shape[0], w.shape[1]
    og = o // groups
    out = [out_size(x.shape[2 + d] - 2 * padding[d], w.shape[2 + d], stride[d], padding[d],
                    dilation[d]) for d in range(2)]
    y = np.zeros((n, o, *out))
    for g in range(groups):
        xs, ws = x[:, g * cg:(g + 1) * cg], w[g * og:(g + 1) * og]
        for i, j, view in windows(xs, w.shape[2:], stride, dilation, out):
            y[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", view, ws[:, :, i, j])
    if b is not None:
        y += b.astype(np.float64)[None, :, None, None]
    return y


CONV_CASES = [
    # x shape, w shape, stride, padding, dilation, groups, bias
    ((2, 3, 9, 9), (4, 3, 3, 3), (1, 1), (1, 1), (1, 1), 1, True),
    ((1, 4, 10, 7), (6, 2, 3, 2), (2, 1), (1, 0), (1, 1), 2, False),   # grouped, non-square
    ((2, 5, 8, 8), (5, 1, 3, 3), (1, 1), (1, 1), (1, 1), 5, True),     # depthwise
    ((1, 3, 11, 13), (2, 3, 3, 3), (2, 3), (2, 1), (2, 3), 1, True),   # dilation, odd sizes
    ((3, 2, 1, 1), (4, 2, 1, 1), (1, 1), (0, 0), (1, 1), 1, True),     # 1x1 on 1x1
    ((1, 8, 7, 7), (16, 8, 1, 1), (2, 2), (0, 0), (1, 1), 1, False),   # strided 1x1
    ((1, 3, 1, 5), (2, 3, 3, 3), (1, 1), (1, 1), (1, 1), 1, True),     # size-1 height, padded
    # channels in 16-byte runs (gathered 16 bytes at a time on CUDA), the
    # images' 49 pixels side by side in one GEMM: tiles and runs across images
    ((3, 16, 7, 7), (24, 16, 3, 3), (1, 1), (1, 1), (1, 1), 1, True),
    ((2, 32, 14, 14), (136, 32, 3, 3), (2, 2), (1, 1), (1, 1), 1, False),  # strided, M > 128
    # Packed from the image on the CPU (no patches written): K of 288 in
    # two slices, 255 pixels (a part panel), 40 rows; two groups of 16
    # channels, stride 2; dilation 2.
    ((2, 32, 15, 17), (40, 32, 3, 3), (1, 1), (1, 1), (1, 1), 1, True),
    ((1, 32, 9, 9), (8, 16, 3, 3), (2, 2), (1, 1), (1, 1), 2, False),
    ((1, 16, 12, 12), (20, 16, 3, 3), (1, 1), (2, 2), (2, 2), 1, True),
    # Output rows of a vector or more (on the CPU, rows of vectors carried
    # through the taps, read at an offset or a stride): whole vectors and a
    # tail, dilation, strides 2 and 3.
    ((2, 4, 5, 37), (4, 1, 3, 3), (1, 1), (1, 1), (1, 1), 4, True),
    ((1, 3, 9, 40), (3, 1, 5, 5), (1, 1), (2, 4), (1, 2), 3, False),
    ((1, 2, 6, 70), (2, 1, 3, 3), (2, 2), (1, 1), (1, 1), 2, True),
    ((1, 2, 4, 100), (2, 1, 1, 3), (1, 3), (0, 1), (1, 1), 2, False),
]


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16", "f64"])
@pytest.mark.parametrize("case", CONV_CASES, ids=[str(i) for i in range(len(CONV_CASES))])
def test_conv2d(case, dtype):
    xs, ws, stride, padding, dilation, groups, bias = case
    x, w = rand(xs, dtype), rand(ws, dtype)
    inputs, types = [x, w], [dtype, dtype]
    b = None
    if bias:
        b = rand((ws[0],), dtype)
        inputs.append(b)
        types.append(dtype)
    want = conv2d_ref(x, w, b, stride, padding, dilation, groups)
    attrs = ", ".join([spatial("stride", stride), spatial("padding", padding),
                       spatial("dilation", dilation), f"groups = {groups} : i64"])
    got = run(f"kiln.conv2d {{operands}} {{{{{attrs}}}}} : {{sig}}", inputs, types,
              want.shape, dtype)
    check(got, want, dtype)


def pool_ref(x, kernel, stride, padding, is_max):
    fill = -np.inf if is_max else 0.0
    pads = ((0, 0),) * (x.ndim - 2) + ((padding[0],) * 2, (padding[1],) * 2)
    xp = np.pad(x.astype(np.float64), pads, constant_values=fill)
    out = [out_size(x.shape[-2 + d], kernel[d], stride[d], padding[d]) for d in range(2)]
    taps = [view for _, _, view in windows(xp, kernel, stride, (1, 1), out)]
    if is_max:
        return np.max(taps, axis=0)
    return np.sum(taps, axis=0) / (kernel[0] * kernel[1])


POOL_CASES = [
    # x shape, kernel, stride, padding
    ((2, 3, 8, 8), (2, 2), (2, 2), (0, 0)),
    ((1, 2, 9, 7), (3, 3), (2, 2), (1, 1)),   # padding at every edge, odd sizes
    ((2, 5, 6), (3, 2), (1, 2), (1, 1)),      # CHW, non-square
    ((1, 1, 1, 1), (1, 1), (1, 1), (0, 0)),
    ((1, 2, 7, 5), (3, 3), None, (1, 0)),     # stride defaults to the kernel
    # Output rows of a vector or more (see CONV_CASES): strides 2, 4 and 1.
    ((2, 3, 5, 40), (3, 3), (2, 2), (1, 1)),
    ((1, 2, 4, 50), (2, 2), None, (0, 0)),
    ((1, 2, 3, 64), (1, 4), (1, 4), (0, 0)),
    ((1, 2, 4, 33), (3, 3), (1, 1), (1, 1)),
]


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16", "f64"])
@pytest.mark.parametrize("op", ["max_pool2d", "avg_pool2d"])
@pytest.mark.parametrize("case", POOL_CASES, ids=[str(i) for i in range(len(POOL_CASES))])
def test_pool(case, op, dtype):
    shape, kernel, stride, padding = case
    x = rand(shape, dtype)
    if op == "max_pool2d":  # every window of the padded corners has -inf
        x = -np.abs(x) - 1
    want = pool_ref(x, kernel, stride or kernel, padding, op == "max_pool2d")
    attrs = [spatial("kernel", kernel), spatial("padding", padding)]
    if stride:
        attrs.append(spatial("stride", stride))
    got = run(f"kiln.{op} {{operands}} {{{{{', '.join(attrs)}}}}} : {{sig}}", [x], [dtype],
              want.shape, dtype)
    check(got, want, dtype)


ATTENTION_CASES = [
    # q shape, k/v sequence, v head dim, mask, causal, scale
    ((2, 3, 17, 64), 17, 64, None, False, None),
    ((1, 2, 33, 128), 33, 128, None, True, None),     # causal, head dim 128
    ((2, 9, 64), 13, 32, "additive", False, 0.2),     # Lq != Lk, Ev != E
    ((1, 4, 7, 64), 7, 64, "bool", True, None),
    ((5, 16), 1, 16, None, False, None),              # one key
    # Several query blocks and key tiles of the fused kernels, odd tails,
    # causal with Lq != Lk (top-left aligned) both ways.
    ((1, 2, 150, 64), 200, 64, None, True, None),
    ((2, 200, 128), 77, 128, "additive", True, None),
    ((1, 1, 130, 128), 130, 64, "bool", False, None),
    # Decode steps (fewer rows than the CPU's blocks): spans of keys with a
    # tail, V head dims of 8, 4 and 3 vectors.
    ((2, 4, 1, 64), 1000, 64, "additive", False, None),
    ((1, 3, 3, 32), 300, 128, "bool", False, None),
    ((1, 2, 1, 48), 70, 48, None, True, 0.3),
]


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16", "f64"])
@pytest.mark.parametrize("case", ATTENTION_CASES,
                         ids=[str(i) for i in range(len(ATTENTION_CASES))])
def test_attention(case, dtype):
    qs, lk, ev, mask_kind, causal, scale = case
    batch, lq, e = qs[:-2], qs[-2], qs[-1]
    q, k, v = rand(qs, dtype), rand((*batch, lk, e), dtype), rand((*batch, lk, ev), dtype)
    inputs, types = [q, k, v], [dtype] * 3
    mask = None
    if mask_kind == "additive":
        mask = rand((lq, lk), dtype, -3.0, 0.0)
        inputs.append(mask)
        types.append(dtype)
    elif mask_kind == "bool":
        mask = RNG.integers(0, 2, (lq, lk)).astype(bool)
        mask[:, 0] = True  # no row without a key
        inputs.append(mask)
        types.append("i1")
    want = attention_ref(q, k, v, mask, causal, scale)
    attrs = [f"causal = {'true' if causal else 'false'}"]
    if scale is not None:
        attrs.append(f"scale = {scale} : f64")
    got = run(f"kiln.attention {{operands}} {{{{{', '.join(attrs)}}}}} : {{sig}}", inputs,
              types, want.shape, dtype)
    check(got, want, dtype)


def test_resnet_block():
    """conv + bias + relu + max_pool, and an avg_pool head, as one program."""
    x, w, b = rand((2, 3, 12, 12), "f32"), rand((8, 3, 3, 3), "f32"), rand((8,), "f32")
    y = np.maximum(conv2d_ref(x, w, b, (1, 1), (1, 1), (1, 1), 1), 0)
    want = pool_ref(pool_ref(y, (3, 3), (2, 2), (1, 1), True), (6, 6), (6, 6), (0, 0), False)
    tx, tw, tb = (tensor_type(t.shape, "f32") for t in (x, w, b))
    program = f"""func.func @main(%x: {tx}, %w: {tw}, %b: {tb}) -> tensor<2x8x1x1xf32> {{
  %c = kiln.conv2d %x, %w, %b {{padding = array<i64: 1, 1>}} : ({tx}, {tw}, {tb}) -> tensor<2x8x12x12xf32>
  %r = kiln.relu %c : tensor<2x8x12x12xf32>
  %p = kiln.max_pool2d %r {{kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>}} : tensor<2x8x12x12xf32> -> tensor<2x8x6x6xf32>
  %a = kiln.avg_pool2d %p {{kernel = array<i64: 6, 6>}} : tensor<2x8x6x6xf32> -> tensor<2x8x1x1xf32>
  return %a : tensor<2x8x1x1xf32>
}}
"""
    results, _ = run_kiln(program, [x, w, b])
    check(results[0].astype(np.float64), want, "f32")


@pytest.mark.parametrize("x_shape,w_shape", [((0, 3, 8, 8), (4, 3, 3, 3)),
                                             ((2, 3, 8, 8), (0, 3, 3, 3)),
                                             ((2, 0, 8, 8), (4, 0, 3, 3))])
def test_empty_convs_and_pools(x_shape, w_shape):
    """A batch of 0, no output or no input channels (the padded copies once
    failed kernel formation on an empty dim): results of the right shape,
    the bias alone where no channel comes in."""
    x, w = rand(x_shape, "f32"), rand(w_shape, "f32")
    n, o = x_shape[0], w_shape[0]
    b = rand((o,), "f32")
    tx, tw, tb = (tensor_type(t.shape, "f32") for t in (x, w, b))
    tc, tp = tensor_type((n, o, 8, 8), "f32"), tensor_type((n, o, 4, 4), "f32")
    program = f"""func.func @main(%x: {tx}, %w: {tw}, %b: {tb}) -> ({tc}, {tp}) {{
  %c = kiln.conv2d %x, %w, %b {{padding = array<i64: 1, 1>}} : ({tx}, {tw}, {tb}) -> {tc}
  %p = kiln.max_pool2d %c {{kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>}} : {tc} -> {tp}
  return %c, %p : {tc}, {tp}
}}
"""
    results, _ = run_kiln(program, [x, w, b])
    want = conv2d_ref(x, w, b, (1, 1), (1, 1), (1, 1), 1)
    check(results[0].astype(np.float64), want, "f32")
    check(results[1].astype(np.float64), pool_ref(want, (3, 3), (2, 2), (1, 1), True), "f32")


def test_transformer_attention_layer():
    """A causal self-attention layer in f16, as one program: Q, K and V
    projections, split into 2 heads of 64, attention (CUDA's fused tensor-core
    kernel), heads merged, output projection. The reference rounds where
    kiln does (each op's f16 result)."""
    batch, seq, width, heads = 2, 80, 128, 2
    depth = width // heads
    x = rand((batch, seq, width), "f16")
    ws = [(rand((width, width), "f16") / 8).astype(np.float16) for _ in range(4)]
    f16 = lambda t: t.astype(np.float16).astype(np.float64)  # noqa: E731

    def split(t):  # [B, L, D] -> [B, H, L, E]
        return t.reshape(batch, seq, heads, depth).transpose(0, 2, 1, 3)

    q, k, v = (split(f16(x.astype(np.float64) @ w.astype(np.float64))) for w in ws[:3])
    att = f16(attention_ref(q, k, v, causal=True))
    merged = att.transpose(0, 2, 1, 3).reshape(batch, seq, width)
    want = f16(merged @ ws[3].astype(np.float64))

    tx, tw = tensor_type(x.shape, "f16"), tensor_type((width, width), "f16")
    tf = tensor_type((batch, seq, heads, depth), "f16")
    th = tensor_type((batch, heads, seq, depth), "f16")
    lines = [f"func.func @main(%x: {tx}, %wq: {tw}, %wk: {tw}, %wv: {tw}, %wo: {tw}) -> {tx} {{"]
    for name in "qkv":
        lines += [f"  %{name}p = kiln.matmul %x, %w{name} : ({tx}, {tw}) -> {tx}",
                  f"  %{name}s = kiln.reshape %{name}p : {tx} -> {tf}",
                  f"  %{name} = kiln.transpose %{name}s {{perm = array<i64: 0, 2, 1, 3>}} : {tf} -> {th}"]
    lines += [f"  %a = kiln.attention %q, %k, %v {{causal = true}} : ({th}, {th}, {th}) -> {th}",
              f"  %at = kiln.transpose %a {{perm = array<i64: 0, 2, 1, 3>}} : {th} -> {tf}",
              f"  %am = kiln.reshape %at : {tf} -> {tx}",
              f"  %o = kiln.matmul %am, %wo : ({tx}, {tw}) -> {tx}",
              f"  return %o : {tx}", "}"]
    results, _ = run_kiln("\n".join(lines) + "\n", [x, *ws])
    # Four roundings to f16 on the way (the reference's may land a unit apart).
    np.testing.assert_allclose(results[0].astype(np.float64), want, rtol=1e-2, atol=1e-2)


@pytest.mark.skipif(os.environ.get("KILN_DEVICE") == "vulkan"
                    and not os.environ.get("KILN_LONG_TESTS"),
                    reason="4096 x 4096 scores take minutes on lavapipe; "
                           "KILN_LONG_TESTS=1 runs it on a real Vulkan device")
def test_attention_long_sequence_sampled():
    """Sequence 4096 in f16, compared in float64 on a sample of query rows."""
    lq = lk = 4096
    q, k, v = (rand((1, 1, lq, 64), "f16") for _ in range(3))
    tq = tensor_type(q.shape, "f16")
    program = f"""func.func @main(%q: {tq}, %k: {tq}, %v: {tq}) -> {tq} {{
  %r = kiln.attention %q, %k, %v {{causal = true}} : ({tq}, {tq}, {tq}) -> {tq}
  return %r : {tq}
}}
"""
    results, _ = run_kiln(program, [q, k, v])
    rows = RNG.choice(lq, 32, replace=False)
    full = np.zeros((1, 1, len(rows), 64))
    for n, row in enumerate(rows):  # causal: row i sees keys 0..i
        full[..., n, :] = attention_ref(q[..., row:row + 1, :], k[..., :row + 1, :],
                                        v[..., :row + 1, :])[..., 0, :]
    check(results[0][..., rows, :].astype(np.float64), full, "f16")
