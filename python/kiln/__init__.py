"""kiln: a JIT-compiling tensor kernel engine, from Python.

    import numpy as np, kiln
    x = kiln.tensor(np.ones((2, 3), np.float32))          # device="cpu"
    y = kiln.softmax(x * 2.0, axis=-1)
    y.numpy()

Devices are "cpu", "vulkan[:N]" and "cuda[:N]". Tensors pass to and from
NumPy and torch without copies through DLPack (``kiln.from_dlpack(a)``,
``np.from_dlpack(t)``, ``torch.utils.dlpack.from_dlpack(t)``). Errors are
``kiln.Error`` subclasses, one per kind. ``kiln.torch.backend`` compiles
torch FX graphs into kiln programs.
"""
import builtins as _builtins
import contextlib as _contextlib
import importlib as _importlib
import numbers as _numbers
import operator as _operator

import numpy as _np

from kiln import _kiln


def _expose_jit_runtime():
    """kiln's CPU kernels call MLIR's runtime libraries (async, runner
    utils), which its JIT looks up in the process's global scope; the
    libraries of an extension module load into a local one, so they are
    re-opened here into the global scope (already loaded: no copy)."""
    import ctypes
    import os
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if "/libmlir_" in line}
    for path in paths:
        ctypes.CDLL(path, mode=os.RTLD_GLOBAL | os.RTLD_NOLOAD)


_expose_jit_runtime()
from kiln._kiln import (Backend, CompileError, DevicePoisoned, Error, Graph,
                        InvalidArgument, LaunchError, OutOfMemory, Tensor,
                        Unsupported)
from kiln._ops import *  # noqa: F401,F403  (every op, NumPy names)
from kiln._ops import DIALECT_OPS, slice as _slice
from kiln import _ops

__all__ = ["Backend", "CompileError", "DevicePoisoned", "Error", "Graph",
           "InvalidArgument", "LaunchError", "OutOfMemory", "Program", "Tensor",
           "Unsupported", "backend", "compile", "device_count", "devices",
           "from_dlpack", "tensor", "write"] + _ops.__all__

device_count = _kiln.device_count


def devices():
    """The devices of this machine: ["cpu", "vulkan:0", ...]."""
    found = ["cpu"]
    for kind in ("vulkan", "cuda"):
        found += ["%s:%d" % (kind, i) for i in range(_kiln.device_count(kind))]
    return found


def backend(device="cpu"):
    """The process's backend of `device`: seed, sync, profile, capture, memory, dtypes."""
    return _kiln.backend(device)


def tensor(data, device="cpu", dtype=None):
    """A kiln tensor with a copy of `data` (array-like) on `device`; dtypes
    NumPy lacks (bfloat16, float8_e4m3fn, float8_e5m2) are cast from
    float32 on the device."""
    if dtype in ("bfloat16", "bf16", "float8_e4m3fn", "float8_e5m2"):
        narrow = "bfloat16" if dtype == "bf16" else dtype
        return tensor(_np.asarray(data, dtype=_np.float32), device).astype(narrow)
    array = _np.asarray(data, dtype=dtype, order="C")  # ascontiguousarray makes 0-d 1-d
    if array.dtype == _np.float64 and dtype is None and not isinstance(data, _np.ndarray):
        array = array.astype(_np.float32)  # Python floats: float32, as torch
    return _kiln.tensor(array, device)


def from_dlpack(x):
    """A kiln tensor over `x`'s memory (NumPy, torch, or anything with
    __dlpack__), without a copy. A CPU array that is strided or not 16-byte
    aligned is copied instead (kiln's kernels need dense, aligned buffers)."""
    device_type, _ = x.__dlpack_device__()
    cuda = device_type == 2
    capsule = x.__dlpack__(stream=1) if cuda else x.__dlpack__()
    adopted = _kiln.import_capsule(capsule)
    if adopted is not None:
        return adopted
    if cuda:
        raise BufferError("from_dlpack: the CUDA tensor is strided or misaligned; "
                          "make it contiguous first")
    return tensor(_np.from_dlpack(x))


class Program:
    """A compiled kiln program: call it on tensors of its device."""

    def __init__(self, source, device="cpu", tf32=False):
        self._program = _kiln.compile(source, device, tf32)

    device = property(lambda self: self._program.device)
    kernel_count = property(lambda self: self._program.kernel_count)

    def __call__(self, *inputs):
        # NumPy arrays are copied to the program's device (they were
        # pybind11's "incompatible function arguments").
        inputs = [tensor(x, self.device) if isinstance(x, _np.ndarray) else x for x in inputs]
        for i, x in enumerate(inputs):
            if not isinstance(x, Tensor):
                raise TypeError("input %d: a program takes kiln tensors or NumPy arrays, not %s"
                                % (i, type(x).__name__))
        outputs = self._program.run(list(inputs))
        return outputs[0] if len(outputs) == 1 else tuple(outputs)


def compile(source, device="cpu", tf32=False):
    """Compiles program text (a func.func @main of kiln ops) for `device`.
    tf32=True lets CUDA run f32 matmuls on tensor cores with tf32 inputs
    (as torch's allow_tf32); other devices ignore it."""
    return Program(source, device, tf32)


# -- backend services as context managers --------------------------------------

class Profile:
    """The device time of a `with backend.profile() as p:` block (None when
    the window could not be measured, e.g. it held a capture)."""
    milliseconds = None


@_contextlib.contextmanager
def _profile(self):
    token = self.profile_start()
    window = Profile()
    try:
        yield window
    except BaseException:
        self.profile_abandon(token)
        raise
    window.milliseconds = self.profile_end(token)


class Capture:
    """The graph of a `with backend.capture() as g:` block: g.replay() reruns
    its launches on the buffers the capture saw (refresh inputs with
    kiln.write)."""

    def __init__(self, backend):
        self._backend = backend
        self.graph = None

    @property
    def launch_count(self):
        return self.graph.launch_count

    def replay(self):
        self._backend.graph_replay(self.graph)


@_contextlib.contextmanager
def _capture(self):
    self.graph_prepare()
    self.graph_start_capture()
    captured = Capture(self)
    try:
        yield captured
    finally:
        graph = self.graph_stop_capture()
        self.memory_persistent_allocations(False)
    captured.graph = graph


Backend.profile = _profile
Backend.capture = _capture


def write(tensor, data):
    """Copies `data` (an array, or a nested list of the tensor's dtype) into
    `tensor`, which keeps its shape and dtype."""
    if not isinstance(data, _np.ndarray):  # a list: the tensor's dtype, as NumPy would read it
        numpy_dtype = None if tensor.dtype in _ops._NON_NUMPY_DTYPES else tensor.dtype
        data = _np.asarray(data, dtype=numpy_dtype)
    _kiln.write(tensor, _np.asarray(data, order="C"))


# -- tensor methods and operators -------------------------------------------------

def _reflected(fn):
    return lambda self, other: fn(other, self)


def _index(k):
    """An index of a dim (an int or a NumPy integer), else None."""
    if isinstance(k, (bool, _np.bool_)):
        return None  # NumPy takes booleans as masks, not as 0 and 1
    try:
        return _operator.index(k)
    except TypeError:
        return None


def _getitem(self, key):
    """Basic indexing: ints, slices with positive steps, and Ellipsis."""
    key = key if isinstance(key, tuple) else (key,)
    for k in key:
        if k is not Ellipsis and not isinstance(k, _builtins.slice) and _index(k) is None:
            raise IndexError("kiln tensors take ints, slices and ... as indices, not %r (%s)"
                             % (k, type(k).__name__))
    if _builtins.sum(k is Ellipsis for k in key) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if len(key) - (Ellipsis in key) > self.ndim:
        raise IndexError("too many indices for a tensor of rank %d: %d were given"
                         % (self.ndim, len(key) - (Ellipsis in key)))
    if Ellipsis in key:
        at = key.index(Ellipsis)
        key = key[:at] + (_builtins.slice(None),) * (self.ndim - len(key) + 1) + key[at + 1:]
    key = key + (_builtins.slice(None),) * (self.ndim - len(key))
    start, stop, step, squeeze = [], [], [], []
    for dim, (k, size) in enumerate(zip(key, self.shape)):
        if isinstance(k, _builtins.slice):
            s = k.indices(size)
            if s[2] <= 0:
                raise InvalidArgument("kiln tensors take positive slice steps")
            start.append(s[0])
            stop.append(_builtins.max(s[0], s[1]))
            step.append(s[2])
        else:
            i = _index(k) + size if _index(k) < 0 else _index(k)
            if not 0 <= i < size:
                raise IndexError("index %d is out of bounds for dim %d of size %d" % (k, dim, size))
            start.append(i)
            stop.append(i + 1)
            step.append(1)
            squeeze.append(dim)
    out = _slice(self, start, stop, step)
    if squeeze:
        out = _ops.reshape(out, [d for i, d in enumerate(out.shape) if i not in squeeze])
    return out


def _comparison(op):
    # Element-wise against tensors and numbers; anything else (None, a
    # string) is not equal, as Python compares unrelated objects.
    def compare(self, other):
        if isinstance(other, (Tensor, _numbers.Number)):
            return op(self, other)
        return NotImplemented
    return compare


def _bool(self):
    # A tensor object was always true: `if kiln.any(mask):` took the branch
    # for an all-false mask.
    if self.size != 1:
        raise ValueError("the truth value of a kiln tensor of %d elements is ambiguous: "
                         "use kiln.any or kiln.all" % self.size)
    return bool(self.numpy().reshape(()))


def _repr(self):
    return "kiln.Tensor(shape=%s, dtype=%s, device=%s)" % (self.shape, self.dtype, self.device)

for _name, _fn in {
    "__add__": _ops.add, "__radd__": _reflected(_ops.add),
    "__sub__": _ops.subtract, "__rsub__": _reflected(_ops.subtract),
    "__mul__": _ops.multiply, "__rmul__": _reflected(_ops.multiply),
    "__truediv__": _ops.divide, "__rtruediv__": _reflected(_ops.divide),
    "__pow__": _ops.power, "__rpow__": _reflected(_ops.power), "__matmul__": _ops.matmul,
    "__neg__": _ops.negative, "__abs__": _ops.absolute, "__invert__": _ops.bitwise_not,
    "__and__": _ops.bitwise_and, "__or__": _ops.bitwise_or, "__xor__": _ops.bitwise_xor,
    "__lt__": _ops.less, "__le__": _ops.less_equal, "__gt__": _ops.greater,
    "__ge__": _ops.greater_equal,
    # Element-wise, as NumPy and torch; the tensor stays hashable by identity.
    "__eq__": _comparison(_ops.equal), "__ne__": _comparison(_ops.not_equal), "__hash__": object.__hash__,
    "__bool__": _bool, "__getitem__": _getitem, "__repr__": _repr,
    "reshape": lambda self, *shape: _ops.reshape(
        self, shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape),
    "astype": _ops.astype, "transpose": _ops.transpose, "sum": _ops.sum,
    "mean": _ops.mean, "max": _ops.max, "min": _ops.min,
    "T": property(lambda self: _ops.transpose(self)),
    "__array__": lambda self, dtype=None: self.numpy() if dtype is None else self.numpy().astype(dtype),
}.items():
    setattr(Tensor, _name, _fn)


def __getattr__(name):
    # kiln.torch imports torch, which is slow: only when asked for.
    if name == "torch":
        return _importlib.import_module("kiln.torch")
    raise AttributeError("module 'kiln' has no attribute %r" % name)
