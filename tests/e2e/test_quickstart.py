"""Issue 2: the Compiling page's quickstart and the tile-level add, end to end through
the build graph on a2a3sim, checked against torch."""
from pathlib import Path

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.runtime import RunConfig

from e2e_helpers import HERE, artifacts, run_py, tasks  # noqa: F401

CFG = RunConfig(platform="a2a3sim")


def test_page_quickstart_runs_unchanged(iso):
    out = run_py(HERE / "quickstart_page.py", {}, iso)
    assert "QUICKSTART OK" in out
    assert "artifacts in:" in out


@pl.jit
def add(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, b)
    return out


@pl.jit
def tile_add(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [128, 128])
        tb = pl.load(b, [0, 0], [128, 128])
        tc = pl.add(ta, tb)
        pl.store(tc, [0, 0], c)
    return c


@pl.program
class TileAdd:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[128, 128], pl.FP32], b: pl.Tensor[[128, 128], pl.FP32],
             c: pl.Out[pl.Tensor[[128, 128], pl.FP32]]) -> pl.Tensor[[128, 128], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            ta = pl.load(a, [0, 0], [128, 128])
            tb = pl.load(b, [0, 0], [128, 128])
            tc = pl.add(ta, tb)
            c = pl.store(tc, [0, 0], c)
        return c


def _abc(seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(128, 128, generator=g), torch.randn(128, 128, generator=g), torch.zeros(128, 128)


def test_quickstart_compile_and_call(iso):
    a, b, out = _abc()
    compiled = add.compile(a, b, out, config=CFG)
    assert compiled.platform == "a2a3sim"
    assert compiled.param_names == ["a", "b", "out"]
    compiled(a, b, out)
    assert torch.allclose(out, a + b)
    out2 = torch.zeros(128, 128)
    add(a, b, out2, config=CFG)
    assert torch.allclose(out2, a + b)
    # return style: the Out parameter left off is allocated and returned
    assert torch.allclose(compiled(a, b), a + b)


def test_tile_level_jit(iso):
    a, b, c = _abc(1)
    tile_add(a, b, c, config=CFG)
    assert torch.allclose(c, a + b)


def test_tile_level_program_with_ir_compile(iso):
    a, b, c = _abc(2)
    compiled = ir.compile(TileAdd, output_dir=iso / "out", platform="a2a3sim")
    assert Path(compiled.output_dir) == (iso / "out").resolve()
    compiled(a, b, c)
    assert torch.allclose(c, a + b)
    for rel in ("ptoas/main_incore_0.pto", "ptoas/main_incore_0.cpp", "kernels/aiv/main_incore_0.so",
                "orchestration/main.cpp", "kernel_config.py", "compiled_meta.json",
                "passes_dump/00_frontend.py", "report/tasks.json"):
        assert (iso / "out" / rel).is_file(), rel


def test_compile_options_only_through_config(iso):
    with pytest.raises(TypeError, match="got an unexpected keyword argument"):
        add.compile(skip_ptoas=True)


def test_same_specialization_returns_identical_object(iso):
    a, b, out = _abc()
    first = add.compile(a, b, out, config=CFG)
    assert add.compile(a, b, out, config=CFG) is first
    assert add.compile(*_abc(5), config=CFG) is first      # same shapes and dtypes


def test_lower_returns_program_and_writes_nothing(iso):
    before = sorted(p for p in iso.rglob("*"))
    prog = add.lower(*_abc())
    assert isinstance(prog, ir.Program)
    kernels = [f for f in prog.functions if f.is_kernel]
    assert [k.name for k in kernels] == ["add_incore_0"]
    assert kernels[0].func_type is ir.FunctionType.AIV
    assert sorted(p for p in iso.rglob("*")) == before


def test_dump_passes_parse_back(iso):
    ir.compile(TileAdd, output_dir=iso / "out", platform="a2a3sim", dump_passes=True)
    dumps = sorted((iso / "out" / "passes_dump").glob("*.py"))
    names = [p.name for p in dumps]
    assert names[0] == "00_frontend.py"
    expected = ["ConvertToSSA", "FlattenCallExpr", "OutlineIncoreScopes", "ConvertTensorToTileOps",
                "InferTileMemorySpace", "InitMemRef", "MemoryReuse", "AllocateMemoryAddr",
                "DeriveCallDirections"]
    for pname in expected:
        assert any(n.endswith(f"_after_{pname}.py") for n in names), pname
    for i, p in enumerate(dumps):
        assert p.name.startswith(f"{i:02d}_")
        text = p.read_text()
        assert pl.parse(text).as_python() == text


def test_no_dumps_when_disabled(iso):
    ir.compile(TileAdd, output_dir=iso / "out", platform="a2a3sim", dump_passes=False)
    assert not (iso / "out" / "passes_dump").exists()


def test_quickstart_fits_only_with_reuse(iso):
    """Three 64 KiB tiles: the final dump shows two UB buffers, inside 184 KiB."""
    ir.compile(TileAdd, output_dir=iso / "out", platform="a2a3sim")
    final = sorted((iso / "out" / "passes_dump").glob("*AllocateMemoryAddr.py"))[0].read_text()
    allocs = [ln for ln in final.splitlines() if "pl.tile.alloc(" in ln]
    assert len(allocs) == 2
    pto = (iso / "out" / "ptoas" / "main_incore_0.pto").read_text()
    assert pto.count("pto.alloc_tile addr = %c0_i64") == 2     # the add reuses a's buffer
    assert "pto.tadd" in pto and "pto.tload" in pto and "pto.tstore" in pto
    assert 'loc("test_quickstart.py":' in pto
