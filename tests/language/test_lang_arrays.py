"""On-core arrays (issue 11): pl.array.create(n, dtype) in a kernel, arr[i] reads an
element, arr[i] = v writes one (functional in the IR, in place in the kernel:
pto.declare_local_array / local_array_get / local_array_set); carried through loops;
indices checked when compiling (constants) and when the kernel runs. Against torch."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import TypeCheckError
from pypto.runtime.errors import KernelExecutionError

ROUTE = """
import pypto.language as pl

@pl.program
class Route:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, index_t: pl.Tensor[[1, 8], pl.INT32], src: pl.Tensor[[1, 32], pl.FP32],
          dst: pl.InOut[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
        idx = pl.load(index_t, [0, 0], [1, 8])
        s = pl.load(src, [0, 0], [1, 32])
        arr = pl.array.create(4, pl.INT32)
        arr[0] = pl.tile.read(idx, [0, 0])
        arr[1] = arr[0] + {SHIFT}
        row = pl.cast(arr[1], pl.INDEX)
        dst = pl.store(s, [row, 0], dst)
        return dst

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, index_t: pl.Tensor[[1, 8], pl.INT32], src: pl.Tensor[[1, 32], pl.FP32],
             dst: pl.InOut[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
        dst = self.k(index_t, src, dst)
        return dst
"""


def test_an_index_routed_through_an_array(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    prog = pl.parse(ROUTE.format(SHIFT=2), filename="/u/r.py")
    text = prog.as_python()
    assert "pl.Array[4, pl.INT32]" in text and pl.parse(text).as_python() == text
    run = ir.compile(prog, output_dir=tmp_path / "out", platform="a2a3sim")
    idx = torch.zeros(1, 8, dtype=torch.int32)
    idx[0, 0] = 11
    src, dst = torch.randn(1, 32), torch.zeros(32, 32)
    run(idx, src, dst)
    want = torch.zeros(32, 32)
    want[13] = src[0]
    assert torch.equal(dst, want)
    pto = (tmp_path / "out" / "ptoas" / "k.pto").read_text()
    assert "pto.declare_local_array -> !pto.local_array<4xi32>" in pto
    assert "pto.local_array_set" in pto and "pto.local_array_get" in pto


COUNTS = """
import pypto.language as pl

@pl.program
class Counts:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[1, 64], pl.INT32], out: pl.Out[pl.Tensor[[1, 8], pl.INT32]]
          ) -> pl.Tensor[[1, 8], pl.INT32]:
        t = pl.load(x, [0, 0], [1, 64])
        counts = pl.array.create(8, pl.INT32)
        for j in pl.range(64):
            b = pl.tile.read(t, [0, j])
            counts[b] = counts[b] + 1
        acc = pl.tile.full([1, 8], dtype=pl.INT32, value=0)
        for j in pl.range(8):
            acc = pl.tile.write(acc, [0, j], counts[j])
        out = pl.store(acc, [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[1, 64], pl.INT32], out: pl.Out[pl.Tensor[[1, 8], pl.INT32]]
             ) -> pl.Tensor[[1, 8], pl.INT32]:
        out = self.k(x, out)
        return out
"""


def test_a_histogram_carried_through_a_loop(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(COUNTS, filename="/u/c.py"), output_dir=tmp_path / "out", platform="a2a3sim")
    x = torch.randint(0, 8, (1, 64), dtype=torch.int32)
    out = torch.zeros(1, 8, dtype=torch.int32)
    run(x, out)
    assert torch.equal(out[0], torch.bincount(x[0], minlength=8).int())
    x[0, 5] = 9                                # an index past the array, when the kernel runs
    with pytest.raises(KernelExecutionError, match=r"local array index 9 is outside its 8 elements"):
        run(x, out)


@pytest.mark.parametrize("line, err, msg", [
    ("arr[1] = arr[7] + 2", TypeCheckError, r"index 7 is outside the array's 4 elements"),
    ("arr[1] = pl.cast(arr[0], pl.FP32)", TypeCheckError, r"a fp32 value into a int32 array"),
    ("arr[0:2] = arr[0]", Exception, r"an array is indexed by one integer"),
])
def test_misuse_is_a_typed_error(line, err, msg):
    with pytest.raises(err, match=msg):
        pl.parse(ROUTE.format(SHIFT=2).replace("arr[1] = arr[0] + 2", line), filename="/u/r.py")


HOST = """
import pypto.language as pl

@pl.program
class Host:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[4, 32], pl.FP32], row: pl.Scalar[pl.INT32],
          out: pl.Out[pl.Tensor[[4, 32], pl.FP32]]) -> pl.Tensor[[4, 32], pl.FP32]:
        t = pl.load(x, [row, 0], [1, 32])
        out = pl.store(pl.muls(t, 2.0), [row, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[4, 32], pl.FP32],
             out: pl.Out[pl.Tensor[[4, 32], pl.FP32]]) -> pl.Tensor[[4, 32], pl.FP32]:
        rows = pl.array.create(2, pl.INT32)        # a host array: the orchestration's own
        rows[0] = 3
        rows[1] = rows[0] - 2
        for i in pl.range(2):
            out = self.k(x, rows[i], out)
        return out
"""


def test_an_array_in_an_orchestration_lives_on_the_host(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(HOST, filename="/u/h.py"), output_dir=tmp_path / "out", platform="a2a3sim")
    assert "std::array<int32_t, 2>" in next((tmp_path / "out" / "orchestration").glob("*.cpp")).read_text()
    x, out = torch.randn(4, 32), torch.zeros(4, 32)
    run(x, out)
    want = torch.zeros(4, 32)
    want[[3, 1]] = 2 * x[[3, 1]]
    assert torch.equal(out, want)


def test_both_branches_of_an_if_write_the_array(tmp_path, monkeypatch):
    """`arr[0] = 1` (a bare literal takes the array's dtype) in one branch, a scalar in
    the other: one array, written in place by whichever branch runs."""
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    src = ROUTE.format(SHIFT=0).replace(
        "        arr[0] = pl.tile.read(idx, [0, 0])\n",
        "        c = pl.tile.read(idx, [0, 0])\n        if c > 0:\n            arr[0] = c\n"
        "        else:\n            arr[0] = 1\n")
    run = ir.compile(pl.parse(src, filename="/u/r.py"), output_dir=tmp_path / "out", platform="a2a3sim")
    for c, row in ((9, 9), (-4, 1)):
        idx = torch.zeros(1, 8, dtype=torch.int32)
        idx[0, 0] = c
        s, dst = torch.randn(1, 32), torch.zeros(32, 32)
        run(idx, s, dst)
        want = torch.zeros(32, 32)
        want[row] = s[0]
        assert torch.equal(dst, want), c
