"""kiln on the CPU against torch (CPU, the same threads), one op a case,
same machine, same run: kiln's median time on resident tensors
(`kiln-run --bench`) beside torch's median of the same op. torch's times
for large results include its page faults on a fresh output tensor, so
also compare kiln with the floor (bytes over bandwidth: about 2.5 ms for
64 MiB in and 64 MiB out on the 2-core CI machine; bench/cpu_vs_numpy.py
prints floors). Prints one line a case: kiln ms, torch ms, torch/kiln
(> 1: kiln is faster).
Usage: /usr/bin/python3 bench/cpu_vs_torch.py [--runs N] [--threads T] [--only SUBSTRING]"""
import argparse
import os

import torch

from cpu_vs_numpy import median_kiln, median_numpy  # same folder

N = 4096
S = (N, N)
F = torch.nn.functional


def t(shape, e="f32"):
    return "tensor<" + "".join(f"{d}x" for d in shape) + e + ">"


def R(*shape):
    return torch.rand(*shape)


def attention(causal):
    """torch's SDPA (its fused CPU kernel), or matmul, softmax, matmul
    before torch 2.0."""
    def run(q, k, v):
        if hasattr(F, "scaled_dot_product_attention"):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        s = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
        if causal:
            s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool).triu(1), float("-inf"))
        return torch.softmax(s, -1) @ v
    return run


def attention_case(name, q, kv, causal):
    attrs = " {causal = true}" if causal else ""
    return (name, f"kiln.attention %a0, %a1, %a2{attrs} : ({t(q)}, {t(kv)}, {t(kv)}) -> {t(q)}",
            t(q), [q, kv, kv], attention(causal), lambda: [R(*q), R(*kv), R(*kv)])


def matmul_case(m, k, n):
    return (f"matmul {m}x{k} @ {k}x{n}", f"kiln.matmul %a0, %a1 : ({t((m, k))}, {t((k, n))}) -> "
            f"{t((m, n))}", t((m, n)), [(m, k), (k, n)], lambda a, b: a @ b,
            lambda: [R(m, k), R(k, n)])


HEADS = (1, 16, 1024, 64)

# (name, op text with %a0.. and a result type, [(shape, elem)], torch fn, inputs)
CASES = [
    attention_case("attention 1x16x1024x64", HEADS, HEADS, False),
    attention_case("attention causal 1x16x1024x64", HEADS, HEADS, True),
    attention_case("attention decode 1x16x1x64, 2048 keys", (1, 16, 1, 64), (1, 16, 2048, 64), False),
    attention_case("attention decode 1x16x1x64, 256 keys", (1, 16, 1, 64), (1, 16, 256, 64), False),
    attention_case("attention decode 8x32x1x128, 1024 keys", (8, 32, 1, 128), (8, 32, 1024, 128),
                   False),
    ("add 256x256 (a short kernel: dispatch)", f"kiln.add %a0, %a1 : ({t((256, 256))}, "
     f"{t((256, 256))}) -> {t((256, 256))}", t((256, 256)), [(256, 256), (256, 256)],
     lambda a, b: a + b, lambda: [R(256, 256), R(256, 256)]),
    ("cumsum dim 0 4096^2", f"kiln.cumsum %a0 {{dim = 0}} : {t(S)}", t(S), [S],
     lambda a: torch.cumsum(a, 0), lambda: [R(*S)]),
    ("flip dim 1 4096^2", f"kiln.flip %a0 {{dims = array<i64: 1>}} : {t(S)} -> {t(S)}", t(S), [S],
     lambda a: torch.flip(a, (1,)), lambda: [R(*S)]),
    ("concat dim 1 2x 4096x2048", f"kiln.concat %a0, %a1 {{dim = 1}} : ({t((N, 2048))}, "
     f"{t((N, 2048))}) -> {t(S)}", t(S), [(N, 2048), (N, 2048)],
     lambda a, b: torch.cat([a, b], 1), lambda: [R(N, 2048), R(N, 2048)]),
    ("pad 4096x4000 -> 4096^2", f"kiln.pad %a0 {{low = array<i64: 0, 48>, high = array<i64: 0, 48>}}"
     f" : {t((N, 4000))} -> {t(S)}", t(S), [(N, 4000)], lambda a: F.pad(a, (48, 48)),
     lambda: [R(N, 4000)]),
    ("slice step 2 dim 1 4096^2", f"kiln.slice %a0 {{start = array<i64: 0, 0>, stop = array<i64: "
     f"4096, 4096>, step = array<i64: 1, 2>}} : {t(S)} -> {t((N, 2048))}", t((N, 2048)), [S],
     lambda a: a[:, ::2].contiguous(), lambda: [R(*S)]),
    ("index_select dim 0 4096 of 4096^2", f"kiln.index_select %a0, %a1 {{dim = 0}} : ({t(S)}, "
     f"{t((N,), 'i64')}) -> {t(S)}", t(S), [S, ((N,), "i64")],
     lambda a, i: torch.index_select(a, 0, i), lambda: [R(*S), torch.randint(0, N, (N,))]),
    ("gather dim 1 4096^2", f"kiln.gather %a0, %a1 {{dim = 1}} : ({t(S)}, {t(S, 'i64')}) -> {t(S)}",
     t(S), [S, (S, "i64")], lambda a, i: torch.gather(a, 1, i),
     lambda: [R(*S), torch.randint(0, N, S)]),
    ("avg_pool2d 3x3/2 8x64x56x56", "kiln.avg_pool2d %a0 {kernel = array<i64: 3, 3>, stride = "
     f"array<i64: 2, 2>, padding = array<i64: 1, 1>}} : {t((8, 64, 56, 56))} -> {t((8, 64, 28, 28))}",
     t((8, 64, 28, 28)), [(8, 64, 56, 56)], lambda x: F.avg_pool2d(x, 3, 2, 1),
     lambda: [R(8, 64, 56, 56)]),
    ("conv2d depthwise 3x3 8x128x56x56", "kiln.conv2d %a0, %a1 {padding = array<i64: 1, 1>, "
     f"groups = 128 : i64}} : ({t((8, 128, 56, 56))}, {t((128, 1, 3, 3))}) -> {t((8, 128, 56, 56))}",
     t((8, 128, 56, 56)), [(8, 128, 56, 56), (128, 1, 3, 3)],
     lambda x, w: F.conv2d(x, w, padding=1, groups=128), lambda: [R(8, 128, 56, 56), R(128, 1, 3, 3)]),
    ("conv2d 3x3 8x64x56x56 -> 64", "kiln.conv2d %a0, %a1 {padding = array<i64: 1, 1>} : "
     f"({t((8, 64, 56, 56))}, {t((64, 64, 3, 3))}) -> {t((8, 64, 56, 56))}", t((8, 64, 56, 56)),
     [(8, 64, 56, 56), (64, 64, 3, 3)], lambda x, w: F.conv2d(x, w, padding=1),
     lambda: [R(8, 64, 56, 56), R(64, 64, 3, 3)]),
    ("conv2d 3x3/2 8x128x28x28 -> 256", "kiln.conv2d %a0, %a1 {padding = array<i64: 1, 1>, "
     f"stride = array<i64: 2, 2>}} : ({t((8, 128, 28, 28))}, {t((256, 128, 3, 3))}) -> "
     f"{t((8, 256, 14, 14))}", t((8, 256, 14, 14)), [(8, 128, 28, 28), (256, 128, 3, 3)],
     lambda x, w: F.conv2d(x, w, padding=1, stride=2),
     lambda: [R(8, 128, 28, 28), R(256, 128, 3, 3)]),
    ("conv2d 1x1 8x256x28x28 -> 512", f"kiln.conv2d %a0, %a1 : ({t((8, 256, 28, 28))}, "
     f"{t((512, 256, 1, 1))}) -> {t((8, 512, 28, 28))}", t((8, 512, 28, 28)),
     [(8, 256, 28, 28), (512, 256, 1, 1)], lambda x, w: F.conv2d(x, w),
     lambda: [R(8, 256, 28, 28), R(512, 256, 1, 1)]),
    ("matmul 1x4096 @ 4096^2 (gemv)", f"kiln.matmul %a0, %a1 : ({t((1, N))}, {t(S)}) -> {t((1, N))}",
     t((1, N)), [(1, N), S], lambda a, b: a @ b, lambda: [R(1, N), R(*S)]),
    ("matmul 4x4096 @ 4096^2", f"kiln.matmul %a0, %a1 : ({t((4, N))}, {t(S)}) -> {t((4, N))}",
     t((4, N)), [(4, N), S], lambda a, b: a @ b, lambda: [R(4, N), R(*S)]),
    matmul_case(1, N, 11008),
    matmul_case(1, 11008, N),
    matmul_case(4, N, 11008),
    matmul_case(4, 11008, N),
]


def kiln_ms(case, inputs, runs):
    """kiln's median on resident tensors, on the same inputs as torch."""
    op, result, shapes = case[1:4]
    types = [t(s[0], s[1]) if isinstance(s[1], str) else t(s) for s in shapes]
    args = ", ".join(f"%a{i}: {ty}" for i, ty in enumerate(types))
    program = f"func.func @main({args}) -> {result} {{\n  %r = {op}\n  return %r : {result}\n}}\n"
    return median_kiln(program, [x.numpy() for x in inputs], runs, resident=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--only", default="")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} threads")
    print("| case | kiln ms | torch ms | torch/kiln |\n|---|---|---|---|")
    for case in CASES:
        if args.only not in case[0]:
            continue
        inputs = case[5]()
        k, tt = kiln_ms(case, inputs, args.runs), median_numpy(case[4], inputs, args.runs)
        print(f"| {case[0]} | {k:.2f} | {tt:.2f} | {tt / k:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
