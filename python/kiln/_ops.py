"""Every op of the kiln dialect as a function with a NumPy-style name.

Attributes are keyword arguments (``sum(x, axis=1, keepdims=True)``); axes
may be negative. Result types come from the dialect (kiln.ops in C++), so
no call names a result shape. Python scalars next to a tensor become rank-0
tensors of its dtype (kiln does no implicit promotion between tensors).
"""
import math
import operator
import struct

import numpy as _np

from kiln import _kiln
from kiln._kiln import InvalidArgument, Tensor

_call = _kiln.call

# The dialect op behind each function (a test checks every op has one).
DIALECT_OPS = {}


def _op(dialect_name, *names):
    def register(fn):
        for name in names or (fn.__name__,):
            DIALECT_OPS.setdefault("kiln." + dialect_name, name)
        return fn
    return register


# -- attribute spelling -------------------------------------------------------

def _list(values):
    return "array<i64" + (": " + ", ".join(str(int(v)) for v in values) if values else "") + ">"


def _f64(value):
    value = float(value)
    if not math.isfinite(value):  # MLIR float literals have no inf/nan
        return "0x%016X : f64" % struct.unpack("<Q", struct.pack("<d", value))[0]
    text = repr(value)  # shortest round trip; MLIR wants a point: 1e-05 -> 1.0e-05
    if "." not in text:
        mantissa, e, exponent = text.partition("e")
        text = mantissa + ".0" + e + exponent
    return text + " : f64"


def _axis(axis, ndim):
    # Checked here: the verifier would see the axis with ndim added and name
    # a value the caller never passed (-3 of rank 2 as -1).
    axis = int(axis)
    if not -ndim <= axis < ndim:
        raise InvalidArgument("axis %d is out of range for a tensor of rank %d" % (axis, ndim))
    return axis + ndim if axis < 0 else axis


def _axes(axis, ndim):
    if axis is None:
        return list(range(ndim))
    if isinstance(axis, int):
        axis = (axis,)
    return [_axis(a, ndim) for a in axis]


def _scalar_like(value, like):
    return _kiln.apply("kiln.fill", [], like.dtype, [], "value = " + _f64(value), like.device)


def _tensors(*args):
    """The arguments as tensors: scalars take the dtype of the tensor beside them."""
    like = next((a for a in args if isinstance(a, Tensor)), None)
    if like is None:
        raise TypeError("kiln ops need at least one kiln.Tensor operand")
    return [a if isinstance(a, Tensor) else _operand_like(a, like) for a in args]


def _operand_like(value, like):
    """A number as a scalar of `like`'s dtype; a NumPy array as a tensor on
    its device (its dtype kept: kiln does no implicit promotion)."""
    if isinstance(value, _np.ndarray):
        return _kiln.tensor(_np.asarray(value, order="C"), like.device)
    if isinstance(value, (int, float, _np.number, _np.bool_)):
        return _scalar_like(value, like)
    raise TypeError("kiln ops take kiln tensors, NumPy arrays and numbers, not %s"
                    % type(value).__name__)


# -- elementwise --------------------------------------------------------------

def _unary(dialect_name, name):
    op = "kiln." + dialect_name

    def fn(x):
        return _call(op, [x])
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = "Elementwise kiln.%s." % dialect_name
    DIALECT_OPS.setdefault(op, name)
    return fn


def _binary(dialect_name, name):
    op = "kiln." + dialect_name

    def fn(x1, x2):
        if type(x1) is not Tensor or type(x2) is not Tensor:
            x1, x2 = _tensors(x1, x2)
        return _call(op, [x1, x2])
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = "kiln.%s with NumPy broadcasting." % dialect_name
    DIALECT_OPS.setdefault(op, name)
    return fn


negative = _unary("neg", "negative")
absolute = abs = _unary("abs", "absolute")
exp = _unary("exp", "exp")
log = _unary("log", "log")
log1p = _unary("log1p", "log1p")
sqrt = _unary("sqrt", "sqrt")
rsqrt = _unary("rsqrt", "rsqrt")
reciprocal = _unary("recip", "reciprocal")
sin = _unary("sin", "sin")
cos = _unary("cos", "cos")
tanh = _unary("tanh", "tanh")
sigmoid = _unary("sigmoid", "sigmoid")
erf = _unary("erf", "erf")
relu = _unary("relu", "relu")
silu = _unary("silu", "silu")
floor = _unary("floor", "floor")
ceil = _unary("ceil", "ceil")
round = rint = _unary("round", "round")  # half to even, as NumPy
sign = _unary("sign", "sign")
isnan = _unary("isnan", "isnan")
bitwise_not = invert = logical_not = _unary("not", "bitwise_not")

add = _binary("add", "add")
subtract = _binary("sub", "subtract")
multiply = _binary("mul", "multiply")
divide = _binary("div", "divide")  # ints truncate toward zero
fmod = _binary("rem", "fmod")  # the dividend's sign, as numpy.fmod
power = pow = _binary("pow", "power")
maximum = _binary("max", "maximum")  # NaN propagates
minimum = _binary("min", "minimum")
bitwise_and = logical_and = _binary("and", "bitwise_and")
bitwise_or = logical_or = _binary("or", "bitwise_or")
bitwise_xor = logical_xor = _binary("xor", "bitwise_xor")
left_shift = _binary("shl", "left_shift")
right_shift = _binary("shr", "right_shift")
equal = _binary("eq", "equal")
not_equal = _binary("ne", "not_equal")
less = _binary("lt", "less")
less_equal = _binary("le", "less_equal")
greater = _binary("gt", "greater")
greater_equal = _binary("ge", "greater_equal")


@_op("gelu")
def gelu(x, approximate="none"):
    """GELU; approximate="tanh" for the tanh form."""
    if approximate not in ("none", "tanh"):
        raise InvalidArgument('gelu: approximate is "none" or "tanh", not %r' % (approximate,))
    return _call("kiln.gelu", [x], 'approximate = "%s"' % approximate)


@_op("clamp", "clip")
def clip(x, min=None, max=None):
    attrs = []
    if min is not None:
        attrs.append("min = " + _f64(min))
    if max is not None:
        attrs.append("max = " + _f64(max))
    return _call("kiln.clamp", [x], ", ".join(attrs))


@_op("cast", "astype")
def astype(x, dtype):
    """Float->int saturates (NaN -> 0); float narrowing rounds to nearest even."""
    return _call("kiln.cast", [x], "", _dtype_name(dtype))


@_op("select", "where")
def where(condition, x1, x2):
    # A scalar takes the other value's dtype, not the condition's (two
    # floats gave a bool tensor); two scalars take NumPy's default kinds.
    if not isinstance(condition, Tensor):
        raise TypeError("where: the condition must be a kiln.Tensor")
    like = next((a for a in (x1, x2) if isinstance(a, Tensor)), None)
    if like is None:
        kinds = {type(v) for v in (x1, x2)}
        dtype = ("bool" if kinds == {bool} else "float32" if float in kinds else "int64")
        x1, x2 = (_kiln.apply("kiln.fill", [], dtype, [], "value = " + _f64(v), condition.device)
                  for v in (x1, x2))
    else:
        x1, x2 = _tensors(x1, x2)
    return _call("kiln.select", [condition, x1, x2])


# -- generators ---------------------------------------------------------------

# kiln's dtypes that NumPy lacks, by name.
_NON_NUMPY_DTYPES = ("bfloat16", "float8_e4m3fn", "float8_e5m2")


def _dtype_name(dtype):
    return dtype if dtype in _NON_NUMPY_DTYPES else _np.dtype(dtype).name


def _shape(shape):
    """A generator's shape: an int or a sequence of them, each a size kiln
    can hold (an int64; the verifier refuses negative ones and overflowing
    products). Other values were pybind11's "incompatible function
    arguments" or "'int' object is not iterable"."""
    dims = (shape,) if isinstance(shape, int) else tuple(shape)
    out = []
    for d in dims:
        try:
            if isinstance(d, bool):
                raise TypeError
            d = operator.index(d)
        except TypeError:
            raise InvalidArgument("a shape takes whole numbers, not %r" % (d,)) from None
        if not -2**63 <= d < 2**63:
            raise InvalidArgument("size %d of shape %s does not fit in an int64" % (d, dims))
        out.append(d)
    return out


@_op("fill", "full")
def full(shape, fill_value, dtype="float32", device="cpu"):
    return _kiln.apply("kiln.fill", [], _dtype_name(dtype), _shape(shape),
                       "value = " + _f64(fill_value), device)


def zeros(shape, dtype="float32", device="cpu"):
    return full(shape, 0.0, dtype, device)


def ones(shape, dtype="float32", device="cpu"):
    return full(shape, 1.0, dtype, device)


@_op("iota")
def iota(shape, axis, dtype="int64", device="cpu"):
    """Each element is its index along `axis`."""
    dims = _shape(shape)
    return _kiln.apply("kiln.iota", [], _dtype_name(dtype), dims,
                       "dim = %d : i64" % _axis(axis, len(dims)), device)


@_op("random_uniform")
def random_uniform(shape, low=0.0, high=1.0, dtype="float32", device="cpu"):
    """Drawn from the device backend's seed (backend(device).seed(n))."""
    return _kiln.apply("kiln.random_uniform", [], _dtype_name(dtype), _shape(shape),
                       "low = %s, high = %s" % (_f64(low), _f64(high)), device)


@_op("random_normal")
def random_normal(shape, mean=0.0, std=1.0, dtype="float32", device="cpu"):
    return _kiln.apply("kiln.random_normal", [], _dtype_name(dtype), _shape(shape),
                       "mean = %s, std = %s" % (_f64(mean), _f64(std)), device)


# -- data movement ------------------------------------------------------------

def _resolve_shape(shape, size):
    shape = [int(d) for d in ((shape,) if isinstance(shape, int) else shape)]
    if shape.count(-1) == 1:
        known = math.prod(d for d in shape if d != -1)
        shape[shape.index(-1)] = size // known if known else 0
    return shape


@_op("reshape")
def reshape(x, shape):
    return _kiln.apply("kiln.reshape", [x], x.dtype, _resolve_shape(shape, x.size), "", x.device)


@_op("broadcast", "broadcast_to")
def broadcast_to(x, shape):
    return _kiln.apply("kiln.broadcast", [x], x.dtype, list(shape), "", x.device)


@_op("transpose")
def transpose(x, axes=None):
    axes = list(reversed(range(x.ndim))) if axes is None else _axes(axes, x.ndim)
    return _call("kiln.transpose", [x], "perm = " + _list(axes))


def permute_dims(x, axes):
    return transpose(x, axes)


@_op("slice")
def slice(x, start, stop, step=None):
    """x[start:stop:step] in every dim (positive steps)."""
    attrs = "start = %s, stop = %s" % (_list(start), _list(stop))
    if step is not None:
        attrs += ", step = " + _list(step)
    return _call("kiln.slice", [x], attrs)


@_op("concat", "concatenate")
def concatenate(arrays, axis=0):
    arrays = list(arrays)
    if not arrays:
        raise InvalidArgument("concatenate needs at least one tensor")
    return _call("kiln.concat", arrays, "dim = %d : i64" % _axis(axis, arrays[0].ndim))


@_op("pad")
def pad(x, pad_width, constant_values=0.0):
    """pad_width: one (before, after) pair per dim, as numpy.pad."""
    low = [int(p[0]) for p in pad_width]
    high = [int(p[1]) for p in pad_width]
    return _call("kiln.pad", [x], "low = %s, high = %s, value = %s"
                 % (_list(low), _list(high), _f64(constant_values)))


@_op("flip")
def flip(x, axis=None):
    return _call("kiln.flip", [x], "dims = " + _list(_axes(axis, x.ndim)))


@_op("gather", "take_along_axis")
def take_along_axis(x, indices, axis):
    return _call("kiln.gather", [x, indices], "dim = %d : i64" % _axis(axis, x.ndim))


@_op("index_select", "take")
def take(x, indices, axis):
    """Rows of `x` along `axis` picked by the 1-D `indices`."""
    return _call("kiln.index_select", [x, indices], "dim = %d : i64" % _axis(axis, x.ndim))


@_op("scatter_add")
def scatter_add(x, indices, src, axis):
    """torch.scatter_add: x with src added at indices along axis."""
    return _call("kiln.scatter_add", [x, indices, src], "dim = %d : i64" % _axis(axis, x.ndim))


# -- reductions and scans -----------------------------------------------------

def _reduction(dialect_name, name):
    op = "kiln." + dialect_name

    def fn(x, axis=None, keepdims=False):
        return _call(op, [x], "dims = %s, keep_dims = %s"
                     % (_list(_axes(axis, x.ndim)), "true" if keepdims else "false"))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = "kiln.%s over `axis` (all axes when None)." % dialect_name
    DIALECT_OPS.setdefault(op, name)
    return fn


sum = _reduction("reduce_sum", "sum")
prod = _reduction("reduce_prod", "prod")
mean = _reduction("reduce_mean", "mean")
max = amax = _reduction("reduce_max", "max")
min = amin = _reduction("reduce_min", "min")
any = _reduction("reduce_any", "any")
all = _reduction("reduce_all", "all")


def _arg(dialect_name, name):
    op = "kiln." + dialect_name

    def fn(x, axis=None, keepdims=False):
        if axis is None:
            x, axis = reshape(x, [-1]), 0
        return _call(op, [x], "dim = %d : i64, keep_dims = %s"
                     % (_axis(axis, x.ndim), "true" if keepdims else "false"))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = "kiln.%s: int64 index of the first extreme along `axis`." % dialect_name
    DIALECT_OPS.setdefault(op, name)
    return fn


argmax = _arg("argmax", "argmax")
argmin = _arg("argmin", "argmin")


def _row(dialect_name, name, default_axis):
    op = "kiln." + dialect_name

    def fn(x, axis=default_axis):
        return _call(op, [x], "dim = %d : i64" % _axis(axis, x.ndim))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = "kiln.%s along `axis`." % dialect_name
    DIALECT_OPS.setdefault(op, name)
    return fn


cumsum = _row("cumsum", "cumsum", 0)
softmax = _row("softmax", "softmax", -1)
log_softmax = _row("log_softmax", "log_softmax", -1)


# -- contractions, normalisations, quantization --------------------------------

@_op("matmul")
def matmul(x1, x2, dtype=None):
    """NumPy matmul (rank >= 2); `dtype`: a wider result type (int8 -> int32)."""
    return _call("kiln.matmul", [x1, x2], "", None if dtype is None else _dtype_name(dtype))


@_op("layer_norm")
def layer_norm(x, weight, bias, eps=1e-5):
    return _call("kiln.layer_norm", [x, weight, bias], "eps = " + _f64(eps))


@_op("rms_norm")
def rms_norm(x, weight, eps=1e-6):
    return _call("kiln.rms_norm", [x, weight], "eps = " + _f64(eps))


def _block(block_size):
    return "block_size = %d : i64" % block_size if block_size else ""


@_op("quantize")
def quantize(x, scale, block_size=0):
    """Symmetric int8: round(x / scale) clamped to [-127, 127]."""
    return _call("kiln.quantize", [x, scale], _block(block_size))


@_op("dequantize")
def dequantize(q, scale, block_size=0, dtype="float32"):
    return _call("kiln.dequantize", [q, scale], _block(block_size), _dtype_name(dtype))


# -- convolution, pooling, attention (torch.nn.functional semantics) -----------

def _pair(value):
    """An int or an (h, w) pair, as torch takes them, spelled for kiln."""
    pair = (value, value) if isinstance(value, int) else tuple(value)
    if len(pair) != 2:  # "too many values to unpack" said nothing of which
        raise InvalidArgument("expected an int or an (h, w) pair, got %r" % (value,))
    return _list(list(pair))


@_op("conv2d")
def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """x NCHW, weight OIHW (I = C / groups), bias [O]."""
    operands = [x, weight] + ([] if bias is None else [bias])
    return _call("kiln.conv2d", operands,
                 "stride = %s, padding = %s, dilation = %s, groups = %d : i64"
                 % (_pair(stride), _pair(padding), _pair(dilation), groups))


def _pool(dialect_name, doc):
    def fn(x, kernel_size, stride=None, padding=0):
        attrs = "kernel = %s, padding = %s" % (_pair(kernel_size), _pair(padding))
        if stride is not None:
            attrs += ", stride = " + _pair(stride)
        return _call("kiln." + dialect_name, [x], attrs)
    fn.__name__ = fn.__qualname__ = dialect_name
    fn.__doc__ = doc
    DIALECT_OPS.setdefault("kiln." + dialect_name, dialect_name)
    return fn


max_pool2d = _pool("max_pool2d", "Max over windows of the last two dims; padding is -inf.")
avg_pool2d = _pool("avg_pool2d", "Mean over windows of the last two dims, padding counted "
                                 "as 0 (count_include_pad).")


@_op("attention", "attention", "scaled_dot_product_attention")
def attention(q, k, v, mask=None, causal=False, scale=None):
    """softmax(q k^T * scale + mask) v over [batch..., seq, head_dim]; a bool
    `mask` keeps where true; `scale` defaults to 1/sqrt(head_dim)."""
    attrs = "causal = " + ("true" if causal else "false")
    if scale is not None:
        attrs += ", scale = " + _f64(scale)
    return _call("kiln.attention", [q, k, v] + ([] if mask is None else [mask]), attrs)


scaled_dot_product_attention = attention


# Every function above, aliases included (not the helpers or imports).
__all__ = sorted(name for name, value in list(globals().items())
                 if not name.startswith("_") and callable(value)
                 and getattr(value, "__module__", None) == __name__)
