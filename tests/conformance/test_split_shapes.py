"""Reductions, scans and row-wise ops over every dim of shapes that the CPU
thread split and the vector/thread widths can break: ranks 2-4, the
reduced dim first, in the middle or last, inner sizes that are and are not
multiples of the vector width (4, 8) and large enough to be split across
threads (257 x 4 > 1024 iterations), against float64 NumPy."""
import numpy as np
import pytest

from kiln_harness import run_kiln, tensor_type

SHAPES = [(2, 2, 4, 257), (2, 2, 4, 256), (3, 1000), (1000, 3), (2, 3, 1000),
          (5, 1, 3), (7, 1), (1, 7), (4, 257, 3), (2, 1, 3, 1000)]


def softmax(x, dim):
    e = np.exp(x - x.max(dim, keepdims=True))
    return e / e.sum(dim, keepdims=True)


def program(shape, dim):
    """@main(x, weight, bias) returning reduce_sum, reduce_max, argmax,
    cumsum, softmax and log_softmax over `dim`, and layer_norm (last dim)."""
    t = tensor_type(shape, np.float32)
    red = tuple(s for d, s in enumerate(shape) if d != dim)
    rt, it = tensor_type(red, np.float32), tensor_type(red, np.int64)
    wt = tensor_type(shape[-1:], np.float32)
    ops = [
        (f"kiln.reduce_sum %x {{dims = array<i64: {dim}>}} : {t} -> {rt}", rt),
        (f"kiln.reduce_max %x {{dims = array<i64: {dim}>}} : {t} -> {rt}", rt),
        (f"kiln.argmax %x {{dim = {dim}}} : {t} -> {it}", it),
        (f"kiln.cumsum %x {{dim = {dim}}} : {t}", t),
        (f"kiln.softmax %x {{dim = {dim}}} : {t}", t),
        (f"kiln.log_softmax %x {{dim = {dim}}} : {t}", t),
        (f"kiln.layer_norm %x, %w, %b {{eps = 1.0e-5 : f64}} : ({t}, {wt}, {wt}) -> {t}", t),
    ]
    body = "".join(f"  %r{i} = {text}\n" for i, (text, _) in enumerate(ops))
    results = ", ".join(f"%r{i}" for i in range(len(ops)))
    types = ", ".join(rtype for _, rtype in ops)
    return (f"func.func @main(%x: {t}, %w: {wt}, %b: {wt}) -> ({types}) {{\n{body}"
            f"  return {results} : {types}\n}}\n")


@pytest.mark.parametrize("shape,dim", [(s, d) for s in SHAPES for d in range(len(s))],
                         ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else str(v))
def test_reductions_and_rows(shape, dim):
    rng = np.random.default_rng(sum(shape) * 10 + dim)
    # Distinct values, so that argmax has one answer (divided before the cast:
    # NumPy 2 makes float32 / an int64 scalar float64).
    n = int(np.prod(shape))
    x = (rng.permutation(n).reshape(shape) / n).astype(np.float32)
    w = rng.uniform(0.5, 1.5, shape[-1:]).astype(np.float32)
    b = rng.uniform(-1, 1, shape[-1:]).astype(np.float32)
    results, _ = run_kiln(program(shape, dim), [x, w, b])
    xd = x.astype(np.float64)
    mean, var = xd.mean(-1, keepdims=True), xd.var(-1, keepdims=True)
    want = [xd.sum(dim), xd.max(dim), np.argmax(x, dim), np.cumsum(xd, dim),
            softmax(xd, dim), np.log(softmax(xd, dim)),
            (xd - mean) / np.sqrt(var + 1e-5) * w + b]
    names = ["reduce_sum", "reduce_max", "argmax", "cumsum", "softmax", "log_softmax",
             "layer_norm"]
    assert len(results) == len(want)
    for name, got, ref in zip(names, results, want):
        assert got.shape == ref.shape, (name, got.shape, ref.shape)
        if name == "argmax":
            np.testing.assert_array_equal(got, ref, err_msg=name)
        else:
            # Sums of up to 1000 values of [0, 1) in f32.
            np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5, err_msg=name)


def test_nested_split_does_not_hang():
    # A sum over dim 1 is a split loop over dim 0 around one over dim 2;
    # splitting both (more blocks of dim 0 than a small machine's pool
    # threads, each waiting for its own blocks of dim 2) hung.
    x = np.ones((3072, 2, 1025), np.float32)
    t, rt = tensor_type(x.shape, np.float32), tensor_type((3072, 1025), np.float32)
    results, _ = run_kiln(f"func.func @main(%x: {t}) -> {rt} {{\n"
                          f"  %r = kiln.reduce_sum %x {{dims = array<i64: 1>}} : {t} -> {rt}\n"
                          f"  return %r : {rt}\n}}\n", [x])
    np.testing.assert_array_equal(results[0], np.full((3072, 1025), 2, np.float32))
