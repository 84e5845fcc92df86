"""The kiln package under test: KILN_PYTHONPATH, else this tree's build/python.

KILN_DEVICE picks the device of the device-generic tests (cpu, vulkan, cuda).
"""
import os
import sys

sys.path.insert(0, os.environ.get("KILN_PYTHONPATH", os.path.join(
    os.path.dirname(__file__), "..", "..", "build", "python")))

import pytest  # noqa: E402

DEVICE = os.environ.get("KILN_DEVICE", "cpu")


@pytest.fixture
def device():
    import kiln
    kind = DEVICE.split(":")[0]
    if kind != "cpu" and kiln.device_count(kind) == 0:
        pytest.skip("no %s device on this machine" % kind)
    return DEVICE
