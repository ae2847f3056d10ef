"""Memory planning checked by running: programs whose buffers the planning passes once
shared wrongly (InitMemRef, MemoryReuse), compiled with ir.compile on a2a3sim and
compared with numpy. Structural tests say which buffers are shared; these say the
sharing is harmless."""
import shutil

import numpy as np
import pytest

import pypto.language as pl

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")

@pytest.fixture
def iso(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    monkeypatch.setenv("PYPTO_PROG_BUILD_DIR", str(tmp_path / "builds"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _run(prog, out_dir, *arrays):
    torch = pytest.importorskip("torch")
    from pypto import ir
    compiled = ir.compile(prog, output_dir=out_dir, platform="a2a3sim")   # the PYPTO planner
    tensors = [torch.from_numpy(a.copy()) for a in arrays]
    compiled(*tensors)
    return [t.numpy() for t in tensors]


def online():
    """m and l carried; m_new is computed while m is still read by exp(m - m_new)."""
    @pl.program
    class Online:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[64, 64], pl.FP32],
              y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
            m0 = pl.load(x, [0, 0], [16, 64])
            l0 = pl.load(x, [0, 0], [16, 64])
            for i, (m, l) in pl.range(1, 4, init_values=(m0, l0)):
                t = pl.load(x, [i * 16, 0], [16, 64])
                m_new = pl.maximum(m, t)
                scale = pl.exp(pl.sub(m, m_new))
                l_new = pl.add(pl.mul(l, scale), t)
                m_out, l_out = pl.yield_(m_new, l_new)
            y = pl.store(pl.add(l_out, m_out), [0, 0], y)
            return y

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[64, 64], pl.FP32],
                 y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
            y = self.k(x, y)
            return y
    return Online


def online_ref(x):
    m, l = x[:16].copy(), x[:16].copy()
    for i in range(1, 4):
        t = x[i * 16:(i + 1) * 16]
        mn = np.maximum(m, t)
        l, m = l * np.exp(m - mn) + t, mn
    return l + m


def reread_init():
    """The loop's initial value is read inside the loop and after it."""
    @pl.program
    class Reread:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[16, 64], pl.FP32],
              y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
            acc = pl.load(x, [0, 0], [16, 64])
            for i, (a,) in pl.range(3, init_values=(acc,)):
                o = pl.yield_(pl.add(a, acc))
            y = pl.store(pl.sub(o, acc), [0, 0], y)
            return y

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[16, 64], pl.FP32],
                 y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
            y = self.k(x, y)
            return y
    return Reread


def broadcast():
    """m ([16, 1]) dies at row_expand_sub while scratch is still live: d must not land on m."""
    @pl.program
    class Bcast:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[16, 64], pl.FP32],
              y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
            t = pl.load(x, [0, 0], [16, 64])
            scratch = pl.create_tile([16, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
            m = pl.row_max(t, scratch)
            d = pl.row_expand_sub(t, m)
            s = pl.row_sum(d, scratch)
            y = pl.store(pl.add(pl.row_expand_div(d, s), t), [0, 0], y)
            return y

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[16, 64], pl.FP32],
                 y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
            y = self.k(x, y)
            return y
    return Bcast


def broadcast_ref(x):
    d = x - x.max(axis=1, keepdims=True)
    return d / d.sum(axis=1, keepdims=True) + x


def online_branchy():
    """As online, but the step is an if/else (the first chunk starts the sum): the loop
    carries the if's result, whose branch values are computed while m is still read."""
    @pl.program
    class OnlineIf:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[64, 64], pl.FP32],
              y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
            m = pl.load(x, [0, 0], [16, 64])
            l = pl.load(x, [0, 0], [16, 64])
            for i in pl.range(4):
                t = pl.load(x, [i * 16, 0], [16, 64])
                if i == 0:
                    m_new = pl.maximum(m, t)
                    l = pl.mul(l, pl.exp(pl.sub(m, m_new)))
                    m = m_new
                else:
                    m_new = pl.maximum(m, t)
                    l = pl.add(pl.mul(l, pl.exp(pl.sub(m, m_new))), pl.exp(pl.sub(t, m_new)))
                    m = m_new
            y = pl.store(pl.add(l, m), [0, 0], y)
            return y

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[64, 64], pl.FP32],
                 y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
            y = self.k(x, y)
            return y
    return OnlineIf


def online_branchy_ref(x):
    m, l = x[:16].copy(), x[:16].copy()
    for i in range(4):
        t = x[i * 16:(i + 1) * 16]
        mn = np.maximum(m, t)
        l = l * np.exp(m - mn) + (np.exp(t - mn) if i else 0)
        m = mn
    return l + m


CASES = {
    "online_branchy": (online_branchy, (64, 64), (16, 64), online_branchy_ref),
    "online": (online, (64, 64), (16, 64), online_ref),
    "reread_init": (reread_init, (16, 64), (16, 64), lambda x: (x + 3 * x) - x),
    "broadcast": (broadcast, (16, 64), (16, 64), broadcast_ref),
}


@pytest.mark.parametrize("case", CASES)
def test_planned_kernel_computes_the_right_values(iso, case):
    build, shape_in, shape_out, ref = CASES[case]
    x = np.random.default_rng(7).standard_normal(shape_in).astype(np.float32)
    _, y = _run(build(), iso / "out", x, np.zeros(shape_out, np.float32))
    np.testing.assert_allclose(y, ref(x), rtol=1e-5, atol=1e-5)
