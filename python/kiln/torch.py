"""kiln.torch.backend: torch FX graphs run as kiln programs.

    compiled = kiln.torch.backend(torch.fx.symbolic_trace(model), example_inputs)
    compiled = torch.compile(model, backend=kiln.torch.backend)   # torch 2

The nodes kiln supports (elementwise, matmul/linear, softmax, layer_norm,
gelu, reductions, views, cat, masked_fill, conv2d, max/avg pooling,
scaled_dot_product_attention, ...) are grouped into one kiln
program per supported subgraph, so kiln fuses them; every other node stays
with torch. Tensors cross between the two through DLPack, without copies.
Shapes are the example inputs' (programs are specialised to them). The
returned GraphModule's `kiln_report` says how many programs and fallbacks
there are; `last_report` holds the latest one.
"""
import dataclasses
import logging
import operator

import torch
import torch.fx
import torch.nn.functional as F
import torch.utils.dlpack
from torch.fx.passes.shape_prop import ShapeProp

import kiln

_log = logging.getLogger("kiln.torch")

_DTYPES = {torch.float64: "f64", torch.float32: "f32", torch.float16: "f16",
           torch.bfloat16: "bf16", torch.int8: "i8", torch.int16: "i16",
           torch.int32: "i32", torch.int64: "i64", torch.uint8: "ui8", torch.bool: "i1"}


@dataclasses.dataclass
class Report:
    """What the backend made of a graph: kiln programs and nodes left to torch."""
    programs: int = 0
    kiln_nodes: int = 0
    fallbacks: list = dataclasses.field(default_factory=list)  # nodes left to torch
    reasons: list = dataclasses.field(default_factory=list)  # why groups stayed with torch

    def __str__(self):
        return "kiln.torch: %d program(s) covering %d node(s), %d fallback(s)%s%s" % (
            self.programs, self.kiln_nodes, len(self.fallbacks),
            (": " + ", ".join(self.fallbacks)) if self.fallbacks else "",
            "".join("; " + r for r in self.reasons))


last_report = None


class _Unsupported(Exception):
    pass


def _meta(node):
    """(shape, dtype) of a node's tensor value, or None."""
    value = node.meta.get("tensor_meta", node.meta.get("example_value"))
    if value is None or not hasattr(value, "shape") or not hasattr(value, "dtype"):
        return None
    try:
        return tuple(int(d) for d in value.shape), value.dtype
    except Exception:  # symbolic sizes: kiln programs have static shapes
        return None


def _type(shape, dtype):
    if dtype not in _DTYPES:
        raise _Unsupported("dtype %s" % dtype)
    return "tensor<" + "".join("%dx" % d for d in shape) + _DTYPES[dtype] + ">"


def _f64(value):
    return kiln._ops._f64(value)


def _i64s(values):
    return kiln._ops._list(values)


class _Emitter:
    """Builds the text of one program: `@main` over the group's inputs."""

    def __init__(self, module):
        self.module = module
        self.lines = []
        self.values = {}   # fx node -> (ssa name, shape, dtype)
        self.inputs = []   # fx nodes (or get_attr targets) read by the program
        self.count = 0

    def fresh(self):
        self.count += 1
        return "%%v%d" % self.count

    def operand(self, arg):
        """The SSA value of a node argument; outside values become inputs."""
        if not isinstance(arg, (torch.fx.Node, _ParamNode)):
            raise _Unsupported("a non-tensor operand")
        if arg not in self.values:
            meta = _meta(arg)
            if meta is None:
                raise _Unsupported("an operand without a static shape")
            self.values[arg] = ("%%a%d" % len(self.inputs),) + meta
            self.inputs.append(arg)
        return self.values[arg]

    def op(self, name, operands, shape, dtype, attrs=""):
        result = self.fresh()
        types = ", ".join(_type(o[1], o[2]) for o in operands)
        self.lines.append('%s = "kiln.%s"(%s)%s : (%s) -> %s' % (
            result, name, ", ".join(o[0] for o in operands),
            " {" + attrs + "}" if attrs else "", types, _type(shape, dtype)))
        return (result, tuple(shape), dtype)

    def scalar(self, value, dtype):
        return self.op("fill", [], (), dtype, "value = " + _f64(value))

    def as_dtype(self, value, dtype):
        return value if value[2] == dtype else self.op("cast", [value], value[1], dtype)

    def tensor_or_scalar(self, arg, dtype):
        if isinstance(arg, (int, float, bool)):
            return self.scalar(arg, dtype)
        return self.as_dtype(self.operand(arg), dtype)


def _arg(node, index, name, default=None):
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


def _dim(dim, rank):
    return dim + rank if dim < 0 else dim


# -- lowering of each supported node -------------------------------------------------

def _elementwise(name):
    def lower(e, node, shape, dtype):
        return e.op(name, [e.as_dtype(e.operand(node.args[0]), dtype)], shape, dtype)
    return lower


def _binary(name, *, reverse=False):
    def lower(e, node, shape, dtype):
        a, b = node.args[0], node.args[1]
        if reverse:
            a, b = b, a
        # Any other argument changes the result (rounding_mode="floor" was
        # ignored: -7.5 / 2 gave -3.75): torch runs such a node.
        for key, value in node.kwargs.items():
            if (key, value) not in (("alpha", 1), ("rounding_mode", None)):
                raise _Unsupported("%s=%r" % (key, value))
        if len(node.args) > 2:
            raise _Unsupported("more than two arguments")
        return e.op(name, [e.tensor_or_scalar(a, dtype), e.tensor_or_scalar(b, dtype)], shape, dtype)
    return lower


def _gelu(e, node, shape, dtype):
    approximate = node.kwargs.get("approximate", "none")
    return e.op("gelu", [e.operand(node.args[0])], shape, dtype,
                'approximate = "%s"' % approximate)


def _row(name):
    def lower(e, node, shape, dtype):
        x = e.operand(node.args[0])
        dim = _arg(node, 1, "dim")
        if dim is None or node.kwargs.get("dtype") is not None:
            raise _Unsupported("%s without dim, or with dtype" % name)
        return e.op(name, [e.as_dtype(x, dtype)], shape, dtype,
                    "dim = %d : i64" % _dim(dim, len(x[1])))
    return lower


def _matmul(e, node, shape, dtype):
    a, b = e.operand(node.args[0]), e.operand(node.args[1])
    if len(a[1]) < 2 or len(b[1]) < 2:
        raise _Unsupported("matmul of rank < 2")
    return e.op("matmul", [a, b], shape, dtype)


def _linear_of(e, x, weight, bias, shape, dtype):
    w = weight[1]
    wt = e.op("transpose", [weight], (w[1], w[0]), dtype, "perm = " + _i64s([1, 0]))
    y = e.op("matmul", [x, wt], shape, dtype)
    return y if bias is None else e.op("add", [y, bias], shape, dtype)


def _linear(e, node, shape, dtype):
    bias = _arg(node, 2, "bias")
    return _linear_of(e, e.operand(node.args[0]), e.operand(node.args[1]),
                      None if bias is None else e.operand(bias), shape, dtype)


def _layer_norm_of(e, x, normalized_shape, weight, bias, eps, shape, dtype):
    if len(normalized_shape) != 1:
        raise _Unsupported("layer_norm over more than the last dim")
    n = (int(normalized_shape[0]),)
    weight = weight if weight is not None else e.op("fill", [], n, dtype, "value = 1.0 : f64")
    bias = bias if bias is not None else e.op("fill", [], n, dtype, "value = 0.0 : f64")
    return e.op("layer_norm", [x, weight, bias], shape, dtype, "eps = " + _f64(eps))


def _layer_norm(e, node, shape, dtype):
    weight, bias = _arg(node, 2, "weight"), _arg(node, 3, "bias")
    return _layer_norm_of(e, e.operand(node.args[0]), _arg(node, 1, "normalized_shape"),
                          None if weight is None else e.operand(weight),
                          None if bias is None else e.operand(bias),
                          _arg(node, 4, "eps", 1e-5), shape, dtype)


def _pair(value):
    """An int or an (h, w) sequence, as torch takes them, as an attribute."""
    if isinstance(value, int):
        value = (value, value)
    if len(value) == 1:
        value = (value[0], value[0])
    return _i64s(value)


def _conv2d_of(e, x, weight, bias, stride, padding, dilation, groups, shape, dtype):
    if isinstance(padding, str) or len(x[1]) != 4:
        raise _Unsupported("conv2d with padding '%s' or unbatched input" % (padding,))
    return e.op("conv2d", [x, weight] + ([] if bias is None else [bias]), shape, dtype,
                "stride = %s, padding = %s, dilation = %s, groups = %d : i64"
                % (_pair(stride), _pair(padding), _pair(dilation), groups))


def _conv2d(e, node, shape, dtype):
    bias = _arg(node, 2, "bias")
    return _conv2d_of(e, e.operand(node.args[0]), e.operand(node.args[1]),
                      None if bias is None else e.operand(bias), _arg(node, 3, "stride", 1),
                      _arg(node, 4, "padding", 0), _arg(node, 5, "dilation", 1),
                      _arg(node, 6, "groups", 1), shape, dtype)


def _pool_of(e, name, x, kernel, stride, padding, shape, dtype):
    attrs = "kernel = %s, padding = %s" % (_pair(kernel), _pair(padding))
    if stride:  # None or [] is the kernel
        attrs += ", stride = " + _pair(stride)
    return e.op(name, [x], shape, dtype, attrs)


def _max_pool2d(e, node, shape, dtype):
    dilation = _arg(node, 4, "dilation", 1)
    if _arg(node, 5, "ceil_mode", False) or _arg(node, 6, "return_indices", False) or \
            _pair(dilation) != _pair(1):
        raise _Unsupported("max_pool2d with dilation, ceil_mode or indices")
    return _pool_of(e, "max_pool2d", e.operand(node.args[0]), _arg(node, 1, "kernel_size"),
                    _arg(node, 2, "stride"), _arg(node, 3, "padding", 0), shape, dtype)


def _avg_pool2d(e, node, shape, dtype):
    if _arg(node, 4, "ceil_mode", False) or not _arg(node, 5, "count_include_pad", True) or \
            _arg(node, 6, "divisor_override") is not None:
        raise _Unsupported("avg_pool2d with ceil_mode, count_include_pad=False or a divisor")
    return _pool_of(e, "avg_pool2d", e.operand(node.args[0]), _arg(node, 1, "kernel_size"),
                    _arg(node, 2, "stride"), _arg(node, 3, "padding", 0), shape, dtype)


def _global_avg_pool(e, node, shape, dtype):
    """The mean over the whole plane: one window of its size."""
    x = e.operand(node.args[0])
    return _pool_of(e, "avg_pool2d", x, x[1][-2:], None, 0, shape, dtype)


def _attention(e, node, shape, dtype):
    q, k, v = (e.operand(node.args[i]) for i in range(3))
    mask = _arg(node, 3, "attn_mask")
    scale = _arg(node, 6, "scale")
    if _arg(node, 4, "dropout_p", 0.0) or _arg(node, 7, "enable_gqa", False) or \
            not (q[1][:-2] == k[1][:-2] == v[1][:-2]):
        raise _Unsupported("attention with dropout, grouped heads or broadcast batch dims")
    attrs = "causal = " + ("true" if _arg(node, 5, "is_causal", False) else "false")
    if scale is not None:
        attrs += ", scale = " + _f64(scale)
    return e.op("attention", [q, k, v] + ([] if mask is None else [e.operand(mask)]), shape,
                dtype, attrs)


def _reduction(name):
    def lower(e, node, shape, dtype):
        x = e.operand(node.args[0])
        dims = _arg(node, 1, "dim")
        keep = _arg(node, 2, "keepdim", False)
        if node.kwargs.get("dtype") is not None or x[2] != dtype:
            raise _Unsupported("a reduction that changes dtype")
        rank = len(x[1])
        dims = range(rank) if dims is None else ([dims] if isinstance(dims, int) else dims)
        return e.op(name, [x], shape, dtype, "dims = %s, keep_dims = %s" % (
            _i64s(sorted(_dim(d, rank) for d in dims)), "true" if keep else "false"))
    return lower


def _reshape(e, node, shape, dtype):
    return e.op("reshape", [e.operand(node.args[0])], shape, dtype)


def _expand(e, node, shape, dtype):
    return e.op("broadcast", [e.operand(node.args[0])], shape, dtype)


def _identity(e, node, shape, dtype):
    return e.operand(node.args[0])


def _permute(e, node, shape, dtype):
    x = e.operand(node.args[0])
    dims = node.args[1:] if len(node.args) > 2 or isinstance(_arg(node, 1, "dims"), int) \
        else _arg(node, 1, "dims")
    rank = len(x[1])
    return e.op("transpose", [x], shape, dtype, "perm = " + _i64s([_dim(d, rank) for d in dims]))


def _transpose(e, node, shape, dtype):
    x = e.operand(node.args[0])
    rank = len(x[1])
    perm = list(range(rank))
    if node.target in ("t", torch.t):
        perm = perm[::-1]
    else:
        a, b = _dim(_arg(node, 1, "dim0"), rank), _dim(_arg(node, 2, "dim1"), rank)
        perm[a], perm[b] = perm[b], perm[a]
    return e.op("transpose", [x], shape, dtype, "perm = " + _i64s(perm))


def _cat(e, node, shape, dtype):
    xs = [e.as_dtype(e.operand(x), dtype) for x in _arg(node, 0, "tensors")]
    dim = _dim(_arg(node, 1, "dim", 0), len(shape))
    return e.op("concat", xs, shape, dtype, "dim = %d : i64" % dim)


def _split(e, node, shape, dtype):
    """chunk / split: one kiln.slice per piece; getitem nodes pick them."""
    x = e.operand(node.args[0])
    rank = len(x[1])
    chunked = node.target in (torch.chunk, "chunk")
    how = _arg(node, 1, "chunks" if chunked else
               "split_size" if node.op == "call_method" else "split_size_or_sections")
    dim = _dim(_arg(node, 2, "dim", 0), rank)
    length = x[1][dim]
    if chunked:
        how = -(-length // how) if length else 1  # torch: pieces of ceil(length / chunks)
    if isinstance(how, int):
        sizes = [min(how, length - start) for start in range(0, length, how)] or [0]
    elif isinstance(how, (list, tuple)) and all(isinstance(n, int) for n in how):
        sizes = list(how)
    else:
        raise _Unsupported("a split with run-time sizes")
    pieces, start = [], 0
    for size in sizes:
        starts, stops = [0] * rank, list(x[1])
        starts[dim], stops[dim] = start, start + size
        piece = list(x[1])
        piece[dim] = size
        pieces.append(e.op("slice", [x], piece, x[2],
                           "start = %s, stop = %s" % (_i64s(starts), _i64s(stops))))
        start += size
    return pieces


def _piece(e, node, shape, dtype):
    return e.values[node.args[0]][node.args[1]]


def _static_index(index):
    """An index of ints, int slices, None and Ellipsis (no tensors, no symbols)."""
    def static(i):
        if isinstance(i, slice):
            return all(v is None or type(v) is int for v in (i.start, i.stop, i.step))
        return i is None or i is Ellipsis or type(i) is int
    return all(static(i) for i in (index if isinstance(index, tuple) else (index,)))


def _getitem(e, node, shape, dtype):
    """x[...] with ints, slices of positive step, None and Ellipsis: a
    kiln.slice, then a reshape for the dims ints drop and Nones add."""
    x = e.operand(node.args[0])
    index = node.args[1] if isinstance(node.args[1], tuple) else (node.args[1],)
    rank = len(x[1])
    real = [i for i in index if i is not None and i is not Ellipsis]
    if len(real) > rank or sum(i is Ellipsis for i in index) > 1:
        raise _Unsupported("an index of %d dims into a rank-%d tensor" % (len(real), rank))
    full = []
    for i in index:
        full += [slice(None)] * (rank - len(real)) if i is Ellipsis else [i]
    if Ellipsis not in index:
        full += [slice(None)] * (rank - len(real))
    starts, stops, steps, sliced = [], [], [], []
    for i in (i for i in full if i is not None):
        size = x[1][len(starts)]
        if isinstance(i, int) and not isinstance(i, bool) and -size <= i < size:
            start, stop, step = i % size, i % size + 1, 1
        elif isinstance(i, slice) and all(v is None or isinstance(v, int)
                                          for v in (i.start, i.stop, i.step)):
            start, stop, step = i.indices(size)
            if step <= 0:
                raise _Unsupported("a slice with step %d" % step)
            stop = max(stop, start)
        else:
            raise _Unsupported("an index %r" % (i,))
        starts.append(start)
        stops.append(stop)
        steps.append(step)
        sliced.append((stop - start + step - 1) // step)
    value = x
    if sliced != list(x[1]):
        value = e.op("slice", [x], sliced, x[2], "start = %s, stop = %s, step = %s" % (
            _i64s(starts), _i64s(stops), _i64s(steps)))
    return value if tuple(value[1]) == tuple(shape) else e.op("reshape", [value], shape, dtype)


def _masked_fill(e, node, shape, dtype):
    x, mask = e.operand(node.args[0]), e.operand(node.args[1])
    value = node.args[2]
    if not isinstance(value, (int, float)) or mask[2] != torch.bool:
        raise _Unsupported("masked_fill with a tensor value")
    return e.op("select", [mask, e.scalar(value, dtype), x], shape, dtype)


def _where(e, node, shape, dtype):
    cond = e.operand(node.args[0])
    return e.op("select", [cond, e.tensor_or_scalar(node.args[1], dtype),
                           e.tensor_or_scalar(node.args[2], dtype)], shape, dtype)


def _dropout(e, node, shape, dtype):
    if _arg(node, 2, "training", True) and node.target is F.dropout:
        raise _Unsupported("dropout in training")
    return e.operand(node.args[0])


def _to_dtype(e, node, shape, dtype):
    return e.as_dtype(e.operand(node.args[0]), dtype)


_UNARY = {"relu": (torch.relu, F.relu), "exp": (torch.exp,), "log": (torch.log,),
          "tanh": (torch.tanh, F.tanh), "sigmoid": (torch.sigmoid, F.sigmoid),
          "sqrt": (torch.sqrt,), "rsqrt": (torch.rsqrt,), "abs": (torch.abs, operator.abs),
          "neg": (torch.neg, operator.neg), "erf": (torch.erf,), "silu": (F.silu,),
          "sin": (torch.sin,), "cos": (torch.cos,), "floor": (torch.floor,),
          "ceil": (torch.ceil,), "log1p": (torch.log1p,), "recip": (torch.reciprocal,)}
_METHOD_NAMES = {"neg": "neg", "recip": "reciprocal"}

_FUNCTIONS, _METHODS = {}, {}
for _name, _targets in _UNARY.items():
    for _t in _targets:
        _FUNCTIONS[_t] = _elementwise(_name)
    _METHODS[_METHOD_NAMES.get(_name, _name)] = _elementwise(_name)
for _name, _targets, _methods in [
        ("add", (operator.add, torch.add), ("add",)),
        ("sub", (operator.sub, torch.sub), ("sub",)),
        ("mul", (operator.mul, torch.mul), ("mul",)),
        ("div", (operator.truediv, torch.div), ("div",)),
        ("pow", (operator.pow, torch.pow), ("pow",)),
        ("max", (torch.maximum,), ("maximum",)),
        ("min", (torch.minimum,), ("minimum",))]:
    for _t in _targets:
        _FUNCTIONS[_t] = _binary(_name)
    for _m in _methods:
        _METHODS[_m] = _binary(_name)
_FUNCTIONS.update({
    torch.matmul: _matmul, operator.matmul: _matmul, torch.bmm: _matmul,
    F.linear: _linear, F.gelu: _gelu, F.layer_norm: _layer_norm,
    torch.softmax: _row("softmax"), F.softmax: _row("softmax"),
    torch.log_softmax: _row("log_softmax"), F.log_softmax: _row("log_softmax"),
    torch.cumsum: _row("cumsum"),
    torch.sum: _reduction("reduce_sum"), torch.mean: _reduction("reduce_mean"),
    torch.amax: _reduction("reduce_max"), torch.amin: _reduction("reduce_min"),
    torch.reshape: _reshape, torch.flatten: _reshape, torch.unsqueeze: _reshape,
    torch.squeeze: _reshape, torch.permute: _permute, torch.transpose: _transpose,
    torch.t: _transpose, torch.cat: _cat, torch.concat: _cat,
    torch.masked_fill: _masked_fill, torch.where: _where, F.dropout: _dropout,
    F.conv2d: _conv2d, F.max_pool2d: _max_pool2d, torch.max_pool2d: _max_pool2d,
    F.avg_pool2d: _avg_pool2d,
    operator.truediv: _binary("div"), torch.rsub: _binary("sub", reverse=True),
})
if hasattr(F, "scaled_dot_product_attention"):  # torch >= 2.0
    _FUNCTIONS[F.scaled_dot_product_attention] = _attention
_METHODS.update({
    "matmul": _matmul, "softmax": _row("softmax"), "log_softmax": _row("log_softmax"),
    "cumsum": _row("cumsum"), "sum": _reduction("reduce_sum"),
    "mean": _reduction("reduce_mean"), "amax": _reduction("reduce_max"),
    "amin": _reduction("reduce_min"), "view": _reshape, "reshape": _reshape,
    "flatten": _reshape, "unflatten": _reshape, "unsqueeze": _reshape,
    "squeeze": _reshape, "expand": _expand, "contiguous": _identity,
    "permute": _permute, "transpose": _transpose, "t": _transpose,
    "masked_fill": _masked_fill, "float": _to_dtype, "half": _to_dtype, "to": _to_dtype,
    "type_as": _to_dtype, "gelu": _gelu,
})


def _module_lowering(path, module):
    """The function that emits a call of `module` (at `path`), or None."""
    def param(e, name):
        return None if getattr(module, name) is None else e.operand(("get_attr", path + "." + name))

    def unary(name, attrs=""):
        return lambda e, node, shape, dtype: e.op(name, [e.operand(node.args[0])], shape, dtype, attrs)

    if isinstance(module, torch.nn.Linear):
        return lambda e, node, shape, dtype: _linear_of(
            e, e.operand(node.args[0]), param(e, "weight"), param(e, "bias"), shape, dtype)
    if isinstance(module, torch.nn.LayerNorm):
        return lambda e, node, shape, dtype: _layer_norm_of(
            e, e.operand(node.args[0]), module.normalized_shape, param(e, "weight"),
            param(e, "bias"), module.eps, shape, dtype)
    if isinstance(module, torch.nn.GELU):
        return unary("gelu", 'approximate = "%s"' % module.approximate)
    if isinstance(module, (torch.nn.Softmax, torch.nn.LogSoftmax)) and module.dim is not None:
        name = "softmax" if isinstance(module, torch.nn.Softmax) else "log_softmax"
        return lambda e, node, shape, dtype: e.op(
            name, [e.operand(node.args[0])], shape, dtype,
            "dim = %d : i64" % _dim(module.dim, len(shape)))
    if isinstance(module, torch.nn.Conv2d) and module.padding_mode == "zeros":
        return lambda e, node, shape, dtype: _conv2d_of(
            e, e.operand(node.args[0]), param(e, "weight"), param(e, "bias"), module.stride,
            module.padding, module.dilation, module.groups, shape, dtype)
    if isinstance(module, torch.nn.MaxPool2d) and not module.ceil_mode and \
            not module.return_indices and _pair(module.dilation) == _pair(1):
        return lambda e, node, shape, dtype: _pool_of(
            e, "max_pool2d", e.operand(node.args[0]), module.kernel_size, module.stride,
            module.padding, shape, dtype)
    if isinstance(module, torch.nn.AvgPool2d) and not module.ceil_mode and \
            module.count_include_pad and module.divisor_override is None:
        return lambda e, node, shape, dtype: _pool_of(
            e, "avg_pool2d", e.operand(node.args[0]), module.kernel_size, module.stride,
            module.padding, shape, dtype)
    if isinstance(module, torch.nn.AdaptiveAvgPool2d) and _pair(module.output_size) == _pair(1):
        return _global_avg_pool
    if isinstance(module, torch.nn.Identity) or \
            (isinstance(module, torch.nn.Dropout) and not module.training):
        return _identity
    simple = {torch.nn.ReLU: "relu", torch.nn.Tanh: "tanh", torch.nn.Sigmoid: "sigmoid",
              torch.nn.SiLU: "silu"}
    return unary(simple[type(module)]) if type(module) in simple else None


_SPLITS = (torch.chunk, torch.split, "chunk", "split")


def _is_split(node):
    return isinstance(node, torch.fx.Node) and node.op in ("call_function", "call_method") \
        and node.target in _SPLITS


def _writes_a_value_read_again(gm, node):
    """Whether `node` is in place (inplace=True: F.relu's, nn.ReLU's, ...)
    on a value something else reads: kiln computes a new value, and the
    other readers would see the old one (h + relu_(h) gave h + relu(h))."""
    if node.op == "call_module":
        inplace = getattr(gm.get_submodule(node.target), "inplace", False)
    else:
        inplace = node.kwargs.get("inplace", False) or (
            node.target in (F.relu, F.relu6, F.silu, F.hardtanh, F.elu, F.leaky_relu)
            and any(a is True for a in node.args[1:]))
    source = node.args[0] if node.args else None
    return bool(inplace) and isinstance(source, torch.fx.Node) and len(source.users) > 1


def _in_place(e, node, shape, dtype):
    raise _Unsupported("an in-place op on a value read again")


def _lowering(gm, node):
    """The function that emits `node`, or None if kiln does not take it."""
    lower = _lowering_of(gm, node)
    if lower is not None and _writes_a_value_read_again(gm, node):
        return _in_place
    return lower


def _lowering_of(gm, node):
    if _is_split(node):  # a tuple of tensors: no tensor meta of its own
        return _split if _meta(node.args[0]) is not None else None
    if _meta(node) is None:
        return None
    if node.op == "call_function" and node.target is operator.getitem:
        if _is_split(node.args[0]):
            return _piece
        source = node.args[0]
        return _getitem if isinstance(source, torch.fx.Node) and _meta(source) is not None \
            and _static_index(node.args[1]) else None
    if node.op == "call_function":
        return _FUNCTIONS.get(node.target)
    if node.op == "call_method":
        return _METHODS.get(node.target)
    if node.op == "call_module":
        return _module_lowering(node.target, gm.get_submodule(node.target))
    return None


# -- groups of supported nodes, and their programs --------------------------------

class _ParamNode:
    """A parameter or buffer of a submodule, read through a get_attr node
    made when a group needs it."""

    def __init__(self, gm, target):
        self.target = target
        self.meta = {"tensor_meta": operator.attrgetter(target)(gm)}


class _KilnCall:
    """Runs one kiln program on torch tensors (DLPack both ways)."""

    def __init__(self, program, outputs):
        self.program = program
        self.outputs = outputs
        self.__name__ = "kiln_program"

    def __call__(self, *inputs):
        device = self.program.device
        tensors = []
        for t in inputs:
            t = t.detach().contiguous()
            if t.dtype == torch.bool:  # torch 1.13's DLPack has no bool: a copy
                tensors.append(kiln.tensor(t.cpu().numpy(), device))
                continue
            if t.data_ptr() % 16:
                t = t.clone()
            tensors.append(kiln.from_dlpack(t))
        results = self.program(*tensors)
        results = results if isinstance(results, tuple) else (results,)
        return tuple(_to_torch(r) for r in results)


def _to_torch(tensor):
    if tensor.dtype == "bool":  # as above; kiln's device names are torch's
        return torch.from_numpy(tensor.numpy()).to(tensor.device)
    return torch.utils.dlpack.from_dlpack(tensor)


def _kiln_device(example_inputs):
    for t in example_inputs:
        if isinstance(t, torch.Tensor) and t.device.type == "cuda":
            return "cuda:%d" % (t.device.index or 0)
    return "cpu"


def _shape_prop(gm, example_inputs):
    nodes = [n for n in gm.graph.nodes if n.op != "output"]
    if nodes and all("example_value" in n.meta for n in nodes):
        return  # torch.compile (dynamo) recorded every value already
    ShapeProp(gm).propagate(*example_inputs)


def _build_program(gm, group, device, report):
    """Emits a group's program and puts a call to it in the graph in place of the group."""
    e = _Emitter(gm)
    members = set(group)
    param_nodes = {}

    def operand(arg):
        if isinstance(arg, tuple) and arg[0] == "get_attr":
            if arg[1] not in param_nodes:
                param_nodes[arg[1]] = _ParamNode(gm, arg[1])
            arg = param_nodes[arg[1]]
        return _Emitter.operand(e, arg)
    e.operand = operand
    # The values of the group that something outside it reads.
    outputs = [n for n in group if any(u not in members for u in n.users)]
    if any(_is_split(n) for n in outputs):
        raise _Unsupported("a chunk or split read whole outside kiln")
    for node in group:
        shape, dtype = _meta(node) or (None, None)
        e.values[node] = _lowering(gm, node)(e, node, shape, dtype)
    # An output that is an input unchanged (a view kiln needs no op for) is
    # read from the input itself, not returned by the program.
    inputs = {e.values[i][0]: i for i in e.inputs}
    aliases = {n: inputs[e.values[n][0]] for n in outputs if e.values[n][0] in inputs}
    outputs = [n for n in outputs if n not in aliases]
    program = None
    if outputs:
        results = [e.values[n] for n in outputs]
        args = ", ".join("%s: %s" % (e.values[i][0], _type(e.values[i][1], e.values[i][2]))
                         for i in e.inputs)
        types = ", ".join(_type(r[1], r[2]) for r in results)
        text = "func.func @main(%s) -> (%s) {\n  %s\n  return %s : %s\n}\n" % (
            args, types, "\n  ".join(e.lines), ", ".join(r[0] for r in results), types)
        program = kiln.compile(text, device)  # before the graph changes: it may refuse

    graph = gm.graph
    # Nodes made before the one after the group stay in the order they are made.
    with graph.inserting_before(group[-1].next):
        made = {}

        def graph_value(value):
            if isinstance(value, _ParamNode):
                if value.target not in made:
                    made[value.target] = graph.get_attr(value.target)
                return made[value.target]
            return value
        for node, value in aliases.items():
            node.replace_all_uses_with(graph_value(value))
        if program is not None:
            call = graph.call_function(_KilnCall(program, len(outputs)),
                                       tuple(graph_value(i) for i in e.inputs))
            for index, node in enumerate(outputs):
                node.replace_all_uses_with(graph.call_function(operator.getitem, (call, index)))
            report.programs += 1
    for node in reversed(group):
        graph.erase_node(node)
    report.kiln_nodes += len(group)


def _groups(gm):
    """Supported nodes in runs that stay convex: a node that is not in the
    group but reads one of its values closes it (the program's call goes after
    the group's last node, and everything it reads is defined before)."""
    groups, current = [], []
    for node in gm.graph.nodes:
        if node.op in ("placeholder", "get_attr", "output"):
            if node.op == "output" and current:
                groups.append(current)
                current = []
            continue
        if _lowering(gm, node) is not None:
            current.append(node)
            continue
        if current and any(a in current for a in node.all_input_nodes):
            groups.append(current)
            current = []
    if current:
        groups.append(current)
    return groups


def backend(gm, example_inputs):
    """Compiles an FX GraphModule for kiln; usable as torch.compile's backend.

    Returns a GraphModule whose supported subgraphs are kiln programs;
    `kiln_report` (and kiln.torch.last_report) counts programs and fallbacks.
    """
    global last_report
    _shape_prop(gm, example_inputs)
    device = _kiln_device(example_inputs)
    report = Report()
    for group in _groups(gm):
        try:
            _build_program(gm, group, device, report)
        except (_Unsupported, kiln.Error) as error:
            # The group stays with torch; the reason goes in the report.
            _log.info("kiln.torch: a group of %d node(s) stays with torch: %s", len(group), error)
            report.reasons.append("a group of %d node(s): %s" % (len(group), error))
    for node in gm.graph.nodes:
        if node.op in ("call_function", "call_method", "call_module") and \
                not isinstance(node.target, _KilnCall) and not (
                    node.target is operator.getitem and
                    isinstance(getattr(node.args[0], "target", None), _KilnCall)):
            report.fallbacks.append(str(node.target) if node.op != "call_function"
                                    else getattr(node.target, "__name__", str(node.target)))
    gm.graph.lint()
    gm.recompile()
    gm.kiln_report = report
    last_report = report
    _log.info("%s", report)
    return gm
