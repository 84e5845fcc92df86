"""Runs kiln programs through kiln-run and loads the results, for tests."""
import os
import subprocess
import tempfile

import numpy as np
import pytest

KILN_RUN = os.environ.get("KILN_RUN", os.path.join(
    os.path.dirname(__file__), "..", "..", "build", "bin", "kiln-run"))

MLIR_TYPES = {
    np.dtype("float64"): "f64", np.dtype("float32"): "f32", np.dtype("float16"): "f16",
    np.dtype("int8"): "i8", np.dtype("int16"): "i16", np.dtype("int32"): "i32",
    np.dtype("int64"): "i64", np.dtype("uint8"): "ui8", np.dtype("uint16"): "ui16",
    np.dtype("uint32"): "ui32", np.dtype("uint64"): "ui64", np.dtype("bool"): "i1",
}


def round_to_bf16(x):
    """float32 values rounded to the nearest bf16 (ties to even), as f32."""
    x = np.asarray(x, np.float32)
    bits = np.atleast_1d(x).view(np.uint32).astype(np.uint64)
    sixteen = np.uint64(16)
    bits = (bits + np.uint64(0x7FFF) + ((bits >> sixteen) & np.uint64(1))) >> sixteen << sixteen
    return bits.astype(np.uint32).view(np.float32).reshape(x.shape)


def attention_ref(q, k, v, mask=None, causal=False, scale=None):
    """float64 scaled_dot_product_attention (torch's semantics: a bool mask
    keeps where true, causal is top-left aligned)."""
    q, k, v = (t.astype(np.float64) for t in (q, k, v))
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask.astype(np.float64)
    if causal:
        lq, lk = s.shape[-2:]
        s = np.where(np.tril(np.ones((lq, lk), bool)), s, -np.inf)
    if s.shape[-1] == 0:
        return np.zeros(s.shape[:-1] + v.shape[-1:])  # no keys: an empty sum
    s = np.exp(s - s.max(axis=-1, keepdims=True))
    return (s / s.sum(axis=-1, keepdims=True)) @ v


def tensor_type(shape, dtype):
    elem = dtype if isinstance(dtype, str) else MLIR_TYPES[np.dtype(dtype)]
    return "tensor<" + "".join(f"{d}x" for d in shape) + elem + ">"


def run_kiln(program, inputs, extra_args=(), check=True):
    """Runs `program` (MLIR text) on `inputs`; returns (results, process)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "program.mlir")
        with open(path, "w") as f:
            f.write(program)
        args = [KILN_RUN, path, "--output-dir", os.path.join(tmp, "out")]
        # KILN_DEVICE=cuda runs the same suite on a GPU; KILN_RUN_ARGS adds
        # kiln-run options (e.g. --cubin) to every run.
        if os.environ.get("KILN_DEVICE"):
            args += ["--device", os.environ["KILN_DEVICE"]]
        args += os.environ.get("KILN_RUN_ARGS", "").split()
        for i, x in enumerate(inputs):
            p = os.path.join(tmp, f"in{i}.npy")
            np.save(p, x)
            args += ["--input", p]
        proc = subprocess.run(args + list(extra_args), capture_output=True,
                              text=True, timeout=120)
        # A device that cannot run a program says so with an "unsupported"
        # error; that case is reported as skipped with the reason, never
        # counted as passed. On the CPU everything must run.
        if (check and proc.returncode != 0 and os.environ.get("KILN_DEVICE")
                and "unsupported error" in proc.stderr):
            pytest.skip(proc.stderr.strip().splitlines()[-1 if "note:" not in
                        proc.stderr else 1].strip())
        if check and proc.returncode != 0:
            raise AssertionError(f"kiln-run failed ({proc.returncode}):\n"
                                 f"{proc.stderr}\nprogram:\n{program}")
        results = []
        i = 0
        while os.path.exists(os.path.join(tmp, "out", f"result{i}.npy")):
            results.append(np.load(os.path.join(tmp, "out", f"result{i}.npy")))
            i += 1
        return results, proc


def single_op_program(inputs, op_text, result_type):
    """A @main taking `inputs` (arrays or (shape, mlir-type)) and returning
    one op's result; `op_text` uses %a0, %a1, ... for the arguments."""
    args = []
    for i, x in enumerate(inputs):
        t = tensor_type(x.shape, x.dtype) if isinstance(x, np.ndarray) else x
        args.append(f"%a{i}: {t}")
    return (f"func.func @main({', '.join(args)}) -> {result_type} {{\n"
            f"  %r = {op_text}\n"
            f"  return %r : {result_type}\n}}\n")
