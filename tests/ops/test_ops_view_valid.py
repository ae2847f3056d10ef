"""A view's valid part decided in the orchestration (issue 12): pl.slice(t, shape, offs,
valid_shape=[r, n]) with n known only at run time, passed to a kernel whose parameter
declares pl.TensorView(valid_shape=[R, N_DYN]) with pl.dynamic dims. The kernel loads
the valid part it is told (valid_shape= on pl.load); reading the view whole, with an
extent known only at run time, is refused."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import NotBuiltError
from pypto.ir.nodes import TensorType

ROWS = pl.dynamic("ROWS")
VALID = pl.dynamic("VALID")

SRC = """
import pypto.language as pl

ROWS = pl.dynamic("ROWS")
VALID = pl.dynamic("VALID")


@pl.program
class Masked:
    @pl.function(type=pl.FunctionType.InCore)
    def softmax_part(self, s: pl.Tensor[[ROWS, 64], pl.FP32,
                                        pl.TensorView(valid_shape=[ROWS, VALID], layout=pl.TensorLayout.ND)],
                     n: pl.Scalar[pl.INDEX],
                     out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        t = pl.load(s, [0, 0], [16, 64], valid_shape=[16, n])
        t = pl.tile.fillpad(t, pad_value=pl.PadValue.min)
        m = pl.row_max(t, pl.create_tile([16, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec))
        out = pl.store(pl.exp(pl.row_expand_sub(t, m)), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[32, 64], pl.FP32], lens: pl.Tensor[[1], pl.INT32],
             out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        n = pl.cast(pl.tensor.read(lens, [0]), pl.INDEX)
        v = pl.slice(x, [16, 64], [16, 0], valid_shape=[16, n])
        out = self.softmax_part(v, n, out)
        return out
"""


def test_the_annotation_and_the_view_carry_a_run_time_extent():
    prog = pl.parse(SRC, filename="/u/masked.py")
    s = prog.functions["softmax_part"].params[0].var.type
    assert isinstance(s, TensorType) and s.valid == (ROWS, None)
    text = prog.as_python()
    assert "pl.TensorView(valid_shape=[ROWS, -1])" in text
    assert pl.parse(text, filename="<ir>").as_python() == text     # it prints back the same


def test_the_kernel_reads_the_part_it_is_told(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    run = ir.compile(pl.parse(SRC, filename="/u/masked.py"), output_dir=tmp_path / "o",
                     platform="a2a3sim")
    x, out = torch.randn(32, 64), torch.zeros(16, 64)
    run(x, torch.tensor([40], dtype=torch.int32), out)
    part = x[16:, :40]
    want = torch.zeros(16, 64)
    want[:, :40] = torch.exp(part - part.max(dim=1, keepdim=True).values)
    torch.testing.assert_close(out, want)


def test_reading_a_run_time_extent_whole_is_refused(tmp_path, monkeypatch):
    """A tensor op on the view would read all of it: refused, with the way out."""
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))

    @pl.program
    class Whole:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[32, 64], pl.FP32], lens: pl.Tensor[[1], pl.INT32],
                 out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
            n = pl.cast(pl.tensor.read(lens, [0]), pl.INDEX)
            v = pl.slice(x, [16, 64], [16, 0], valid_shape=[16, n])
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="whole"):
                out = pl.assemble(out, pl.exp(v), [0, 0])
            return out
    with pytest.raises(NotBuiltError, match="valid extent known only at run time"):
        ir.compile(Whole, output_dir=tmp_path / "o", platform="a2a3sim")
