"""Random valid kiln programs with a float64 NumPy interpretation.

A program is built op by op. Every value carries its reference (float64 for
floats, exact integers for ints, bools for i1) and an elementwise bound on the
absolute error a correct device may have (`err`; inf = "any value is right",
e.g. a comparison of two floats closer than their errors). The generator
knows the actual values while it builds, so it only emits ops that stay valid
and finite (no log of a negative, no f16 overflow, no int overflow).

The tolerance rule (docs/testing.md, "Differential testing"): first-order
forward error analysis. Each op maps its operands' bounds through its
sensitivity (|f'| over [x - e, x + e] for unary maps, |b|e_a + |a|e_b for mul,
sums of bounds for sums, ...) and adds its own rounding allowance: 0 for exact
ops (data movement, max/min, neg/abs/relu, select), 1 ulp of the result for
correctly rounded arithmetic, 3 ulp for division (Vulkan allows 2.5, issue
item 17) and sqrt (Vulkan: 1/inversesqrt), 16 ulp + 16 u absolute for
transcendentals, n * u of the accumulator times the sum of magnitudes for an n-term sum (f16/bf16
accumulate in f32), plus one smallest normal of the dtype (denormals may be
flushed). A device result matches when |got - ref| <= 2 * err (the factor
covers the second-order terms the analysis drops).
"""
import math
import re

import numpy as np

FLOATS = ("f64", "f32", "f16", "bf16")
INTS = ("i8", "i32", "i64", "ui8")
NP_DTYPE = {"f64": np.float64, "f32": np.float32, "f16": np.float16, "bf16": np.float32,
            "i8": np.int8, "i32": np.int32, "i64": np.int64, "ui8": np.uint8, "i1": np.bool_}
UNIT_ROUNDOFF = {"f64": 2.0**-53, "f32": 2.0**-24, "f16": 2.0**-11, "bf16": 2.0**-8}
SMALLEST_NORMAL = {"f64": 2.2e-308, "f32": 1.2e-38, "f16": 6.1e-5, "bf16": 1.2e-38}
LARGEST = {"f64": 1e300, "f32": 1e30, "f16": 3e4, "bf16": 1e30}
TRANSCENDENTAL_ULPS = 16
DIV_ULPS = 3
DIMS = (1, 1, 2, 3, 4, 5, 7, 8, 16, 17, 33, 64, 257)
MAX_ELEMENTS = 8192


def is_float(dtype):
    return dtype in FLOATS


def accumulator(dtype):
    """f16/bf16 sums accumulate in f32 (DESIGN: reductions, matmul)."""
    return "f32" if dtype in ("f16", "bf16") else dtype


def round_to_dtype(x, dtype):
    """Values exactly representable in `dtype`, as float64 (bf16 by bit rounding)."""
    if dtype == "bf16":
        bits = np.atleast_1d(np.asarray(x, np.float32)).view(np.uint32).astype(np.uint64)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
        return bits.astype(np.uint32).view(np.float32).reshape(np.shape(x)).astype(np.float64)
    return np.asarray(x).astype(NP_DTYPE[dtype]).astype(np.float64)


def int_range(dtype):
    if dtype == "i1":
        return 0, 1
    info = np.iinfo(NP_DTYPE[dtype])
    return int(info.min), int(info.max)


def tensor_type(shape, dtype):
    return "tensor<" + "".join(f"{d}x" for d in shape) + dtype + ">"


def fmt_f64(v):
    return f"{float(v):.17e} : f64"


def arr(values):
    return "array<i64" + (": " + ", ".join(str(int(v)) for v in values) if len(values) else "") + ">"


class Value:
    def __init__(self, name, dtype, ref, err):
        self.name, self.dtype = name, dtype
        self.ref = np.asarray(ref)
        self.err = np.where(np.isnan(err), np.inf, np.asarray(err, np.float64)) + np.zeros(self.ref.shape)

    @property
    def shape(self):
        return self.ref.shape

    @property
    def type(self):
        return tensor_type(self.shape, self.dtype)

    def known_fraction(self):
        return 1.0 if self.err.size == 0 else float(np.isfinite(self.err).mean())


def rounding(dtype, ref, ulps=1.0, absolute=0.0):
    """The allowance for one rounding of `ref` to `dtype` (ints are exact)."""
    if not is_float(dtype):
        return 0.0
    u = UNIT_ROUNDOFF[dtype]
    return ulps * u * (np.abs(ref) + absolute) + SMALLEST_NORMAL[dtype]


def unknown_if(mask, err):
    return np.where(mask, np.inf, err)


class Program:
    """One kiln function under construction; `ops` emit its text and values."""

    def __init__(self, rng):
        self.rng = rng
        self.args, self.lines, self.values, self.inputs = [], [], [], []
        self.ops_used = []

    # -- values -------------------------------------------------------------
    def new_input(self, shape, dtype):
        rng = self.rng
        if is_float(dtype):
            data = round_to_dtype(rng.uniform(-2.0, 2.0, shape), dtype)
            host = data.astype(NP_DTYPE[dtype])
        elif dtype == "i1":
            host = rng.integers(0, 2, shape).astype(bool)
            data = host
        else:
            lo = 0 if dtype.startswith("u") else -20
            host = rng.integers(lo, 21, shape).astype(NP_DTYPE[dtype])
            data = host.astype(np.int64)
        v = Value(f"%a{len(self.args)}", dtype, data, np.zeros(np.shape(data)))
        self.args.append(v)
        self.inputs.append(host)
        self.values.append(v)
        return v

    def emit(self, op, text_fn, dtype, ref, err):
        """Adds one op whose text is text_fn(result_name, result_type)."""
        ref = np.asarray(ref)
        if is_float(dtype):
            ref = ref.astype(np.float64)
            with np.errstate(all="ignore"):
                finite = np.isfinite(ref).all()
                if not finite or (ref.size and np.abs(ref).max() > LARGEST[dtype]):
                    return None
        elif dtype != "i1":
            lo, hi = int_range(dtype)
            if ref.size and (ref.min() < lo // 4 or ref.max() > hi // 4):
                return None  # keep ints far from wrapping
            ref = ref.astype(np.int64)
        else:
            ref = ref.astype(bool)
        v = Value(f"%v{len(self.lines)}", dtype, ref, err)
        if v.ref.size and v.known_fraction() < 0.5:
            return None  # a check that knows nothing has no power
        text = text_fn(v.name, v.type)
        self.lines.append(text)
        self.values.append(v)
        self.ops_used.append(op)
        return v

    # -- text ---------------------------------------------------------------
    def results(self):
        """The last value and up to two other values no later op uses."""
        produced = [v for v in self.values if v not in self.args]
        text = "\n".join(self.lines)
        leaves = [v for v in produced[:-1]
                  if not re.search(re.escape(v.name) + r"\b(?!\s*=)", text)]
        out = leaves[-2:] + [produced[-1]]
        if self.rng.random() < 0.1:  # a value returned twice
            out.append(out[-1])
        return out


def render(programs_and_results):
    """One @main running one or several independent programs (a batch runs
    in one kiln-run process); arguments and results in program order."""
    args, body, rets, rtypes = [], [], [], []
    for k, (p, results) in enumerate(programs_and_results):
        def ren(text, k=k):
            return text if len(programs_and_results) == 1 else text.replace("%", f"%p{k}_")
        args += [f"{ren(a.name)}: {a.type}" for a in p.args]
        body += [f"  {ren(line)}\n" for line in p.lines]
        rets += [ren(r.name) for r in results]
        rtypes += [r.type for r in results]
    return (f"func.func @main({', '.join(args)}) -> ({', '.join(rtypes)}) {{\n{''.join(body)}"
            f"  return {', '.join(rets)} : {', '.join(rtypes)}\n}}\n")


# -- ops ----------------------------------------------------------------------
# Each op picks operands among the program's values, returns the new Value or
# None when it does not apply (the generator then tries another op).

def pick(p, cond=lambda v: True):
    choices = [v for v in p.values if cond(v)]
    if not choices:
        return None
    # Prefer recent values, so programs are chains rather than fans.
    weights = np.arange(1, len(choices) + 1, dtype=np.float64) ** 2
    return choices[p.rng.choice(len(choices), p=weights / weights.sum())]


def lipschitz(deriv, x, e):
    """max |f'| over [x - e, x + e], sampled at both ends and the middle."""
    with np.errstate(all="ignore"):
        d = np.maximum.reduce([np.abs(deriv(x - e)), np.abs(deriv(x)), np.abs(deriv(x + e))])
    return np.where(np.isfinite(e), d, np.inf)


def erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


# name: (function, derivative or a constant bound, ulps of own rounding, domain)
UNARY_FLOAT = {
    "neg": (np.negative, 1.0, 0, None), "abs": (np.abs, 1.0, 0, None),
    "relu": (lambda x: np.maximum(x, 0), 1.0, 0, None),
    "exp": (np.exp, np.exp, TRANSCENDENTAL_ULPS, lambda x: x.max() < 8),
    "log": (np.log, lambda x: 1 / x, TRANSCENDENTAL_ULPS, lambda x: x.min() > 0.05),
    # Vulkan's sqrt is 1/inversesqrt (inversesqrt: 2 ulp), not correctly rounded.
    "sqrt": (np.sqrt, lambda x: 0.5 / np.sqrt(x), 3, lambda x: x.min() > 0.05),
    "tanh": (np.tanh, lambda x: 1 - np.tanh(x) ** 2, TRANSCENDENTAL_ULPS, None),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), 0.25, TRANSCENDENTAL_ULPS, None),
    "sin": (np.sin, 1.0, TRANSCENDENTAL_ULPS, lambda x: np.abs(x).max() < 100),
    "cos": (np.cos, 1.0, TRANSCENDENTAL_ULPS, lambda x: np.abs(x).max() < 100),
    "erf": (erf, 1.13, TRANSCENDENTAL_ULPS, None),
    "silu": (lambda x: x / (1 + np.exp(-x)), 1.1, TRANSCENDENTAL_ULPS, None),
    "gelu": (lambda x: 0.5 * x * (1 + erf(x / math.sqrt(2))), 1.13, TRANSCENDENTAL_ULPS, None),
}
# Exact results with a jump at (half-)integers: unknown within the error of one.
STEP = {"floor": np.floor, "ceil": np.ceil, "round": np.round, "sign": np.sign}


def op_unary_float(p):
    x = pick(p, lambda v: is_float(v.dtype))
    if x is None:
        return None
    name = p.rng.choice(sorted(UNARY_FLOAT) + sorted(STEP))
    with np.errstate(all="ignore"):
        if name in STEP:
            f = STEP[name]
            lo, hi = f(x.ref - x.err), f(x.ref + x.err)
            if name == "round":  # half-to-even: a tie inside the interval
                lo, hi = np.floor(x.ref - x.err + 0.5), np.floor(x.ref + x.err + 0.5)
            ref = f(x.ref)
            err = unknown_if((lo != hi) | ~np.isfinite(x.err), 0.0)
        else:
            f, deriv, ulps, domain = UNARY_FLOAT[name]
            if domain is not None and x.ref.size and not domain(x.ref - 2 * np.where(
                    np.isfinite(x.err), x.err, 0)):
                return None
            if domain is not None and not np.isfinite(x.err).all():
                return None
            ref = f(x.ref)
            d = lipschitz(deriv, x.ref, x.err) if callable(deriv) else deriv
            err = d * x.err + rounding(
                x.dtype, ref, ulps, 1.0 if ulps == TRANSCENDENTAL_ULPS else 0.0)
    return p.emit(name, lambda r, t: f"{r} = kiln.{name} {x.name} : {t}", x.dtype, ref, err)


def broadcast_partner(p, x, dtype):
    """An existing value of `dtype` broadcastable with x, or a new input."""
    y = pick(p, lambda v: v.dtype == dtype and _broadcastable(v.shape, x.shape))
    if y is None or p.rng.random() < 0.3:
        shape = list(x.shape)
        for i in range(len(shape)):  # drop leading dims / set some to 1
            if p.rng.random() < 0.3:
                shape[i] = 1
        shape = shape[p.rng.integers(0, len(shape) + 1):] if p.rng.random() < 0.3 else shape
        y = p.new_input(tuple(shape), dtype)
    return y


def _broadcastable(a, b):
    try:
        np.broadcast_shapes(a, b)
        return int(np.prod(np.broadcast_shapes(a, b))) <= MAX_ELEMENTS
    except ValueError:
        return False


def binary_text(name, a, b):
    return lambda r, t: f"{r} = kiln.{name} {a.name}, {b.name} : ({a.type}, {b.type}) -> {t}"


def op_binary(p):
    a = pick(p, lambda v: v.dtype != "i1")
    if a is None:
        return None
    b = broadcast_partner(p, a, a.dtype)
    if p.rng.random() < 0.5:
        a, b = b, a
    x, y, ex, ey = a.ref, b.ref, a.err, b.err
    floating = is_float(a.dtype)
    name = p.rng.choice(["add", "sub", "mul", "max", "min", "div"] + ([] if floating else ["rem"]))
    with np.errstate(all="ignore"):
        if name in ("add", "sub"):
            ref = x + y if name == "add" else x - y
            err = ex + ey + rounding(a.dtype, ref)
        elif name == "mul":
            ref = x * y
            err = np.abs(y) * ex + np.abs(x) * ey + ex * ey + rounding(a.dtype, ref)
        elif name in ("max", "min"):
            ref = np.maximum(x, y) if name == "max" else np.minimum(x, y)
            err = np.maximum(ex, ey) + 0 * ref
        elif floating:  # div: the denominator stays away from zero
            if y.size and (np.abs(y) - 2 * ey).min() < 0.25:
                return None
            ref = x / y
            err = (ex + np.abs(ref) * ey) / (np.abs(y) - ey) + rounding(a.dtype, ref, DIV_ULPS)
        else:  # int div truncates, rem takes the dividend's sign; /0 gives 0
            safe = np.where(y == 0, 1, y)
            q = np.where(y == 0, 0, np.trunc(x / safe)).astype(np.int64)
            ref = q if name == "div" else np.where(y == 0, 0, x - q * safe)
            err = ex + ey + 0 * ref
    return p.emit(name, binary_text(name, a, b), a.dtype, ref, err)


def op_compare(p):
    a = pick(p, lambda v: v.dtype != "i1")
    if a is None:
        return None
    b = broadcast_partner(p, a, a.dtype)
    name = p.rng.choice(["eq", "ne", "lt", "le", "gt", "ge"])
    f = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
         "gt": np.greater, "ge": np.greater_equal}[name]
    ref = f(a.ref, b.ref)
    close = np.abs(a.ref - b.ref) <= a.err + b.err
    err = unknown_if(close & ((a.err + b.err) > 0), 0.0)
    return p.emit(name, binary_text(name, a, b), "i1", ref, err)


def op_logic(p):
    a = pick(p, lambda v: v.dtype in ("i1", "i32", "i8", "ui8"))
    if a is None:
        return None
    b = broadcast_partner(p, a, a.dtype)
    name = p.rng.choice(["and", "or", "xor"])
    f = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[name]
    ref = f(a.ref, b.ref)
    if a.dtype == "ui8":
        ref = ref & 0xFF
    return p.emit(name, binary_text(name, a, b), a.dtype, ref, a.err + b.err)


def op_not(p):
    a = pick(p, lambda v: v.dtype in ("i1", "i32", "i64"))
    if a is None:
        return None
    ref = ~a.ref
    return p.emit("not", lambda r, t: f"{r} = kiln.not {a.name} : {t}", a.dtype, ref, a.err)


def op_select(p):
    c = pick(p, lambda v: v.dtype == "i1")
    if c is None:
        return None
    a = broadcast_partner(p, c, p.rng.choice(["f32", "f16", "i32", "i64"]))
    b = broadcast_partner(p, a, a.dtype)
    if not _broadcastable(np.broadcast_shapes(a.shape, b.shape), c.shape):
        return None
    ref = np.where(c.ref, a.ref, b.ref)
    err = unknown_if(~np.isfinite(c.err), np.where(c.ref, a.err, b.err))
    return p.emit("select", lambda r, t: f"{r} = kiln.select {c.name}, {a.name}, {b.name} : "
                  f"({c.type}, {a.type}, {b.type}) -> {t}", a.dtype, ref, err)


def op_clamp(p):
    x = pick(p, lambda v: v.dtype != "i1")
    if x is None:
        return None
    lo, hi = sorted(np.round(p.rng.uniform(-3, 3, 2), 1))
    if not is_float(x.dtype):
        lo, hi = math.floor(lo), math.ceil(hi)
        if x.dtype.startswith("u"):
            lo = max(lo, 0)
    ref = np.clip(x.ref, lo, hi)
    # Bounds are converted to the element type first.
    if is_float(x.dtype):
        ref = np.clip(x.ref, round_to_dtype(lo, x.dtype), round_to_dtype(hi, x.dtype))
    return p.emit("clamp", lambda r, t: f"{r} = kiln.clamp {x.name} {{min = {fmt_f64(lo)}, "
                  f"max = {fmt_f64(hi)}}} : {t}", x.dtype, ref, x.err)


def op_cast(p):
    x = pick(p)
    if x is None:
        return None
    # bf16 only where the program has it already: on Vulkan it is
    # unsupported, and one bf16 cast would turn the whole program into a skip.
    has_bf16 = any(v.dtype == "bf16" for v in p.values)
    to = p.rng.choice([d for d in FLOATS + INTS + ("i1",)
                       if d != x.dtype and (d != "bf16" or has_bf16)])
    with np.errstate(all="ignore"):
        if to == "i1":
            ref = x.ref != 0
            err = unknown_if(np.abs(x.ref) <= x.err, 0.0) if is_float(x.dtype) else x.err
        elif is_float(to):
            ref = x.ref.astype(np.float64)
            err = x.err + rounding(to, ref) if is_float(x.dtype) or to != "f64" else x.err
            if not is_float(x.dtype):
                err = np.where(np.abs(ref) < 2 ** 11, x.err, err)  # small ints are exact
        elif is_float(x.dtype):  # float -> int truncates (and saturates)
            lo, hi = int_range(to)
            ref = np.clip(np.trunc(x.ref), lo, hi)
            err = unknown_if(np.trunc(x.ref - x.err) != np.trunc(x.ref + x.err), 0.0)
        else:  # int -> int wraps; keep to values that fit
            lo, hi = int_range(to)
            if x.ref.size and (x.ref.min() < lo or x.ref.max() > hi):
                return None
            ref, err = x.ref, x.err
    return p.emit("cast", lambda r, t: f"{r} = kiln.cast {x.name} : {x.type} -> {t}", to, ref, err)


def op_reshape(p):
    x = pick(p)
    if x is None or x.ref.size == 0:
        return None
    n = x.ref.size
    divisors = [d for d in range(1, n + 1) if n % d == 0]
    shape = []
    while n > 1 and len(shape) < 3:
        d = int(p.rng.choice([d for d in divisors if n % d == 0]))
        shape.append(d)
        n //= d
    if n > 1 or not shape:
        shape.append(n)
    shape = tuple(shape)
    return p.emit("reshape", lambda r, t: f"{r} = kiln.reshape {x.name} : {x.type} -> {t}",
                  x.dtype, x.ref.reshape(shape), x.err.reshape(shape))


def op_transpose(p):
    x = pick(p, lambda v: v.ref.ndim >= 2)
    if x is None:
        return None
    perm = tuple(int(i) for i in p.rng.permutation(x.ref.ndim))
    return p.emit("transpose", lambda r, t: f"{r} = kiln.transpose {x.name} {{perm = {arr(perm)}}} "
                  f": {x.type} -> {t}", x.dtype, x.ref.transpose(perm), x.err.transpose(perm))


def op_broadcast(p):
    x = pick(p, lambda v: v.ref.ndim <= 3)
    if x is None:
        return None
    shape = tuple(int(p.rng.choice(DIMS[:8])) if d == 1 else d for d in x.shape)
    if p.rng.random() < 0.5:
        shape = (int(p.rng.choice(DIMS[2:7])),) + shape
    if int(np.prod(shape)) > MAX_ELEMENTS:
        return None
    return p.emit("broadcast", lambda r, t: f"{r} = kiln.broadcast {x.name} : {x.type} -> {t}",
                  x.dtype, np.broadcast_to(x.ref, shape), np.broadcast_to(x.err, shape))


def op_flip(p):
    x = pick(p, lambda v: v.ref.ndim >= 1)
    if x is None:
        return None
    dims = sorted(int(d) for d in p.rng.choice(x.ref.ndim, p.rng.integers(1, x.ref.ndim + 1),
                                                 replace=False))
    return p.emit("flip", lambda r, t: f"{r} = kiln.flip {x.name} {{dims = {arr(dims)}}} : {t} -> {t}",
                  x.dtype, np.flip(x.ref, dims), np.flip(x.err, dims))


def op_slice(p):
    x = pick(p, lambda v: v.ref.ndim >= 1 and v.ref.size > 0)
    if x is None:
        return None
    start, stop, step = [], [], []
    for d in x.shape:
        a = int(p.rng.integers(0, d))
        b = int(p.rng.integers(a + 1, d + 1))
        start.append(a), stop.append(b), step.append(int(p.rng.choice([1, 1, 2, 3])))
    sl = tuple(slice(a, b, s) for a, b, s in zip(start, stop, step))
    return p.emit("slice", lambda r, t: f"{r} = kiln.slice {x.name} {{start = {arr(start)}, "
                  f"stop = {arr(stop)}, step = {arr(step)}}} : {x.type} -> {t}",
                  x.dtype, x.ref[sl], x.err[sl])


def op_pad(p):
    x = pick(p, lambda v: v.ref.ndim >= 1 and v.dtype != "i1")
    if x is None:
        return None
    low = [int(p.rng.integers(0, 3)) for _ in x.shape]
    high = [int(p.rng.integers(0, 3)) for _ in x.shape]
    value = float(p.rng.integers(-3, 4)) if not x.dtype.startswith("u") else 2.0
    widths = list(zip(low, high))
    if int(np.prod([d + a + b for d, (a, b) in zip(x.shape, widths)])) > MAX_ELEMENTS:
        return None
    return p.emit("pad", lambda r, t: f"{r} = kiln.pad {x.name} {{low = {arr(low)}, high = "
                  f"{arr(high)}, value = {fmt_f64(value)}}} : {x.type} -> {t}", x.dtype,
                  np.pad(x.ref, widths, constant_values=value), np.pad(x.err, widths))


def op_concat(p):
    x = pick(p, lambda v: v.ref.ndim >= 1)
    if x is None:
        return None
    dim = int(p.rng.integers(0, x.ref.ndim))
    y = pick(p, lambda v: v.dtype == x.dtype and v.ref.ndim == x.ref.ndim and all(
        a == b for i, (a, b) in enumerate(zip(v.shape, x.shape)) if i != dim))
    if y is None or p.rng.random() < 0.3:
        shape = list(x.shape)
        shape[dim] = int(p.rng.choice(DIMS[:9]))
        y = p.new_input(tuple(shape), x.dtype)
    a, b = (x, y) if p.rng.random() < 0.5 else (y, x)
    if a.ref.size + b.ref.size > MAX_ELEMENTS:
        return None
    return p.emit("concat", lambda r, t: f"{r} = kiln.concat {a.name}, {b.name} {{dim = {dim}}} : "
                  f"({a.type}, {b.type}) -> {t}", x.dtype, np.concatenate([a.ref, b.ref], dim),
                  np.concatenate([a.err, b.err], dim))


def index_input(p, shape, bound):
    v = p.new_input(shape, p.rng.choice(["i32", "i64"]))
    data = p.rng.integers(0, bound, shape)
    p.inputs[-1] = data.astype(NP_DTYPE[v.dtype])
    v.ref = data.astype(np.int64)
    return v


def op_gather(p):
    # An index into an empty dim is invalid (the verifier refuses it, as torch does).
    x = pick(p, lambda v: v.ref.ndim >= 1 and 0 not in v.shape)
    if x is None:
        return None
    dim = int(p.rng.integers(0, x.ref.ndim))
    if p.rng.random() < 0.5:  # index_select
        idx = index_input(p, (int(p.rng.choice(DIMS[:9])),), x.shape[dim])
        ref, err = np.take(x.ref, idx.ref, dim), np.take(x.err, idx.ref, dim)
        name = "index_select"
    else:
        shape = tuple(int(p.rng.integers(1, d + 1)) for d in x.shape)
        shape = shape[:dim] + (int(p.rng.choice(DIMS[:9])),) + shape[dim + 1:]
        idx = index_input(p, shape, x.shape[dim])
        # torch.gather: out[i][j] = x[i][idx[i][j]] with the other dims aligned.
        sub = x.ref[tuple(slice(0, d) if i != dim else slice(None) for i, d in enumerate(shape))]
        sube = x.err[tuple(slice(0, d) if i != dim else slice(None) for i, d in enumerate(shape))]
        ref, err = np.take_along_axis(sub, idx.ref, dim), np.take_along_axis(sube, idx.ref, dim)
        name = "gather"
    return p.emit(name, lambda r, t: f"{r} = kiln.{name} {x.name}, {idx.name} {{dim = {dim}}} : "
                  f"({x.type}, {idx.type}) -> {t}", x.dtype, ref, err)


def op_iota(p):
    shape = tuple(int(d) for d in p.rng.choice(DIMS[:9], p.rng.integers(1, 4)))
    dim = int(p.rng.integers(0, len(shape)))
    dtype = p.rng.choice(["f32", "i32", "i64", "f16"])
    ref = np.broadcast_to(np.arange(shape[dim]).reshape(
        [-1 if i == dim else 1 for i in range(len(shape))]), shape)
    return p.emit("iota", lambda r, t: f"{r} = kiln.iota {{dim = {dim}}} : {t}", dtype, ref, 0.0)


def reduce_dims(p, x):
    n = int(p.rng.integers(1, x.ref.ndim + 1))
    return tuple(sorted(int(d) for d in p.rng.choice(x.ref.ndim, n, replace=False)))


def op_reduce(p):
    x = pick(p, lambda v: v.ref.ndim >= 1)
    if x is None:
        return None
    dims = reduce_dims(p, x)
    keep = bool(p.rng.random() < 0.3)
    if x.dtype == "i1":
        name = p.rng.choice(["reduce_any", "reduce_all"])
    else:
        name = p.rng.choice(["reduce_sum", "reduce_max", "reduce_min"] +
                            (["reduce_mean"] if is_float(x.dtype) else []))
    n = int(np.prod([x.shape[d] for d in dims]))
    if n == 0 and name not in ("reduce_sum",):
        return None
    kw = dict(axis=dims, keepdims=keep)
    with np.errstate(all="ignore"):
        if name in ("reduce_any", "reduce_all"):
            ref = x.ref.any(**kw) if name == "reduce_any" else x.ref.all(**kw)
            err = x.err.sum(**kw)
        elif name in ("reduce_max", "reduce_min"):
            ref = x.ref.max(**kw) if name == "reduce_max" else x.ref.min(**kw)
            err = x.err.max(**kw)
        else:
            ref = x.ref.sum(**kw)
            err = x.err.sum(**kw)
            if is_float(x.dtype):
                err = err + n * UNIT_ROUNDOFF[accumulator(x.dtype)] * np.abs(x.ref).sum(**kw)
            if name == "reduce_mean":
                ref, err = ref / n, err / n
            err = err + rounding(x.dtype, ref)
    return p.emit(name, lambda r, t: f"{r} = kiln.{name} {x.name} {{dims = {arr(dims)}"
                  f"{', keep_dims = true' if keep else ''}}} : {x.type} -> {t}", x.dtype, ref, err)


def op_argmax(p):
    x = pick(p, lambda v: v.ref.ndim >= 1 and v.dtype != "i1" and 0 not in v.shape)
    if x is None:
        return None
    dim = int(p.rng.integers(0, x.ref.ndim))
    name = p.rng.choice(["argmax", "argmin"])
    keep = bool(p.rng.random() < 0.3)
    v = x.ref if name == "argmax" else -x.ref
    ref = np.argmax(v, dim)
    best = np.take_along_axis(v, np.expand_dims(ref, dim), dim)
    e = x.err.max(dim, keepdims=True)
    # Unknown where another element is within twice the error of the winner.
    rivals = ((best - v) <= 2 * e).sum(dim) > 1
    err = unknown_if(rivals & (np.squeeze(e, dim) > 0) | ~np.isfinite(np.squeeze(e, dim)), 0.0)
    if keep:
        ref, err = np.expand_dims(ref, dim), np.expand_dims(err, dim)
    return p.emit(name, lambda r, t: f"{r} = kiln.{name} {x.name} {{dim = {dim}"
                  f"{', keep_dims = true' if keep else ''}}} : {x.type} -> {t}", "i64", ref, err)


def op_cumsum(p):
    x = pick(p, lambda v: v.ref.ndim >= 1 and v.dtype not in ("i1", "ui8", "i8"))
    if x is None:
        return None
    dim = int(p.rng.integers(0, x.ref.ndim))
    ref = np.cumsum(x.ref, dim)
    err = np.cumsum(x.err, dim)
    if is_float(x.dtype):
        n = x.shape[dim]
        err = err + n * UNIT_ROUNDOFF[accumulator(x.dtype)] * np.cumsum(np.abs(x.ref), dim) \
            + rounding(x.dtype, ref)
    return p.emit("cumsum", lambda r, t: f"{r} = kiln.cumsum {x.name} {{dim = {dim}}} : {t}",
                  x.dtype, ref, err)


def op_softmax(p):
    x = pick(p, lambda v: is_float(v.dtype) and v.ref.ndim >= 1 and 0 not in v.shape)
    if x is None:
        return None
    dim = int(p.rng.integers(0, x.ref.ndim))
    name = p.rng.choice(["softmax", "log_softmax"])
    n = x.shape[dim]
    m = x.ref.max(dim, keepdims=True)
    lse = np.log(np.exp(x.ref - m).sum(dim, keepdims=True)) + m
    logy = x.ref - lse
    # A shift of every input by at most E moves log y by at most 2E.
    E = 2 * x.err.max(dim, keepdims=True)
    own = (n + 2 * TRANSCENDENTAL_ULPS) * UNIT_ROUNDOFF[accumulator(x.dtype)]
    if name == "softmax":
        ref = np.exp(logy)
        err = ref * (np.expm1(E) + own) + rounding(x.dtype, ref)
    else:
        ref = logy
        err = E + own * (1 + np.abs(x.ref - m)) + rounding(x.dtype, ref)
    return p.emit(name, lambda r, t: f"{r} = kiln.{name} {x.name} {{dim = {dim}}} : {t}",
                  x.dtype, ref, err)


def op_norm(p):
    x = pick(p, lambda v: v.dtype in ("f32", "f16", "f64") and v.ref.ndim >= 1 and v.shape[-1] > 1
             and 0 not in v.shape)
    if x is None:
        return None
    n = x.shape[-1]
    w = p.new_input((n,), x.dtype)
    name = p.rng.choice(["layer_norm", "rms_norm"])
    eps = 1e-5
    uacc = UNIT_ROUNDOFF[accumulator(x.dtype)]
    E = x.err.max(-1, keepdims=True)
    if name == "layer_norm":
        b = p.new_input((n,), x.dtype)
        mean = x.ref.mean(-1, keepdims=True)
        var = x.ref.var(-1, keepdims=True)
        if (var < 1e-2).any():
            return None
        s = np.sqrt(var + eps)
        xhat = (x.ref - mean) / s
        ref = xhat * w.ref + b.ref
        # var may come from E[x^2] - E[x]^2: its rounding scales with E[x^2].
        rel = (n + 8) * uacc * (1 + (mean ** 2 + var) / (var + eps))
        err = np.abs(w.ref) * ((2 + np.abs(xhat)) * E / s + rel * (1 + np.abs(xhat))) \
            + rounding(x.dtype, ref, 3)
        text = lambda r, t: (f"{r} = kiln.layer_norm {x.name}, {w.name}, {b.name} {{eps = "
                             f"{fmt_f64(eps)}}} : ({x.type}, {w.type}, {b.type}) -> {t}")
    else:
        ms = (x.ref ** 2).mean(-1, keepdims=True)
        if (ms < 1e-2).any():
            return None
        s = np.sqrt(ms + eps)
        xhat = x.ref / s
        ref = xhat * w.ref
        err = np.abs(w.ref) * ((1 + np.abs(xhat)) * E / s + (n + 8) * uacc * (1 + np.abs(xhat))) \
            + rounding(x.dtype, ref, 3)
        text = lambda r, t: (f"{r} = kiln.rms_norm {x.name}, {w.name} {{eps = {fmt_f64(eps)}}} : "
                             f"({x.type}, {w.type}) -> {t}")
    return p.emit(name, text, x.dtype, ref, err)


def op_matmul(p):
    a = pick(p, lambda v: v.dtype in ("f32", "f16", "bf16", "f64", "i8", "i32")
             and 2 <= v.ref.ndim <= 3 and 0 not in v.shape)
    if a is None:
        return None
    k = a.shape[-1]
    n = int(p.rng.choice(DIMS[:11]))
    bshape = (k, n) if a.ref.ndim == 2 or p.rng.random() < 0.5 else (a.shape[0], k, n)
    b = pick(p, lambda v: v.dtype == a.dtype and v.shape == bshape)
    if b is None:
        b = p.new_input(bshape, a.dtype)
    if a.shape[-2] * n * (a.shape[0] if a.ref.ndim == 3 else 1) > MAX_ELEMENTS:
        return None
    out = {"f16": "f32", "bf16": "f32", "i8": "i32"}.get(a.dtype, a.dtype)
    with np.errstate(all="ignore"):
        ref = np.matmul(a.ref, b.ref)
        err = np.matmul(a.err, np.abs(b.ref)) + np.matmul(np.abs(a.ref), b.err) + \
            np.matmul(a.err, b.err)
        if is_float(a.dtype):
            err = err + k * UNIT_ROUNDOFF[accumulator(a.dtype)] * np.matmul(
                np.abs(a.ref), np.abs(b.ref)) + rounding(out, ref)
    return p.emit("matmul", binary_text("matmul", a, b), out, ref, err)


OPS = [(op_unary_float, 6), (op_binary, 8), (op_compare, 2), (op_logic, 1), (op_not, 1),
       (op_select, 2), (op_clamp, 1), (op_cast, 3), (op_reshape, 2), (op_transpose, 2),
       (op_broadcast, 1), (op_flip, 1), (op_slice, 2), (op_pad, 1), (op_concat, 2),
       (op_gather, 2), (op_iota, 1), (op_reduce, 4), (op_argmax, 1), (op_cumsum, 1),
       (op_softmax, 2), (op_norm, 1), (op_matmul, 2)]


def random_shape(rng):
    for _ in range(100):
        shape = tuple(int(d) for d in rng.choice(DIMS, rng.integers(1, 5)))
        if int(np.prod(shape)) <= MAX_ELEMENTS:
            return shape
    return (4,)


def generate(seed, index):
    """Program `index` of run `seed`: the same pair always gives the same program."""
    rng = np.random.default_rng([seed, index])
    p = Program(rng)
    dtype = rng.choice(["f32", "f32", "f16", "bf16", "f64", "i32", "i64"])
    p.new_input(random_shape(rng), dtype)
    want = int(rng.integers(2, 8))
    fns, weights = zip(*OPS)
    weights = np.array(weights, np.float64) / sum(weights)
    attempts = 0
    while len(p.ops_used) < want and attempts < 200:
        attempts += 1
        # A rejected op may leave an unused input behind: harmless.
        fns[rng.choice(len(fns), p=weights)](p)
    if not p.ops_used:
        return generate(seed, index + 1_000_000)
    results = p.results()
    return p, results


def uses_bf16(program):
    return any(v.dtype == "bf16" for v in program.values)
