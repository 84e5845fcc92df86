"""The CUDA benchmark cases in torch on the same GPU, timed with CUDA events
(median of many runs after warm-up), plus torch.compile for the fused gelu
and eager's host time per op. Usage: python3 bench/torch_reference.py [--matmuls]"""
import sys
import time

import torch
import torch.nn.functional as F

torch.backends.cuda.matmul.allow_tf32 = False


def bench(fn, runs=20):
    for _ in range(3):
        fn()
    times = []
    for _ in range(runs):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e))
    return sorted(times)[len(times) // 2]


def main():
    dev = "cuda"
    a, b = torch.rand(1 << 28, device=dev), torch.rand(1 << 28, device=dev)
    print(f"| add 2^28 f32 | torch {bench(lambda: a + b):.3f} ms |")
    print(f"| copy 2^28 f32 (bandwidth anchor) | torch {bench(lambda: a.clone()):.3f} ms |")
    del a, b
    x, w, c = (torch.rand(1 << 26, device=dev) for _ in range(3))
    print(f"| gelu(x*w+b) 2^26 f32 | torch eager {bench(lambda: F.gelu(x * w + c)):.3f} ms |")
    try:
        fused = torch.compile(lambda x, w, c: F.gelu(x * w + c))
        print(f"| gelu(x*w+b) 2^26 f32 | torch.compile {bench(lambda: fused(x, w, c)):.3f} ms |")
    except Exception as e:  # no Triton or no compiler on this machine
        print(f"| gelu(x*w+b) 2^26 f32 | torch.compile unavailable: {type(e).__name__} |")
    del x, w, c
    r = torch.rand(16384, 16384, device=dev)
    print(f"| reduce_sum 16384^2 f32 last dim | torch {bench(lambda: r.sum(1)):.3f} ms |")
    del r
    s = torch.rand(8192, 8192, device=dev)
    ws, bs = torch.rand(8192, device=dev), torch.rand(8192, device=dev)
    print(f"| softmax 8192^2 f32 last dim | torch {bench(lambda: torch.softmax(s, 1)):.3f} ms |")
    print(f"| layer_norm 8192^2 f32 | torch {bench(lambda: F.layer_norm(s, (8192,), ws, bs)):.3f} ms |")
    if hasattr(F, "rms_norm"):  # torch >= 2.4
        print(f"| rms_norm 8192^2 f32 | torch {bench(lambda: F.rms_norm(s, (8192,), ws, 1e-6)):.3f} ms |")
    matmuls(dev)
    t1, t2, out = (torch.rand(1024, device=dev) for _ in range(3))
    for _ in range(100):
        torch.add(t1, t2, out=out)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(10000):
        torch.add(t1, t2, out=out)
    torch.cuda.synchronize()
    us = (time.perf_counter() - start) / 10000 * 1e6
    print(f"| eager dispatch, add of 1024 f32, 10k ops | torch {us:.2f} us per op (host) |")
    graph_replay(dev)


def matmuls(dev):
    """The matmul cases alone (`--matmuls`)."""
    m1, m2 = torch.rand(4096, 4096, device=dev), torch.rand(4096, 4096, device=dev)
    print(f"| matmul 4096^3 f32 (TF32 off) | torch {bench(lambda: m1 @ m2):.3f} ms |")
    torch.backends.cuda.matmul.allow_tf32 = True
    print(f"| matmul 4096^3 f32 as tf32 | torch {bench(lambda: m1 @ m2):.3f} ms |")
    torch.backends.cuda.matmul.allow_tf32 = False
    del m1, m2
    g1, g2 = (torch.rand(4096, 4096, device=dev, dtype=torch.bfloat16) for _ in range(2))
    print(f"| matmul 4096^3 bf16 | torch {bench(lambda: g1 @ g2):.3f} ms |")
    del g1, g2
    h1, h2 = (torch.rand(8192, 8192, device=dev, dtype=torch.bfloat16) for _ in range(2))
    print(f"| matmul 8192^3 bf16 | torch {bench(lambda: h1 @ h2):.3f} ms |")
    del h1, h2
    f1, f2 = (torch.rand(8192, 8192, device=dev, dtype=torch.float16) for _ in range(2))
    print(f"| matmul 8192^3 f16 | torch {bench(lambda: f1 @ f2):.3f} ms |")
    del f1, f2


def graph_replay(dev, reps=100):
    """kiln-bench-graph's sequence: 50 x (x = x * w; x = x + w) on 1024 f32."""
    x, w = torch.rand(1024, device=dev), torch.rand(1024, device=dev)

    def sequence(t):
        for _ in range(50):
            t = t * w
            t = t + w
        return t

    def per_sequence_us(body):
        body()
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(reps):
            body()
            torch.cuda.synchronize()
        return (time.perf_counter() - start) / reps * 1e6

    eager = per_sequence_us(lambda: sequence(x))
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            sequence(x)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        sequence(x)
    replay = per_sequence_us(graph.replay)
    print(f"| 100 kernels on 1024 f32 | torch eager {eager:.1f} us | "
          f"torch CUDA graph replay {replay:.1f} us | {eager / replay:.1f}x |")


if __name__ == "__main__":
    matmuls("cuda") if "--matmuls" in sys.argv else main()
