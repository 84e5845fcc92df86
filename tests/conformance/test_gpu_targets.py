"""What kiln promises across targets, checked on the CPU and on Vulkan
(lavapipe in CI; KILN_DEVICE=cuda adds CUDA on a GPU machine): identical
random bits, IEEE division (docs/precision.md), and programs that Vulkan's
device limits would reject (more storage buffers than the device has)."""
import functools
import os

import numpy as np
import pytest

from kiln_harness import run_kiln, tensor_type


@functools.lru_cache(None)
def has_vulkan():
    """Whether kiln-run finds vulkan:0 (lavapipe in CI)."""
    t = tensor_type((1,), np.float32)
    _, probe = run_kiln(f"func.func @main(%a: {t}) -> {t} {{\n  return %a : {t}\n}}\n",
                        [np.zeros(1, np.float32)], ["--device", "vulkan"], check=False)
    return probe.returncode == 0


def devices():
    extra = os.environ.get("KILN_DEVICE")
    found = ["cpu"] + (["vulkan"] if has_vulkan() else [])
    return found + ([extra] if extra and extra not in found else [])


@pytest.fixture(params=devices())
def device(request, monkeypatch):
    monkeypatch.setenv("KILN_DEVICE", request.param)
    return request.param


def run_on(device_name, monkeypatch, program, inputs):
    monkeypatch.setenv("KILN_DEVICE", device_name)
    return run_kiln(program, inputs)[0]


def random_program(op, attrs, dtype, shape):
    t = tensor_type(shape, dtype)
    return (f"func.func @main(%s: tensor<i64>) -> {t} {{\n"
            f"  %r = kiln.{op} %s {{{attrs}}} : tensor<i64> -> {t}\n  return %r : {t}\n}}\n")


@pytest.mark.parametrize("op,attrs", [
    ("random_uniform", "low = -1.0 : f64, high = 3.0 : f64"),
    ("random_normal", "mean = 0.5 : f64, std = 2.0 : f64")])
@pytest.mark.parametrize("dtype", ["f32", "f64", "f16"])
@pytest.mark.parametrize("shape,seed", [((4096,), 3), ((37, 129), 123456789), ((2, 3, 5), -7)])
def test_random_bits_are_identical_on_every_target(op, attrs, dtype, shape, seed, monkeypatch):
    program = random_program(op, attrs, dtype, shape)
    seed = np.array(seed, np.int64)
    want = run_on("cpu", monkeypatch, program, [seed])[0]
    assert np.isfinite(want).all()
    for other in devices()[1:]:
        got = run_on(other, monkeypatch, program, [seed])[0]
        differ = np.count_nonzero(got.view(np.uint8).reshape(got.size, -1) !=
                                  want.view(np.uint8).reshape(want.size, -1)) if got.size else 0
        assert differ == 0, f"{other}: {differ} of {want.size} elements differ from the CPU's bits"


def test_random_normal_keeps_its_statistics():
    program = random_program("random_normal", "mean = 2.0 : f64, std = 0.5 : f64", "f32", (512, 512))
    a = run_kiln(program, [np.array(11, np.int64)])[0][0].astype(np.float64)
    assert abs(a.mean() - 2.0) < 0.005 and abs(a.std() - 0.5) < 0.005
    z = (a - 2.0) / 0.5
    # Tails as a normal's: P(|z| > 3) = 0.0027.
    assert abs(np.mean(np.abs(z) > 3) - 0.0027) < 0.0008
    assert abs(np.mean(z ** 4) - 3.0) < 0.05


@pytest.mark.parametrize("op,ref", [("eq", np.equal), ("ne", np.not_equal), ("lt", np.less),
                                    ("le", np.less_equal), ("gt", np.greater),
                                    ("ge", np.greater_equal)])
def test_iota_i64_compared_with_a_constant(device, op, ref):
    # lavapipe miscompiled the sign extension (OpSConvert) of the 32-bit
    # index to i64: lt/le gave all false, gt/ge all true.
    t, b, c = tensor_type((3, 8), "i64"), tensor_type((3, 8), "i1"), tensor_type((), "i64")
    program = (f"func.func @main() -> {b} {{\n"
               f"  %i = kiln.iota {{dim = 1}} : {t}\n"
               f"  %c = arith.constant dense<3> : {c}\n"
               f"  %r = kiln.{op} %i, %c : ({t}, {c}) -> {b}\n  return %r : {b}\n}}\n")
    got = run_kiln(program, [])[0][0]
    np.testing.assert_array_equal(got, np.broadcast_to(ref(np.arange(8), 3), (3, 8)))


def division_operands():
    rng = np.random.default_rng(5)
    bits = rng.integers(0, 2 ** 32, 4096, dtype=np.uint64).astype(np.uint32)
    a = bits.view(np.float32).copy()
    b = rng.integers(0, 2 ** 32, 4096, dtype=np.uint64).astype(np.uint32).view(np.float32).copy()
    near = rng.uniform(0.5, 2.0, 4096).astype(np.float32)
    a = np.concatenate([a, near * rng.uniform(1, 100, 4096).astype(np.float32),
                        np.float32([0, -0.0, np.inf, -np.inf, np.nan, 1, 1e-45, 3e38, 1e-38])])
    b = np.concatenate([b, near,
                        np.float32([0, 5, np.inf, 0, 1, -0.0, 3, 1e-3, 1e10])])
    return a, b


def test_f32_division_is_correctly_rounded(device):
    a, b = division_operands()
    t = tensor_type(a.shape, np.float32)
    program = (f"func.func @main(%a: {t}, %b: {t}) -> {t} {{\n"
               f"  %r = kiln.div %a, %b : ({t}, {t}) -> {t}\n  return %r : {t}\n}}\n")
    got = run_kiln(program, [a, b])[0][0]
    with np.errstate(all="ignore"):
        want = a / b
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    # Vulkan may flush subnormals (docs/precision.md): compare the rest bitwise.
    normal = ~nan & ~((np.abs(want) < np.finfo(np.float32).tiny) & (want != 0))
    normal &= (np.abs(a) >= np.finfo(np.float32).tiny) | (a == 0) | ~np.isfinite(a)
    normal &= (np.abs(b) >= np.finfo(np.float32).tiny) | (b == 0) | ~np.isfinite(b)
    wrong = np.flatnonzero(got[normal].view(np.uint32) != want[normal].view(np.uint32))
    assert wrong.size == 0, [(a[normal][i], b[normal][i], got[normal][i], want[normal][i])
                             for i in wrong[:5]]


def test_quantize_rounds_an_exact_half_to_even(device):
    # x / scale is 25.5 correctly rounded: an approximate division (Vulkan
    # allows 2.5 ulp) gave 25 where IEEE division and round-half-even give 26.
    rng = np.random.default_rng(3)
    scale = rng.uniform(0.001, 0.1, 256).astype(np.float32)
    x = (np.float32(25.5) * scale).astype(np.float32)
    keep = (x / scale) == np.float32(25.5)
    x, scale = x[keep], scale[keep]
    t, s, q = tensor_type(x.shape, np.float32), tensor_type(x.shape, np.float32), tensor_type(x.shape, "i8")
    program = (f"func.func @main(%x: {t}, %s: {s}) -> {q} {{\n"
               f"  %r = kiln.quantize %x, %s {{block_size = 1}} : ({t}, {s}) -> {q}\n"
               f"  return %r : {q}\n}}\n")
    got = run_kiln(program, [x, scale])[0][0]
    np.testing.assert_array_equal(got, np.full(x.shape, 26, np.int8))


def sum_of_slices_program(count):
    """A 2x2-strided average pool spelled with `count` slices of one 16x16
    input: every slice a view of the same buffer."""
    t, s = tensor_type((16, 16), np.float32), tensor_type((8, 8), np.float32)
    lines, starts = [], []
    for k in range(count):
        i, j = k % 9, (k // 9) % 9
        starts.append((i, j))
        lines.append(f"  %s{k} = kiln.slice %x {{start = array<i64: {i}, {j}>, "
                     f"stop = array<i64: {i + 8}, {j + 8}>, step = array<i64: 1, 1>}} : {t} -> {s}")
    acc = "%s0"
    for k in range(1, count):
        lines.append(f"  %a{k} = kiln.add {acc}, %s{k} : ({s}, {s}) -> {s}")
        acc = f"%a{k}"
    body = "\n".join(lines)
    return f"func.func @main(%x: {t}) -> {s} {{\n{body}\n  return {acc} : {s}\n}}\n", starts


def test_sum_of_33_slices_of_one_input(device):
    # Each slice was a storage buffer of its own: 34 bindings crashed
    # lavapipe (32 allowed), and 34 memref descriptors overflowed CUDA's
    # 4 KiB of kernel parameters. Now the kernel reads the input once.
    program, starts = sum_of_slices_program(33)
    x = np.random.default_rng(1).uniform(-1, 1, (16, 16)).astype(np.float32)
    got = run_kiln(program, [x])[0][0]
    want = np.zeros((8, 8), np.float32)
    for i, j in starts:
        want = want + x[i:i + 8, j:j + 8]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n", [31, 32, 40, 70])
def test_more_inputs_than_vulkan_binds_are_split_into_kernels(device, n):
    # n distinct inputs added in one chain: fused into one kernel, it would
    # bind n + 1 storage buffers, beyond lavapipe's 32 from n = 32 (it
    # crashed the driver); kernel formation splits the chain instead.
    t = tensor_type((256,), np.float32)
    args = ", ".join(f"%x{k}: {t}" for k in range(n))
    lines, acc = [], "%x0"
    for k in range(1, n):
        lines.append(f"  %a{k} = kiln.add {acc}, %x{k} : ({t}, {t}) -> {t}")
        acc = f"%a{k}"
    program = f"func.func @main({args}) -> {t} {{\n" + "\n".join(lines) + f"\n  return {acc} : {t}\n}}\n"
    inputs = [np.full(256, k, np.float32) for k in range(n)]
    np.testing.assert_array_equal(run_kiln(program, inputs)[0][0],
                                  np.full(256, sum(range(n)), np.float32))


ON_CUDA = pytest.mark.skipif(not os.environ.get("KILN_DEVICE", "").startswith("cuda"),
                             reason="needs KILN_DEVICE=cuda (a GPU machine)")


@ON_CUDA
def test_cuda_kernels_are_cubins_from_the_toolkits_ptxas(monkeypatch, tmp_path):
    # KILN_PTXAS makes a device's kernels ptxas's cubins (the driver's JIT
    # serializes wgmma chains: docs/cuda.md).
    ptxas = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "ptxas")
    if not os.path.exists(ptxas):
        pytest.skip("no CUDA toolkit (ptxas) on this machine")
    monkeypatch.setenv("KILN_CACHE_DIR", "")
    monkeypatch.setenv("KILN_PTXAS", ptxas)
    dump = tmp_path / "dump"
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = tensor_type((2, 3), np.float32)
    program = (f"func.func @main(%a: {t}) -> {t} {{\n"
               f"  %r = kiln.neg %a : {t}\n  return %r : {t}\n}}\n")
    got = run_kiln(program, [x], ["--dump-dir", str(dump)])[0][0]
    np.testing.assert_array_equal(got, -x)
    assert list(dump.glob("*/4-kernel0.cubin")), sorted(p.name for p in dump.glob("*/*"))


@ON_CUDA
@pytest.mark.parametrize("ptxas", [
    "#!/bin/sh\necho 'ptxas fatal: out of luck' >&2\nexit 3\n",          # fails
    "#!/bin/sh\nwhile [ $# -gt 1 ]; do [ \"$1\" = -o ] && out=$2; shift; done\n"
    "printf '\\177ELF not a cubin' > \"$out\"\n",                          # a cubin that does not load
])
def test_cuda_falls_back_to_the_jit_where_ptxas_lets_it_down(ptxas, monkeypatch, tmp_path):
    script = tmp_path / "ptxas"
    script.write_text(ptxas)
    script.chmod(0o755)
    monkeypatch.setenv("KILN_CACHE_DIR", "")
    monkeypatch.setenv("KILN_PTXAS", str(script))
    t = tensor_type((2, 3), np.float32)
    program = (f"func.func @main(%a: {t}, %b: {t}) -> {t} {{\n"
               f"  %s = kiln.add %a, %b : ({t}, {t}) -> {t}\n"
               f"  %r = kiln.exp %s : {t}\n  return %r : {t}\n}}\n")
    x = np.arange(6, dtype=np.float32).reshape(2, 3) / 6
    results, proc = run_kiln(program, [x, x])
    np.testing.assert_allclose(results[0], np.exp(2 * x), rtol=1e-6)
    assert proc.stderr.count("kernels go through the driver's JIT from now on") == 1, proc.stderr
