"""Backend services from Python: programs, seed, sync, profile, capture, memory, dtypes."""
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
