"""The reference's module paths and helpers, as our own objects (issue 12.7):
pypto.backend.pto_backend.PartialCodegenError, pypto.ir.pass_manager.PassManager,
Function.as_python / pl.parse of a lone function, ir.serialize / ir.deserialize, and the
error classes pl.parse raises for text that holds no program or is not Python."""
import pytest

import pypto.language as pl
from pypto import ir
from pypto.errors import ParserError

FUNC = """
@pl.function
def scale(x: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
    y: pl.Tensor[[64], pl.FP32] = pl.mul(x, 2.0)
    return y
"""


def test_partial_codegen_error_is_what_the_compiler_refuses_a_program_with():
    from pypto.backend.pto_backend import PartialCodegenError
    from pypto.errors import CodegenError, TypeCheckError
    assert issubclass(ParserError, PartialCodegenError)
    assert issubclass(TypeCheckError, PartialCodegenError) and issubclass(CodegenError, PartialCodegenError)
    with pytest.raises(PartialCodegenError):
        pl.parse(FUNC.replace("pl.mul(x, 2.0)", "pl.mul(x, x, x)"))


def test_a_pass_manager_runs_the_strategys_passes_in_order():
    from pypto.ir.pass_manager import OptimizationStrategy, PassManager
    from pypto.passes import ALL_PASSES
    pm = PassManager.get_strategy(OptimizationStrategy.Default)
    assert pm.passes[0] == ALL_PASSES[0].name and "OutlineIncoreScopes" in pm.passes
    assert "MemoryReuse" not in PassManager.get_strategy(memory_planner="PTOAS").passes

    @pl.program
    class P:
        @pl.function
        def main(self, x: pl.Tensor[[64, 64], pl.FP32],
                 y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                y[:] = pl.exp(x)
            return y

    out = pm.run_passes(P)
    assert {f.name for f in out.functions} == {"main", "main_incore_0"}
    assert out.get("main").func_type is ir.FunctionType.Orchestration


def test_a_lone_function_prints_and_parses_back():
    f = pl.parse(FUNC)
    text = f.as_python()
    assert "def scale(x:" in text and "self" not in text
    ir.assert_structural_equal(pl.parse(text), f)
    data = ir.serialize(f)
    assert isinstance(data, bytes)
    ir.assert_structural_equal(ir.deserialize(data), f)


def test_parse_errors_are_also_the_python_errors_the_reference_raises():
    with pytest.raises(ValueError, match="no @pl.program class or @pl.function def found"):
        pl.parse("x = 42\ny = x + 1\n")
    with pytest.raises(ValueError, match="defines 2 programs/functions"):
        pl.parse(FUNC + FUNC.replace("def scale", "def again"))
    with pytest.raises(SyntaxError) as e:
        pl.parse("@pl.function\ndef bad(x: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:\n    return x +\n")
    assert isinstance(e.value, ParserError) and e.value.span.line == 3


def test_a_programs_functions_read_as_a_list_and_as_the_references_mapping():
    @pl.program
    class Two:
        @pl.function
        def double(self, x: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
            y: pl.Tensor[[64], pl.FP32] = pl.mul(x, 2.0)
            return y

        @pl.function
        def triple(self, x: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
            y: pl.Tensor[[64], pl.FP32] = pl.mul(x, 3.0)
            return y

    fs = Two.functions
    assert [f.name for f in fs] == ["double", "triple"] and fs[1].name == "triple"
    assert fs.keys() == ["double", "triple"] and [f.name for f in fs.values()] == ["double", "triple"]
    assert fs["triple"] is fs[1] and dict(fs.items())["double"] is fs[0]
    with pytest.raises(KeyError):
        fs["missing"]


def test_the_soc_model_counts_the_cores_a_launch_can_fill():
    from pypto import backend
    from pypto.pypto_core import ir as core_ir

    def count(bk, kind):
        return sum(n_core * n_cluster * n_die
                   for die, n_die in bk.soc.die_counts.items()
                   for cluster, n_cluster in die.cluster_counts.items()
                   for core, n_core in cluster.core_counts.items() if core.core_type == kind)
    b910 = backend.Backend910B.instance()
    assert b910 is backend.Backend910B.instance() and b910.type is backend.BackendType.Ascend910B
    chip = backend.chip(backend.BackendType.Ascend910B)
    assert count(b910, core_ir.CoreType.VECTOR) == chip.aiv_cores == 48
    assert count(b910, core_ir.CoreType.CUBE) == chip.aic_cores == 24
    b950 = backend.Backend950.instance()
    assert b950.soc.cores(core_ir.CoreType.VECTOR) == backend.chip(b950.type).aiv_cores
    with pytest.raises(TypeError):
        backend.Backend.instance()
    with pytest.raises(AttributeError):
        backend.NoSuchThing
