"""kiln.torch.backend on torch.nn modules traced by torch.fx, against torch eager."""
import math

import pytest

torch = pytest.importorskip("torch")
import torch.fx  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import kiln  # noqa: E402
import kiln.torch  # noqa: E402


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(32, 8)

    def forward(self, x):
        return torch.softmax(self.fc2(self.act(self.fc1(x))), dim=-1)


class Block(nn.Module):
    """A GPT-2 block: causal attention as matmul + softmax + matmul, layer
    norms, a GELU MLP, residuals."""

    def __init__(self, d=32, heads=4, seq=8):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.q, self.k, self.v = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.out = nn.Linear(4 * d, d)
        self.drop = nn.Dropout(0.1)
        self.register_buffer("future", torch.triu(torch.ones(seq, seq, dtype=torch.bool), 1))
        self.scale = 1.0 / math.sqrt(d // heads)

    def forward(self, x):
        h = self.ln1(x)
        q = self.q(h).unflatten(-1, (self.heads, -1)).transpose(1, 2)
        k = self.k(h).unflatten(-1, (self.heads, -1)).transpose(1, 2)
        v = self.v(h).unflatten(-1, (self.heads, -1)).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * self.scale
        att = F.softmax(att.masked_fill(self.future, float("-inf")), dim=-1)
        y = (att @ v).transpose(1, 2).flatten(2)
        x = x + self.drop(self.proj(y))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


def run(module, *inputs):
    module.eval()
    with torch.no_grad():
        want = module(*inputs)
        compiled = kiln.torch.backend(torch.fx.symbolic_trace(module), list(inputs))
        got = compiled(*inputs)
    return got, want, compiled.kiln_report


def test_mlp_is_one_program():
    torch.manual_seed(0)
    got, want, report = run(MLP(), torch.randn(4, 16))
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    assert report.programs == 1 and report.fallbacks == [], report


def test_gpt2_block_is_one_program_matching_eager():
    torch.manual_seed(0)
    got, want, report = run(Block(), torch.randn(2, 8, 32))
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    assert report.programs == 1 and report.kiln_nodes >= 20, report
    assert report.fallbacks == [], report


def test_unsupported_ops_fall_back_to_torch():
    class Odd(nn.Module):
        def forward(self, x):
            return torch.sort(x.exp(), dim=-1).values * 2.0

    got, want, report = run(Odd(), torch.randn(3, 5))
    torch.testing.assert_close(got, want)
    assert report.programs == 2 and "sort" in report.fallbacks, report


@pytest.mark.parametrize("mode", ["floor", "trunc"])
def test_division_with_a_rounding_mode_runs_as_torch_says(mode):
    # rounding_mode was ignored: -7.5 / 2 gave -3.75 for both, and the node
    # was reported as kiln's.
    class Div(nn.Module):
        def forward(self, x, y):
            return torch.div(x, y, rounding_mode=mode) + torch.div(x, y)

    x, y = torch.tensor([-7.5, 7.5, -3.0]), torch.tensor([2.0, 2.0, 2.0])
    got, want, report = run(Div(), x, y)
    torch.testing.assert_close(got, want)
    assert any("rounding_mode" in r for r in report.reasons), report


def test_in_place_activations_on_values_read_again_run_on_torch():
    # kiln computes relu(h) as a new value: h + relu_(h) gave h + relu(h)
    # (-1 where torch gives 0). Where nothing else reads h, kiln takes it.
    class Reread(nn.Module):
        def __init__(self, module):
            super().__init__()
            self.relu = nn.ReLU(inplace=True) if module else None

        def forward(self, x):
            h = x * 1.0
            y = self.relu(h) if self.relu else F.relu(h, inplace=True)
            return h + y

    class Once(nn.Module):
        def __init__(self):
            super().__init__()
            self.relu = nn.ReLU(inplace=True)

        def forward(self, x):
            return self.relu(x * 1.0) * 2

    x = torch.tensor([-1.0, 2.0, -3.0])
    for module in (True, False):
        m = Reread(module).eval()
        want = m(x.clone())
        compiled = kiln.torch.backend(torch.fx.symbolic_trace(m), [x])
        torch.testing.assert_close(compiled(x.clone()), want)
        assert any("in-place" in r for r in compiled.kiln_report.reasons), compiled.kiln_report
    got, want, report = run(Once(), x.clone())
    torch.testing.assert_close(got, want)
    assert report.programs == 1 and report.fallbacks == [], report


def test_kiln_programs_see_new_inputs():
    torch.manual_seed(1)
    mlp = MLP().eval()
    compiled = kiln.torch.backend(torch.fx.symbolic_trace(mlp), [torch.randn(4, 16)])
    with torch.no_grad():
        x = torch.randn(4, 16)
        torch.testing.assert_close(compiled(x), mlp(x), rtol=1e-4, atol=1e-5)


class ResNetBlock(nn.Module):
    """A ResNet-50 bottleneck's start: conv, bias, relu, pool; a grouped and
    a depthwise conv; a global average pool."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.pool = nn.MaxPool2d(3, stride=2, padding=1)
        self.grouped = nn.Conv2d(8, 8, (3, 1), padding=(1, 0), groups=2, bias=False)
        self.depthwise = nn.Conv2d(8, 8, 3, padding=2, dilation=2, groups=8)
        self.head = nn.AdaptiveAvgPool2d(1)

    def forward(self, x):
        y = self.pool(torch.relu(self.conv(x)))
        y = F.avg_pool2d(self.depthwise(self.grouped(y)), 2, padding=1)
        return self.head(F.max_pool2d(torch.relu(y), 2)).flatten(1)


def test_resnet_block_is_one_program_matching_eager():
    torch.manual_seed(0)
    got, want, report = run(ResNetBlock(), torch.randn(2, 3, 33, 31))
    assert report.programs == 1 and not report.fallbacks, str(report)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.skipif(not hasattr(F, "scaled_dot_product_attention"),
                    reason="torch < 2.0 has no scaled_dot_product_attention")
def test_scaled_dot_product_attention_is_kiln_attention():
    class Attention(nn.Module):
        def forward(self, q, k, v, mask):
            return (F.scaled_dot_product_attention(q, k, v, is_causal=True)
                    + F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=0.3))

    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 4, 9, 16) for _ in range(3))
    mask = torch.rand(9, 9) > 0.3
    mask[:, 0] = True  # no row without a key
    got, want, report = run(Attention(), q, k, v, mask)
    assert report.programs == 1 and not report.fallbacks, str(report)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)


def test_chunk_split_and_indexing_stay_in_one_program():
    class Pieces(nn.Module):
        def forward(self, x):
            qkv = x.chunk(3, dim=-1)                     # the qkv split of attention
            q, k, v = qkv[0], qkv[1], qkv[2]
            ab = torch.split(x, [5, 7], dim=-1)
            a, b = ab[0], ab[1]
            c = x[:, 1:6:2, None, ..., -4:]              # step, None, Ellipsis, negative
            d = x[0, -1]                                 # ints drop dims
            odd = torch.chunk(x[..., :11], 4, dim=2)      # 11 in pieces of 3: 3, 3, 3, 2
            return (q * k + v, a.sum(-1) + b.sum(-1), c * 2, d + 1, odd[3] + odd[0][..., :2])

    torch.manual_seed(0)
    got, want, report = run(Pieces(), torch.randn(2, 7, 12))
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)
    assert report.programs == 1 and report.fallbacks == [], report


def test_tensor_indices_fall_back_to_torch():
    class Gather(nn.Module):
        def forward(self, x, i):
            return torch.exp(x)[i] + 1

    got, want, report = run(Gather(), torch.randn(5, 3), torch.tensor([4, 0, 2]))
    torch.testing.assert_close(got, want)
    assert report.fallbacks == ["getitem"], report
