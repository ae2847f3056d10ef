"""The JIT compile/lower contract and the Edge Cases table of the Compiling page."""
from pathlib import Path

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.runtime import ChipWorker, CompiledProgram, RunConfig

from test_quickstart import TileAdd, add


@pl.jit
def scaled(x: pl.Tensor[[64, 64], pl.FP32], y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        y[:] = pl.mul(x, 2.0)
    return y


def test_compiled_program_surface(iso):
    a, b, out = torch.randn(128, 128), torch.randn(128, 128), torch.zeros(128, 128)
    c = add.compile(a, b, out, config=RunConfig(platform="a2a3sim"))
    assert isinstance(c.program, ir.Program)            # the specialised, pre-pass program
    assert [f.name for f in c.program.functions] == ["add"]
    assert c.param_names == ["a", "b", "out"] and c.output_indices == [2] and c.has_return
    assert c.orchestration_names == [] and c.runtime_name == "tensormap_and_ringbuffer"
    assert c.runtime_config["runtime"] == "tensormap_and_ringbuffer"
    assert str(getattr(c.backend_type, "value", c.backend_type)) == "Ascend910B"
    assert c.chip_callable is not None
    again = CompiledProgram.from_dir(c.output_dir)
    assert again.program is None and again.param_names == c.param_names
    again.load()
    again(a, b, out)
    assert torch.allclose(out, a + b)


def test_signature_mode_compiles_without_arguments(iso):
    c = scaled.compile(config=RunConfig(platform="a2a3sim"))
    x = torch.randn(64, 64)
    assert torch.allclose(c(x), 2 * x)
    assert scaled.compile(config=RunConfig(platform="a2a3sim")) is c


def test_worker_rejects_other_platform(iso):
    c = ir.compile(TileAdd, output_dir=iso / "a5", platform="a5sim", dump_passes=False)
    with ChipWorker(config=RunConfig(platform="a2a3sim")) as w:
        with pytest.raises(ValueError) as e:
            w.run(c, torch.zeros(128, 128), torch.zeros(128, 128), torch.zeros(128, 128))
    assert "a5sim" in str(e.value) and "a2a3sim" in str(e.value)


def test_no_passes_dump_from_lower_or_when_disabled(iso):
    prog = add.lower(torch.zeros(128, 128), torch.zeros(128, 128), torch.zeros(128, 128))
    assert isinstance(prog, ir.Program) and not list(iso.rglob("passes_dump"))
    c = add.compile(torch.zeros(64, 64), torch.zeros(64, 64), torch.zeros(64, 64),
                    config=RunConfig(platform="a2a3sim"))
    assert not (Path(c.output_dir) / "passes_dump").exists()      # RunConfig dumps nothing


def test_ptoas_planner_dump_has_no_offsets(iso):
    ir.compile(TileAdd, output_dir=iso / "p", memory_planner=ir.MemoryPlanner.PTOAS,
               dump_passes=ir.PassDumpLevel.EXPLICIT)
    dumps = sorted(p.name for p in (iso / "p" / "passes_dump").glob("*.py"))
    assert not any("AllocateMemoryAddr" in n or "MemoryReuse" in n for n in dumps)
    assert "addr =" not in (iso / "p" / "ptoas" / "main_incore_0.pto").read_text()
    a, b = torch.randn(128, 128), torch.randn(128, 128)
    assert torch.allclose(CompiledProgram(iso / "p")(a, b), a + b)
