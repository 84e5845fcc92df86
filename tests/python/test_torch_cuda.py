"""On a CUDA machine (the H200): DLPack with torch CUDA tensors both ways,
the array API's stream rules, and torch.compile with kiln.torch.backend.
Skipped where torch has no CUDA device or kiln none."""
import pytest

torch = pytest.importorskip("torch")
import kiln  # noqa: E402

if not torch.cuda.is_available() or kiln.device_count("cuda") == 0:
    pytest.skip("needs a CUDA device for torch and kiln", allow_module_level=True)

import kiln.torch  # noqa: E402
from test_torch_backend import MLP, Block  # noqa: E402


def test_torch_cuda_to_kiln_and_back_share_memory():
    x = torch.arange(1024, dtype=torch.float32, device="cuda").reshape(32, 32)
    k = kiln.from_dlpack(x)
    assert k.device == "cuda:0" and k.shape == (32, 32)
    y = torch.utils.dlpack.from_dlpack(k)
    assert y.data_ptr() == x.data_ptr()
    z = torch.utils.dlpack.from_dlpack(kiln.multiply(k, 2.0))
    torch.testing.assert_close(z, x * 2)


def test_kiln_sees_work_queued_on_torchs_stream():
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        x = torch.ones(1 << 20, device="cuda") * 3.0  # queued on the side stream
        k = kiln.from_dlpack(x)
    assert kiln.sum(k).numpy() == 3.0 * (1 << 20)


@pytest.mark.parametrize("stream", [None, -1, 1, 2, "current"])
def test_exports_honour_every_stream(stream):
    k = kiln.add(kiln.full((256,), 1.0, device="cuda"), 1.0)
    if stream == "current":
        stream = torch.cuda.current_stream().cuda_stream or 1
    capsule = k.__dlpack__(stream=stream)
    y = torch.utils.dlpack.from_dlpack(capsule)
    torch.testing.assert_close(y, torch.full((256,), 2.0, device="cuda"))


def test_stream_zero_is_refused():
    k = kiln.full((4,), 1.0, device="cuda")
    with pytest.raises(BufferError):
        k.__dlpack__(stream=0)


@pytest.mark.skipif(not hasattr(torch, "compile"), reason="torch.compile needs torch 2")
@pytest.mark.parametrize("make,shape", [(MLP, (64, 16)), (Block, (4, 8, 32))])
def test_torch_compile_with_the_kiln_backend(make, shape):
    torch.manual_seed(0)
    model = make().cuda().eval()
    x = torch.randn(*shape, device="cuda")
    compiled = torch.compile(model, backend=kiln.torch.backend)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-3, atol=1e-3)
    assert kiln.torch.last_report.programs >= 1
