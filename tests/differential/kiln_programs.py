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
DYNAMIC_PROGRAMS = 0.3  # the fraction whose inputs may have `?` dims


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


def tensor_type(shape, dtype, dyn=()):
    """`dyn[i]`: dim i is `?` (a run-time size)."""
    dyn = tuple(dyn) or (False,) * len(shape)
    return "tensor<" + "".join("?x" if q else f"{d}x" for d, q in zip(shape, dyn)) + dtype + ">"


def fmt_f64(v):
    return f"{float(v):.17e} : f64"


def arr(values):
    return "array<i64" + (": " + ", ".join(str(int(v)) for v in values) if len(values) else "") + ">"


class Value:
    def __init__(self, name, dtype, ref, err, dyn=None):
        self.name, self.dtype = name, dtype
        self.ref = np.asarray(ref)
        self.err = np.where(np.isnan(err), np.inf, np.asarray(err, np.float64)) + np.zeros(self.ref.shape)
        self.dyn = tuple(bool(q) for q in dyn) if dyn is not None else (False,) * self.ref.ndim

    @property
    def shape(self):
        return self.ref.shape

    @property
    def type(self):
        return tensor_type(self.shape, self.dtype, self.dyn)

    @property
    def dynamic(self):
        return any(self.dyn)

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

    def __init__(self, rng, dynamic=False):
        self.rng = rng
        # Dynamic programs give some inputs `?` dims; ops without a rule for
        # their result's `?` dims (dyn=) take only static values (pick).
        self.dynamic = dynamic
        self.args, self.lines, self.values, self.inputs = [], [], [], []
        self.ops_used = []

    # -- values -------------------------------------------------------------
    def run_time_dims(self, shape):
        """A `?` mask for a new input of a dynamic program (half its dims)."""
        return tuple(self.dynamic and bool(self.rng.random() < 0.5) for _ in shape)

    def new_input(self, shape, dtype, dyn=None):
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
        v = Value(f"%a{len(self.args)}", dtype, data, np.zeros(np.shape(data)), dyn)
        self.args.append(v)
        self.inputs.append(host)
        self.values.append(v)
        return v

    def emit(self, op, text_fn, dtype, ref, err, dyn=None, full_range=False):
        """Adds one op whose text is text_fn(result_name, result_type);
        `dyn`: the result's `?` dims, as kiln infers them (default none);
        `full_range`: an int result may take its type's whole range (it
        saturates, never wraps)."""
        ref = np.asarray(ref)
        if is_float(dtype):
            ref = ref.astype(np.float64)
            with np.errstate(all="ignore"):
                finite = np.isfinite(ref).all()
                if not finite or (ref.size and np.abs(ref).max() > LARGEST[dtype]):
                    return None
        elif dtype != "i1":
            lo, hi = int_range(dtype)
            if not full_range:
                lo, hi = lo // 4, hi // 4
            if ref.size and (ref.min() < lo or ref.max() > hi):
                return None  # keep ints far from wrapping
            ref = ref.astype(np.int64)
        else:
            ref = ref.astype(bool)
        v = Value(f"%v{len(self.lines)}", dtype, ref, err, dyn)
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

def pick(p, cond=lambda v: True, dyn_ok=False):
    choices = [v for v in p.values if cond(v) and (dyn_ok or not v.dynamic)]
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


# name: (function, derivative or a constant bound, ulps of own rounding,
#        domain: a test of the interval [lo, hi] around each value)
UNARY_FLOAT = {
    "neg": (np.negative, 1.0, 0, None), "abs": (np.abs, 1.0, 0, None),
    "relu": (lambda x: np.maximum(x, 0), 1.0, 0, None),
    "exp": (np.exp, np.exp, TRANSCENDENTAL_ULPS, lambda lo, hi: hi.max() < 8),
    "log": (np.log, lambda x: 1 / x, TRANSCENDENTAL_ULPS, lambda lo, hi: lo.min() > 0.05),
    # Vulkan's sqrt is 1/inversesqrt (inversesqrt: 2 ulp), not correctly rounded.
    "sqrt": (np.sqrt, lambda x: 0.5 / np.sqrt(x), 3, lambda lo, hi: lo.min() > 0.05),
    "tanh": (np.tanh, lambda x: 1 - np.tanh(x) ** 2, TRANSCENDENTAL_ULPS, None),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), 0.25, TRANSCENDENTAL_ULPS, None),
    "sin": (np.sin, 1.0, TRANSCENDENTAL_ULPS, lambda lo, hi: np.maximum(-lo, hi).max() < 100),
    "cos": (np.cos, 1.0, TRANSCENDENTAL_ULPS, lambda lo, hi: np.maximum(-lo, hi).max() < 100),
    "erf": (erf, 1.13, TRANSCENDENTAL_ULPS, None),
    "silu": (lambda x: x / (1 + np.exp(-x)), 1.1, TRANSCENDENTAL_ULPS, None),
    "gelu": (lambda x: 0.5 * x * (1 + erf(x / math.sqrt(2))), 1.13, TRANSCENDENTAL_ULPS, None),
    "gelu_tanh": (lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))),
                  1.13, TRANSCENDENTAL_ULPS, None),
    "log1p": (np.log1p, lambda x: 1 / (1 + x), TRANSCENDENTAL_ULPS, lambda lo, hi: lo.min() > -0.9),
    # rsqrt is 1 / sqrt: sqrt's 3 ulp and a division's 3.
    "rsqrt": (lambda x: 1 / np.sqrt(x), lambda x: 0.5 * x ** -1.5, 6, lambda lo, hi: lo.min() > 0.05),
    "recip": (lambda x: 1 / x, lambda x: 1 / x**2, DIV_ULPS,
              lambda lo, hi: ((lo > 0.25) | (hi < -0.25)).all()),
}
# Exact results with a jump at (half-)integers: unknown within the error of one.
STEP = {"floor": np.floor, "ceil": np.ceil, "round": np.round, "sign": np.sign}


def op_unary_float(p):
    x = pick(p, lambda v: is_float(v.dtype), dyn_ok=True)
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
            margin = 2 * np.where(np.isfinite(x.err), x.err, 0)
            if domain is not None and x.ref.size and not domain(x.ref - margin, x.ref + margin):
                return None
            if domain is not None and not np.isfinite(x.err).all():
                return None
            ref = f(x.ref)
            d = lipschitz(deriv, x.ref, x.err) if callable(deriv) else deriv
            err = d * x.err + rounding(
                x.dtype, ref, ulps, 1.0 if ulps == TRANSCENDENTAL_ULPS else 0.0)
    text = (f'kiln.gelu {x.name} {{approximate = "tanh"}}' if name == "gelu_tanh"
            else f"kiln.{name} {x.name}")
    return p.emit(name, lambda r, t: f"{r} = {text} : {t}", x.dtype, ref, err, x.dyn)


def op_unary_int(p):
    """neg abs sign relu of signed ints: exact."""
    x = pick(p, lambda v: v.dtype in ("i8", "i32", "i64"), dyn_ok=True)
    if x is None:
        return None
    name = p.rng.choice(["neg", "abs", "sign", "relu"])
    f = {"neg": np.negative, "abs": np.abs, "sign": np.sign,
         "relu": lambda v: np.maximum(v, 0)}[name]
    return p.emit(name, lambda r, t: f"{r} = kiln.{name} {x.name} : {t}", x.dtype, f(x.ref),
                  x.err, x.dyn)


def broadcast_partner(p, x, dtype):
    """An existing value of `dtype` broadcastable with x, or a new input."""
    y = pick(p, lambda v: v.dtype == dtype and _broadcastable(v.shape, x.shape)
             and broadcast_dyn(v, x) is not None, dyn_ok=True)
    if y is None or p.rng.random() < 0.3:
        shape = list(x.shape)
        for i in range(len(shape)):  # drop leading dims / set some to 1
            if p.rng.random() < 0.3:
                shape[i] = 1
        shape = shape[p.rng.integers(0, len(shape) + 1):] if p.rng.random() < 0.3 else shape
        y = p.new_input(tuple(shape), dtype, p.run_time_dims(shape))
    return y


def _broadcastable(a, b):
    try:
        np.broadcast_shapes(a, b)
        return int(np.prod(np.broadcast_shapes(a, b))) <= MAX_ELEMENTS
    except ValueError:
        return False


def broadcast_dyn(*values):
    """The `?` dims of the values' broadcast, as kiln infers them (a `?`
    against a static n != 1 is n, against a static 1 or a `?` stays `?`),
    or None where a `?` would stretch (it never does: a run-time error)."""
    shape = np.broadcast_shapes(*(v.shape for v in values))
    dyn = []
    for i, size in enumerate(shape):
        dims = [(v.shape[j], v.dyn[j]) for v in values
                for j in [i - len(shape) + v.ref.ndim] if j >= 0]
        if any(q and n != size for n, q in dims):
            return None
        dyn.append(any(q for _, q in dims) and all(q or n == 1 for n, q in dims))
    return tuple(dyn)


def binary_text(name, a, b):
    return lambda r, t: f"{r} = kiln.{name} {a.name}, {b.name} : ({a.type}, {b.type}) -> {t}"


def op_binary(p):
    a = pick(p, lambda v: v.dtype != "i1", dyn_ok=True)
    if a is None:
        return None
    b = broadcast_partner(p, a, a.dtype)
    dyn = broadcast_dyn(a, b)
    if dyn is None:
        return None
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
            q = np.where(y == 0, 0, np.sign(x) * np.sign(safe) * (np.abs(x) // np.abs(safe)))
            ref = q if name == "div" else np.where(y == 0, 0, x - q * safe)
            err = ex + ey + 0 * ref
    return p.emit(name, binary_text(name, a, b), a.dtype, ref, err, dyn)


def op_pow(p):
    """pow of a positive base (float only): its bound is the spread over the
    corners of the operands' error box, where x**y takes its extremes."""
    x = pick(p, lambda v: is_float(v.dtype) and v.ref.size and np.isfinite(v.err).all()
             and (v.ref - 2 * v.err).min() > 0.05, dyn_ok=True)
    if x is None:
        return None
    y = broadcast_partner(p, x, x.dtype)
    dyn = broadcast_dyn(x, y)
    if dyn is None or not np.isfinite(y.err).all():
        return None
    with np.errstate(all="ignore"):
        ref = x.ref ** y.ref
        corners = [(x.ref + sx * x.err) ** (y.ref + sy * y.err) for sx in (-1, 1) for sy in (-1, 1)]
        err = np.max([np.abs(c - ref) for c in corners], axis=0)
        # exp(y log x): the error of log x grows by |y log x|.
        ulps = TRANSCENDENTAL_ULPS * (1 + np.abs(y.ref * np.log(x.ref)))
        err = err + rounding(x.dtype, ref, ulps, 1.0)
    return p.emit("pow", binary_text("pow", x, y), x.dtype, ref, err, dyn)


def op_shift(p):
    """shl / shr by amounts below the width (shr: arithmetic for signed)."""
    x = pick(p, lambda v: v.dtype in INTS and np.isfinite(v.err).all(), dyn_ok=True)
    if x is None:
        return None
    name = p.rng.choice(["shl", "shr"])
    bits = np.iinfo(NP_DTYPE[x.dtype]).bits
    shape = x.shape[int(p.rng.integers(0, x.ref.ndim + 1)):]
    dyn = x.dyn[len(x.shape) - len(shape):]
    amount = input_of(p, shape, x.dtype, p.rng.integers(0, 4 if name == "shl" else bits, shape),
                      dyn)
    ref = x.ref << amount.ref if name == "shl" else x.ref >> amount.ref
    return p.emit(name, binary_text(name, x, amount), x.dtype, ref, x.err + 0 * ref, x.dyn)


def op_compare(p):
    a = pick(p, lambda v: v.dtype != "i1", dyn_ok=True)
    if a is None:
        return None
    b = broadcast_partner(p, a, a.dtype)
    dyn = broadcast_dyn(a, b)
    if dyn is None:
        return None
    name = p.rng.choice(["eq", "ne", "lt", "le", "gt", "ge"])
    f = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
         "gt": np.greater, "ge": np.greater_equal}[name]
    ref = f(a.ref, b.ref)
    close = np.abs(a.ref - b.ref) <= a.err + b.err
    err = unknown_if(close & ((a.err + b.err) > 0), 0.0)
    return p.emit(name, binary_text(name, a, b), "i1", ref, err, dyn)


def op_logic(p):
    a = pick(p, lambda v: v.dtype in ("i1", "i32", "i8", "ui8"), dyn_ok=True)
    if a is None:
        return None
    b = broadcast_partner(p, a, a.dtype)
    dyn = broadcast_dyn(a, b)
    if dyn is None:
        return None
    name = p.rng.choice(["and", "or", "xor"])
    f = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[name]
    ref = f(a.ref, b.ref)
    if a.dtype == "ui8":
        ref = ref & 0xFF
    return p.emit(name, binary_text(name, a, b), a.dtype, ref, a.err + b.err, dyn)


def op_not(p):
    a = pick(p, lambda v: v.dtype in ("i1", "i32", "i64"), dyn_ok=True)
    if a is None:
        return None
    ref = ~a.ref
    return p.emit("not", lambda r, t: f"{r} = kiln.not {a.name} : {t}", a.dtype, ref, a.err,
                  a.dyn)


def op_select(p):
    c = pick(p, lambda v: v.dtype == "i1", dyn_ok=True)
    if c is None:
        return None
    a = broadcast_partner(p, c, p.rng.choice(["f32", "f16", "i32", "i64"]))
    b = broadcast_partner(p, a, a.dtype)
    if not _broadcastable(np.broadcast_shapes(a.shape, b.shape), c.shape):
        return None
    dyn = broadcast_dyn(c, a, b)
    if dyn is None:
        return None
    ref = np.where(c.ref, a.ref, b.ref)
    err = unknown_if(~np.isfinite(c.err), np.where(c.ref, a.err, b.err))
    return p.emit("select", lambda r, t: f"{r} = kiln.select {c.name}, {a.name}, {b.name} : "
                  f"({c.type}, {a.type}, {b.type}) -> {t}", a.dtype, ref, err, dyn)


def op_clamp(p):
    x = pick(p, lambda v: v.dtype != "i1", dyn_ok=True)
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
                  f"max = {fmt_f64(hi)}}} : {t}", x.dtype, ref, x.err, x.dyn)


def op_cast(p):
    x = pick(p, dyn_ok=True)
    if x is None:
        return None
    to = p.rng.choice([d for d in FLOATS + INTS + ("i1",) if d != x.dtype])
    with np.errstate(all="ignore"):
        if to == "i1":
            ref = x.ref != 0
            err = unknown_if(np.abs(x.ref) <= x.err, 0.0) if is_float(x.dtype) else x.err
        elif is_float(to):
            ref = x.ref.astype(np.float64)
            err = x.err + rounding(to, ref) if is_float(x.dtype) or to != "f64" else x.err
            if not is_float(x.dtype):
                # Ints up to 2^precision are exact (bf16: 256, f16: 2048).
                exact = 1.0 / UNIT_ROUNDOFF[to]
                err = np.where(np.abs(ref) <= exact, x.err, err)
        elif is_float(x.dtype):  # float -> int truncates (and saturates)
            lo, hi = int_range(to)
            ref = np.clip(np.trunc(x.ref), lo, hi)
            err = unknown_if(np.trunc(x.ref - x.err) != np.trunc(x.ref + x.err), 0.0)
        else:  # int -> int wraps; keep to values that fit
            lo, hi = int_range(to)
            if x.ref.size and (x.ref.min() < lo or x.ref.max() > hi):
                return None
            ref, err = x.ref, x.err
    return p.emit("cast", lambda r, t: f"{r} = kiln.cast {x.name} : {x.type} -> {t}", to, ref, err,
                  x.dyn)


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
    x = pick(p, lambda v: v.ref.ndim >= 2, dyn_ok=True)
    if x is None:
        return None
    perm = tuple(int(i) for i in p.rng.permutation(x.ref.ndim))
    return p.emit("transpose", lambda r, t: f"{r} = kiln.transpose {x.name} {{perm = {arr(perm)}}} "
                  f": {x.type} -> {t}", x.dtype, x.ref.transpose(perm), x.err.transpose(perm),
                  [x.dyn[i] for i in perm])


def op_broadcast(p):
    x = pick(p, lambda v: v.ref.ndim <= 3, dyn_ok=True)
    if x is None:
        return None
    # Static 1s stretch (a `?` never does).
    shape = tuple(int(p.rng.choice(DIMS[:8])) if d == 1 and not q else d
                  for d, q in zip(x.shape, x.dyn))
    lead = p.rng.random() < 0.5
    if lead:
        shape = (int(p.rng.choice(DIMS[2:7])),) + shape
    if int(np.prod(shape)) > MAX_ELEMENTS:
        return None
    return p.emit("broadcast", lambda r, t: f"{r} = kiln.broadcast {x.name} : {x.type} -> {t}",
                  x.dtype, np.broadcast_to(x.ref, shape), np.broadcast_to(x.err, shape),
                  (False,) * lead + x.dyn)


def op_flip(p):
    x = pick(p, lambda v: v.ref.ndim >= 1, dyn_ok=True)
    if x is None:
        return None
    dims = sorted(int(d) for d in p.rng.choice(x.ref.ndim, p.rng.integers(1, x.ref.ndim + 1),
                                                 replace=False))
    return p.emit("flip", lambda r, t: f"{r} = kiln.flip {x.name} {{dims = {arr(dims)}}} : {t} -> {t}",
                  x.dtype, np.flip(x.ref, dims), np.flip(x.err, dims), x.dyn)


def op_slice(p):
    # (Of a `?` dim too: the result's size is the attributes'.)
    x = pick(p, lambda v: v.ref.ndim >= 1 and v.ref.size > 0, dyn_ok=True)
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
    x = pick(p, lambda v: v.ref.ndim >= 1 and v.dtype != "i1", dyn_ok=True)
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
                  np.pad(x.ref, widths, constant_values=value), np.pad(x.err, widths), x.dyn)


def op_concat(p):
    x = pick(p, lambda v: v.ref.ndim >= 1, dyn_ok=True)
    if x is None:
        return None
    dim = int(p.rng.integers(0, x.ref.ndim))
    y = pick(p, lambda v: v.dtype == x.dtype and v.ref.ndim == x.ref.ndim and all(
        a == b for i, (a, b) in enumerate(zip(v.shape, x.shape)) if i != dim), dyn_ok=True)
    if y is None or p.rng.random() < 0.3:
        shape = list(x.shape)
        shape[dim] = int(p.rng.choice(DIMS[:9]))
        y = p.new_input(tuple(shape), x.dtype, p.run_time_dims(shape))
    a, b = (x, y) if p.rng.random() < 0.5 else (y, x)
    if a.ref.size + b.ref.size > MAX_ELEMENTS:
        return None
    # Along `dim` a sum (`?` if a term is); off it a static size wins.
    dyn = [qa or qb if i == dim else qa and qb for i, (qa, qb) in enumerate(zip(a.dyn, b.dyn))]
    return p.emit("concat", lambda r, t: f"{r} = kiln.concat {a.name}, {b.name} {{dim = {dim}}} : "
                  f"({a.type}, {b.type}) -> {t}", x.dtype, np.concatenate([a.ref, b.ref], dim),
                  np.concatenate([a.err, b.err], dim), dyn)


def input_of(p, shape, dtype, data, dyn=None):
    """A new input holding `data` (exactly representable in dtype)."""
    v = p.new_input(shape, dtype, dyn)
    p.inputs[-1] = np.asarray(data).astype(NP_DTYPE[dtype])
    v.ref = np.asarray(data).astype(np.float64 if is_float(dtype) else np.int64)
    return v


def index_input(p, shape, bound):
    return input_of(p, shape, p.rng.choice(["i32", "i64"]), p.rng.integers(0, bound, shape))


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


def op_isnan(p):
    x = pick(p, lambda v: is_float(v.dtype) and np.isfinite(v.err).all(), dyn_ok=True)
    if x is None:
        return None
    ref = np.isnan(x.ref)
    return p.emit("isnan", lambda r, t: f"{r} = kiln.isnan {x.name} : {x.type} -> {t}", "i1", ref,
                  0 * x.err, x.dyn)


def op_fill(p):
    shape = tuple(int(d) for d in p.rng.choice(DIMS[:9], p.rng.integers(0, 4)))
    dtype = p.rng.choice(["f32", "f16", "f64", "i8", "i32", "i64"])
    value = float(np.round(p.rng.uniform(-30, 30), 2))
    if not is_float(dtype):
        value = float(round(value))
    ref = np.full(shape, round_to_dtype(value, dtype) if is_float(dtype) else value)
    return p.emit("fill", lambda r, t: f'{r} = "kiln.fill"() {{value = {fmt_f64(value)}}} : () -> {t}',
                  dtype, ref, rounding(dtype, ref))


def philox4x32(index, seed):
    """Philox4x32-10 of counter (index, 0), key seed: four uint32 words
    (kiln's random ops, DESIGN.md)."""
    m32 = np.uint64(0xFFFFFFFF)
    c0, c1 = index & m32, index >> np.uint64(32)
    c2 = c3 = np.zeros_like(index)
    k0, k1 = np.uint64(seed & 0xFFFFFFFF), np.uint64((seed >> 32) & 0xFFFFFFFF)
    for _ in range(10):
        p0, p1 = np.uint64(0xD2511F53) * c0, np.uint64(0xCD9E8D57) * c2
        c0, c1, c2, c3 = ((p1 >> np.uint64(32)) ^ c1 ^ k0, p1 & m32,
                          (p0 >> np.uint64(32)) ^ c3 ^ k1, p0 & m32)
        k0, k1 = (k0 + np.uint64(0x9E3779B9)) & m32, (k1 + np.uint64(0xBB67AE85)) & m32
    return c0, c1, c2, c3


def op_random(p):
    """random_uniform / random_normal against Philox in NumPy: uniforms of 24
    (53 for f64) bits; normals by Box-Muller, whose bound covers kiln's own
    series for log, sqrt and cos (a few ulps, more near a zero radius)."""
    shape = tuple(int(d) for d in p.rng.choice(DIMS[:10], p.rng.integers(0, 4)))
    dtype = p.rng.choice(["f32", "f16", "f64", "bf16"])
    seed = int(p.rng.integers(-2**62, 2**62))
    s = input_of(p, (), "i64", np.int64(seed))
    p.values.remove(s)  # a seed is no operand of other ops (no int range kept)
    compute = "f64" if dtype == "f64" else "f32"
    bits = 53 if compute == "f64" else 24
    u = UNIT_ROUNDOFF[compute]
    w = philox4x32(np.arange(int(np.prod(shape)), dtype=np.uint64), seed)

    def uniform_bits(hi, lo):
        if bits == 24:
            return (hi >> np.uint64(8)).astype(np.float64)
        return ((hi << np.uint64(21)) | (lo >> np.uint64(11))).astype(np.float64)

    if p.rng.random() < 0.5:
        name = "random_uniform"
        low, high = sorted(np.round(p.rng.uniform(-4, 4, 2), 2))
        ref = low + uniform_bits(w[0], w[1]) * 2.0**-bits * (high - low)
        err = 2 * u * (abs(low) + np.abs(ref) + abs(high - low))
        attrs = f"low = {fmt_f64(low)}, high = {fmt_f64(high)}"
    else:
        name = "random_normal"
        low, high = np.round(p.rng.uniform(-4, 4), 2), np.round(p.rng.uniform(0.1, 3), 2)
        k0 = uniform_bits(w[0], w[1]) if bits == 53 else uniform_bits(w[0], w[0])
        k1 = uniform_bits(w[2], w[3]) if bits == 53 else uniform_bits(w[1], w[1])
        radius = np.sqrt(-2 * np.log((2.0**bits - k0) / 2.0**bits))
        z = radius * np.cos(2 * np.pi * k1 / 2.0**bits)
        # log(u1) is off by a few ulps of 1; sqrt amplifies that near radius 0.
        ez = TRANSCENDENTAL_ULPS * u * (np.abs(z) + 1) + 8 * u / np.maximum(radius, 1e-3)
        ref = low + z * high
        err = high * ez + 2 * u * (abs(low) + np.abs(ref))
        attrs = f"mean = {fmt_f64(low)}, std = {fmt_f64(high)}"
    ref = np.asarray(ref).reshape(shape)
    err = np.asarray(err).reshape(shape) + rounding(dtype, ref)
    return p.emit(name, lambda r, t: f"{r} = kiln.{name} {s.name} {{{attrs}}} : {s.type} -> {t}",
                  dtype, ref, err)


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
    x = pick(p, lambda v: v.ref.ndim >= 1, dyn_ok=True)
    if x is None:
        return None
    dims = reduce_dims(p, x)
    keep = bool(p.rng.random() < 0.3)
    if x.dtype == "i1":
        name = p.rng.choice(["reduce_any", "reduce_all"])
    else:
        name = p.rng.choice(["reduce_sum", "reduce_max", "reduce_min", "reduce_prod"] +
                            (["reduce_mean"] if is_float(x.dtype) else []))
    n = int(np.prod([x.shape[d] for d in dims]))
    if n == 0 and name not in ("reduce_sum", "reduce_prod"):
        return None
    kw = dict(axis=dims, keepdims=keep)
    with np.errstate(all="ignore"):
        if name in ("reduce_any", "reduce_all"):
            ref = x.ref.any(**kw) if name == "reduce_any" else x.ref.all(**kw)
            err = x.err.sum(**kw)
        elif name in ("reduce_max", "reduce_min"):
            ref = x.ref.max(**kw) if name == "reduce_max" else x.ref.min(**kw)
            err = x.err.max(**kw)
        elif name == "reduce_prod":
            # Partial products in any order stay below the product of
            # max(1, |x| + e): keep it far from the accumulator's overflow.
            upper = np.abs(x.ref) + x.err
            if x.ref.size and np.prod(np.maximum(upper, 1), **kw).max() > (
                    1e30 if is_float(x.dtype) else int_range(x.dtype)[1] // 4):
                return None
            # ... and far from underflow (a flushed partial product is not
            # multiplied back up); an exact zero factor is exact anyway.
            lower = np.where(x.ref == 0, 1, np.minimum(np.abs(x.ref) - x.err, 1))
            if is_float(x.dtype) and x.ref.size and np.prod(lower, **kw).min() < 1e-30:
                return None
            ref = np.prod(x.ref.astype(np.float64), **kw)
            bound = np.prod(upper, **kw)
            err = bound - np.abs(ref)  # a change of each factor by its error
            if is_float(x.dtype):
                err = err + n * UNIT_ROUNDOFF[accumulator(x.dtype)] * bound + rounding(x.dtype, ref)
            else:
                ref = np.prod(x.ref, **kw)
        else:
            ref = x.ref.sum(**kw)
            err = x.err.sum(**kw)
            if is_float(x.dtype):
                err = err + n * UNIT_ROUNDOFF[accumulator(x.dtype)] * np.abs(x.ref).sum(**kw)
            if name == "reduce_mean":
                ref, err = ref / n, err / n
            err = err + rounding(x.dtype, ref)
    dyn = [q and d not in dims for d, q in enumerate(x.dyn) if keep or d not in dims]
    return p.emit(name, lambda r, t: f"{r} = kiln.{name} {x.name} {{dims = {arr(dims)}"
                  f"{', keep_dims = true' if keep else ''}}} : {x.type} -> {t}", x.dtype, ref, err,
                  dyn)


def op_argmax(p):
    x = pick(p, lambda v: v.ref.ndim >= 1 and v.dtype != "i1" and 0 not in v.shape, dyn_ok=True)
    if x is None:
        return None
    dim = int(p.rng.integers(0, x.ref.ndim))
    if x.dyn[dim]:  # over a `?` dim: unsupported (it could be empty)
        return None
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
    dyn = [q for d, q in enumerate(x.dyn) if keep or d != dim]
    return p.emit(name, lambda r, t: f"{r} = kiln.{name} {x.name} {{dim = {dim}"
                  f"{', keep_dims = true' if keep else ''}}} : {x.type} -> {t}", "i64", ref, err,
                  dyn)


def op_cumsum(p):
    x = pick(p, lambda v: v.ref.ndim >= 1 and v.dtype not in ("i1", "ui8", "i8"), dyn_ok=True)
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
                  x.dtype, ref, err, x.dyn)


def op_softmax(p):
    x = pick(p, lambda v: is_float(v.dtype) and v.ref.ndim >= 1 and 0 not in v.shape, dyn_ok=True)
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
                  x.dtype, ref, err, x.dyn)


def op_norm(p):
    # The normalised dim static (the weights are).
    x = pick(p, lambda v: v.dtype in ("f32", "f16", "f64") and v.ref.ndim >= 1 and v.shape[-1] > 1
             and 0 not in v.shape and not v.dyn[-1], dyn_ok=True)
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
    return p.emit(name, text, x.dtype, ref, err, x.dyn)


def op_matmul(p):
    a = pick(p, lambda v: v.dtype in ("f32", "f16", "bf16", "f64", "i8", "i32")
             and 2 <= v.ref.ndim <= 3 and 0 not in v.shape, dyn_ok=True)
    if a is None:
        return None
    k = a.shape[-1]
    n = int(p.rng.choice(DIMS[:11]))
    bshape = (k, n) if a.ref.ndim == 2 or p.rng.random() < 0.5 else (a.shape[0], k, n)
    b = pick(p, lambda v: v.dtype == a.dtype and v.shape == bshape, dyn_ok=True)
    if b is None:
        b = p.new_input(bshape, a.dtype, p.run_time_dims(bshape))
    # With `?` dims, kiln lowers rank 2, or rank 3 with one batch dim on both
    # sides (docs/dynamic-shapes.md).
    if (a.dynamic or b.dynamic) and (a.ref.ndim != b.ref.ndim or (
            a.ref.ndim == 3 and a.dyn[0] != b.dyn[0])):
        return None
    # Batch dims broadcast (a `?` against a static n != 1 is n); M is a's, N b's.
    batch = broadcast_dyn(*(Value("", "f32", np.zeros(v.shape[:-2]), 0, v.dyn[:-2]) for v in (a, b)))
    dyn = batch + (a.dyn[-2], b.dyn[-1])
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
    return p.emit("matmul", binary_text("matmul", a, b), out, ref, err, dyn)


def op_scatter_add(p):
    x = pick(p, lambda v: v.dtype not in ("i1",) and v.ref.ndim >= 1 and 0 not in v.shape)
    if x is None:
        return None
    dim = int(p.rng.integers(0, x.ref.ndim))
    # idx fits in src, and in x off `dim`; along `dim` it may repeat targets.
    ishape = tuple(int(p.rng.choice(DIMS[:9])) if d == dim else int(p.rng.integers(1, n + 1))
                   for d, n in enumerate(x.shape))
    sshape = tuple(n + (int(p.rng.integers(0, 3)) if p.rng.random() < 0.2 else 0) for n in ishape)
    if int(np.prod(sshape)) > MAX_ELEMENTS:
        return None
    idx = index_input(p, ishape, x.shape[dim])
    src = p.new_input(sshape, x.dtype)
    pos = list(np.indices(ishape))
    sub = tuple(slice(0, n) for n in ishape)
    pos[dim] = idx.ref
    # Ints sum exactly (in float64, an i64 past 2^53 lost its last bits).
    ref = x.ref.astype(np.float64 if is_float(x.dtype) else np.int64)
    err, mag, adds = x.err.copy(), np.abs(x.ref), np.ones(x.shape)
    np.add.at(ref, tuple(pos), src.ref[sub])
    np.add.at(err, tuple(pos), src.err[sub])
    np.add.at(mag, tuple(pos), np.abs(src.ref[sub]))
    np.add.at(adds, tuple(pos), 1.0)
    if is_float(x.dtype):
        # Adds in any order; f16/bf16 may round after each one.
        err = err + adds * UNIT_ROUNDOFF[x.dtype] * mag + rounding(x.dtype, ref)
    return p.emit("scatter_add", lambda r, t: f"{r} = kiln.scatter_add {x.name}, {idx.name}, "
                  f"{src.name} {{dim = {dim}}} : ({x.type}, {idx.type}, {src.type}) -> {t}",
                  x.dtype, ref, err)


def op_quantize(p):
    """Symmetric int8 per tensor or per block of the last dim, then maybe
    back to a float: q = clamp(round_half_even(x / scale), -127, 127)."""
    x = pick(p, lambda v: v.dtype in ("f32", "f16", "bf16") and v.ref.ndim >= 1
             and not v.dyn[-1] and np.isfinite(v.err).all(), dyn_ok=True)
    if x is None:
        return None
    last = x.shape[-1]
    blocks = [b for b in (1, 2, 4, 8, 16, 32) if last and last % b == 0]
    # Per block: a static last dim and at most one `?` dim (docs/dynamic-shapes.md).
    block = (int(p.rng.choice(blocks)) if blocks and p.rng.random() < 0.6 and sum(x.dyn) <= 1
             else None)
    sshape = () if block is None else x.shape[:-1] + (last // block,)
    sdyn = () if block is None else x.dyn
    sdtype = p.rng.choice(["f32", "f16", "bf16"])
    s = input_of(p, sshape, sdtype, round_to_dtype(p.rng.uniform(0.004, 0.05, sshape), sdtype),
                 sdyn)
    scale = s.ref if block is None else np.repeat(s.ref, block, axis=-1)
    attr = "" if block is None else f" {{block_size = {block}}}"
    with np.errstate(all="ignore"):
        t = x.ref / scale  # in f32 on every target
        te = x.err / scale + rounding("f32", t, DIV_ULPS)
        lo, hi = np.floor(t - te + 0.5), np.floor(t + te + 0.5)
        ref = np.clip(np.round(t), -127, 127)
        err = unknown_if(np.clip(lo, -127, 127) != np.clip(hi, -127, 127), 0.0)
    q = p.emit("quantize", lambda r, t_: f"{r} = kiln.quantize {x.name}, {s.name}{attr} : "
               f"({x.type}, {s.type}) -> {t_}", "i8", ref, err, x.dyn, full_range=True)
    if q is None or p.rng.random() < 0.4:
        return q
    out = p.rng.choice(["f32", "f16", "bf16"])
    ref = q.ref * scale
    err = q.err * scale + rounding("f32", ref) + rounding(out, ref)
    return p.emit("dequantize", lambda r, t_: f"{r} = kiln.dequantize {q.name}, {s.name}{attr} : "
                  f"({q.type}, {s.type}) -> {t_}", out, ref, err, x.dyn)


def spatial(name, hw):
    return f"{name} = array<i64: {hw[0]}, {hw[1]}>"


def window_taps(x, kernel, stride, dilation, out):
    """(i, j, x's view under tap (i, j)) over the last two dims of padded x."""
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            a, b = i * dilation[0], j * dilation[1]
            yield i, j, x[..., a:a + stride[0] * (out[0] - 1) + 1:stride[0],
                          b:b + stride[1] * (out[1] - 1) + 1:stride[1]]


def spatial_input(p, rank):
    """A float value of `rank` whose spatial dims are not empty, or a new one."""
    x = pick(p, lambda v: is_float(v.dtype) and v.ref.ndim == rank and 0 not in v.shape)
    if x is None or p.rng.random() < 0.3:
        shape = [int(p.rng.integers(1, 4)), int(p.rng.choice(DIMS[:9]))] + \
            [int(p.rng.integers(1, 13)) for _ in range(2)]
        x = p.new_input(tuple(shape[4 - rank:]), p.rng.choice(["f32", "f32", "f16", "f64"]))
    return x


def op_conv2d(p):
    x = spatial_input(p, 4)
    n, c, h, w = x.shape
    groups = int(p.rng.choice([g for g in range(1, c + 1) if c % g == 0]))
    o = groups * int(p.rng.integers(1, 5))
    kernel = [int(p.rng.integers(1, 4)) for _ in range(2)]
    stride = [int(p.rng.integers(1, 4)) for _ in range(2)]
    dilation = [int(p.rng.integers(1, 3)) for _ in range(2)]
    padding = [int(p.rng.integers(0, 3)) for _ in range(2)]
    reach = [dilation[d] * (kernel[d] - 1) + 1 for d in range(2)]
    out = [(s + 2 * q - r) // st + 1 for s, q, r, st in zip((h, w), padding, reach, stride)]
    if min(out) < 1 or n * o * out[0] * out[1] > MAX_ELEMENTS:
        return None
    wt = p.new_input((o, c // groups, *kernel), x.dtype)
    b = p.new_input((o,), x.dtype) if p.rng.random() < 0.5 else None
    pads = ((0, 0), (0, 0), (padding[0],) * 2, (padding[1],) * 2)

    def conv(xs, ws):
        xs = np.pad(xs, pads)
        y = np.zeros((n, o, *out))
        cg, og = c // groups, o // groups
        for g in range(groups):
            xg, wg = xs[:, g * cg:(g + 1) * cg], ws[g * og:(g + 1) * og]
            for i, j, view in window_taps(xg, kernel, stride, dilation, out):
                y[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", view, wg[:, :, i, j])
        return y

    ref = conv(x.ref, wt.ref)
    err = conv(x.err, np.abs(wt.ref)) + conv(np.abs(x.ref), wt.err) + conv(x.err, wt.err)
    taps = c // groups * kernel[0] * kernel[1] + 1
    mag = conv(np.abs(x.ref), np.abs(wt.ref))
    if b is not None:
        ref, err = ref + b.ref[:, None, None], err + b.err[:, None, None]
        mag = mag + np.abs(b.ref)[:, None, None]
    err = err + taps * UNIT_ROUNDOFF[accumulator(x.dtype)] * mag + rounding(x.dtype, ref)
    operands = [x, wt] + ([b] if b is not None else [])
    attrs = ", ".join([spatial("stride", stride), spatial("padding", padding),
                       spatial("dilation", dilation), f"groups = {groups} : i64"])
    return p.emit("conv2d", lambda r, t: f"{r} = kiln.conv2d {', '.join(v.name for v in operands)}"
                  f" {{{attrs}}} : ({', '.join(v.type for v in operands)}) -> {t}",
                  x.dtype, ref, err)


def op_pool(p):
    x = spatial_input(p, int(p.rng.choice([3, 4])))
    h, w = x.shape[-2:]
    kernel = [int(p.rng.integers(1, 5)) for _ in range(2)]
    padding = [int(p.rng.integers(0, k // 2 + 1)) for k in kernel]
    stride = [int(p.rng.integers(1, 4)) for _ in range(2)] if p.rng.random() < 0.7 else None
    st = stride or kernel
    out = [(s + 2 * q - k) // t + 1 for s, q, k, t in zip((h, w), padding, kernel, st)]
    if min(out) < 1:
        return None
    name = p.rng.choice(["max_pool2d", "avg_pool2d"])
    pads = ((0, 0),) * (x.ref.ndim - 2) + ((padding[0],) * 2, (padding[1],) * 2)
    if name == "max_pool2d":  # padding is -inf: every window has an element of x
        xs = np.pad(x.ref, pads, constant_values=-np.inf)
        es = np.pad(x.err, pads)
        ref = np.max([v for *_, v in window_taps(xs, kernel, st, (1, 1), out)], axis=0)
        err = np.max([v for *_, v in window_taps(es, kernel, st, (1, 1), out)], axis=0)
    else:  # padding counts as 0 and in the divisor
        area = kernel[0] * kernel[1]
        sums = [np.sum([v for *_, v in window_taps(np.pad(a, pads), kernel, st, (1, 1), out)],
                       axis=0) / area for a in (x.ref, x.err, np.abs(x.ref))]
        ref = sums[0]
        err = sums[1] + (area + 1) * UNIT_ROUNDOFF[accumulator(x.dtype)] * sums[2] + \
            rounding(x.dtype, ref, 2)
    attrs = [spatial("kernel", kernel), spatial("padding", padding)]
    if stride:
        attrs.append(spatial("stride", stride))
    return p.emit(name, lambda r, t: f"{r} = kiln.{name} {x.name} {{{', '.join(attrs)}}} : "
                  f"{x.type} -> {t}", x.dtype, ref, err)


def op_attention(p):
    q = pick(p, lambda v: is_float(v.dtype) and 2 <= v.ref.ndim <= 4
             and 0 not in v.shape)
    if q is None:
        return None
    *batch, lq, e = q.shape
    lk, ev = int(p.rng.choice(DIMS[:11])), int(p.rng.choice(DIMS[:9]))
    if int(np.prod(batch)) * lk * max(e, ev) > MAX_ELEMENTS or \
            int(np.prod(batch)) * lq * max(lk, ev) > MAX_ELEMENTS:
        return None
    k = p.new_input((*batch, lk, e), q.dtype)
    v = p.new_input((*batch, lk, ev), q.dtype)
    causal = bool(p.rng.random() < 0.3)
    scale = None if p.rng.random() < 0.6 else float(np.round(p.rng.uniform(0.05, 1.0), 2))
    s_scale = 1 / math.sqrt(e) if scale is None else scale
    uacc = UNIT_ROUNDOFF[accumulator(q.dtype)]
    kt, ekt = np.swapaxes(k.ref, -1, -2), np.swapaxes(k.err, -1, -2)
    s = q.ref @ kt * s_scale
    with np.errstate(all="ignore"):
        es = s_scale * (q.err @ np.abs(kt) + np.abs(q.ref) @ ekt + q.err @ ekt
                        + e * uacc * (np.abs(q.ref) @ np.abs(kt)))
    keep = np.ones((lq, lk), bool)
    if causal:
        keep &= np.tril(np.ones((lq, lk), bool))
    mask, kind = None, p.rng.choice(["none", "none", "additive", "bool"])
    if kind == "additive":
        mask = p.new_input((lq, lk), q.dtype)
        s, es = s + mask.ref, es + mask.err
    elif kind == "bool":
        mask = p.new_input((lq, lk), "i1")
        mask.ref[:, 0] = True  # no row without a key (all masked is NaN)
        p.inputs[-1] = mask.ref.copy()
        keep = keep & mask.ref
    s = np.where(keep, s, -np.inf)
    # A score off by at most E moves each weight's log by at most 2E; the
    # exponent's argument is rounded relative to its size.
    live = np.where(keep, 1.0, 0.0)
    E = (np.where(keep, es, 0) + 4 * uacc * np.abs(np.where(keep, s, 0))).max(-1, keepdims=True)
    w = np.exp(s - s.max(-1, keepdims=True)) * live
    w = w / w.sum(-1, keepdims=True)
    ref = w @ v.ref
    mag = w @ np.abs(v.ref)
    # Weights may be rounded to the inputs' type before they meet v (GPU kernels).
    own = (lk + 2 * TRANSCENDENTAL_ULPS) * uacc + 2 * UNIT_ROUNDOFF[q.dtype]
    with np.errstate(all="ignore"):
        err = mag * (np.expm1(2 * E) + own) + w @ v.err + rounding(q.dtype, ref)
    operands = [q, k, v] + ([mask] if mask is not None else [])
    attrs = [f"causal = {'true' if causal else 'false'}"]
    if scale is not None:
        attrs.append(f"scale = {fmt_f64(scale)}")
    return p.emit("attention", lambda r, t: f"{r} = kiln.attention "
                  f"{', '.join(x.name for x in operands)} {{{', '.join(attrs)}}} : "
                  f"({', '.join(x.type for x in operands)}) -> {t}", q.dtype, ref, err)


OPS = [(op_unary_float, 6), (op_binary, 8), (op_compare, 2), (op_logic, 1), (op_not, 1),
       (op_select, 2), (op_clamp, 1), (op_cast, 3), (op_reshape, 2), (op_transpose, 2),
       (op_broadcast, 1), (op_flip, 1), (op_slice, 2), (op_pad, 1), (op_concat, 2),
       (op_gather, 2), (op_iota, 1), (op_reduce, 4), (op_argmax, 1), (op_cumsum, 1),
       (op_softmax, 2), (op_norm, 1), (op_matmul, 2), (op_scatter_add, 1),
       (op_conv2d, 1), (op_pool, 1), (op_attention, 1), (op_unary_int, 1), (op_pow, 1),
       (op_shift, 1), (op_isnan, 1), (op_fill, 1), (op_quantize, 1), (op_random, 1)]


def random_shape(rng):
    for _ in range(100):
        shape = tuple(int(d) for d in rng.choice(DIMS, rng.integers(1, 5)))
        if int(np.prod(shape)) <= MAX_ELEMENTS:
            return shape
    return (4,)


def generate(seed, index):
    """Program `index` of run `seed`: the same pair always gives the same program."""
    rng = np.random.default_rng([seed, index])
    p = Program(rng, dynamic=bool(rng.random() < DYNAMIC_PROGRAMS))
    dtype = rng.choice(["f32", "f32", "f16", "bf16", "f64", "i32", "i64"])
    shape = random_shape(rng)
    p.new_input(shape, dtype, p.run_time_dims(shape))
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
