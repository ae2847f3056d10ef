"""Operands by name and the reference's keyword spellings (issue 11): pl.load(t,
offsets=..., shapes=...), pl.store(tile, offsets=..., output_tensor=...), pl.cast(x,
target_type=..., mode=...). The keyword form means exactly the positional one (same
printed IR, same artifacts, same numbers); what is not built yet is refused."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import NotBuiltError, ParserError, TypeCheckError
from pypto.ir.printer import print_program

from test_lang_errors import check

SRC = '''
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[64, 128], pl.FP32], o: pl.Out[pl.Tensor[[32, 64], pl.FP16]]) -> pl.Tensor[[32, 64], pl.FP16]:
{body}
        return o

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[64, 128], pl.FP32], o: pl.Out[pl.Tensor[[32, 64], pl.FP16]]) -> pl.Tensor[[32, 64], pl.FP16]:
        o = self.k(a, o)
        return o
'''
BODY_LINE = 8

POSITIONAL = """
t = pl.load(a, [16, 64], [32, 64], target_memory=pl.Mem.Vec)
h = pl.cast(t, pl.FP16, mode="round")
o = pl.store(h, [0, 0], o)
"""
KEYWORDS = """
t = pl.load(a, offsets=[16, 64], shapes=[32, 64], target_memory=pl.MemorySpace.Vec)
h = pl.cast(t, target_type=pl.FP16, mode="round")
o = pl.store(h, offsets=[0, 0], output_tensor=o)
"""
ALL_BY_NAME = """
t = pl.tile.load(tensor=a, shapes=[32, 64], offsets=[16, 64], target_memory=pl.Mem.Vec)
h = pl.cast(t, mode="round", target_type=pl.FP16)
o = pl.tile.store(output_tensor=o, tile=h, offsets=[0, 0])
"""


def parse(body: str):
    body = "\n".join("        " + ln for ln in body.strip("\n").splitlines())
    return pl.parse(SRC.format(body=body), filename="/work/user/kern.py")


@pytest.mark.parametrize("body", [KEYWORDS, ALL_BY_NAME])
def test_keywords_print_as_the_positional_form(body):
    assert print_program(parse(body)) == print_program(parse(POSITIONAL))


def test_keyword_form_compiles_and_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    compiled = ir.compile(parse(KEYWORDS), output_dir=tmp_path / "out", platform="a2a3sim")
    # values fp16 holds exactly: mode="round" (ties away from zero) and torch's .half()
    # (ties to even) then agree; random fp32 values are exact ties about once in 8192
    a = torch.randn(64, 128).half().float()
    o = torch.zeros(32, 64, dtype=torch.float16)
    compiled(a, o)
    assert torch.equal(o, a[16:48, 64:128].half())


def test_an_operand_given_twice():
    with pytest.raises(ParserError) as exc:
        parse("t = pl.load(a, [0, 0], [32, 64], offsets=[0, 0])\no = pl.store(pl.cast(t, pl.FP16), [0, 0], o)")
    check(exc, ParserError, "kern.py", BODY_LINE, r"pass offsets once", r"two values for 'offsets'")


def test_a_missing_operand_is_named():
    with pytest.raises(ParserError) as exc:
        parse("t = pl.load(a, shapes=[32, 64])\no = pl.store(pl.cast(t, pl.FP16), [0, 0], o)")
    check(exc, ParserError, "kern.py", BODY_LINE, r"offsets=", r"operand 'offsets' is missing")


def test_an_option_under_both_names():
    with pytest.raises(TypeCheckError) as exc:
        parse("t = pl.load(a, [0, 0], [32, 64])\nh = pl.cast(t, dtype=pl.FP16, target_type=pl.FP16)")
    check(exc, TypeCheckError, "kern.py", BODY_LINE + 1, r"only one", r"target_type= and dtype=")


def test_a_narrower_valid_part_of_an_orchestration_view_is_in_its_type():
    """(issue 12: it was refused as not built) the view's type carries the valid part."""
    src = SRC.format(body="        t = pl.load(a, [0, 0], [32, 64])").replace(
        "        o = self.k(a, o)\n",
        "        v = pl.slice(a, [32, 64], [0, 0], valid_shape=[16, 64])\n        o = self.k(a, o)\n")
    prog = pl.parse(src, filename="/u/kern.py")
    (view,) = [s for s in prog.functions[-1].body if getattr(getattr(s, "var", None), "name", "") == "v"]
    assert view.var.type.valid == (16, 64) and len(view.value.args) == 4


def test_the_reference_import_paths():
    from pypto.ir.compiled_program import CompiledProgram
    from pypto.ir.pass_manager import OptimizationStrategy
    from pypto.pypto_core.passes import MemoryPlanner
    from pypto.runtime.runner import RunConfig, RunResult, run
    from pypto.runtime import compiled, config, harness
    assert OptimizationStrategy is ir.OptimizationStrategy and MemoryPlanner is ir.MemoryPlanner
    assert CompiledProgram is compiled.CompiledProgram and RunConfig is config.RunConfig
    assert (RunResult, run) == (harness.RunResult, harness.run)


def test_every_operator_declares_its_operands_and_call_form():
    from pypto.ir import ops
    for name, d in ops.OPS.items():
        assert d.sig.startswith("pl.") or (name.startswith("comm.") and d.sig.startswith("pld.")), name
        assert len(d.params) >= d.nargs[0], (name, d.params, d.nargs)
        assert not set(d.aliases.values()) - set(d.kwargs), name


def test_the_operator_page_is_current():
    """pypto/ir/ops/OPERATORS.md is what the table says (regenerate it with
    python -m pypto.ir.ops.doc after changing an operator)."""
    from pypto.ir.ops import doc
    assert doc.PAGE.read_text() == doc.render()
    from pypto.ir import ops
    page = doc.render()
    assert all(f"`{name}`" in page for name in ops.OPS)


def test_an_index_passes_for_an_int64_parameter():
    """The reference's paged-attention orchestrations pass loop indices to int64 kernel
    parameters: one 64-bit integer either way."""
    src = '''
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[16, 64], pl.FP32], i: pl.Scalar[pl.INT64],
          o: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        o = pl.store(pl.load(a, [0, 0], [16, 64]), [0, 0], o)
        return o

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 64], pl.FP32], o: pl.Out[pl.Tensor[[16, 64], pl.FP32]]
             ) -> pl.Tensor[[16, 64], pl.FP32]:
        for i in pl.range(2):
            o = self.k(a, i, o)
        return o
'''
    pl.parse(src, filename="/u/idx.py")
    with pytest.raises(TypeCheckError, match=r"expects Scalar int64, got Scalar fp32"):
        pl.parse(src.replace("o = self.k(a, i, o)", "o = self.k(a, 1.5, o)"), filename="/u/idx.py")
