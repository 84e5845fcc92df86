"""kiln.distributed: without NCCL or a GPU (CI), no communicators and a
reason, unique ids and argument checks; with them (the GPU machine,
KILN_NCCL_LIBRARY at torch's libnccl.so.2), one rank per local GPU driven
by this process: every collective against NumPy, graph capture and replay,
and a rank that never joins."""
import os
import subprocess
import sys

import numpy as np
import pytest

import kiln
import kiln.distributed as dist

needs_nccl = pytest.mark.skipif(dist.device_count() == 0,
                                reason="no communicators: " + dist.unavailable_reason())


def test_without_nccl_or_a_gpu_there_are_none_and_a_reason():
    if dist.device_count() > 0:
        pytest.skip("NCCL %s and %d GPU(s) here" % (dist.nccl_version(), dist.device_count()))
    assert dist.unavailable_reason() != ""
    if dist.nccl_version() is None:
        with pytest.raises(kiln.Unsupported, match="NCCL is not available"):
            dist.UniqueId.create()


def test_a_missing_library_is_named():
    # NCCL is loaded once per process: a fresh one with KILN_NCCL_LIBRARY set.
    code = ("import kiln.distributed as d; "
            "print(d.device_count(), d.nccl_version(), d.unavailable_reason())")
    env = dict(os.environ, KILN_NCCL_LIBRARY="/nonexistent/libnccl.so.2",
               PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout
    assert out.startswith("0 None /nonexistent/libnccl.so.2 not found (KILN_NCCL_LIBRARY"), out


def test_unique_ids_travel_as_hex_and_bytes():
    raw = bytes(range(128))
    uid = dist.UniqueId.from_bytes(raw)
    assert bytes(uid) == raw
    assert dist.UniqueId.from_hex(uid.hex()).hex() == uid.hex() == raw.hex()
    with pytest.raises(kiln.InvalidArgument, match="256 characters, got 4"):
        dist.UniqueId.from_hex("abcd")
    with pytest.raises(kiln.InvalidArgument, match="128 bytes, got 3"):
        dist.UniqueId.from_bytes(b"abc")


def test_a_cpu_device_cannot_take_part():
    with pytest.raises(kiln.Unsupported, match="cpu:0 is not one"):
        dist.Communicator(dist.UniqueId.from_bytes(bytes(128)), 0, 1, device="cpu")
    with pytest.raises(kiln.Unsupported, match="cpu:0 is not one"):
        dist.Communicator.local(["cpu"])


@pytest.fixture(scope="module")
def comms():
    devices = ["cuda:%d" % i for i in range(dist.device_count())]
    return dist.Communicator.local(devices, timeout_ms=60000)


def rank_input(dtype, rank, shape):
    # 1s and some 2s: sums and products of a few ranks stay exact.
    values = 1 + ((np.arange(np.prod(shape)) * 7 + rank * 3) % 5 == 0)
    return values.reshape(shape).astype(dtype)


REDUCE = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min, "avg": np.mean}


@needs_nccl
@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "int8", "int32", "int64",
                                   "uint8", "uint32", "uint64", "int16", "bool"])
def test_every_collective_matches_numpy(comms, dtype):
    n = len(comms)
    shape = (2 * n, 3)
    host = [rank_input(dtype, r, shape) for r in range(n)]
    x = [kiln.tensor(host[r], device=c.device) for r, c in enumerate(comms)]
    stacked = np.stack(host).astype(np.float64)
    reducible = dtype not in ("int16", "bool")
    for op, reference in REDUCE.items():
        if not reducible or (op == "avg" and not dtype.startswith("float")):
            with pytest.raises(kiln.Unsupported, match="of "):
                dist.group(lambda: [c.all_reduce(x[r], op) for r, c in enumerate(comms)])
            continue
        out, parts = [], []
        def issue():
            for r, c in enumerate(comms):
                out.append(c.all_reduce(x[r], op))
                parts.append(c.reduce_scatter(x[r], op))
        dist.group(issue)
        want = reference(stacked, axis=0)
        for r in range(n):
            np.testing.assert_allclose(out[r].numpy().astype(np.float64), want, rtol=1e-3)
            np.testing.assert_allclose(parts[r].numpy().astype(np.float64),
                                       want[2 * r:2 * r + 2], rtol=1e-3)
    gathered, broadcast, received = [], [], []
    def move():
        for r, c in enumerate(comms):
            gathered.append(c.all_gather(x[r]))
            broadcast.append(c.broadcast(x[r], root=0))
            c.send(x[r], (r + 1) % n)
            received.append(c.recv(dtype, shape, (r - 1) % n))
    dist.group(move)
    for r in range(n):
        np.testing.assert_array_equal(gathered[r].numpy(), np.concatenate(host))
        np.testing.assert_array_equal(broadcast[r].numpy(), host[0])
        np.testing.assert_array_equal(received[r].numpy(), host[(r - 1) % n])


@needs_nccl
def test_in_place_all_reduce_follows_kernels_on_the_stream(comms):
    c = comms[0]
    if len(comms) > 1:
        pytest.skip("one rank issues alone here")
    x = kiln.tensor(np.full((1 << 20,), 1.5, np.float32), device=c.device)
    y = kiln.multiply(x, 2.0)  # a kernel queued before the collective
    assert c.all_reduce(y, "max", in_place=True) is not None
    np.testing.assert_array_equal(y.numpy(), np.full((1 << 20,), 3.0, np.float32))


@needs_nccl
def test_captured_collectives_replay(comms):
    c = comms[0]
    if len(comms) > 1:
        pytest.skip("one rank issues alone here")
    b = kiln.backend(c.device)
    x = kiln.tensor(rank_input("float32", 0, (4, 8)), device=c.device)
    before = c.sequence
    with b.capture() as g:
        gathered = c.all_gather(c.all_reduce(x, "sum"))
    assert c.sequence == before
    for step in range(3):
        values = rank_input("float32", step, (4, 8))
        kiln.write(x, values)
        g.replay()
        np.testing.assert_array_equal(gathered.numpy(), values)
        assert c.sequence == before + 2 * (step + 1)


@needs_nccl
def test_a_rank_that_never_joins_is_named():
    uid = dist.UniqueId.create()
    with pytest.raises(kiln.LaunchError, match=r"did not complete within 1000 ms: missing rank\(s\) 1"):
        dist.Communicator(dist.UniqueId.from_hex(uid.hex()), 0, 2, device="cuda:0",
                          timeout_ms=1000)
