"""Errors raise the class of their kind, carry the verifier's message, and leak nothing."""
import gc

import numpy as np
import pytest

import kiln


def test_classes_derive_from_one_base_and_the_python_meaning():
    for cls in (kiln.InvalidArgument, kiln.CompileError, kiln.LaunchError, kiln.OutOfMemory,
                kiln.Unsupported, kiln.DevicePoisoned):
        assert issubclass(cls, kiln.Error)
    assert issubclass(kiln.InvalidArgument, ValueError)
    assert issubclass(kiln.OutOfMemory, MemoryError)
    assert issubclass(kiln.Unsupported, NotImplementedError)


def test_bad_operands_raise_invalid_argument_with_the_verifiers_message():
    a = kiln.tensor(np.ones((2, 3), np.float32))
    b = kiln.tensor(np.ones((4,), np.float32))
    with pytest.raises(kiln.InvalidArgument, match="kiln.add.*broadcast"):
        kiln.add(a, b)
    with pytest.raises(kiln.InvalidArgument, match="no implicit promotion"):
        kiln.add(a, kiln.tensor(np.ones((2, 3), np.int32)))
    with pytest.raises(kiln.InvalidArgument, match="out of range"):
        kiln.softmax(a, axis=2)
    # The axis as given (-3 was named as -1, the value with the rank added).
    with pytest.raises(kiln.InvalidArgument, match="axis -3 is out of range for a tensor of rank 2"):
        kiln.softmax(a, axis=-3)
    with pytest.raises(kiln.InvalidArgument, match="axis -7 is out of range"):
        kiln.sum(a, axis=-7)
    # Shapes named as shapes (select's result took the condition's i1, and
    # the verifier reported a dtype mismatch).
    with pytest.raises(kiln.InvalidArgument, match="kiln.select.*not broadcast-compatible"):
        kiln.where(kiln.tensor(np.array([True, False, True])), b[:2], b[:2])
    with pytest.raises(kiln.InvalidArgument, match="contraction sizes differ"):
        kiln.matmul(a, a)
    # Generator shapes: these were pybind11's "incompatible function
    # arguments" or "'int' object is not iterable".
    assert kiln.full(3, 1.0).shape == (3,) and kiln.iota(4, 0).shape == (4,)
    with pytest.raises(kiln.InvalidArgument, match="does not fit in an int64"):
        kiln.full((2**63,), 1.0)
    for bad in [(2.9,), (True, 2), ("a",)]:
        with pytest.raises(kiln.InvalidArgument, match="a shape takes whole numbers"):
            kiln.zeros(bad)
    backend = kiln.backend("cpu")
    backend.seed(2**64 - 1)
    for bad in (-1, 2**70, 1.5):  # pybind11's "incompatible function arguments"
        with pytest.raises(kiln.InvalidArgument, match=r"is not a whole number in \[0, 2\*\*64\)"):
            backend.seed(bad)
    backend.seed(0)
    # "too many values to unpack", an AttributeError of None
    with pytest.raises(kiln.InvalidArgument, match=r"an \(h, w\) pair, got \(1, 1, 1\)"):
        kiln.conv2d(kiln.full((1, 1, 4, 4), 1.0), kiln.full((1, 1, 3, 3), 1.0), stride=(1, 1, 1))
    with pytest.raises(kiln.InvalidArgument, match='approximate is "none" or "tanh"'):
        kiln.gelu(a, approximate=None)
    # Ops whose result type the caller gives are verified as a one-op
    # program: its position and generic-form note were in the message.
    with pytest.raises(kiln.InvalidArgument) as error:
        kiln.reshape(a, (4,))
    assert str(error.value).startswith("kiln.reshape: 'kiln.reshape' op cannot reshape 6 elements")
    assert "program:" not in str(error.value) and "note:" not in str(error.value)
    with pytest.raises(kiln.InvalidArgument, match="^kiln.random_uniform: .* expected float$"):
        kiln.random_uniform((2,), dtype="int32")
    with pytest.raises(kiln.InvalidArgument, match="at least one tensor"):
        kiln.concatenate([])
    with pytest.raises(TypeError, match="not str"):
        a + "a"
    with pytest.raises(kiln.InvalidArgument, match="no dtype 'complex64'"):
        kiln.tensor(np.ones(2, np.complex64))


def test_bad_programs_raise_and_unknown_devices_too():
    with pytest.raises(kiln.Error):
        kiln.compile("func.func @main( {")
    with pytest.raises(kiln.InvalidArgument):
        kiln.backend("tpu:0")
    with pytest.raises(kiln.Unsupported, match="bfloat16"):
        kiln.astype(kiln.full((2,), 1.0), "bfloat16").numpy()


def test_failures_leak_no_device_memory():
    backend = kiln.backend("cpu")
    a = kiln.tensor(np.ones((64, 64), np.float32))
    b = kiln.tensor(np.ones((3,), np.float32))
    for _ in range(3):  # warm: caches and pools settle
        with pytest.raises(kiln.InvalidArgument):
            kiln.add(a, b)
    gc.collect()
    before = backend.memory_pool_usage()["bytes_in_use"]
    for _ in range(50):
        with pytest.raises(kiln.InvalidArgument):
            kiln.add(a, b)
        with pytest.raises(kiln.InvalidArgument):
            kiln.reshape(a, (5, 5))
    gc.collect()
    assert backend.memory_pool_usage()["bytes_in_use"] == before


def test_released_tensors_give_their_memory_back():
    backend = kiln.backend("cpu")
    gc.collect()
    before = backend.memory_pool_usage()["bytes_in_use"]
    tensors = [kiln.full((256, 256), 1.0) for _ in range(4)]
    assert backend.memory_pool_usage()["bytes_in_use"] >= before + 4 * 256 * 256 * 4
    del tensors
    gc.collect()
    assert backend.memory_pool_usage()["bytes_in_use"] == before
