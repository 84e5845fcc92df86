"""all_reduce bus bandwidth, kiln.distributed against torch.distributed
(NCCL backend) in the same run, on the same buffers, 8 KiB .. 1 GiB of f32.

    python3 bench/nccl_bandwidth.py [--ranks N] [--iters 20] [--max-bytes 1G]

One process per GPU (N defaults to every GPU; one rank must at least run).
Times are device time per all_reduce (CUDA events around `iters` in-place
calls after a warm-up: kiln's profile window, torch's cuda.Event), bus
bandwidth as nccl-tests defines it: bytes / time * 2 (N - 1) / N (0 for one
rank, so algorithm bandwidth, bytes / time, is printed too). `ratio` is
torch's time over kiln's: at least 0.95 is the goal (docs/multi-gpu.md).
"""
import argparse
import json
import socket

import multiprocessing as mp


def parse_bytes(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def worker(rank, world, port, args, ids, results):
    import torch
    import torch.distributed as tdist
    import kiln
    import kiln.distributed as dist

    device = "cuda:%d" % rank
    torch.cuda.set_device(rank)
    if rank == 0:
        uid = dist.UniqueId.create().hex()
        for _ in range(world - 1):
            ids.put(uid)
    else:
        uid = ids.get()
    comm = dist.Communicator(dist.UniqueId.from_hex(uid), rank, world, device=device)
    tdist.init_process_group("nccl", init_method="tcp://127.0.0.1:%d" % port,
                             rank=rank, world_size=world, device_id=torch.device(device))
    backend = kiln.backend(device)
    rows = []
    size = 8 << 10
    while size <= args.max_bytes:
        x = torch.randn(size // 4, device=device)  # never time on zeros
        k = kiln.from_dlpack(x)
        for _ in range(args.warmup):
            comm.all_reduce(k, "sum", in_place=True)
        token = backend.profile_start()
        for _ in range(args.iters):
            comm.all_reduce(k, "sum", in_place=True)
        kiln_ms = backend.profile_end(token) / args.iters
        torch.cuda.synchronize()
        for _ in range(args.warmup):
            tdist.all_reduce(x)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(args.iters):
            tdist.all_reduce(x)
        end.record()
        torch.cuda.synchronize()
        torch_ms = start.elapsed_time(end) / args.iters
        rows.append((size, kiln_ms, torch_ms))
        del k, x
        size *= args.step
    tdist.destroy_process_group()
    if rank == 0:
        results.put(rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=0, help="processes (default: every GPU)")
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--step", type=int, default=4, help="size factor between rows")
    parser.add_argument("--max-bytes", type=parse_bytes, default=1 << 30)
    parser.add_argument("--json", help="also write the rows here")
    args = parser.parse_args()
    import torch
    import kiln.distributed as dist
    if dist.device_count() == 0:
        raise SystemExit("no communicators: " + dist.unavailable_reason())
    world = args.ranks or torch.cuda.device_count()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    ids, results = ctx.Queue(), ctx.Queue()
    procs = [ctx.Process(target=worker, args=(r, world, port, args, ids, results))
             for r in range(world)]
    for p in procs:
        p.start()
    rows = results.get()
    for p in procs:
        p.join()
    factor = 2 * (world - 1) / world
    print("all_reduce f32, %d rank(s), NCCL %s, %d iters (device time per call)"
          % (world, dist.nccl_version(), args.iters))
    print("%10s %10s %10s %10s %10s %10s %7s" % ("bytes", "kiln us", "algbw", "busbw",
                                               "torch us", "busbw", "ratio"))
    table = []
    for size, kiln_ms, torch_ms in rows:
        gbs = lambda ms: size / (ms * 1e-3) / 1e9
        print("%10d %10.1f %10.2f %10.2f %10.1f %10.2f %7.3f"
              % (size, kiln_ms * 1e3, gbs(kiln_ms), gbs(kiln_ms) * factor, torch_ms * 1e3,
                 gbs(torch_ms) * factor, torch_ms / kiln_ms))
        table.append({"bytes": size, "kiln_ms": kiln_ms, "torch_ms": torch_ms,
                      "kiln_busbw_gbs": gbs(kiln_ms) * factor,
                      "torch_busbw_gbs": gbs(torch_ms) * factor})
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"ranks": world, "nccl": dist.nccl_version(), "rows": table}, f, indent=1)


if __name__ == "__main__":
    main()
