"""kiln.distributed: collectives across CUDA devices through NCCL.

One process per GPU (how frameworks launch)::

    import kiln, kiln.distributed as dist
    uid = dist.UniqueId.create() if rank == 0 else None   # pass uid.hex() around
    comm = dist.Communicator(uid, rank, world, device=f"cuda:{local_rank}")
    total = comm.all_reduce(kiln.tensor(grad, device=comm.device))

or one process driving every local GPU::

    comms = dist.Communicator.local(["cuda:0", "cuda:1"])
    dist.group(lambda: [c.all_reduce(x[i], in_place=True) for i, c in enumerate(comms)])

Collectives queue on the device's stream with kiln's kernels and are
captured by ``Backend.graph_start_capture``. A collective that does not
complete within the timeout (``timeout_ms`` or ``KILN_NCCL_TIMEOUT_MS``,
default 5 minutes) raises ``kiln.DevicePoisoned`` naming the op, its sequence
number and the missing ranks; the communicator and the device are then
poisoned. Without NCCL or a GPU, ``device_count()`` is 0 and
``unavailable_reason()`` says why. docs/multi-gpu.md has the design.
"""
from kiln._kiln import _distributed as _impl

UniqueId = _impl.UniqueId
Communicator = _impl.Communicator
device_count = _impl.device_count
unavailable_reason = _impl.unavailable_reason
nccl_version = _impl.nccl_version
group = _impl.group

__all__ = ["UniqueId", "Communicator", "device_count", "unavailable_reason",
           "nccl_version", "group"]
