"""The `pl` namespace: names, run-time behaviour of DSL functions, namespaces."""
import subprocess
import sys

import pytest

import pypto.language as pl
from pypto import dtype as dt
from pypto.ir import ops
from pypto.ir.nodes import ArgDir, Const, DynDim, FunctionType, Level, MemorySpace, Role


def test_dtypes_and_enums():
    assert (pl.FP32, pl.FP16, pl.BF16, pl.INT8, pl.INT16, pl.INT32, pl.INT64, pl.UINT8,
            pl.BOOL, pl.INDEX) == (dt.FP32, dt.FP16, dt.BF16, dt.INT8, dt.INT16, dt.INT32,
                                   dt.INT64, dt.UINT8, dt.BOOL, dt.INDEX)
    assert str(pl.FP32) == "fp32"
    assert pl.Mem is pl.MemorySpace is MemorySpace
    assert {m.name for m in pl.Mem} >= {"DDR", "Vec", "Mat", "Left", "Right", "Acc"}
    assert pl.FunctionType is FunctionType and pl.Level is Level and pl.Role is Role
    assert {"AIV", "AIC", "CORE_GROUP", "CHIP_DIE", "CHIP", "HOST"} <= set(Level.__members__)
    assert pl.adir.input is ArgDir.input and pl.adir.output_existing is ArgDir.output_existing
    assert pl.ScopeMode.MANUAL.name == "MANUAL"


def test_annotations_are_python_values():
    t = pl.Tensor[[64, 128], pl.FP16]
    assert t.kind == "Tensor" and t.args == ([64, 128], pl.FP16)
    assert pl.Out[t].kind == "Out"
    assert pl.Scalar[pl.FP32].args == (pl.FP32,)
    m = pl.dynamic("M")
    assert m == DynDim("M") and str(m) == "M"
    assert pl.Tile[[16, 16], pl.FP32, pl.MemRef("mem_vec_0", 0, 1024), pl.Mem.Vec].kind == "Tile"
    c = pl.const(0, pl.INT64)
    assert isinstance(c, Const) and c.value == 0 and c.dtype == pl.INT64
    with pytest.raises(ValueError):
        pl.dynamic("not a name")


def test_every_op_is_exposed_and_refuses_to_run():
    for name in ops.dsl_names():
        fn = getattr(pl, name)
        assert callable(fn)
        with pytest.raises(pl.DSLCallError) as exc:
            fn(1, 2)
        msg = str(exc.value)
        assert f"pl.{name}" in msg and "@pl.program" in msg and "@pl.jit" in msg
        assert isinstance(exc.value, RuntimeError)
    for name in ("range", "parallel", "unroll", "yield_", "at", "scope", "min", "max", "cast"):
        with pytest.raises(pl.DSLCallError):
            getattr(pl, name)(1)


def test_qualified_namespaces():
    for full in ops.OPS:
        ns, name = full.split(".", 1)
        if ns == "scalar":          # spelled pl.cast(x, dtype) on a scalar
            continue
        fn = getattr(getattr(pl, ns), name)
        assert fn._pl_op == (name, ns)
    with pytest.raises(pl.DSLCallError, match=r"pl\.tile\.add"):
        pl.tile.add(1, 2)
    with pytest.raises(AttributeError, match=r"did you mean pl\.tile\.load"):
        pl.tile.lod
    assert "create" in dir(pl.tensor) and "alloc" in dir(pl.tile)


def test_unknown_attribute_suggests():
    with pytest.raises(AttributeError, match=r"pl\.row_sum"):
        pl.row_summ


def test_jit_hook_is_lazy():
    # pl.jit comes from pypto.jit when it exists
    try:
        import pypto.jit as j
    except ImportError:
        with pytest.raises(AttributeError):
            pl.jit
        return
    assert pl.jit is j.jit


def test_import_does_not_pull_torch():
    code = ("import sys; import pypto.language as pl; import pypto.ir.equal; "
            "assert 'torch' not in sys.modules, 'torch imported'; print('ok')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr


def test_function_marker_in_class_body_is_not_callable():
    from pypto.language.parser import FunctionMarker
    captured = {}

    class Holder:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[16, 16], pl.FP32]):
            return a
        captured["k"] = k

    assert isinstance(captured["k"], FunctionMarker)
    with pytest.raises(pl.DSLCallError):
        Holder.k(None, None)


def test_program_with_parentheses_and_program_level_errors():
    @pl.program()
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[16, 16], pl.FP32]) -> pl.Tensor[[16, 16], pl.FP32]:
            return a
    assert P.name == "P" and P.functions[0].name == "k"
    with pytest.raises(TypeError):
        pl.program(strict_ssa=True)
