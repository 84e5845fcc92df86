"""Backend services from Python: programs, seed, sync, profile, capture, memory, dtypes."""
import os
import subprocess
import sys

import numpy as np
import pytest

import kiln

PROGRAM = """
func.func @main(%x: tensor<2x4xf32>, %y: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2xf32>) {
  %s = kiln.add %x, %y : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %r = kiln.reduce_sum %s {dims = array<i64: 1>} : tensor<2x4xf32> -> tensor<2xf32>
  return %s, %r : tensor<2x4xf32>, tensor<2xf32>
}
"""


def test_compile_returns_a_callable(device):
    program = kiln.compile(PROGRAM, device)
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    s, r = program(kiln.tensor(x, device), kiln.tensor(x, device))
    np.testing.assert_array_equal(s.numpy(), 2 * x)
    np.testing.assert_array_equal(r.numpy(), (2 * x).sum(1))
    with pytest.raises(kiln.InvalidArgument):
        program(kiln.tensor(x, device))
    # NumPy arrays go to the program's device (pybind11's error before).
    s, _ = program(x, x)
    np.testing.assert_array_equal(s.numpy(), 2 * x)
    with pytest.raises(TypeError, match="input 1: a program takes kiln tensors or NumPy arrays"):
        program(x, x.tolist())


def test_name_sync_and_devices(device):
    backend = kiln.backend(device)
    assert backend.name.startswith(device.split(":")[0])
    backend.sync()
    backend.flush()
    assert "cpu" in kiln.devices()


def test_profile_is_a_context_manager(device):
    backend = kiln.backend(device)
    x = kiln.tensor(np.ones((64, 64), np.float32), device)
    with backend.profile() as window:
        kiln.exp(x)
    assert window.milliseconds is not None and window.milliseconds >= 0


def test_capture_and_replay(device):
    backend = kiln.backend(device)
    x = kiln.tensor(np.ones((4,), np.float32), device)
    with backend.capture() as graph:
        y = kiln.multiply(kiln.add(x, x), 3.0)
    assert graph.launch_count >= 2
    graph.replay()
    np.testing.assert_array_equal(y.numpy(), np.full(4, 6.0, np.float32))
    kiln.write(x, np.full(4, 2.0, np.float32))
    graph.replay()
    np.testing.assert_array_equal(y.numpy(), np.full(4, 12.0, np.float32))


def test_memory_reports_and_dtype_queries(device):
    backend = kiln.backend(device)
    keep = kiln.full((1024,), 1.0, device=device)
    usage = backend.memory_pool_usage()
    assert usage["bytes_in_use"] >= keep.nbytes
    report = backend.memory_pool_report()
    assert report and {"name", "pages", "pages_peak"} <= set(report[0])
    backend.memory_cleanup()
    assert backend.supports_dtype("float32")
    assert "storage" in backend.dtype_usage("float32")
    assert "arithmetic" in backend.dtype_usage("float32")
    with pytest.raises(kiln.InvalidArgument):
        backend.supports_dtype("float128")


def test_bfloat16_tensors_from_float_data(device):
    if not kiln.backend(device).supports_dtype("bfloat16"):
        pytest.skip("no bfloat16 on " + device)
    x = np.array([1.0, 1.00390625, 3.14159265, -2.5e-3], np.float32)
    t = kiln.tensor(x, device, dtype="bfloat16")
    assert t.dtype == "bfloat16" and t.shape == (4,)
    # bf16 keeps 8 significant bits: 1 + 2^-8 rounds to 1, pi to 3.140625.
    np.testing.assert_array_equal(t.astype("float32").numpy(),
                                  np.array([1.0, 1.0, 3.140625, -0.0025024414], np.float32))


@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float8_e5m2"])
def test_float8_tensors_from_float_data(device, dtype):
    """f8 is a storage type: made by a cast, read back through one; NumPy
    and DLPack 0.6 have no such type, so both refuse with its name."""
    x = np.array([1.0, 1.0625, 1.1875, -0.3, 500.0], np.float32)
    t = kiln.tensor(x, device, dtype=dtype)
    assert t.dtype == dtype and t.shape == (5,) and t.nbytes == 5
    # E4M3: 3 mantissa bits, ties to even, > 464 is NaN; E5M2: 2 bits.
    want = ([1.0, 1.0, 1.25, -0.3125, np.nan] if dtype == "float8_e4m3fn"
            else [1.0, 1.0, 1.25, -0.3125, 512.0])
    np.testing.assert_array_equal(t.astype("float32").numpy(), np.array(want, np.float32))
    with pytest.raises(kiln.Unsupported, match=dtype):
        t.numpy()
    with pytest.raises(BufferError, match="no f8"):
        t.__dlpack__(stream=None if device == "cpu" else 1)


def test_tf32_matmuls_are_asked_for_per_program(device):
    """tf32=True is a request: CUDA takes its tensor cores (10-bit inputs,
    so a visibly larger error on a long K), other devices stay exact f32."""
    rng = np.random.default_rng(0)
    a, b = rng.uniform(-1, 1, (64, 512)), rng.uniform(-1, 1, (512, 64))
    t = "tensor<64x512xf32>, tensor<512x64xf32>"
    source = ("func.func @main(%a: tensor<64x512xf32>, %b: tensor<512x64xf32>) -> tensor<64x64xf32> {\n"
              f"  %r = kiln.matmul %a, %b : ({t}) -> tensor<64x64xf32>\n"
              "  return %r : tensor<64x64xf32>\n}\n")
    inputs = [kiln.tensor(a.astype(np.float32), device), kiln.tensor(b.astype(np.float32), device)]
    errors = {tf32: np.abs(kiln.compile(source, device, tf32=tf32)(*inputs).numpy() - a @ b).max()
              for tf32 in (False, True)}
    assert errors[False] < 1e-4, errors
    if device.startswith("cuda"):
        assert 1e-3 < errors[True] < 0.1, errors
    else:
        assert errors[True] < 1e-4, errors


DYNAMIC_SOFTMAX = """
func.func @main(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  %0 = kiln.softmax %x {dim = 1} : tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}
"""


def softmax_rows(x):
    e = np.exp(x - x.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def test_programs_with_dynamic_dims_run_on_device_tensors(device):
    program = kiln.compile(DYNAMIC_SOFTMAX, device)
    for rows in (0, 1, 5, 33):
        x = np.random.default_rng(rows).uniform(-2, 2, (rows, 16)).astype(np.float32)
        y = program(kiln.tensor(x, device))
        assert y.shape == (rows, 16)
        np.testing.assert_allclose(y.numpy(), softmax_rows(x), rtol=1e-5, atol=1e-6)
    with pytest.raises(kiln.InvalidArgument, match="dim 1"):
        program(kiln.tensor(np.ones((2, 8), np.float32), device))


def test_auto_dynamic_softmax_compiles_twice_for_forty_sizes(device):
    backend = kiln.backend(device)
    assert backend.auto_dynamic
    before = backend.compile_count
    for rows in range(1, 41):
        x = np.random.default_rng(rows).uniform(-2, 2, (rows, 23)).astype(np.float32)
        np.testing.assert_allclose(kiln.softmax(kiln.tensor(x, device), 1).numpy(),
                                   softmax_rows(x), rtol=1e-5, atol=1e-6)
    # Rows 1 static, then one kernel dynamic in the rows.
    assert backend.compile_count - before <= 2


def test_auto_dynamic_attention_of_batches_and_lengths_compiles_thrice(device):
    # [batch, heads, length, 64] of six batch and length pairs: the static
    # first, then [?, 4, ?, 64] (a `?` batch above static heads, session
    # 48; each pair its own kernel before), and [1, 4, ?, 64] for batch 1.
    backend = kiln.backend(device)
    before = backend.compile_count
    rng = np.random.default_rng(4)
    for batch, length in [(1, 5), (2, 7), (3, 9), (1, 12), (4, 3), (2, 30)]:
        q = rng.uniform(-1, 1, (batch, 4, length, 64)).astype(np.float32)
        x = kiln.tensor(q, device)
        got = kiln.attention(x, x, x, causal=True).numpy()
        s = q @ np.swapaxes(q, -1, -2) / 8.0
        s = np.where(np.tril(np.ones((length, length), bool)), s, -np.inf)
        p = np.exp(s - s.max(axis=-1, keepdims=True))
        np.testing.assert_allclose(got, (p / p.sum(axis=-1, keepdims=True)) @ q,
                                   rtol=1e-4, atol=1e-5)
    assert backend.compile_count - before <= 3


def test_auto_dynamic_can_be_turned_off(device):
    backend = kiln.backend(device)
    backend.auto_dynamic = False
    try:
        before = backend.compile_count
        for rows in (2, 3, 4):
            kiln.softmax(kiln.tensor(np.ones((rows, 29), np.float32), device), 1)
        assert backend.compile_count - before == 3
    finally:
        backend.auto_dynamic = True


def test_kiln_auto_dynamic_0_turns_it_off():
    code = "import kiln; print(kiln.backend('cpu').auto_dynamic)"
    env = dict(os.environ, KILN_AUTO_DYNAMIC="0",
               PYTHONPATH=os.path.dirname(os.path.dirname(kiln.__file__)))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "False"
