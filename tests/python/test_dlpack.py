"""DLPack both ways with NumPy and torch (CPU): no copies, same data pointer."""
import gc
import weakref

import numpy as np
import pytest

import kiln


def aligned(shape, dtype=np.float32):
    """A NumPy array whose data is 64-byte aligned (kiln adopts 16-aligned data)."""
    n = int(np.prod(shape)) * np.dtype(dtype).itemsize
    raw = np.empty(n + 64, np.uint8)
    start = -raw.ctypes.data % 64
    a = raw[start:start + n].view(dtype).reshape(shape)
    a[...] = np.arange(a.size).reshape(shape)
    return a


def test_numpy_to_kiln_is_zero_copy():
    a = aligned((4, 5))
    t = kiln.from_dlpack(a)
    assert t.shape == (4, 5) and t.dtype == "float32" and t.device == "cpu:0"
    back = np.from_dlpack(t)
    assert back.ctypes.data == a.ctypes.data
    a[0, 0] = 42.0  # the same memory: kiln sees the write
    assert kiln.add(t, t).numpy()[0, 0] == 84.0


def test_kiln_to_numpy_is_zero_copy_and_keeps_the_tensor():
    t = kiln.multiply(kiln.full((3, 3), 2.0), 3.0)
    first = np.from_dlpack(t)
    second = np.from_dlpack(t)
    assert first.ctypes.data == second.ctypes.data
    del t
    gc.collect()
    np.testing.assert_array_equal(first, np.full((3, 3), 6.0, np.float32))


def test_the_producer_lives_as_long_as_the_kiln_tensor():
    class Owner(np.ndarray):
        pass
    a = aligned((8,)).view(Owner)
    alive = weakref.ref(a)
    t = kiln.from_dlpack(a)
    del a
    gc.collect()
    assert alive() is not None
    del t
    gc.collect()
    assert alive() is None


def test_strided_numpy_is_copied():
    a = aligned((4, 6))[:, ::2]
    t = kiln.from_dlpack(a)
    np.testing.assert_array_equal(t.numpy(), a)


def test_dlpack_device_and_stream_rules():
    t = kiln.full((2,), 1.0)
    assert t.__dlpack_device__() == (1, 0)
    with pytest.raises(BufferError):
        t.__dlpack__(stream=1)  # a CPU tensor takes no stream


def test_dlpack_1_keywords():
    # max_version, dl_device and copy (the array API's __dlpack__) were a
    # TypeError. The capsule stays DLPack 0.x's; copy=True owns a copy.
    t = kiln.tensor(np.arange(4, dtype=np.float32))

    class Producer:
        def __init__(self, capsule):
            self.capsule = capsule

        def __dlpack__(self, stream=None):
            return self.capsule

        def __dlpack_device__(self):
            return t.__dlpack_device__()

    def data(**keywords):
        return np.from_dlpack(Producer(t.__dlpack__(**keywords)))

    shared = data(max_version=(1, 0), copy=False, dl_device=(1, 0))
    copied = data(copy=True)
    np.testing.assert_array_equal(copied, shared)
    assert shared.ctypes.data == data().ctypes.data != copied.ctypes.data
    with pytest.raises(BufferError, match="not the dl_device asked for"):
        t.__dlpack__(dl_device=(2, 0))


torch = pytest.importorskip("torch")


def test_torch_to_kiln_and_back_share_memory():
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    k = kiln.from_dlpack(x)
    assert np.from_dlpack(k).ctypes.data == x.data_ptr()
    y = torch.utils.dlpack.from_dlpack(k)
    assert y.data_ptr() == x.data_ptr()
    x[0, 0] = 7.0
    assert y[0, 0].item() == 7.0


def test_kiln_result_to_torch_is_zero_copy():
    k = kiln.softmax(kiln.tensor(np.ones((2, 4), np.float32)))
    y = torch.utils.dlpack.from_dlpack(k)
    assert y.data_ptr() == np.from_dlpack(k).ctypes.data
    torch.testing.assert_close(y, torch.full((2, 4), 0.25))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "int8", "int64", "uint8"])
def test_torch_dtypes_round_trip(dtype):
    x = torch.arange(16).to(getattr(torch, dtype))
    k = kiln.from_dlpack(x)
    assert k.dtype == dtype
    assert torch.equal(torch.utils.dlpack.from_dlpack(k), x)
