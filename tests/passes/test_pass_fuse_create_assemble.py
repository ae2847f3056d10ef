"""FuseCreateAssembleToSlice: a created tensor that kernels write and an orchestration
assembles once into a window of another tensor becomes a view of that window."""
import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import CodegenError, MisplacedTensorOpError

from pass_helpers import assigns, before, fn, roundtrip, run

NAME = "FuseCreateAssembleToSlice"


def stacked():
    """Each iteration's kernel writes a [4, 16] tensor that is assembled into out[b]."""
    @pl.program
    class Stack:
        @pl.function(type=pl.FunctionType.InCore)
        def scale(self, x: pl.Tensor[[4, 16], pl.FP32], s: pl.Scalar[pl.FP32],
                  out: pl.Out[pl.Tensor[[4, 16], pl.FP32]]) -> pl.Tensor[[4, 16], pl.FP32]:
            t = pl.load(x, [0, 0], [4, 16])
            out = pl.store(pl.mul(t, s), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[4, 16], pl.FP32],
                 out: pl.Out[pl.Tensor[[3, 4, 16], pl.FP32]]) -> pl.Tensor[[3, 4, 16], pl.FP32]:
            for b in pl.range(3):
                chunk = pl.create_tensor([4, 16], dtype=pl.FP32)
                chunk = self.scale(x, pl.cast(b + 1, pl.FP32), chunk)
                out = pl.assemble(out, chunk, [b, 0, 0])
            return out
    return Stack


def staged():
    """A pl.at region writes a created tensor; the orchestration assembles it into a
    window of the output (same rank): the region's store lands in the output."""
    @pl.program
    class Staged:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[32, 64], pl.FP32], b: pl.Tensor[[32, 64], pl.FP32],
                 out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            stage = pl.create_tensor([32, 64], dtype=pl.FP32)
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="add"):
                t = pl.add(pl.load(a, [0, 0], [32, 64]), pl.load(b, [0, 0], [32, 64]))
                stage = pl.assemble(stage, t, [0, 0])
            out = pl.assemble(out, stage, [32, 0])
            return out
    return Staged


def test_the_create_becomes_a_view_of_the_window_and_the_assemble_names_the_target():
    out = run(before(stacked(), NAME), NAME)
    main = fn(out, "main")
    assert not assigns(main, "tensor.create") and not assigns(main, "tensor.assemble")
    (sl,) = assigns(main, "tensor.slice")
    assert [c.value for c in sl.value.args[1].items] == [1, 4, 16]      # padded to the target's rank
    (rs,) = assigns(main, "tensor.reshape")
    assert rs.value.args[0] is sl.var and rs.var.name == "chunk"
    roundtrip(out)


def test_same_rank_is_a_slice_alone():
    out = run(before(staged(), NAME), NAME)
    main = fn(out, "main")
    (sl,) = assigns(main, "tensor.slice")
    assert [c.value for c in sl.value.args[2].items] == [32, 0]
    assert not assigns(main, "tensor.reshape") and not assigns(main, "tensor.create")


@pytest.mark.parametrize("make, shape", [(stacked, (3, 4, 16)), (staged, (64, 64))])
def test_numerics(make, shape, tmp_path):
    c = ir.compile(make(), output_dir=str(tmp_path / "o"))
    if make is stacked:
        x, out = torch.randn(4, 16), torch.zeros(*shape)
        c(x, out)
        ref = torch.stack([x * (b + 1) for b in range(3)])
    else:
        a, b, out = torch.randn(32, 64), torch.randn(32, 64), torch.full(shape, 7.0)
        c(a, b, out)
        ref = torch.full(shape, 7.0)
        ref[32:] = a + b                       # only the window is written
    torch.testing.assert_close(out, ref)


def test_an_assemble_of_a_parameter_is_misplaced():
    """Nothing can fold a parameter into a window: the parser says so at the line."""
    with pytest.raises(MisplacedTensorOpError, match="assemble"):
        @pl.program
        class Copy:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: pl.Tensor[[32, 64], pl.FP32],
                     out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                out = pl.assemble(out, a, [32, 0])
                return out


FILL_THEN = """
import pypto.language as pl


@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def fill(self, x: pl.Tensor[[4, 16], pl.FP32],
             out: pl.Out[pl.Tensor[[4, 16], pl.FP32]]) -> pl.Tensor[[4, 16], pl.FP32]:
        out = pl.store(pl.load(x, [0, 0], [4, 16]), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[4, 16], pl.FP32],
             out: pl.Out[pl.Tensor[[{rows}, 16], pl.FP32]]) -> pl.Tensor[[{rows}, 16], pl.FP32]:
        c = pl.create_tensor([4, 16], dtype=pl.FP32)
        c = self.fill(x, c)
{then}
        return out
"""


def test_a_target_made_after_the_source_is_refused_at_the_assemble(tmp_path):
    """The window must exist where the source is created; otherwise codegen refuses
    the assemble (an orchestration has no copy)."""
    late = FILL_THEN.format(rows=4, then="""\
        late = pl.create_tensor([8, 16], dtype=pl.FP32)
        late = pl.assemble(late, c, [0, 0])
        out = self.fill(x, out)""")
    with pytest.raises(CodegenError, match="pl.assemble into 'late'.*copies no data") as e:
        ir.compile(pl.parse(late, filename="/u/late.py"), output_dir=str(tmp_path / "o"))
    # host statements carry no location in the canonical text: the function's line
    assert e.value.span.file == "late.py" and e.value.span.line > 0


def test_assembled_twice_is_not_folded():
    twice = FILL_THEN.format(rows=8, then="""\
        out = pl.assemble(out, c, [0, 0])
        out = pl.assemble(out, c, [4, 0])""")
    out = run(before(pl.parse(twice, filename="/u/twice.py"), NAME), NAME)
    assert len(assigns(fn(out, "main"), "tensor.assemble")) == 2
