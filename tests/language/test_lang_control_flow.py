"""Control flow in kernels (issue 11.7): an if whose branches compute a tile (the result
one buffer each branch writes, a tile from before the if copied into it), scalars
carried through a loop (scf.for iter_args), and `break` (a flag set where the loop
breaks, the body run while it is clear). On the simulator against torch, with both
memory planners."""
from __future__ import annotations

import ast

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import ParserError
from pypto.language.parser.continues import has_break, without_break

KERNEL = """
import pypto.language as pl

@pl.program
class K:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[256, 64], pl.FP32], b: pl.Tensor[[256, 64], pl.FP32],
          cond: pl.Scalar[pl.INT32], c: pl.InOut[pl.Tensor[[256, 64], pl.FP32]]) -> pl.Tensor[[256, 64], pl.FP32]:
{BODY}
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[256, 64], pl.FP32], b: pl.Tensor[[256, 64], pl.FP32],
             cond: pl.Scalar[pl.INT32], c: pl.InOut[pl.Tensor[[256, 64], pl.FP32]]) -> pl.Tensor[[256, 64], pl.FP32]:
        c = self.k(a, b, cond, c)
        return c
"""


def _run(body, cond, planner, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    prog = pl.parse(KERNEL.replace("{BODY}", body), filename="/u/k.py")
    assert pl.parse(prog.as_python()).as_python() == prog.as_python()
    run = ir.compile(prog, output_dir=tmp_path / f"out_{planner}", platform="a2a3sim", memory_planner=planner)
    g = torch.Generator().manual_seed(cond)
    a, b = torch.randn(256, 64, generator=g), torch.randn(256, 64, generator=g)
    c = torch.full((256, 64), 7.0)
    run(a, b, cond, c)
    return a, b, c


IF_TILES = """\
        for i in pl.range(4):
            ta = pl.load(a, [i * 64, 0], [64, 64])
            tb = pl.load(b, [i * 64, 0], [64, 64])
            tc = pl.create_tile([64, 64], dtype=pl.FP32)
            if cond == 1:
                tc = pl.add(ta, tb)
            else:
                tc = pl.mul(ta, tb)
            if i == 2:
                tc = ta
            out = pl.store(pl.add(tc, ta), [i * 64, 0], c)"""


@pytest.mark.parametrize("planner", ["PYPTO", "PTOAS"])
@pytest.mark.parametrize("cond", [0, 1])
def test_an_if_yields_a_tile(cond, planner, tmp_path, monkeypatch):
    """The branches compute into the result's buffer; `tc = ta` (a tile still read after
    the if) is copied into it, so ta is intact for the add that follows."""
    a, b, c = _run(IF_TILES, cond, planner, tmp_path, monkeypatch)
    want = (a + b) if cond == 1 else a * b
    want[128:192] = a[128:192]
    assert torch.allclose(c, want + a)


CARRIED = """\
        row = 0
        s = 1.0
        for i in pl.range(4):
            t = pl.load(a, [row, 0], [64, 64])
            out = pl.store(pl.muls(t, s), [row, 0], c)
            row = row + 64
            s = s * 2.0"""


@pytest.mark.parametrize("planner", ["PYPTO", "PTOAS"])
def test_scalars_carried_through_a_loop(planner, tmp_path, monkeypatch):
    a, _, c = _run(CARRIED, 0, planner, tmp_path, monkeypatch)
    assert torch.allclose(c, torch.cat([a[i * 64:(i + 1) * 64] * 2.0 ** i for i in range(4)]))
    pto = (tmp_path / f"out_{planner}" / "ptoas" / "k.pto").read_text()
    assert "iter_args(" in pto and "scf.yield" in pto


BREAKS = """\
        for i in pl.range(4):
            if i >= {STOP}:
                break
            if i == 0:
                continue
            ta = pl.load(a, [i * 64, 0], [64, 64])
            tb = pl.load(b, [i * 64, 0], [64, 64])
            out = pl.store(pl.add(ta, tb), [i * 64, 0], c)"""


@pytest.mark.parametrize("stop", [2, 3, 9])
def test_break_ends_the_loop(stop, tmp_path, monkeypatch):
    a, b, c = _run(BREAKS.replace("{STOP}", str(stop)), 0, "PYPTO", tmp_path, monkeypatch)
    want = torch.full((256, 64), 7.0)
    for i in range(1, min(stop, 4)):
        want[i * 64:(i + 1) * 64] = a[i * 64:(i + 1) * 64] + b[i * 64:(i + 1) * 64]
    assert torch.equal(c, want)


def test_the_break_rewrite_leaves_nested_loops_alone():
    loop = ast.parse("for i in pl.range(4):\n    for j in pl.range(2):\n        break\n    x = 1\n").body[0]
    assert not has_break(loop.body)           # the inner loop's break is its own
    outer = ast.parse("for i in pl.range(4):\n    if i > 1:\n        break\n    x = i\n").body[0]
    init, new = without_break(outer)
    text = ast.unparse(init) + "\n" + ast.unparse(new)
    assert "_break_1_0 = 0" in text and "if _break_1_0 == 0:" in text
    assert not any(isinstance(n, ast.Break) for n in ast.walk(new))


def test_break_in_a_loop_with_init_values_is_refused():
    body = """\
        for i, (acc,) in pl.range(4, init_values=(pl.load(a, [0, 0], [64, 64]),)):
            if i > 1:
                break
            nxt = pl.yield_(pl.add(acc, acc))
        out = pl.store(nxt, [0, 0], c)"""
    with pytest.raises(ParserError, match=r"break in a loop with init_values is not supported"):
        pl.parse(KERNEL.replace("{BODY}", body), filename="/u/k.py")


WHILE = """\
        i: pl.Scalar[pl.INDEX] = 0
        while i < cond:
            ta = pl.load(a, [i * 64, 0], [64, 64])
            tb = pl.load(b, [i * 64, 0], [64, 64])
            out = pl.store(pl.add(ta, tb), [i * 64, 0], c)
            i = i + 1"""


@pytest.mark.parametrize("planner", ["PYPTO", "PTOAS"])
@pytest.mark.parametrize("n", [0, 1, 4])
def test_a_while_loop_in_a_kernel(n, planner, tmp_path, monkeypatch):
    """`while i < n:` with i rebound in the body: ConvertToSSA carries it (scf.while)."""
    a, b, c = _run(WHILE, n, planner, tmp_path, monkeypatch)
    want = torch.full((256, 64), 7.0)
    want[:n * 64] = a[:n * 64] + b[:n * 64]
    assert torch.equal(c, want)
    pto = (tmp_path / f"out_{planner}" / "ptoas" / "k.pto").read_text()
    assert "scf.while" in pto and "scf.condition(" in pto and "} do {" in pto


EXPLICIT = """
import pypto.language as pl

@pl.program
class E:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[256, 64], pl.FP32], c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        acc = pl.load(a, [0, 0], [64, 64])
        for (i, t) in pl.while_(init_values=(1, acc)):
            pl.cond(i < 4)
            nxt = pl.add(t, pl.load(a, [i * 64, 0], [64, 64]))
            i2, t2 = pl.yield_(i + 1, nxt)
        c = pl.store(t2, [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[256, 64], pl.FP32], n: pl.Scalar[pl.INDEX],
             c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        i: pl.Scalar[pl.INDEX] = 0
        while i < n:             # (an orchestration loop: the kernel runs n times)
            c = self.k(a, c)
            i = i + 1
        return c
"""


def test_the_explicit_form_carries_a_tile_and_roundtrips(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    prog = pl.parse(EXPLICIT, filename="/u/e.py")
    text = prog.as_python()
    assert "for (i, t,) in pl.while_(init_values=(1, acc,)):" in text and "pl.cond(i < 4)" in text
    assert pl.parse(text).as_python() == text
    run = ir.compile(prog, output_dir=tmp_path / "out", platform="a2a3sim")
    a = torch.randn(256, 64)
    for n in (0, 2):
        c = torch.full((64, 64), 3.0)
        run(a, n, c)
        want = a.reshape(4, 64, 64).sum(0) if n else torch.full((64, 64), 3.0)
        assert torch.allclose(c, want, atol=1e-5)
    orch = next((tmp_path / "out" / "orchestration").glob("*.cpp")).read_text()
    assert "while (true) {" in orch


@pytest.mark.parametrize("body, msg", [
    ("        while True:\n            out = c", r"`while True:` never ends"),
    ("        i = 0\n        while i < 4:\n            if i > 2:\n                break\n            i = i + 1\n"
     "        out = c", r"break in a while loop is not supported"),
])
def test_while_misuse(body, msg):
    with pytest.raises(ParserError, match=msg):
        pl.parse(KERNEL.replace("{BODY}", body), filename="/u/k.py")
