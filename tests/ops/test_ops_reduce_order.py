"""Reductions in the hardware's order (issue 11.6): every step rounds to the element
type (fp16 sums stay fp16); a row reduces as a binary tree, a column as one too when
given the scratch tile (TCOLSUM's 4-operand form), top to bottom otherwise. fp16
results are compared bit for bit with goldens summed that way in torch."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir

SRC = """
import pypto.language as pl

@pl.program
class R:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[{M}, {N}], pl.FP16], rs: pl.Out[pl.Tensor[[{M}, 1], pl.FP16]],
          ct: pl.Out[pl.Tensor[[1, {N}], pl.FP16]], cs: pl.Out[pl.Tensor[[1, {N}], pl.FP16]]):
        t = pl.load(x, [0, 0], [{M}, {N}])
        tmp = pl.create_tile([{M}, {N}], dtype=pl.FP16, target_memory=pl.Mem.Vec)
        rs = pl.store(pl.row_sum(t, tmp), [0, 0], rs)
        ct = pl.store(pl.col_sum(t, tmp), [0, 0], ct)
        cs = pl.store(pl.col_sum(t), [0, 0], cs)
        return rs, ct, cs

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[{M}, {N}], pl.FP16], rs: pl.Out[pl.Tensor[[{M}, 1], pl.FP16]],
             ct: pl.Out[pl.Tensor[[1, {N}], pl.FP16]], cs: pl.Out[pl.Tensor[[1, {N}], pl.FP16]]):
        rs, ct, cs = self.k(x, rs, ct, cs)
        return rs, ct, cs
"""


def tree(v: torch.Tensor) -> torch.Tensor:
    """Binary tree along dim 0, rounding to fp16 at each step."""
    buf, cnt = v.clone(), v.shape[0]
    while cnt > 1:
        half = cnt // 2
        nxt = (buf[0:2 * half:2].float() + buf[1:2 * half:2].float()).half()
        buf[:half] = nxt
        if cnt % 2:
            buf[0] = (buf[0].float() + buf[cnt - 1].float()).half()
        cnt = half
    return buf[0]


def sequential(v: torch.Tensor) -> torch.Tensor:
    acc = v[0].clone()
    for i in range(1, v.shape[0]):
        acc = (acc.float() + v[i].float()).half()
    return acc


@pytest.mark.parametrize("m, n", [(32, 64), (16, 16), (48, 48)])
def test_fp16_sums_round_as_the_hardware_does(m, n, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(SRC.format(M=m, N=n), filename="/u/r.py"), output_dir=tmp_path / "out",
                     platform="a2a3sim")
    x = (torch.randn(m, n, generator=torch.Generator().manual_seed(m * n)) * 8).half()
    rs, ct, cs = torch.zeros(m, 1).half(), torch.zeros(1, n).half(), torch.zeros(1, n).half()
    run(x, rs, ct, cs)
    assert torch.equal(rs[:, 0], tree(x.t()))           # each row a tree
    assert torch.equal(ct[0], tree(x))                  # columns with scratch: a tree
    assert torch.equal(cs[0], sequential(x))            # columns without: top to bottom
    assert not torch.equal(ct, cs) or m < 4             # (the two orders really differ)


F32 = """
import pypto.language as pl

@pl.program
class R32:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[{M}, {N}], pl.FP32], s: pl.Out[pl.Tensor[[{M}, 1], pl.FP32]],
          mx: pl.Out[pl.Tensor[[{M}, 1], pl.FP32]], mn: pl.Out[pl.Tensor[[{M}, 1], pl.FP32]]):
        t = pl.load(x, [0, 0], [{M}, {N}], valid_shape=[{V}, {N}])
        tmp = pl.create_tile([{M}, {N}], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        s = pl.store(pl.row_sum(t, tmp), [0, 0], s)
        mx = pl.store(pl.row_max(t, tmp), [0, 0], mx)
        mn = pl.store(pl.row_min(t, tmp), [0, 0], mn)
        return s, mx, mn

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[{M}, {N}], pl.FP32], s: pl.Out[pl.Tensor[[{M}, 1], pl.FP32]],
             mx: pl.Out[pl.Tensor[[{M}, 1], pl.FP32]], mn: pl.Out[pl.Tensor[[{M}, 1], pl.FP32]]):
        s, mx, mn = self.k(x, s, mx, mn)
        return s, mx, mn
"""


def tree_f32(v: torch.Tensor, f) -> torch.Tensor:
    """tree() along dim 1 of fp32 rows with the step f(a, b), each step one fp32 op."""
    buf, cnt = v.clone(), v.shape[1]
    while cnt > 1:
        half = cnt // 2
        buf[:, :half] = f(buf[:, 0:2 * half:2], buf[:, 1:2 * half:2])
        if cnt % 2:
            buf[:, 0] = f(buf[:, 0], buf[:, cnt - 1])
        cnt = half
    return buf[:, 0]


@pytest.mark.parametrize("m, v, n", [(8, 8, 1024), (16, 13, 24), (16, 9, 8), (8, 8, 12), (8, 3, 64),
                                     (16, 16, 640), (8, 8, 64)])
def test_fp32_row_reductions_keep_the_tree_order_bit_for_bit(m, v, n, tmp_path, monkeypatch):
    """Rows reduced eight at a time with vector lanes (and the rest one by one) give the
    bits of the one-row tree, NaN and signed zeros included (max: a < b ? b : a). Rows of a
    multiple of 64 values take the row-by-row path (640: its block sums' tree has odd levels)."""
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(F32.format(M=m, V=v, N=n), filename="/u/r32.py"), output_dir=tmp_path / "out",
                     platform="a2a3sim")
    x = torch.randn(m, n, generator=torch.Generator().manual_seed(m + n)) * 1000
    x[0, 1], x[1, 2], x[2, 0] = float("nan"), -0.0, 0.0
    s, mx, mn = torch.zeros(m, 1), torch.zeros(m, 1), torch.zeros(m, 1)
    run(x, s, mx, mn)
    x, s, mx, mn = x[:v], s[:v], mx[:v], mn[:v]          # the valid rows
    bits = lambda t: t.reshape(-1).view(torch.int32)     # noqa: E731
    assert torch.equal(bits(s), bits(tree_f32(x, torch.add)))
    assert torch.equal(bits(mx), bits(tree_f32(x, lambda a, b: torch.where(a < b, b, a))))
    assert torch.equal(bits(mn), bits(tree_f32(x, lambda a, b: torch.where(b < a, b, a))))
