"""Running passes by hand, the reference's way: `with passes.PassContext([...], options):
program = passes.<name>()(program)`; and the loop forms AutoTileMatmulL0 writes, printed
and parsed back (`pl.pipeline(..., stage=2)`, `attrs={"pipeline_double_buffer_c": True}`)."""
from __future__ import annotations

import pytest

import pypto.language as pl
from pypto import ir, passes
from pypto.backend import BackendType
from pypto.errors import NotBuiltError, ParserError
from pypto.ir.nodes import For
from pypto.ir.visit import walk
from pypto.pypto_core.passes import MemoryPlanner

SRC = """
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[{M}, 64], pl.FP32], b: pl.Tensor[[64, {N}], pl.FP32],
          out: pl.Out[pl.Tensor[[{M}, {N}], pl.FP32]]) -> pl.Tensor[[{M}, {N}], pl.FP32]:
        lm = pl.load(a, [0, 0], [{M}, 64], target_memory=pl.Mem.Mat)
        rm = pl.load(b, [0, 0], [64, {N}], target_memory=pl.Mem.Mat)
        c = pl.tile.matmul(lm, rm)
        out = pl.store(c, [0, 0], out)
        return out
"""

PREFIX = ("convert_to_ssa", "convert_tensor_to_tile_ops", "lower_composite_ops", "flatten_tile_nd_to_2d",
          "auto_tile_matmul_l0")


def _through(prog, planner, **opts):
    with passes.PassContext([], memory_planner=planner, **opts):
        for name in PREFIX:
            prog = getattr(passes, name)()(prog)
    return prog


def _loops(prog):
    return [s for f in prog.functions for s in walk(f.body) if isinstance(s, For)]


def test_every_pass_has_a_factory_named_after_it():
    from pypto.passes import ALL_PASSES
    from pypto.passes.context import snake
    assert snake("FlattenTileNdTo2D") == "flatten_tile_nd_to_2d" and snake("InitMemRef") == "init_mem_ref"
    for p in ALL_PASSES:
        runner = getattr(passes, snake(p.name))()
        assert runner.get_name() == p.name
    # the reference's split passes run the one of ours that does their work
    assert passes.outline_cluster_scopes().get_name() == "OutlineIncoreScopes"
    assert "parser" in repr(passes.ctrl_flow_transform())
    with pytest.raises(AttributeError, match="no attribute 'no_such_pass'"):
        passes.no_such_pass
    # the factory is the pass's module: importing it by name still gives the module
    from pypto.passes import flatten_call_expr
    assert flatten_call_expr.NAME == "FlattenCallExpr" and flatten_call_expr().get_name() == "FlattenCallExpr"


def test_the_factory_leaves_its_input_as_it_was():
    prog = pl.parse(SRC.format(M=64, N=64), filename="/u/p.py")
    before = prog.as_python()
    out = passes.convert_to_ssa()(prog)
    assert prog.as_python() == before and out is not prog


def test_the_context_chooses_the_planner_and_two_accumulators():
    # 16 x 64 x 256 fp32: the chooser cuts N in two; with two accumulators (any planner but
    # PyPTO's, or PyPTO's with the flag) the column loop alternates them
    prog = pl.parse(SRC.format(M=16, N=256), filename="/u/p.py")
    for planner, flag, want in [(MemoryPlanner.PYPTO, False, 0), (MemoryPlanner.PYPTO, True, 1),
                                (MemoryPlanner.DSA_RP, False, 1), ("PTOAS", False, 1)]:
        out = _through(prog, planner, enable_pypto_l0c_double_buffer=flag)
        assert ir.python_print(out).count('"pipeline_double_buffer_c": True') == want, planner
    with pytest.raises(ValueError, match="memory_planner"):
        passes.PassContext([], memory_planner="LRU")
    with pytest.raises(NotBuiltError, match="instruments"):
        passes.PassContext([object()])


def test_contexts_nest_and_the_backend_is_read_from_them():
    from pypto.passes.context import PassContext, current_options
    assert PassContext.current() is None
    with PassContext([], memory_planner="PTOAS"):
        with PassContext([], backend_type=BackendType.Ascend950):
            assert current_options().backend_type is BackendType.Ascend950
            assert current_options().memory_planner == "PYPTO"
        assert current_options().memory_planner == "PTOAS"
    assert PassContext.current() is None


def test_the_grid_loops_print_and_parse_back():
    prog = _through(pl.parse(SRC.format(M=320, N=320), filename="/u/p.py"), MemoryPlanner.DSA_RP)
    text = ir.python_print(prog)
    # 64 x 128 tiles: a 5 x 2 interior with the moving loop pipelined, the 64-column edge peeled
    inner = [s for s in _loops(prog) if s.stage == 2]
    assert len(inner) == 1 and inner[0].attrs == {"pipeline_double_buffer_c": True}
    assert "stage=2" in text and text.count("pl.tile.matmul(") == 1 + 5
    again = pl.parse(text)
    ir.assert_structural_equal(prog, again)
    assert ir.python_print(again) == text


def test_loop_attributes_are_checked_where_they_are_written():
    bad = SRC.replace("c = pl.tile.matmul(lm, rm)\n",
                      "c = pl.tile.matmul(lm, rm)\n        for i in pl.range(2, attrs={{\"unroll_me\": True}}):\n"
                      "            pass\n")
    with pytest.raises(ParserError, match="unknown loop attribute 'unroll_me'") as e:
        pl.parse(bad.format(M=64, N=64), filename="/u/p.py")
    assert "p.py:12" in str(e.value)
