"""Programs with `?` dims (docs/dynamic-shapes.md): one program runs at many
sizes (0, 1, primes, multiples of 16) against float64 NumPy; inputs that do
not fit the program's shape class are invalid_argument errors naming the
dims; ops outside the slice are unsupported errors naming the op. Every
target (KILN_DEVICE=cpu, vulkan, cuda) runs the same tests."""
import os

import numpy as np
import pytest

from kiln_harness import KILN_RUN, MLIR_TYPES, attention_ref, round_to_bf16, run_kiln

ROWS = [0, 1, 7, 16, 31, 64]
COLS = [1, 13, 16, 257]


def softmax(x, dim):
    if x.shape[dim] == 0:
        return x.copy()
    e = np.exp(x - x.max(dim, keepdims=True))
    return e / e.sum(dim, keepdims=True)


def layer_norm(x, w, b):
    if x.shape[-1] == 0:
        return x.copy()
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5) * w + b


ELEMENTWISE = """
func.func @main(%x: tensor<?x?xf32>, %b: tensor<?xf32>, %c: tensor<?x1xf32>)
    -> (tensor<?x?xf32>, tensor<?x?xf32>) {
  %a = kiln.add %x, %b : (tensor<?x?xf32>, tensor<?xf32>) -> tensor<?x?xf32>
  %m = kiln.mul %a, %c : (tensor<?x?xf32>, tensor<?x1xf32>) -> tensor<?x?xf32>
  %e = kiln.exp %m : tensor<?x?xf32>
  %t = kiln.transpose %e {perm = array<i64: 1, 0>} : tensor<?x?xf32> -> tensor<?x?xf32>
  return %m, %t : tensor<?x?xf32>, tensor<?x?xf32>
}
"""


@pytest.mark.parametrize("rows,cols", [(r, c) for r in ROWS for c in COLS[:2]] + [(5, 16)])
def test_elementwise_broadcasting_and_transpose(rows, cols):
    rng = np.random.default_rng(rows * 100 + cols)
    x = rng.uniform(-1, 1, (rows, cols)).astype(np.float32)
    b = rng.uniform(-1, 1, (cols,)).astype(np.float32)
    c = rng.uniform(-1, 1, (rows, 1)).astype(np.float32)
    (m, t), _ = run_kiln(ELEMENTWISE, [x, b, c])
    want = (x.astype(np.float64) + b) * c
    assert m.shape == (rows, cols) and t.shape == (cols, rows)
    np.testing.assert_allclose(m, want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(t, np.exp(want).T, rtol=1e-5, atol=1e-6)


ROWS_PROGRAM = """
func.func @main(%x: tensor<?x?xf32>, %w: tensor<?xf32>, %b: tensor<?xf32>)
    -> (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xf32>, tensor<?x1xf32>,
        tensor<?xf32>, tensor<f32>) {
  %s = kiln.softmax %x {dim = 1} : tensor<?x?xf32>
  %l = kiln.log_softmax %x {dim = 0} : tensor<?x?xf32>
  %n = kiln.layer_norm %x, %w, %b : (tensor<?x?xf32>, tensor<?xf32>, tensor<?xf32>) -> tensor<?x?xf32>
  %sum = kiln.reduce_sum %x {dims = array<i64: 1>} : tensor<?x?xf32> -> tensor<?xf32>
  %mean = kiln.reduce_mean %x {dims = array<i64: 1>, keep_dims = true} : tensor<?x?xf32> -> tensor<?x1xf32>
  %max = kiln.reduce_max %x {dims = array<i64: 0>} : tensor<?x?xf32> -> tensor<?xf32>
  %all = kiln.reduce_sum %x {dims = array<i64: 0, 1>} : tensor<?x?xf32> -> tensor<f32>
  return %s, %l, %n, %sum, %mean, %max, %all : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>,
      tensor<?xf32>, tensor<?x1xf32>, tensor<?xf32>, tensor<f32>
}
"""


# 8192, 8193, 20000 columns: GPU row kernels of run-time length keep a
# row's first 256 x 32 elements in registers and loop over the rest (none,
# one, most). On CUDA the length picks a variant at run time: 8192 and
# 20000 unmasked vectors, 16 and 4096 masked vectors (0 columns too), the
# others scalar.
@pytest.mark.parametrize("rows,cols", [(r, c) for r in ROWS[1:] for c in COLS] +
                         [(0, 16), (3, 0), (3, 4096), (3, 8192), (3, 8193), (2, 20000)])
def test_rows_norms_and_reductions(rows, cols):
    rng = np.random.default_rng(rows * 1000 + cols)
    x = rng.uniform(-2, 2, (rows, cols)).astype(np.float32)
    w = rng.uniform(0.5, 1.5, (cols,)).astype(np.float32)
    b = rng.uniform(-1, 1, (cols,)).astype(np.float32)
    results, _ = run_kiln(ROWS_PROGRAM, [x, w, b])
    xd = x.astype(np.float64)
    want = [softmax(xd, 1), np.log(softmax(xd, 0)) if rows else xd, layer_norm(xd, w, b),
            xd.sum(1), xd.mean(1, keepdims=True) if cols else np.full((rows, 1), np.nan),
            xd.max(0) if rows else np.full((cols,), -np.inf), xd.sum()]
    names = ["softmax", "log_softmax", "layer_norm", "reduce_sum", "reduce_mean",
             "reduce_max", "reduce_sum all"]
    for name, got, ref in zip(names, results, want):
        assert got.shape == np.shape(ref), name
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5, err_msg=name)


SCANS_FLIPS_ARGS = """
func.func @main(%x: tensor<?x?xf32>, %y: tensor<?x300xf32>, %i: tensor<?x?xi32>,
                %h: tensor<?x?xi16>)
    -> (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xi64>, tensor<?x1xi64>,
        tensor<?x?xi32>, tensor<?x?xi16>) {
  %rows = kiln.cumsum %x {dim = 1} : tensor<?x?xf32>
  %cols = kiln.cumsum %x {dim = 0} : tensor<?x?xf32>
  %f = kiln.flip %x {dims = array<i64: 0, 1>} : tensor<?x?xf32> -> tensor<?x?xf32>
  %amax = kiln.argmax %y {dim = 1} : tensor<?x300xf32> -> tensor<?xi64>
  %amin = kiln.argmin %y {dim = 1, keep_dims = true} : tensor<?x300xf32> -> tensor<?x1xi64>
  %ci = kiln.cumsum %i {dim = 1} : tensor<?x?xi32>
  %ch = kiln.cumsum %h {dim = 1} : tensor<?x?xi16>
  return %rows, %cols, %f, %amax, %amin, %ci, %ch : tensor<?x?xf32>, tensor<?x?xf32>,
      tensor<?x?xf32>, tensor<?xi64>, tensor<?x1xi64>, tensor<?x?xi32>, tensor<?x?xi16>
}
"""


# Scans of run-time length on the GPUs: rows of at most 32 take a thread
# each, longer ones the blocked scan (2048 a chunk: 2049 is two, 70000
# many, and longer than a lavapipe thread may loop); argmax/argmin over a
# static dim of `?` rows take a block per row. 16-bit sums stay one
# thread per row at every length (no blocked form for them), so their rows
# stay under lavapipe's 65535 loop iterations a thread (docs/vulkan.md).
@pytest.mark.parametrize("rows,cols", [(0, 5), (3, 0), (1, 1), (7, 32), (5, 33), (16, 2048),
                                       (3, 2049), (2, 70000), (1000, 13)])
def test_scans_flips_and_arg_reductions(rows, cols):
    rng = np.random.default_rng(rows * 100003 + cols)
    x = rng.uniform(-1, 1, (rows, cols)).astype(np.float32)
    y = rng.uniform(-1, 1, (rows, 300)).astype(np.float32)
    i = rng.integers(-1000, 1000, (rows, cols)).astype(np.int32)
    h = rng.integers(-3, 4, (rows, min(cols, 4096))).astype(np.int16)
    results, _ = run_kiln(SCANS_FLIPS_ARGS, [x, y, i, h])
    xd = x.astype(np.float64)
    want = [np.cumsum(xd, 1), np.cumsum(xd, 0), x[::-1, ::-1], np.argmax(y, 1),
            np.argmin(y, 1)[:, None], np.cumsum(i, 1, dtype=np.int32),
            np.cumsum(h, 1, dtype=np.int16)]
    names = ["cumsum dim 1", "cumsum dim 0", "flip", "argmax", "argmin", "cumsum i32",
             "cumsum i16"]
    for name, got, ref in zip(names, results, want):
        assert got.shape == ref.shape, name
        if name.startswith("cumsum") and ref.dtype == np.float64:
            np.testing.assert_allclose(got, ref, rtol=1e-4, atol=2e-3, err_msg=name)
        else:
            np.testing.assert_array_equal(got, ref, err_msg=name)


FULL_REDUCTIONS = """
func.func @main(%x: tensor<?xf32>, %y: tensor<3x?xf32>, %i: tensor<?xi32>)
    -> (tensor<f32>, tensor<3xf32>, tensor<f32>, tensor<i32>, tensor<3xf32>) {
  %a = kiln.reduce_sum %x {dims = array<i64: 0>} : tensor<?xf32> -> tensor<f32>
  %b = kiln.reduce_max %y {dims = array<i64: 1>} : tensor<3x?xf32> -> tensor<3xf32>
  %c = kiln.reduce_mean %x {dims = array<i64: 0>} : tensor<?xf32> -> tensor<f32>
  %d = kiln.reduce_sum %i {dims = array<i64: 0>} : tensor<?xi32> -> tensor<i32>
  %e = kiln.reduce_sum %y {dims = array<i64: 1>} : tensor<3x?xf32> -> tensor<3xf32>
  return %a, %b, %c, %d, %e : tensor<f32>, tensor<3xf32>, tensor<f32>, tensor<i32>, tensor<3xf32>
}
"""


# Few rows of run-time length split across blocks on the GPUs (slices of
# whole 1024s, at least 16384 long; the last ones short or empty).
@pytest.mark.parametrize("n", [0, 1, 1000, 32773, 100003, 2**21 + 7])
def test_full_reductions_of_run_time_length(n):
    rng = np.random.default_rng(n)
    x = rng.uniform(-1, 1, (n,)).astype(np.float32)
    y = rng.uniform(-1, 1, (3, n)).astype(np.float32)
    i = rng.integers(-100, 100, (n,)).astype(np.int32)
    results, _ = run_kiln(FULL_REDUCTIONS, [x, y, i])
    xd, yd = x.astype(np.float64), y.astype(np.float64)
    want = [xd.sum(), yd.max(1) if n else np.full(3, -np.inf), xd.mean() if n else np.nan,
            i.sum(), yd.sum(1)]
    for name, got, ref in zip(["sum", "max", "mean", "i32 sum", "row sums"], results, want):
        assert got.shape == np.shape(ref), name
        # f32 sums of n elements: the CPU adds in few long runs
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-3 + 1e-8 * n, err_msg=name)


ARGS_OF_LONG_ROWS = """
func.func @main(%x: tensor<?x40000xf32>) -> (tensor<?xi64>, tensor<?xi64>) {
  %a = kiln.argmax %x {dim = 1} : tensor<?x40000xf32> -> tensor<?xi64>
  %b = kiln.argmin %x {dim = 1} : tensor<?x40000xf32> -> tensor<?xi64>
  return %a, %b : tensor<?xi64>, tensor<?xi64>
}
"""


# Long rows of run-time count are sliced across blocks as the run's count
# asks (2 slices a row for these), then combined; a NaN wins, the first of
# equals too.
@pytest.mark.parametrize("rows", [0, 1, 8, 130])
def test_arg_reductions_of_run_time_row_counts(rows):
    rng = np.random.default_rng(rows)
    x = rng.uniform(-1, 1, (rows, 40000)).astype(np.float32)
    if rows > 2:
        x[1, 30000] = x[1, 35000] = 5  # two maxima in the second slice
        x[2, 39999] = np.nan
    results, _ = run_kiln(ARGS_OF_LONG_ROWS, [x])
    nan = np.isnan(x).any(1)
    want = [np.where(nan, np.isnan(x).argmax(1), np.nanargmax(x, 1) if rows else []),
            np.where(nan, np.isnan(x).argmax(1), np.nanargmin(x, 1) if rows else [])]
    for name, got, ref in zip(["argmax", "argmin"], results, want):
        np.testing.assert_array_equal(got, np.asarray(ref, np.int64), err_msg=name)


POOLS_PADS_CONCATS = """
func.func @main(%x: tensor<?x3x9x9xf32>, %v: tensor<?x5xf32>, %w: tensor<?x2xf32>,
                %r: tensor<?x1xf32>)
    -> (tensor<?x3x4x4xf32>, tensor<?x3x5x5xf32>, tensor<?x9xf32>, tensor<?x7xf32>,
        tensor<2x?x6xf32>) {
  %a = kiln.max_pool2d %x {kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>}
      : tensor<?x3x9x9xf32> -> tensor<?x3x4x4xf32>
  %b = kiln.avg_pool2d %x {kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>,
      padding = array<i64: 1, 1>} : tensor<?x3x9x9xf32> -> tensor<?x3x5x5xf32>
  %c = kiln.pad %v {low = array<i64: 0, 1>, high = array<i64: 0, 3>, value = 2.0}
      : tensor<?x5xf32> -> tensor<?x9xf32>
  %d = kiln.concat %v, %w {dim = 1} : (tensor<?x5xf32>, tensor<?x2xf32>) -> tensor<?x7xf32>
  %e = kiln.broadcast %r : tensor<?x1xf32> -> tensor<2x?x6xf32>
  return %a, %b, %c, %d, %e : tensor<?x3x4x4xf32>, tensor<?x3x5x5xf32>, tensor<?x9xf32>,
      tensor<?x7xf32>, tensor<2x?x6xf32>
}
"""


def pool2d(x, k, s, p, combine, fill):
    """max/avg pooling of float64 NCHW `x` (k x k windows, stride s, padding p)."""
    x = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)), constant_values=fill)
    oh, ow = (x.shape[2] - k) // s + 1, (x.shape[3] - k) // s + 1
    windows = np.stack([x[:, :, i:i + s * oh:s, j:j + s * ow:s]
                        for i in range(k) for j in range(k)])
    return combine(windows, 0)


# Pools over `?` images, pads and concats along static dims of `?` rows,
# broadcasts keeping a `?` dim.
@pytest.mark.parametrize("n", [0, 1, 5])
def test_pools_pads_concats_and_broadcasts(n):
    rng = np.random.default_rng(n)
    x = rng.uniform(-1, 1, (n, 3, 9, 9)).astype(np.float32)
    v = rng.uniform(-1, 1, (n, 5)).astype(np.float32)
    w = rng.uniform(-1, 1, (n, 2)).astype(np.float32)
    r = rng.uniform(-1, 1, (n, 1)).astype(np.float32)
    results, _ = run_kiln(POOLS_PADS_CONCATS, [x, v, w, r])
    xd = x.astype(np.float64)
    want = [pool2d(xd, 3, 2, 0, np.max, -np.inf), pool2d(xd, 3, 2, 1, np.mean, 0.0),
            np.pad(v, ((0, 0), (1, 3)), constant_values=2.0), np.concatenate([v, w], 1),
            np.broadcast_to(r, (2, n, 6))]
    for name, got, ref in zip(["max_pool2d", "avg_pool2d", "pad", "concat", "broadcast"],
                              results, want):
        assert got.shape == ref.shape, name
        np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-7, err_msg=name)


CONCAT_BESIDE_STATIC = """
func.func @main(%x: tensor<?x4xf32>, %y: tensor<6x3xf32>) -> (tensor<6x7xf32>, tensor<6x7xf32>) {
  %a = kiln.concat %x, %y {dim = 1} : (tensor<?x4xf32>, tensor<6x3xf32>) -> tensor<6x7xf32>
  %b = kiln.concat %y, %x {dim = 1} : (tensor<6x3xf32>, tensor<?x4xf32>) -> tensor<6x7xf32>
  return %a, %b : tensor<6x7xf32>, tensor<6x7xf32>
}
"""


# A `?` dim beside a static one off the concatenated dim is that size (the
# verifier refused it with "expected -9223372036854775808"); other rows
# are a named error.
def test_concat_of_a_run_time_dim_beside_a_static_one():
    rng = np.random.default_rng(6)
    x = rng.uniform(-1, 1, (6, 4)).astype(np.float32)
    y = rng.uniform(-1, 1, (6, 3)).astype(np.float32)
    (a, b), _ = run_kiln(CONCAT_BESIDE_STATIC, [x, y])
    np.testing.assert_array_equal(a, np.concatenate([x, y], 1))
    np.testing.assert_array_equal(b, np.concatenate([y, x], 1))
    _, proc = run_kiln(CONCAT_BESIDE_STATIC, [x[:5], y], check=False)
    assert proc.returncode == 2 and "invalid_argument" in proc.stderr, proc.stderr
    assert "input #0" in proc.stderr, proc.stderr


RETURNED_TWICE_AND_SLICED = """
func.func @main(%x: tensor<?x6xf64>, %w: tensor<4xf64>)
    -> (tensor<?x6xf64>, tensor<?x6xf64>, tensor<5x4xf64>) {
  %m = kiln.mul %x, %x : (tensor<?x6xf64>, tensor<?x6xf64>) -> tensor<?x6xf64>
  %s = kiln.slice %x {start = array<i64: 2, 1>, stop = array<i64: 7, 5>, step = array<i64: 1, 1>}
      : tensor<?x6xf64> -> tensor<5x4xf64>
  %n = kiln.rms_norm %s, %w {eps = 1.0e-5 : f64} : (tensor<5x4xf64>, tensor<4xf64>) -> tensor<5x4xf64>
  return %m, %m, %n : tensor<?x6xf64>, tensor<?x6xf64>, tensor<5x4xf64>
}
"""


# Found by the differential test's `?` programs: a value of `?` rows
# returned twice (its copy had no run-time size: invalid IR on every
# target), and a row kernel reading a slice of a `?` buffer in vectors
# (Vulkan: a pointer bitcast into a runtime array, which spirv-val refuses).
def test_a_run_time_value_returned_twice_and_a_slice_of_one_in_rows():
    rng = np.random.default_rng(9)
    x = rng.uniform(-1, 1, (9, 6))
    w = rng.uniform(-1, 1, (4,))
    (m1, m2, n), _ = run_kiln(RETURNED_TWICE_AND_SLICED, [x, w])
    np.testing.assert_array_equal(m1, x * x)
    np.testing.assert_array_equal(m2, x * x)
    s = x[2:7, 1:5]
    np.testing.assert_allclose(n, s / np.sqrt((s * s).mean(-1, keepdims=True) + 1e-5) * w,
                               rtol=1e-12)


MEAN_OVER_STATIC_AND_RUN_TIME_DIMS = """
func.func @main(%x: tensor<5x2x?xf16>) -> tensor<5xf16> {
  %m = kiln.reduce_mean %x {dims = array<i64: 1, 2>} : tensor<5x2x?xf16> -> tensor<5xf16>
  return %m : tensor<5xf16>
}
"""


# A mean over a static and a `?` dim: its divisor (2 x the run-time size)
# failed to compile on CUDA and Vulkan ("a value computed on the device is
# used on the host"): found by the differential test.
@pytest.mark.parametrize("n", [1, 7, 300])
def test_mean_over_a_static_and_a_run_time_dim(n):
    x = np.random.default_rng(n).uniform(-1, 1, (5, 2, n)).astype(np.float16)
    (m,), _ = run_kiln(MEAN_OVER_STATIC_AND_RUN_TIME_DIMS, [x])
    np.testing.assert_allclose(m, x.astype(np.float64).mean((1, 2)), rtol=2e-3, atol=1e-3)


SLICES_OF_RUN_TIME_BUFFERS = """
func.func @main(%x: tensor<7x?x1x16xf32>, %y: tensor<33x?x7x?xf16>)
    -> (tensor<1x1x1x1xf32>, tensor<1xf16>, tensor<1x1x1x1xf16>) {
  %s = kiln.slice %x {start = array<i64: 6, 6, 0, 7>, stop = array<i64: 7, 7, 1, 8>,
      step = array<i64: 1, 1, 1, 2>} : tensor<7x?x1x16xf32> -> tensor<1x1x1x1xf32>
  %m = kiln.reduce_min %s {dims = array<i64: 0, 1>, keep_dims = true}
      : tensor<1x1x1x1xf32> -> tensor<1x1x1x1xf32>
  %t = kiln.slice %y {start = array<i64: 32, 6, 4, 0>, stop = array<i64: 33, 8, 7, 1>,
      step = array<i64: 3, 3, 2, 2>} : tensor<33x?x7x?xf16> -> tensor<1x1x2x1xf16>
  %r = kiln.reduce_min %t {dims = array<i64: 0, 1, 2>} : tensor<1x1x2x1xf16> -> tensor<1xf16>
  %u = kiln.slice %t {start = array<i64: 0, 0, 1, 0>, stop = array<i64: 1, 1, 2, 1>,
      step = array<i64: 1, 1, 3, 2>} : tensor<1x1x2x1xf16> -> tensor<1x1x1x1xf16>
  return %m, %r, %u : tensor<1x1x1x1xf32>, tensor<1xf16>, tensor<1x1x1x1xf16>
}
"""


# Found by the differential test's `?` programs (Vulkan): a reduction
# reading a reshaped slice of a `?` buffer made a kernel argument of `?`
# strides ("failed to legalize operation 'gpu.func'"); sunk into the
# kernel, its index delinearised with floordivsi, which had no SPIR-V
# pattern.
def test_reshaped_slices_of_run_time_buffers():
    rng = np.random.default_rng(11)
    x = rng.uniform(-1, 1, (7, 9, 1, 16)).astype(np.float32)
    y = rng.uniform(-1, 1, (33, 10, 7, 3)).astype(np.float16)
    (m, r, u), _ = run_kiln(SLICES_OF_RUN_TIME_BUFFERS, [x, y])
    np.testing.assert_array_equal(m, x[6:7, 6:7, 0:1, 7:8:2])
    t = y[32:33:3, 6:8:3, 4:7:2, 0:1:2]
    np.testing.assert_array_equal(r, t.min((0, 1, 2)))
    np.testing.assert_array_equal(u, t[:, :, 1:2:3, :])


SIZES_OF_SUMS = """
func.func @main(%x: tensor<?x3xf32>, %y: tensor<?x3xf32>, %z: tensor<?x?xf32>,
                %w: tensor<?x3xf32>)
    -> (tensor<?x5xf32>, tensor<?x3xf32>, tensor<2x2xf32>, tensor<?x?xf32>, tensor<?x3xf32>) {
  %p = kiln.pad %x {low = array<i64: 1, 0>, high = array<i64: 2, 2>, value = 0.5 : f64}
      : tensor<?x3xf32> -> tensor<?x5xf32>
  %c = kiln.concat %x, %y, %x {dim = 0} : (tensor<?x3xf32>, tensor<?x3xf32>, tensor<?x3xf32>)
      -> tensor<?x3xf32>
  %s = kiln.slice %y {start = array<i64: 1, 0>, stop = array<i64: 3, 2>, step = array<i64: 1, 1>}
      : tensor<?x3xf32> -> tensor<2x2xf32>
  %pz = kiln.pad %z {low = array<i64: 0, 1>, high = array<i64: 1, 0>, value = 0.0 : f64}
      : tensor<?x?xf32> -> tensor<?x?xf32>
  %e = kiln.exp %pz : tensor<?x?xf32>
  %q = kiln.pad %x {low = array<i64: 0, 0>, high = array<i64: 3, 0>, value = 1.0 : f64}
      : tensor<?x3xf32> -> tensor<?x3xf32>
  %sum = kiln.add %q, %w : (tensor<?x3xf32>, tensor<?x3xf32>) -> tensor<?x3xf32>
  return %p, %c, %s, %e, %sum : tensor<?x5xf32>, tensor<?x3xf32>, tensor<2x2xf32>,
      tensor<?x?xf32>, tensor<?x3xf32>
}
"""


# Pads and concats along `?` dims (result sizes that are sums, computed at
# run time), a slice of `?` rows (at least as many as it reads) and an
# input whose rows must be a sum (w: x's rows + 3), both checked at run
# time.
@pytest.mark.parametrize("n,m,k", [(0, 3, 0), (1, 5, 4), (2, 1, 1), (7, 0, 7), (33, 40, 2)])
def test_sizes_that_are_sums(n, m, k):
    rng = np.random.default_rng(n * 100 + m * 10 + k)
    x = rng.uniform(-1, 1, (n, 3)).astype(np.float32)
    y = rng.uniform(-1, 1, (m, 3)).astype(np.float32)
    z = rng.uniform(-1, 1, (k, k + 1)).astype(np.float32)
    w = rng.uniform(-1, 1, (n + 3, 3)).astype(np.float32)
    if m < 3:
        # The slice reads rows 1 and 2 of y: fewer is a named error.
        _, proc = run_kiln(SIZES_OF_SUMS, [x, y, z, w], check=False)
        assert proc.returncode == 2 and "invalid_argument" in proc.stderr, proc.stderr
        assert "input #1 dim 0 is %d but" % m in proc.stderr, proc.stderr
        assert "'kiln.slice' needs at least 3" in proc.stderr, proc.stderr
        return
    _, proc = run_kiln(SIZES_OF_SUMS, [x, y, z, w[1:]], check=False)
    assert proc.returncode == 2 and "invalid_argument" in proc.stderr, proc.stderr
    assert "input #3 dim 0 is %d but the program makes that size %d" % (n + 2, n + 3) \
        in proc.stderr, proc.stderr

    results, _ = run_kiln(SIZES_OF_SUMS, [x, y, z, w])
    xd = x.astype(np.float64)
    want = [np.pad(xd, ((1, 2), (0, 2)), constant_values=0.5), np.concatenate([xd, y, xd], 0),
            y[1:3, 0:2], np.exp(np.pad(z.astype(np.float64), ((0, 1), (1, 0)))),
            np.pad(xd, ((0, 3), (0, 0)), constant_values=1.0) + w]
    for name, got, ref in zip(["pad", "concat", "slice", "pad of ?x?", "pad + w"],
                              results, want):
        assert got.shape == ref.shape, name
        np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-7, err_msg=name)


ATTENTION = """
func.func @main(%q: tensor<2x2x?x64x{0}>, %k: tensor<2x2x?x64x{0}>, %v: tensor<2x2x?x32x{0}>,
                %m: tensor<2x1x?x?x{0}>, %b: tensor<?x?xi1>, %qb: tensor<?x?x64x{0}>,
                %kb: tensor<?x?x64x{0}>, %qc: tensor<?x8x64x{0}>, %kc: tensor<?x8x64x{0}>,
                %mb: tensor<?x1x?x{0}>)
    -> (tensor<2x2x?x32x{0}>, tensor<2x2x?x32x{0}>, tensor<2x2x?x32x{0}>, tensor<?x?x64x{0}>,
        tensor<?x8x64x{0}>, tensor<?x?x64x{0}>, tensor<?x?x64x{0}>) {{
  %a = kiln.attention %q, %k, %v
      : (tensor<2x2x?x64x{0}>, tensor<2x2x?x64x{0}>, tensor<2x2x?x32x{0}>) -> tensor<2x2x?x32x{0}>
  %am = kiln.attention %q, %k, %v, %m {{scale = 0.2 : f64}}
      : (tensor<2x2x?x64x{0}>, tensor<2x2x?x64x{0}>, tensor<2x2x?x32x{0}>, tensor<2x1x?x?x{0}>)
      -> tensor<2x2x?x32x{0}>
  %ab = kiln.attention %q, %k, %v, %b
      : (tensor<2x2x?x64x{0}>, tensor<2x2x?x64x{0}>, tensor<2x2x?x32x{0}>, tensor<?x?xi1>)
      -> tensor<2x2x?x32x{0}>
  %r3 = kiln.attention %qb, %kb, %kb
      : (tensor<?x?x64x{0}>, tensor<?x?x64x{0}>, tensor<?x?x64x{0}>) -> tensor<?x?x64x{0}>
  %c = kiln.attention %qc, %kc, %kc {{causal = true}}
      : (tensor<?x8x64x{0}>, tensor<?x8x64x{0}>, tensor<?x8x64x{0}>) -> tensor<?x8x64x{0}>
  %cq = kiln.attention %qb, %kb, %kb {{causal = true}}
      : (tensor<?x?x64x{0}>, tensor<?x?x64x{0}>, tensor<?x?x64x{0}>) -> tensor<?x?x64x{0}>
  %rm = kiln.attention %qb, %kb, %kb, %mb
      : (tensor<?x?x64x{0}>, tensor<?x?x64x{0}>, tensor<?x?x64x{0}>, tensor<?x1x?x{0}>)
      -> tensor<?x?x64x{0}>
  return %a, %am, %ab, %r3, %c, %cq, %rm : tensor<2x2x?x32x{0}>, tensor<2x2x?x32x{0}>,
      tensor<2x2x?x32x{0}>, tensor<?x?x64x{0}>, tensor<?x8x64x{0}>, tensor<?x?x64x{0}>,
      tensor<?x?x64x{0}>
}}
"""


# Attention of run-time sequence lengths (a decode step's one query against
# a growing key cache, Lq != Lk), fused where the target fuses (CPU and
# Vulkan always, CUDA's tensor-core kernel for f16 head dims of 64): plain,
# with an additive mask broadcast over heads (and one over rows, `?`
# elsewhere) and a boolean one over everything; a `?` batch too (rank 3);
# causal (top-left aligned: Lq > Lk too) over a `?` batch, of static and
# `?` sequence lengths; several row and key tiles with tails; no rows; no
# keys (0, as torch's math gives).
@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize("batch,lq,lk", [(1, 1, 1), (2, 1, 37), (3, 17, 17), (1, 40, 9),
                                         (2, 130, 200), (2, 0, 5), (1, 3, 0)])
def test_attention_of_run_time_sizes(dtype, batch, lq, lk):
    rng = np.random.default_rng(batch * 1000 + lq * 10 + lk)
    np_dtype = np.float16 if dtype == "f16" else np.float32
    u = lambda *shape: rng.uniform(-1, 1, shape).astype(np_dtype)
    q, k, v = u(2, 2, lq, 64), u(2, 2, lk, 64), u(2, 2, lk, 32)
    m = u(2, 1, lq, lk)
    b = rng.random((lq, lk)) < 0.7
    b[:, :1] = True  # every query sees a key
    qb, kb = u(batch, lq, 64), u(batch, lk, 64)
    qc, kc = u(batch, 8, 64), u(batch, 8, 64)
    mb = u(batch, 1, lk)
    results, _ = run_kiln(ATTENTION.format(dtype), [q, k, v, m, b, qb, kb, qc, kc, mb])
    want = [attention_ref(q, k, v), attention_ref(q, k, v, m, scale=0.2),
            attention_ref(q, k, v, b), attention_ref(qb, kb, kb),
            attention_ref(qc, kc, kc, causal=True), attention_ref(qb, kb, kb, causal=True),
            attention_ref(qb, kb, kb, mb)]
    tol = 2e-2 if dtype == "f16" else 1e-5
    names = ["plain", "additive mask", "bool mask", "? batch", "causal", "causal of ? lengths",
             "mask over rows"]
    for name, got, ref in zip(names, results, want):
        assert got.shape == ref.shape, name
        np.testing.assert_allclose(got.astype(np.float64), ref, rtol=tol, atol=tol, err_msg=name)


# The shape a model's attention has under dynamic shapes: a `?` batch above
# static heads and `?` sequence lengths, [?, H, ?, E] (the batch dims
# collapse into one `?`), plain, causal, with a per-sequence additive key
# mask [?, 1, 1, ?] broadcast over heads and rows, and with a bool [?, ?]
# mask; f32 (CUDA: unfused) and f16 with head dim 64 (CUDA's tensor-core
# kernel); an empty batch too.
LLM_ATTENTION = """
func.func @main(%q: tensor<?x4x?x64x{0}>, %k: tensor<?x4x?x64x{0}>, %v: tensor<?x4x?x64x{0}>,
                %m: tensor<?x1x1x?x{0}>, %b: tensor<?x?xi1>)
    -> (tensor<?x4x?x64x{0}>, tensor<?x4x?x64x{0}>, tensor<?x4x?x64x{0}>, tensor<?x4x?x64x{0}>) {{
  %a = kiln.attention %q, %k, %v
      : (tensor<?x4x?x64x{0}>, tensor<?x4x?x64x{0}>, tensor<?x4x?x64x{0}>) -> tensor<?x4x?x64x{0}>
  %c = kiln.attention %q, %k, %v {{causal = true}}
      : (tensor<?x4x?x64x{0}>, tensor<?x4x?x64x{0}>, tensor<?x4x?x64x{0}>) -> tensor<?x4x?x64x{0}>
  %am = kiln.attention %q, %k, %v, %m
      : (tensor<?x4x?x64x{0}>, tensor<?x4x?x64x{0}>, tensor<?x4x?x64x{0}>, tensor<?x1x1x?x{0}>)
      -> tensor<?x4x?x64x{0}>
  %ab = kiln.attention %q, %k, %v, %b
      : (tensor<?x4x?x64x{0}>, tensor<?x4x?x64x{0}>, tensor<?x4x?x64x{0}>, tensor<?x?xi1>)
      -> tensor<?x4x?x64x{0}>
  return %a, %c, %am, %ab
      : tensor<?x4x?x64x{0}>, tensor<?x4x?x64x{0}>, tensor<?x4x?x64x{0}>, tensor<?x4x?x64x{0}>
}}
"""


@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize("batch,lq,lk", [(1, 1, 33), (3, 17, 17), (2, 40, 9), (0, 5, 5)])
def test_attention_of_a_run_time_batch_above_static_heads(dtype, batch, lq, lk):
    rng = np.random.default_rng(batch * 1000 + lq * 10 + lk)
    np_dtype = np.float16 if dtype == "f16" else np.float32
    u = lambda *shape: rng.uniform(-1, 1, shape).astype(np_dtype)
    q, k, v = u(batch, 4, lq, 64), u(batch, 4, lk, 64), u(batch, 4, lk, 64)
    m = np.where(rng.random((batch, 1, 1, lk)) < 0.7, 0, -np.inf).astype(np_dtype)
    m[..., 0] = 0  # every query sees a key
    b = rng.random((lq, lk)) < 0.7
    b[:, 0] = True
    results, _ = run_kiln(LLM_ATTENTION.format(dtype), [q, k, v, m, b])
    want = [attention_ref(q, k, v), attention_ref(q, k, v, causal=True),
            attention_ref(q, k, v, m), attention_ref(q, k, v, b)]
    tol = 2e-2 if dtype == "f16" else 1e-5
    for name, got, ref in zip(["plain", "causal", "key mask", "bool mask"], results, want):
        assert got.shape == ref.shape, name
        np.testing.assert_allclose(got.astype(np.float64), ref, rtol=tol, atol=tol, err_msg=name)


def test_sum_tied_to_a_static_size():
    program = """
func.func @main(%x: tensor<?x3xf32>, %w: tensor<8x3xf32>) -> tensor<8x3xf32> {
  %q = kiln.pad %x {low = array<i64: 0, 0>, high = array<i64: 3, 0>, value = 1.0 : f64}
      : tensor<?x3xf32> -> tensor<?x3xf32>
  %s = kiln.add %q, %w : (tensor<?x3xf32>, tensor<8x3xf32>) -> tensor<8x3xf32>
  return %s : tensor<8x3xf32>
}
"""
    x, w = np.full((5, 3), 2, np.float32), np.ones((8, 3), np.float32)
    (s,), _ = run_kiln(program, [x, w])
    np.testing.assert_array_equal(s, np.pad(x, ((0, 3), (0, 0)), constant_values=1.0) + w)
    # The error names the input the sum reads.
    _, proc = run_kiln(program, [x[:4], w], check=False)
    assert proc.returncode == 2, proc.stderr
    assert "'kiln.add' needs 8 to equal input #0 dim 0 (4) + 3 = 7" in proc.stderr, proc.stderr


def convs_program(dtype):
    t = lambda shape: "tensor<" + "x".join(map(str, shape)) + "x" + dtype + ">"
    x, w, b, w1, wd, wg = (t(["?", 32, 9, 9]), t([64, 32, 3, 3]), t([64]), t([48, 32, 1, 1]),
                           t([32, 1, 3, 3]), t([16, 16, 3, 3]))
    r = [t(["?", 64, 5, 5]), t(["?", 48, 9, 9]), t(["?", 32, 9, 9]), t(["?", 16, 7, 7])]
    return f"""
func.func @main(%x: {x}, %w: {w}, %b: {b}, %w1: {w1}, %wd: {wd}, %wg: {wg})
    -> ({", ".join(r)}) {{
  %s = kiln.conv2d %x, %w, %b {{stride = array<i64: 2, 2>, padding = array<i64: 1, 1>}}
      : ({x}, {w}, {b}) -> {r[0]}
  %p = kiln.conv2d %x, %w1 : ({x}, {w1}) -> {r[1]}
  %d = kiln.conv2d %x, %wd {{padding = array<i64: 1, 1>, groups = 32}} : ({x}, {wd}) -> {r[2]}
  %g = kiln.conv2d %x, %wg {{groups = 2}} : ({x}, {wg}) -> {r[3]}
  return %s, %p, %d, %g : {", ".join(r)}
}}
"""


def conv2d(x, w, b=None, stride=1, padding=0, groups=1, dilation=1):
    """float64 conv2d of NCHW `x` by OIHW `w`, as torch.nn.functional.conv2d."""
    x = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    d = dilation
    oh, ow = (h - d * (kh - 1) - 1) // stride + 1, (wd - d * (kw - 1) - 1) // stride + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for g in range(groups):
        xs = x[:, g * cg:(g + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i * d:i * d + stride * oh:stride, j * d:j * d + stride * ow:stride]
                out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch,
                                                         w[g * og:(g + 1) * og, :, i, j])
    return out if b is None else out + b[None, :, None, None]


# A batch of run-time size through every conv form: im2col GEMM (strided,
# bias), 1x1 (the input as the GEMM's operand), depthwise (direct), grouped;
# the GEMMs share one weight matrix across the `?` batch.
@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize("n", [0, 1, 3])
def test_convs_over_a_run_time_batch(dtype, n):
    rng = np.random.default_rng(n)
    np_dtype = np.float16 if dtype == "f16" else np.float32
    shapes = [(n, 32, 9, 9), (64, 32, 3, 3), (64,), (48, 32, 1, 1), (32, 1, 3, 3), (16, 16, 3, 3)]
    x, w, b, w1, wd, wg = (rng.uniform(-1, 1, s).astype(np_dtype) for s in shapes)
    results, _ = run_kiln(convs_program(dtype), [x, w, b, w1, wd, wg])
    f = lambda a: a.astype(np.float64)
    want = [conv2d(f(x), f(w), f(b), 2, 1), conv2d(f(x), f(w1)), conv2d(f(x), f(wd), None, 1, 1, 32),
            conv2d(f(x), f(wg), groups=2)]
    tol = 2e-2 if dtype == "f16" else 1e-4
    for name, got, ref in zip(["strided + bias", "1x1", "depthwise", "grouped"], results, want):
        assert got.shape == ref.shape, name
        np.testing.assert_allclose(got.astype(np.float64), ref, rtol=tol, atol=tol, err_msg=name)


def images_program(dtype):
    t = lambda shape: "tensor<" + "x".join(map(str, shape)) + "x" + dtype + ">"
    x, w, b, w1, wd, wg, ws = (t(["?", "?", "?", "?"]), t([8, 4, 3, 3]), t([8]), t([6, 4, 1, 1]),
                               t([4, 1, 3, 3]), t([4, 2, 3, 3]), t([4, 4, 3, 3]))
    r = [t(["?", 8, "?", "?"]), t(["?", 6, "?", "?"]), t(["?", 4, "?", "?"]),
         t(["?", 4, "?", "?"]), t(["?", 4, "?", "?"]), t(["?", "?", "?", "?"]),
         t(["?", "?", "?", "?"]), t(["?", 4, "?", "?"])]
    return f"""
func.func @main(%x: {x}, %w: {w}, %b: {b}, %w1: {w1}, %wd: {wd}, %wg: {wg}, %ws: {ws})
    -> ({", ".join(r)}) {{
  %s = kiln.conv2d %x, %w, %b {{stride = array<i64: 2, 2>, padding = array<i64: 1, 1>}}
      : ({x}, {w}, {b}) -> {r[0]}
  %p = kiln.conv2d %x, %w1 : ({x}, {w1}) -> {r[1]}
  %d = kiln.conv2d %x, %wd {{padding = array<i64: 1, 1>, groups = 4}} : ({x}, {wd}) -> {r[2]}
  %g = kiln.conv2d %x, %wg {{groups = 2, dilation = array<i64: 2, 2>}} : ({x}, {wg}) -> {r[3]}
  %c = kiln.conv2d %x, %ws {{padding = array<i64: 1, 1>}} : ({x}, {ws}) -> {r[4]}
  %res = kiln.add %c, %x : ({r[4]}, {x}) -> {r[4]}
  %m = kiln.max_pool2d %x {{kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>,
      padding = array<i64: 1, 1>}} : {x} -> {r[5]}
  %a = kiln.avg_pool2d %x {{kernel = array<i64: 2, 2>}} : {x} -> {r[6]}
  %r1 = kiln.relu %c : {r[4]}
  %c2 = kiln.conv2d %r1, %ws {{padding = array<i64: 1, 1>}} : ({r[4]}, {ws}) -> {r[7]}
  %block = kiln.add %x, %c2 : ({x}, {r[7]}) -> {r[7]}
  return %s, %p, %d, %g, %res, %m, %a, %block : {", ".join(r)}
}}
"""


# Images of run-time size (batch, channels, height and width all `?`)
# through every conv form (strided with bias, 1x1, depthwise, grouped and
# dilated, a same-size conv added to its input) and both pools: one kernel
# for every size; the channels are the weights' (checked at run time).
@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize("n,h,w", [(2, 9, 13), (1, 5, 6), (0, 7, 7), (3, 17, 5)])
def test_convs_and_pools_over_run_time_image_sizes(dtype, n, h, w):
    rng = np.random.default_rng(n * 100 + h)
    np_dtype = np.float16 if dtype == "f16" else np.float32
    shapes = [(n, 4, h, w), (8, 4, 3, 3), (8,), (6, 4, 1, 1), (4, 1, 3, 3), (4, 2, 3, 3),
              (4, 4, 3, 3)]
    x, wt, b, w1, wd, wg, ws = (rng.uniform(-1, 1, s).astype(np_dtype) for s in shapes)
    results, _ = run_kiln(images_program(dtype), [x, wt, b, w1, wd, wg, ws])
    f = lambda a: a.astype(np.float64)
    want = [conv2d(f(x), f(wt), f(b), 2, 1), conv2d(f(x), f(w1)),
            conv2d(f(x), f(wd), None, 1, 1, 4), conv2d(f(x), f(wg), groups=2, dilation=2),
            conv2d(f(x), f(ws), None, 1, 1) + f(x),
            pool2d(f(x), 3, 2, 1, np.max, -np.inf), pool2d(f(x), 2, 2, 0, np.mean, 0.0)]
    # A residual block of two convs, the input added first.
    want.append(f(x) + conv2d(np.maximum(conv2d(f(x), f(ws), None, 1, 1), 0), f(ws), None, 1, 1))
    tol = 2e-2 if dtype == "f16" else 1e-4
    names = ["strided + bias", "1x1", "depthwise", "grouped + dilated", "residual", "max_pool2d",
             "avg_pool2d", "residual block"]
    for name, got, ref in zip(names, results, want):
        assert got.shape == ref.shape, name
        np.testing.assert_allclose(got.astype(np.float64), ref, rtol=tol, atol=tol, err_msg=name)


WINDOW_DECLARED = """
func.func @main(%x: tensor<1x2x?x?xf32>, %w: tensor<3x2x3x3xf32>) -> tensor<1x3x5x?xf32> {
  %s = kiln.conv2d %x, %w {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>}
      : (tensor<1x2x?x?xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x5x?xf32>
  return %s : tensor<1x3x5x?xf32>
}
"""


# What a window cannot do at run time is a named error: too small an image
# for the window, a count that differs from a static size the program
# states, channels other than the weights'.
@pytest.mark.parametrize("x_shape,message", [
    ((1, 2, 9, 4), None),
    ((1, 2, 11, 4), "'kiln.conv2d' needs 5 to equal the 6 places of its window of 3 along "
                    "input #0 dim 2 (11) padded by 1 on each side"),
    ((1, 3, 9, 4), "input #0 is tensor<1x3x9x4xf32>, the program expects "
                   "tensor<1x2x?x?xf32> (dim 1)"),
])
def test_windows_that_do_not_fit_are_named_errors(x_shape, message):
    x = np.ones(x_shape, np.float32)
    w = np.ones((3, 2, 3, 3), np.float32)
    program = WINDOW_DECLARED.replace("1x2x?x?", "1x?x?x?") if x_shape[1] == 3 else WINDOW_DECLARED
    if message is None:
        (s,), _ = run_kiln(WINDOW_DECLARED, [x, w])
        np.testing.assert_allclose(s, conv2d(x.astype(np.float64), w.astype(np.float64), None, 2, 1))
        return
    _, proc = run_kiln(program, [x, w], check=False)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr, proc.stderr


def test_an_image_smaller_than_its_window_is_a_named_error():
    program = """
func.func @main(%x: tensor<1x1x?x?xf32>, %w: tensor<1x1x3x3xf32>) -> tensor<1x1x?x?xf32> {
  %s = kiln.conv2d %x, %w {dilation = array<i64: 2, 2>}
      : (tensor<1x1x?x?xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x?x?xf32>
  return %s : tensor<1x1x?x?xf32>
}
"""
    _, proc = run_kiln(program, [np.ones((1, 1, 4, 9), np.float32),
                                 np.ones((1, 1, 3, 3), np.float32)], check=False)
    assert proc.returncode == 2, proc.stderr
    assert ("program:3:8: 'kiln.conv2d' slides a window of 5 over input #0 dim 2 (4) padded by 0 "
            "on each side: it does not fit" in proc.stderr), proc.stderr


# An image of no rows (or columns) whose padding leaves room for the
# window: every window reads padding only, so the output is the bias; the
# padded image is written without reading x (an empty buffer).
@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize("h,w", [(0, 5), (4, 0)])
def test_a_conv_over_an_empty_image_is_its_bias(dtype, h, w):
    program = """
func.func @main(%x: tensor<1x8x?x?xT>, %w: tensor<16x8x3x3xT>, %b: tensor<16xT>) -> tensor<1x16x?x?xT> {
  %s = kiln.conv2d %x, %w, %b {padding = array<i64: 2, 2>}
      : (tensor<1x8x?x?xT>, tensor<16x8x3x3xT>, tensor<16xT>) -> tensor<1x16x?x?xT>
  return %s : tensor<1x16x?x?xT>
}
""".replace("T>", dtype + ">")
    np_dtype = np.float16 if dtype == "f16" else np.float32
    rng = np.random.default_rng(7)
    x = np.zeros((1, 8, h, w), np_dtype)
    wt, b = (rng.uniform(-1, 1, s).astype(np_dtype) for s in [(16, 8, 3, 3), (16,)])
    (s,), _ = run_kiln(program, [x, wt, b])
    assert s.shape == (1, 16, h + 2, w + 2)
    np.testing.assert_array_equal(s, np.broadcast_to(b[None, :, None, None], s.shape))


LOOKUPS_AND_QUANTIZE = """
func.func @main(%x: tensor<?x40xf32>, %i: tensor<?xi64>, %g: tensor<?x3xi32>, %q: tensor<?x?xf32>,
                %s: tensor<f32>, %qb: tensor<?x64xf32>, %sb: tensor<?x2xf32>)
    -> (tensor<?x?xf32>, tensor<?x3xf32>, tensor<?x?xi8>, tensor<?x?xf32>, tensor<?x64xi8>,
        tensor<?x64xf32>) {
  %a = kiln.index_select %x, %i {dim = 1} : (tensor<?x40xf32>, tensor<?xi64>) -> tensor<?x?xf32>
  %b = kiln.gather %x, %g {dim = 1} : (tensor<?x40xf32>, tensor<?x3xi32>) -> tensor<?x3xf32>
  %c = kiln.quantize %q, %s : (tensor<?x?xf32>, tensor<f32>) -> tensor<?x?xi8>
  %d = kiln.dequantize %c, %s : (tensor<?x?xi8>, tensor<f32>) -> tensor<?x?xf32>
  %e = kiln.quantize %qb, %sb {block_size = 32} : (tensor<?x64xf32>, tensor<?x2xf32>) -> tensor<?x64xi8>
  %f = kiln.dequantize %e, %sb {block_size = 32} : (tensor<?x64xi8>, tensor<?x2xf32>) -> tensor<?x64xf32>
  return %a, %b, %c, %d, %e, %f : tensor<?x?xf32>, tensor<?x3xf32>, tensor<?x?xi8>,
      tensor<?x?xf32>, tensor<?x64xi8>, tensor<?x64xf32>
}
"""


# index_select and gather look up a static dim of `?` rows (a `?` index
# dim of gather other than `dim` is x's size); quantize per tensor and per
# block of a static last dim.
@pytest.mark.parametrize("rows,picks", [(0, 3), (1, 0), (7, 5), (300, 1)])
def test_lookups_and_quantize(rows, picks):
    rng = np.random.default_rng(rows * 10 + picks)
    x = rng.uniform(-1, 1, (rows, 40)).astype(np.float32)
    i = rng.integers(0, 40, (picks,)).astype(np.int64)
    g = rng.integers(0, 40, (rows, 3)).astype(np.int32)
    q = rng.uniform(-3, 3, (rows, 13)).astype(np.float32)
    s = np.array(0.05, np.float32)
    qb = rng.uniform(-3, 3, (rows, 64)).astype(np.float32)
    sb = rng.uniform(0.01, 0.1, (rows, 2)).astype(np.float32)
    results, _ = run_kiln(LOOKUPS_AND_QUANTIZE, [x, i, g, q, s, qb, sb])
    qi = np.clip(np.round(q.astype(np.float64) / s), -127, 127).astype(np.int8)
    blocks = np.repeat(sb.astype(np.float64), 32, 1)
    qbi = np.clip(np.round(qb / blocks), -127, 127).astype(np.int8)
    want = [x[:, i], np.take_along_axis(x, g, 1), qi, qi * np.float64(s), qbi, qbi * blocks]
    names = ["index_select", "gather", "quantize", "dequantize", "quantize per block",
             "dequantize per block"]
    for name, got, ref in zip(names, results, want):
        assert got.shape == ref.shape, name
        np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-7, err_msg=name)


MATMUL = """
func.func @main(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>, %c: tensor<?x?x?xf32>,
                %d: tensor<?x?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?x?xf32>) {
  %m = kiln.matmul %a, %b : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  %bm = kiln.matmul %c, %d : (tensor<?x?x?xf32>, tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  return %m, %bm : tensor<?x?xf32>, tensor<?x?x?xf32>
}
"""


# (97, 260, 1030): the CPU's tiled kernel with run-time sizes across two
# row blocks, two k slices and two column blocks, each with an edge; on
# CUDA, rows of B and C that are no multiple of 4 (element by element).
# (200, 136, 260): every row a multiple of 4 (CUDA's aligned vector loads
# and stores), edges in M and N. CUDA picks the SIMT tiling at run time:
# 64-wide tiles for all of these but (1600, 40, 1500), whose 13 x 12
# 128-wide tiles fill the H200.
@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (0, 5, 3), (4, 0, 3), (7, 13, 5), (16, 32, 48),
                                   (31, 17, 64), (97, 260, 1030), (200, 136, 260),
                                   (1600, 40, 1500)])
def test_matmul(m, k, n):
    rng = np.random.default_rng(m * 10000 + k * 100 + n)
    a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    c = rng.uniform(-1, 1, (3, m, k)).astype(np.float32)
    d = rng.uniform(-1, 1, (3, k, n)).astype(np.float32)
    (mm, bm), _ = run_kiln(MATMUL, [a, b, c, d])
    np.testing.assert_allclose(mm, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(bm, c.astype(np.float64) @ d, rtol=1e-5, atol=1e-5)


MATMUL_STATIC_MEETS_RUN_TIME = """
func.func @main(%a: tensor<?x1x?xf32>, %b: tensor<?x1x?xf32>, %c: tensor<?x2x?xf32>,
                %d: tensor<?x8x3xf32>) -> (tensor<?x1x?xf32>, tensor<?x2x3xf32>) {
  %m = kiln.matmul %a, %b : (tensor<?x1x?xf32>, tensor<?x1x?xf32>) -> tensor<?x1x?xf32>
  %n = kiln.matmul %c, %d : (tensor<?x2x?xf32>, tensor<?x8x3xf32>) -> tensor<?x2x3xf32>
  return %m, %n : tensor<?x1x?xf32>, tensor<?x2x3xf32>
}
"""


# A `?` K of one operand meets the other's static K (1, 8): each operand
# keeps its static matrix dims (once a `?`-sized copy of b, whose casts kernel formation rewrote until
# memory ran out: fuzz-capi).
@pytest.mark.parametrize("batch", [0, 1, 5])
def test_matmuls_whose_static_dims_meet_run_time_ones(batch):
    rng = np.random.default_rng(batch)
    a = rng.uniform(-1, 1, (batch, 1, 1)).astype(np.float32)
    b = rng.uniform(-1, 1, (batch, 1, 7)).astype(np.float32)
    c = rng.uniform(-1, 1, (batch, 2, 8)).astype(np.float32)
    d = rng.uniform(-1, 1, (batch, 8, 3)).astype(np.float32)
    (m, n), _ = run_kiln(MATMUL_STATIC_MEETS_RUN_TIME, [a, b, c, d])
    np.testing.assert_allclose(m, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(n, c.astype(np.float64) @ d, rtol=1e-5, atol=1e-6)
    _, proc = run_kiln(MATMUL_STATIC_MEETS_RUN_TIME,
                       [np.ones((batch, 1, 2), np.float32), b, c, d], check=False)
    assert proc.returncode == 2 and "invalid_argument" in proc.stderr, proc.stderr


MATMUL_EPILOGUE = """
func.func @main(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>, %bias: tensor<?xf32>) -> tensor<?x?xf32> {
  %m = kiln.matmul %a, %b : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  %s = kiln.add %m, %bias : (tensor<?x?xf32>, tensor<?xf32>) -> tensor<?x?xf32>
  %r = kiln.tanh %s : tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}
"""


@pytest.mark.parametrize("m,k,n", [(0, 3, 5), (3, 0, 5), (13, 300, 70)])
def test_matmul_with_a_fused_epilogue(m, k, n):
    rng = np.random.default_rng(m + k + n)
    a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    bias = rng.uniform(-1, 1, (n,)).astype(np.float32)
    (r,), _ = run_kiln(MATMUL_EPILOGUE, [a, b, bias])
    np.testing.assert_allclose(r, np.tanh(a.astype(np.float64) @ b + bias), rtol=1e-5,
                               atol=1e-5)


HALF_MATMUL = """
func.func @main(%a: tensor<?x?x{0}>, %b: tensor<?x?x{0}>, %bias: tensor<?xf32>,
                %c: tensor<?x?x?x{0}>, %d: tensor<?x?x?x{0}>)
    -> (tensor<?x?xf32>, tensor<?x?x?xf32>) {{
  %m = kiln.matmul %a, %b : (tensor<?x?x{0}>, tensor<?x?x{0}>) -> tensor<?x?xf32>
  %s = kiln.add %m, %bias : (tensor<?x?xf32>, tensor<?xf32>) -> tensor<?x?xf32>
  %r = kiln.tanh %s : tensor<?x?xf32>
  %bm = kiln.matmul %c, %d : (tensor<?x?x?x{0}>, tensor<?x?x?x{0}>) -> tensor<?x?x?xf32>
  return %r, %bm : tensor<?x?xf32>, tensor<?x?x?xf32>
}}
"""


# f16/bf16 inputs, f32 results. On sm_90a the wgmma kernel takes the sizes
# whose K and N are multiples of 8 (TMA's 16-byte rows; its maps sized at
# launch), with edges in M, N and K (a partial K step); the others (odd K
# or N, K of 0) the SIMT kernel compiled beside it; the bias and tanh run
# in both kernels' stores.
@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("m,k,n", [(300, 72, 264), (129, 8, 520), (64, 1024, 128),
                                   (33, 18, 70), (7, 13, 5), (200, 136, 522), (0, 8, 16),
                                   (5, 0, 8)])
def test_half_matmul(dtype, m, k, n):
    rng = np.random.default_rng(m * 10000 + k * 100 + n)
    a, b, c, d = (rng.uniform(-1, 1, s).astype(np.float32)
                  for s in [(m, k), (k, n), (3, m, k), (3, k, n)])
    if dtype == "f16":
        a, b, c, d = (x.astype(np.float16) for x in (a, b, c, d))
    else:  # kiln-run reads f32 .npy into a bf16 input
        a, b, c, d = (round_to_bf16(x) for x in (a, b, c, d))
    bias = rng.uniform(-1, 1, (n,)).astype(np.float32)
    (r, bm), _ = run_kiln(HALF_MATMUL.format(dtype), [a, b, bias, c, d])
    f64 = lambda x: x.astype(np.float64)
    np.testing.assert_allclose(r, np.tanh(f64(a) @ f64(b) + bias), rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(bm, f64(c) @ f64(d), rtol=1e-4, atol=1e-3)


ROWS_MATMUL = """
func.func @main(%a: tensor<?x{k}x{t}>, %b: tensor<{k}x{n}x{t}>, %bias: tensor<{n}xf32>)
    -> tensor<?x{n}xf32> {{
  %m = kiln.matmul %a, %b : (tensor<?x{k}x{t}>, tensor<{k}x{n}x{t}>) -> tensor<?x{n}xf32>
  %s = kiln.add %m, %bias : (tensor<?x{n}xf32>, tensor<{n}xf32>) -> tensor<?x{n}xf32>
  %r = kiln.tanh %s : tensor<?x{n}xf32>
  return %r : tensor<?x{n}xf32>
}}
"""


# Rows alone known at run time (a decode step's tokens) over a long static
# K: on a GPU that fills its SMs (CUDA, NVIDIA's Vulkan), each bucket of
# row counts up to 512 runs the tiling and parts of K that static rows
# would (K split into parts whose partial sums, as many rows as the run
# has, a second kernel adds through the bias and tanh); more rows run the
# run-time-size kernels. On the H100 the f32 SIMT kernel takes 64 x 64
# tiles in 4 parts up to 512 rows; bf16 (wgmma) narrower tiles in parts up
# to 128 rows and again up to 512; tf32 the wgmma kernel on one K-major
# copy of B for all its kernels.
@pytest.mark.parametrize("dtype", ["f32", "bf16", "tf32"])
@pytest.mark.parametrize("rows", [0, 1, 16, 33, 128, 129, 513])
def test_matmuls_of_run_time_rows(dtype, rows):
    if dtype == "tf32" and not os.environ.get("KILN_DEVICE", "cpu").startswith("cuda"):
        pytest.skip("--tf32 is an option of CUDA targets")
    k, n = 2048, 264
    rng = np.random.default_rng(rows)
    a = rng.uniform(-1, 1, (rows, k)).astype(np.float32)
    b = (rng.uniform(-1, 1, (k, n)) / np.sqrt(k)).astype(np.float32)
    bias = rng.uniform(-1, 1, (n,)).astype(np.float32)
    if dtype == "bf16":  # kiln-run reads f32 .npy into a bf16 input
        a, b = round_to_bf16(a), round_to_bf16(b)
    program = ROWS_MATMUL.format(k=k, n=n, t="bf16" if dtype == "bf16" else "f32")
    (r,), _ = run_kiln(program, [a, b, bias], extra_args=["--tf32"] if dtype == "tf32" else [])
    f64 = lambda x: x.astype(np.float64)
    want = np.tanh(f64(a) @ f64(b) + bias)
    assert r.shape == (rows, n)
    # tf32 keeps 10 mantissa bits of each input (tanh is 1-Lipschitz).
    bound = np.abs(f64(a)) @ np.abs(f64(b)) * 2.0**-9 if dtype == "tf32" else 1e-4
    assert np.all(np.abs(r - want) <= bound + 1e-5)


BATCHED_ROWS_MATMUL = """
func.func @main(%a: tensor<3x?x1024x{t}>, %b: tensor<3x1024x136x{t}>) -> tensor<3x?x136xf32> {{
  %m = kiln.matmul %a, %b : (tensor<3x?x1024x{t}>, tensor<3x1024x136x{t}>) -> tensor<3x?x136xf32>
  return %m : tensor<3x?x136xf32>
}}
"""


# The same over a static batch: each batch's parts of K are blocks of
# their own (grid z: batch x parts), the partial sums [batch x parts, M, N].
@pytest.mark.parametrize("dtype", ["f32", "bf16"])
@pytest.mark.parametrize("rows", [5, 100, 300])
def test_batched_matmuls_of_run_time_rows(dtype, rows):
    rng = np.random.default_rng(rows)
    a = rng.uniform(-1, 1, (3, rows, 1024)).astype(np.float32)
    b = rng.uniform(-1, 1, (3, 1024, 136)).astype(np.float32)
    if dtype == "bf16":
        a, b = round_to_bf16(a), round_to_bf16(b)
    (r,), _ = run_kiln(BATCHED_ROWS_MATMUL.format(t=dtype), [a, b])
    np.testing.assert_allclose(r, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


RESHAPE = """
func.func @main(%x: tensor<?x4x8xi32>) -> tensor<?x32xi32> {
  %r = kiln.reshape %x : tensor<?x4x8xi32> -> tensor<?x32xi32>
  return %r : tensor<?x32xi32>
}
"""


@pytest.mark.parametrize("rows", [0, 1, 5, 16])
def test_reshape_keeps_its_dynamic_dim(rows):
    x = np.arange(rows * 32, dtype=np.int32).reshape(rows, 4, 8)
    (r,), _ = run_kiln(RESHAPE, [x])
    np.testing.assert_array_equal(r, x.reshape(rows, 32))


STATIC_TIE = """
func.func @main(%x: tensor<?x4xf32>, %y: tensor<5x4xf32>) -> tensor<5x4xf32> {
  %a = kiln.add %x, %y : (tensor<?x4xf32>, tensor<5x4xf32>) -> tensor<5x4xf32>
  return %a : tensor<5x4xf32>
}
"""

SAME_SIZE = """
func.func @main(%x: tensor<?x4xf32>, %y: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %a = kiln.add %x, %y : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %a : tensor<?x4xf32>
}
"""


# A static mask ties the `?` sequence lengths it broadcasts against to its
# sizes (9 query rows, 3 keys): the signature says so, and the run is right.
STATIC_MASK = """
func.func @main(%q: tensor<1x?x32xf32>, %k: tensor<1x?x32xf32>, %v: tensor<1x?x32xf32>,
                %m: tensor<9x3xi1>) -> tensor<1x?x32xf32> {
  %r = kiln.attention %q, %k, %v, %m
      : (tensor<1x?x32xf32>, tensor<1x?x32xf32>, tensor<1x?x32xf32>, tensor<9x3xi1>)
      -> tensor<1x?x32xf32>
  return %r : tensor<1x?x32xf32>
}
"""


# f32 runs unfused on CUDA, f16 with head dim 64 on its tensor-core kernel;
# a mask with a static batch ties a `?` batch too.
@pytest.mark.parametrize("dtype,head", [(np.float32, 32), (np.float16, 64)])
@pytest.mark.parametrize("additive", [False, True])
@pytest.mark.parametrize("batch", [None, 2])
def test_attention_with_a_static_mask_of_run_time_lengths(dtype, head, additive, batch):
    rng = np.random.default_rng(9)
    q, k, v = (rng.uniform(-1, 1, (batch or 1, n, head)).astype(dtype) for n in (9, 3, 3))
    m = rng.random((9, 3) if batch is None else (batch, 9, 3)) < 0.6
    m[..., 0] = True
    element = MLIR_TYPES[np.dtype(dtype)]
    program = STATIC_MASK.replace("x32xf32", f"x{head}x{element}")
    if batch:
        program = program.replace("1x?x", "?x?x").replace("9x3x", f"{batch}x9x3x")
    if additive:
        m = np.where(m, 0, -np.inf).astype(dtype)
        program = program.replace("9x3xi1", f"9x3x{element}")
    results, _ = run_kiln(program, [q, k, v, m])
    tol = 1e-5 if dtype == np.float32 else 2e-3
    np.testing.assert_allclose(results[0].astype(np.float64), attention_ref(q, k, v, m),
                               rtol=tol, atol=tol)


@pytest.mark.parametrize("program,shapes,message", [
    (STATIC_MASK, [(1, 10, 32), (1, 3, 32), (1, 3, 32)],
     "input #0 is tensor<1x10x32xf32>, the program expects tensor<1x9x32xf32>"),
    (SAME_SIZE, [(5, 4), (6, 4)],
     "input #1 dim 0 is 6 but input #0 dim 0 is 5: the program needs them equal"),
    (SAME_SIZE, [(5, 4), (5, 3)],
     "input #1 is tensor<5x3xf32>, the program expects tensor<?x4xf32> (dim 1)"),
    (SAME_SIZE, [(5, 4), (5, 4, 1)],
     "input #1 is tensor<5x4x1xf32>, the program expects tensor<?x4xf32>"),
    # A `?` broadcast against a static 5 must be 5 (a 1 does not stretch):
    # the signature says so.
    (STATIC_TIE, [(1, 4), (5, 4)],
     "input #0 is tensor<1x4xf32>, the program expects tensor<5x4xf32>"),
])
def test_mismatches_are_named_errors(program, shapes, message):
    inputs = [np.ones(s, np.float32) for s in shapes]
    if program == STATIC_MASK:
        inputs.append(np.ones((9, 3), bool))
    _, proc = run_kiln(program, inputs, check=False)
    assert proc.returncode == 2, proc.stderr
    assert "invalid_argument" in proc.stderr and message in proc.stderr, proc.stderr


SCATTER_ADD = """
func.func @main(%x: tensor<?x6xf32>, %i: tensor<?x?xi32>, %s: tensor<?x?xf32>) -> tensor<?x6xf32> {
  %r = kiln.scatter_add %x, %i, %s {dim = 1}
      : (tensor<?x6xf32>, tensor<?x?xi32>, tensor<?x?xf32>) -> tensor<?x6xf32>
  return %r : tensor<?x6xf32>
}
"""


# scatter_add into `?` rows of a static scattered dim: the index no longer
# than the source, nor than x but in `dim` (a longer one there is fine),
# checked at run time; repeated indices add up.
@pytest.mark.parametrize("rows,idx_rows,cols", [(0, 0, 3), (3, 2, 4), (5, 5, 9), (40, 33, 1)])
def test_scatter_add_of_run_time_sizes(rows, idx_rows, cols):
    rng = np.random.default_rng(rows + idx_rows + cols)
    x = rng.uniform(-1, 1, (rows, 6)).astype(np.float32)
    i = rng.integers(0, 6, (idx_rows, cols)).astype(np.int32)
    s = rng.uniform(-1, 1, (idx_rows + 1, cols + 2)).astype(np.float32)
    (r,), _ = run_kiln(SCATTER_ADD, [x, i, s])
    want = x.astype(np.float64)
    for a in range(idx_rows):
        for b in range(cols):
            want[a, i[a, b]] += s[a, b]
    np.testing.assert_allclose(r, want, rtol=1e-5, atol=1e-6)
    _, proc = run_kiln(SCATTER_ADD, [x, i, s[:, :cols - 1]], check=False)
    assert proc.returncode == 2, proc.stderr
    assert "'kiln.scatter_add' needs at least %d" % cols in proc.stderr, proc.stderr
    if idx_rows < rows or rows == 0:
        return
    _, proc = run_kiln(SCATTER_ADD, [x[:idx_rows - 1], i, s], check=False)
    assert proc.returncode == 2, proc.stderr
    assert "input #0 dim 0 is %d but" % (idx_rows - 1) in proc.stderr, proc.stderr


def test_gather_index_no_longer_than_x_at_run_time():
    program = """
func.func @main(%x: tensor<?x40xf32>, %g: tensor<?x3xi32>) -> tensor<?x3xf32> {
  %b = kiln.gather %x, %g {dim = 1} : (tensor<?x40xf32>, tensor<?x3xi32>) -> tensor<?x3xf32>
  return %b : tensor<?x3xf32>
}
"""
    x = np.arange(160, dtype=np.float32).reshape(4, 40)
    g = np.array([[0, 39, 5], [1, 2, 3], [7, 7, 7]], np.int32)
    (b,), _ = run_kiln(program, [x, g])
    np.testing.assert_array_equal(b, x[np.arange(3)[:, None], g])
    _, proc = run_kiln(program, [x, np.zeros((5, 3), np.int32)], check=False)
    assert proc.returncode == 2, proc.stderr
    assert "input #0 dim 0 is 4 but" in proc.stderr, proc.stderr
    assert "'kiln.gather' needs at least 5" in proc.stderr, proc.stderr
    # x static, the index `?`: the error names the index's dim.
    static_x = program.replace("tensor<?x40xf32>", "tensor<4x40xf32>")
    _, proc = run_kiln(static_x, [x, np.zeros((5, 3), np.int32)], check=False)
    assert proc.returncode == 2, proc.stderr
    assert "'kiln.gather' needs 4 to be at least input #1 dim 0 (5)" in proc.stderr, proc.stderr


def test_block_scales_must_match_at_run_time():
    program = """
func.func @main(%x: tensor<?x64xf32>, %s: tensor<?x?xf32>) -> tensor<?x64xi8> {
  %q = kiln.quantize %x, %s {block_size = 32} : (tensor<?x64xf32>, tensor<?x?xf32>) -> tensor<?x64xi8>
  return %q : tensor<?x64xi8>
}
"""
    _, proc = run_kiln(program, [np.ones((4, 64), np.float32), np.ones((4, 1), np.float32)],
                       check=False)
    assert proc.returncode == 2, proc.stderr
    assert "input #1 is tensor<4x1xf32>, the program expects tensor<?x2xf32>" in proc.stderr, \
        proc.stderr


def test_static_tie_runs_at_its_size():
    x = np.full((5, 4), 2, np.float32)
    (r,), _ = run_kiln(STATIC_TIE, [x, x])
    np.testing.assert_array_equal(r, x + x)


SIZELESS = """
func.func @main(%x: tensor<?x{c}xf32>, %s: tensor<i64>, %w: tensor<3x?xf32>)
    -> (tensor<?x{c}xf32>, tensor<?x{c}xf32>, tensor<?x{c}xf32>, tensor<?x{c}xf64>,
        tensor<3x?xi32>) {{
  %z = kiln.fill {{value = 2.5 : f64}} : tensor<?x{c}xf32>
  %a = kiln.add %x, %z : (tensor<?x{c}xf32>, tensor<?x{c}xf32>) -> tensor<?x{c}xf32>
  %i = kiln.iota {{dim = 0 : i64}} : tensor<?x{c}xf32>
  %b = kiln.mul %i, %x : (tensor<?x{c}xf32>, tensor<?x{c}xf32>) -> tensor<?x{c}xf32>
  %u = kiln.random_uniform %s {{low = -1.0 : f64}} : tensor<i64> -> tensor<?x{c}xf32>
  %c = kiln.sub %x, %u : (tensor<?x{c}xf32>, tensor<?x{c}xf32>) -> tensor<?x{c}xf32>
  %n = kiln.random_normal %s : tensor<i64> -> tensor<?x{c}xf64>
  %xd = kiln.cast %x : tensor<?x{c}xf32> -> tensor<?x{c}xf64>
  %d = kiln.add %n, %xd : (tensor<?x{c}xf64>, tensor<?x{c}xf64>) -> tensor<?x{c}xf64>
  %j = kiln.iota {{dim = 1 : i64}} : tensor<?x?xi32>
  %wi = kiln.cast %w : tensor<3x?xf32> -> tensor<3x?xi32>
  %e = kiln.add %j, %wi : (tensor<?x?xi32>, tensor<3x?xi32>) -> tensor<3x?xi32>
  return %a, %b, %c, %d, %e : tensor<?x{c}xf32>, tensor<?x{c}xf32>, tensor<?x{c}xf32>,
      tensor<?x{c}xf64>, tensor<3x?xi32>
}}
"""


# fill, iota, random_uniform and random_normal of `?` dims take their
# sizes from the inputs the program ties them to (an add with x, or a
# static 3 through w): the same values as the static program's, random
# numbers bit for bit.
@pytest.mark.parametrize("rows,cols", [(0, 4), (1, 4), (5, 4), (130, 33)])
def test_fill_iota_and_random_sized_by_inputs(rows, cols):
    x = np.random.default_rng(rows).uniform(-1, 1, (rows, cols)).astype(np.float32)
    seed = np.array(7, np.int64)
    w = np.ones((3, cols), np.float32)
    got, _ = run_kiln(SIZELESS.format(c=cols), [x, seed, w])
    static = SIZELESS.format(c=cols).replace("?x" + str(cols), "%dx%d" % (rows, cols))
    static = static.replace("3x?", "3x%d" % cols).replace("?x?", "3x%d" % cols)
    want, _ = run_kiln(static, [x, seed, w])
    np.testing.assert_array_equal(got[0], x + np.float32(2.5))
    np.testing.assert_array_equal(got[1], np.arange(rows, dtype=np.float32)[:, None] * x)
    np.testing.assert_array_equal(got[4], np.arange(cols, dtype=np.int32) + np.ones((3, cols), np.int32))
    for g, s in zip(got, want):
        assert g.shape == s.shape
        np.testing.assert_array_equal(g, s)


def test_sizeless_ops_need_an_input_to_size_them():
    program = """
func.func @main(%x: tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<f32>) {
  %z = kiln.fill {value = 2.5 : f64} : tensor<?x4xf32>
  %s = kiln.reduce_sum %z {dims = array<i64: 0, 1>} : tensor<?x4xf32> -> tensor<f32>
  return %x, %s : tensor<?x4xf32>, tensor<f32>
}
"""
    _, proc = run_kiln(program, [np.ones((3, 4), np.float32)], check=False)
    assert proc.returncode == 1, proc.stderr
    assert ("program:3:8: 'kiln.fill' makes a tensor<?x4xf32> whose dim 0 no input gives "
            "the size of" in proc.stderr), proc.stderr


def test_sizeless_ops_tied_by_dead_ops_take_their_sizes():
    # The add that ties the fill to x is unused (canonicalisation deletes
    # it); the sizes are found on the program as written.
    program = """
func.func @main(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %z = kiln.fill {value = 2.5 : f64} : tensor<?x4xf32>
  %a = kiln.add %x, %z : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %z : tensor<?x4xf32>
}
"""
    (z,), _ = run_kiln(program, [np.ones((3, 4), np.float32)])
    np.testing.assert_array_equal(z, np.full((3, 4), 2.5, np.float32))
    # Programs may not say where sizes come from.
    forged = program.replace("{value = 2.5 : f64}",
                             "{value = 2.5 : f64, kiln.size_sources = array<i64: 9, 0, 0>}")
    _, proc = run_kiln(forged, [np.ones((3, 4), np.float32)], check=False)
    assert proc.returncode == 2, proc.stderr
    assert "has attribute 'kiln.size_sources', which only the compiler sets" in proc.stderr


# Attention of run-time batch with a static empty key length (0 everywhere;
# CUDA's mma.sync kernel, TMA taking no empty dim) and a run-time batch of
# 0; above rank 3 a static empty batch dim is unsupported, named.
def test_attention_with_empty_sizes():
    program = """
func.func @main(%q: tensor<?x?x64xf16>, %k: tensor<?x0x64xf16>, %q2: tensor<?x?x64xf16>)
    -> (tensor<?x?x64xf16>, tensor<?x?x64xf16>) {
  %a = kiln.attention %q, %k, %k
      : (tensor<?x?x64xf16>, tensor<?x0x64xf16>, tensor<?x0x64xf16>) -> tensor<?x?x64xf16>
  %b = kiln.attention %q2, %q2, %q2 {causal = true}
      : (tensor<?x?x64xf16>, tensor<?x?x64xf16>, tensor<?x?x64xf16>) -> tensor<?x?x64xf16>
  return %a, %b : tensor<?x?x64xf16>, tensor<?x?x64xf16>
}
"""
    q = np.ones((2, 3, 64), np.float16)
    (a, b), _ = run_kiln(program, [q, np.ones((2, 0, 64), np.float16),
                                   np.ones((0, 5, 64), np.float16)])
    np.testing.assert_array_equal(a, np.zeros((2, 3, 64), np.float16))
    assert b.shape == (0, 5, 64)
    rank4 = """
func.func @main(%q: tensor<2x0x?x8xf32>) -> tensor<2x0x?x8xf32> {
  %a = kiln.attention %q, %q, %q : (tensor<2x0x?x8xf32>, tensor<2x0x?x8xf32>, tensor<2x0x?x8xf32>) -> tensor<2x0x?x8xf32>
  return %a : tensor<2x0x?x8xf32>
}
"""
    _, proc = run_kiln(rank4, [np.ones((2, 0, 3, 8), np.float32)], check=False)
    assert proc.returncode == 1, proc.stderr
    assert "'kiln.attention' with dynamic dims (tensor<2x0x?x8xf32>) is not supported" in proc.stderr


def test_a_sum_tied_to_its_own_term_names_both_ops():
    program = """
func.func @main(%x: tensor<?xf32>) -> tensor<?xf32> {
  %p = kiln.pad %x {low = array<i64: 1>, high = array<i64: 1>, value = 0.0 : f64}
      : tensor<?xf32> -> tensor<?xf32>
  %s = kiln.add %p, %x : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  return %s : tensor<?xf32>
}
"""
    _, proc = run_kiln(program, [np.ones(3, np.float32)], check=False)
    assert proc.returncode == 1, proc.stderr
    assert ("program:3:8: 'kiln.pad' makes a run-time size a sum that includes itself once "
            "program:5:8: 'kiln.add' ties it to one of its terms" in proc.stderr), proc.stderr


def test_ops_outside_the_slice_are_unsupported():
    program = """
func.func @main(%x: tensor<?x?xf32>) -> tensor<?xf32> {
  %r = kiln.reshape %x : tensor<?x?xf32> -> tensor<?xf32>
  return %r : tensor<?xf32>
}
"""
    _, proc = run_kiln(program, [np.ones((4, 8), np.float32)], check=False)
    assert proc.returncode == 1, proc.stderr
    assert "unsupported" in proc.stderr, proc.stderr
    assert ("'kiln.reshape' with dynamic dims (tensor<?x?xf32>) is not supported yet"
            in proc.stderr), proc.stderr


def test_arg_reductions_over_a_run_time_dim_are_unsupported():
    program = """
func.func @main(%x: tensor<4x?xf32>) -> tensor<4xi64> {
  %r = kiln.argmax %x {dim = 1} : tensor<4x?xf32> -> tensor<4xi64>
  return %r : tensor<4xi64>
}
"""
    _, proc = run_kiln(program, [np.ones((4, 3), np.float32)], check=False)
    assert proc.returncode == 1, proc.stderr
    assert "'kiln.argmax' over a `?` dim (tensor<4x?xf32>) is not supported: at run time it " \
        "could be empty" in proc.stderr, proc.stderr


def test_sizes_that_can_never_agree_are_rejected_at_compile_time():
    program = """
func.func @main(%x: tensor<?xf32>, %y: tensor<5xf32>, %z: tensor<6xf32>) -> tensor<6xf32> {
  %a = kiln.add %x, %y : (tensor<?xf32>, tensor<5xf32>) -> tensor<5xf32>
  %r = kiln.reduce_sum %a {dims = array<i64: 0>} : tensor<5xf32> -> tensor<f32>
  %b = kiln.add %x, %z : (tensor<?xf32>, tensor<6xf32>) -> tensor<6xf32>
  return %b : tensor<6xf32>
}
"""
    _, proc = run_kiln(program, [np.ones(5, np.float32), np.ones(5, np.float32),
                                 np.ones(6, np.float32)], check=False)
    assert proc.returncode == 2, proc.stderr
    assert "'kiln.add' needs a dim of size 5 to be 6" in proc.stderr, proc.stderr


def test_kiln_run_needs_inputs_unless_compile_only(tmp_path):
    import subprocess
    path = tmp_path / "p.mlir"
    path.write_text(SAME_SIZE)
    proc = subprocess.run([KILN_RUN, str(path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "a program with dynamic dims needs its inputs (--input)" in proc.stderr
    proc = subprocess.run([KILN_RUN, str(path), "--compile-only"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    # The GPU targets compile it too (offline, for their baseline devices).
    for device in ["vulkan", "cuda"]:
        proc = subprocess.run([KILN_RUN, str(path), "--compile-only", "--device", device],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
