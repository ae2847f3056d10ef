"""The three reference .pto files: verify, emit, build, run and compare with numpy."""
import re
from pathlib import Path

import numpy as np
import pytest

DATA = Path(__file__).parent / "data"


def test_add_128x128_reuses_the_first_buffer(make_kernel):
    text = (DATA / "quickstart_add_incore_0.pto").read_text()
    # the result tile shares a__tile's address: three 64 KiB tiles in 128 KiB of UB
    assert text.count("addr = %c0_i64") == 2
    k = make_kernel(text)
    assert k.info()["bytes_used"] == {"vec": 131072}
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((2, 128, 128), dtype=np.float32)
    out = np.zeros_like(a)
    assert k(a, b, out) is None
    np.testing.assert_array_equal(out, a + b)


def test_softmax_64x64(make_kernel):
    k = make_kernel((DATA / "softmax64_incore_0.pto").read_text())
    rng = np.random.default_rng(2)
    x = rng.standard_normal((64, 64), dtype=np.float32) * 4
    y = np.zeros_like(x)
    assert k(x, y) is None
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_matmul_k_loop_64x128x64(make_kernel):
    k = make_kernel((DATA / "matmul_k_incore_0.pto").read_text(), core="aic")
    assert k.info()["kernel_kind"] == "cube"
    rng = np.random.default_rng(3)
    a = rng.standard_normal((64, 128), dtype=np.float32)
    b = rng.standard_normal((128, 64), dtype=np.float32)
    c = np.zeros((64, 64), np.float32)
    assert k(a, b, c) is None
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", ["quickstart_add_incore_0", "softmax64_incore_0", "matmul_k_incore_0"])
def test_samples_plan_at_level2_and_still_run(make_kernel, name):
    """Strip the addresses pypto planned; our planner must find a placement that fits."""
    text = re.sub(r"addr = %c\d+_i64 ", "", (DATA / f"{name}.pto").read_text())
    assert "addr =" not in text
    core = "aic" if "matmul" in name else "aiv"
    k = make_kernel(text, level="level2", core=core)
    rng = np.random.default_rng(4)
    if name.startswith("quickstart"):
        assert k.info()["bytes_used"]["vec"] <= 188416
        a, b = rng.standard_normal((2, 128, 128), dtype=np.float32)
        out = np.zeros_like(a)
        assert k(a, b, out) is None
        np.testing.assert_array_equal(out, a + b)
    elif name.startswith("softmax"):
        x = rng.standard_normal((64, 64), dtype=np.float32)
        y = np.zeros_like(x)
        assert k(x, y) is None
        e = np.exp(x - x.max(axis=1, keepdims=True))
        np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)
    else:
        a = rng.standard_normal((64, 128), dtype=np.float32)
        b = rng.standard_normal((128, 64), dtype=np.float32)
        c = np.zeros((64, 64), np.float32)
        assert k(a, b, c) is None
        np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
