"""ir.compile's parameters: each does what the Compiling page says, and changing one
re-runs only the tasks that read it."""
import json
from pathlib import Path

import pytest
import torch

from pypto import ir

from test_quickstart import TileAdd
from e2e_helpers import tasks


def _ran(out):
    return {t["name"] for t in tasks(out) if t["status"] == "ran"}


def _stages_ran(out):
    return {t["stage"] for t in tasks(out) if t["status"] == "ran"}


def _run(out):
    from pypto.runtime import CompiledProgram
    a, b = torch.randn(128, 128), torch.randn(128, 128)
    c = CompiledProgram(out)(a, b)
    assert torch.allclose(c, a + b)


def test_default_output_dir_under_env_base(iso):
    c = ir.compile(TileAdd, platform="a2a3sim", dump_passes=False)
    d = Path(c.output_dir)
    assert d.parent == (iso / "builds").resolve()
    assert d.name.startswith("TileAdd_") and len(d.name) == len("TileAdd_YYYYmmdd_HHMMSS")
    c2 = ir.compile(TileAdd, platform="a2a3sim", dump_passes=False)
    assert Path(c2.output_dir) != d                       # same second: still distinct


def test_strategy_platform_validation(iso):
    with pytest.raises(ValueError, match="strategy"):
        ir.compile(TileAdd, output_dir=iso / "o", strategy="Fast")
    with pytest.raises(ValueError, match="a2a3sim"):
        ir.compile(TileAdd, output_dir=iso / "o", platform="gpu")
    assert ir.compile(TileAdd, output_dir=iso / "o1", strategy=ir.OptimizationStrategy.Default,
                      dump_passes=False).platform == "a2a3sim"


def test_dump_levels(iso):
    ir.compile(TileAdd, output_dir=iso / "none", dump_passes=ir.PassDumpLevel.NONE)
    assert not (iso / "none" / "passes_dump").exists()
    ir.compile(TileAdd, output_dir=iso / "concise", dump_passes=ir.PassDumpLevel.CONCISE)
    ir.compile(TileAdd, output_dir=iso / "explicit", dump_passes=ir.PassDumpLevel.EXPLICIT)
    concise = sorted((iso / "concise" / "passes_dump").glob("*AllocateMemoryAddr.py"))[0].read_text()
    explicit = sorted((iso / "explicit" / "passes_dump").glob("*AllocateMemoryAddr.py"))[0].read_text()
    assert "pl.TileView(" not in concise
    assert 'pl.TileView(blayout="row_major", slayout="none_box", fractal=512)' in explicit
    # only the dump differs: the kernels are the same bytes
    assert (iso / "concise" / "kernels/aiv/main_incore_0.so").read_bytes() == \
        (iso / "explicit" / "kernels/aiv/main_incore_0.so").read_bytes()


def test_emit_source_loc_affects_only_codegen_onwards(iso, monkeypatch):
    ir.compile(TileAdd, output_dir=iso / "loc", dump_passes=False)
    pto = (iso / "loc" / "ptoas" / "main_incore_0.pto").read_text()
    assert 'loc("test_quickstart.py":' in pto
    ir.compile(TileAdd, output_dir=iso / "noloc", dump_passes=False, emit_source_loc=False)
    assert "loc(" not in (iso / "noloc" / "ptoas" / "main_incore_0.pto").read_text()
    assert "pass" not in _stages_ran(iso / "noloc") and "pto" in _stages_ran(iso / "noloc")
    monkeypatch.setenv("PYPTO_EMIT_PTO_LOC", "0")
    ir.compile(TileAdd, output_dir=iso / "envloc", dump_passes=False)
    assert "loc(" not in (iso / "envloc" / "ptoas" / "main_incore_0.pto").read_text()


def test_verification_levels(iso, monkeypatch):
    for level in ("NONE", "BASIC", "ROUNDTRIP"):
        ir.compile(TileAdd, output_dir=iso / level, dump_passes=False,
                   verification_level=getattr(ir.VerificationLevel, level))
        _run(iso / level)
    # the level is an option of the pass tasks only
    assert _stages_ran(iso / "ROUNDTRIP") == {"pass"}
    monkeypatch.setenv("PYPTO_VERIFY_LEVEL", "roundtrip")
    ir.compile(TileAdd, output_dir=iso / "env", dump_passes=False)
    assert not _ran(iso / "env") - _ran(iso / "ROUNDTRIP") or "pass" not in _stages_ran(iso / "env")


def test_backend_950(iso):
    c = ir.compile(TileAdd, output_dir=iso / "a5", backend_type="Ascend950", dump_passes=False)
    assert c.platform == "a5sim" and str(getattr(c.backend_type, "value", c.backend_type)) == "Ascend950"
    assert 'pto.target_arch = "a5"' in (iso / "a5" / "ptoas" / "main_incore_0.pto").read_text()
    _run(iso / "a5")
    c = ir.compile(TileAdd, output_dir=iso / "a5b", platform="a5sim", backend_type="Ascend910B",
                   dump_passes=False)
    assert c.platform == "a5sim"       # backend_type follows platform


def test_skip_ptoas_stops_at_pto(iso):
    c = ir.compile(TileAdd, output_dir=iso / "skip", skip_ptoas=True, dump_passes=False)
    assert (iso / "skip" / "ptoas" / "main_incore_0.pto").is_file()
    assert not (iso / "skip" / "ptoas" / "main_incore_0.cpp").exists()
    assert not list((iso / "skip").rglob("*.so"))
    assert "kernel" not in {t["stage"] for t in tasks(iso / "skip")}
    with pytest.raises(RuntimeError, match="skip_ptoas"):
        c()


def test_hardware_platform_needs_ccec(iso):
    from pypto.errors import CodegenError
    with pytest.raises(CodegenError, match="ccec") as e:
        ir.compile(TileAdd, output_dir=iso / "hw", platform="a2a3", dump_passes=False)
    assert "a2a3sim" in str(e.value) and "skip_ptoas" in str(e.value)
    c = ir.compile(TileAdd, output_dir=iso / "hw2", platform="a2a3", skip_ptoas=True, dump_passes=False)
    assert (iso / "hw2" / "ptoas" / "main_incore_0.pto").is_file() and c is not None


def test_runtime_kind_written_and_enforced(iso):
    from pypto.runtime import ChipWorker, RunConfig
    ir.compile(TileAdd, output_dir=iso / "tmr", dump_passes=False)
    ir.compile(TileAdd, output_dir=iso / "hbg", runtime=ir.RuntimeKind.HOST_BUILD_GRAPH,
               dump_passes=False)
    cfg = (iso / "hbg" / "kernel_config.py").read_text()
    assert "host_build_graph" in cfg
    meta = json.loads((iso / "hbg" / "compiled_meta.json").read_text())
    assert meta["runtime"] == "host_build_graph"
    assert _stages_ran(iso / "hbg") == {"config"}       # only the config reads `runtime`
    _run(iso / "hbg")
    from pypto.runtime import CompiledProgram
    with ChipWorker(config=RunConfig(platform="a2a3sim")) as w:
        with pytest.raises(ValueError, match="host_build_graph"):
            w.run(CompiledProgram(iso / "hbg"), torch.zeros(128, 128), torch.zeros(128, 128),
                  torch.zeros(128, 128))


def test_profiling_report(iso):
    ir.compile(TileAdd, output_dir=iso / "p", profiling=True, dump_passes=False)
    data = json.loads((iso / "p" / "report" / "pipeline_profile.json").read_text())
    assert set(data["stages"]) >= {"frontend", "pass", "pto", "ptoas", "kernel"}
    assert len(data["tasks"]) == len(tasks(iso / "p"))
    ir.compile(TileAdd, output_dir=iso / "p2", profiling=True, dump_passes=False)
    txt = (iso / "p2" / "report" / "pipeline_profile.txt").read_text()
    assert "[cached]" in txt and "per stage:" in txt
    ir.compile(TileAdd, output_dir=iso / "p3", dump_passes=False)
    assert not (iso / "p3" / "report" / "pipeline_profile.txt").exists()


def test_dump_ptoas_passes(iso):
    ir.compile(TileAdd, output_dir=iso / "d", dump_ptoas_passes=True, dump_passes=False)
    files = sorted(p.name for p in (iso / "d" / "ptoas_passes" / "main_incore_0").iterdir())
    assert files == ["01_parse.pto", "02_verify.pto", "04_emit.cpp"]
    assert (iso / "d" / "ptoas_passes" / "main_incore_0" / "04_emit.cpp").read_bytes() == \
        (iso / "d" / "ptoas" / "main_incore_0.cpp").read_bytes()


def test_a_distributed_config_needs_a_host_program(iso):
    with pytest.raises(ValueError, match="HOST-level orchestrator"):
        ir.compile(TileAdd, output_dir=iso / "x", distributed_config={"ranks": 2})
    assert not (iso / "x" / "kernel_config.py").exists()


@pytest.mark.parametrize("env, says", [
    ({"PYPTO_EXECUTOR": "scheduler:8786"}, "not a Dask scheduler address"),
    ({"PYPTO_EXECUTOR": "tcp://scheduler:8786"}, "PYPTO_REMOTE_CACHE is not set"),
    ({"PYPTO_EXECUTOR": "tcp://scheduler:8786", "PYPTO_REMOTE_CACHE": "redis://localhost:1/0",
      "PYPTO_REMOTE_CACHE_MODE": "read-only"}, "PYPTO_REMOTE_CACHE_MODE is read-only"),
    ({"PYPTO_EXECUTOR": "tcp://scheduler:8786", "PYPTO_REMOTE_CACHE": "redis://localhost:1/0",
      "PYPTO_EXECUTOR_TASK_TIMEOUT": "soon"}, "not a number of seconds")])
def test_executor_that_cannot_work_says_what_to_fix(iso, env, says, monkeypatch):
    """PYPTO_EXECUTOR (tests/pipeline/test_dask_executor.py builds on a real cluster)
    malformed, or without the remote cache its workers exchange objects through: a
    typed error before anything is built."""
    from pypto_pipeline.executor import ExecutorError
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with pytest.raises(ExecutorError, match=says):
        ir.compile(TileAdd, output_dir=iso / "x")
    assert not (iso / "x" / "kernel_config.py").exists()


HINTS_SRC = """
import pypto.language as pl

@pl.program
class Hints:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[64, 64], pl.FP32], c: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
             d: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(4):
                t = pl.load(a, [i * 16, 0], [16, 64])
                unused = pl.exp(t)
                c = pl.store(pl.add(t, t), [i * 16, 0], c)
        return c

@pl.program
class Inv:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[64, 128], pl.FP32], w: pl.Tensor[[1, 128], pl.FP32],
             c: pl.Out[pl.Tensor[[64, 128], pl.FP32]]) -> pl.Tensor[[64, 128], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(4):
                t = pl.load(a, [i * 16, 0], [16, 128])
                wt = pl.load(w, [0, 0], [1, 128])
                c = pl.store(pl.col_expand_mul(t, wt), [i * 16, 0], c)
        return c
"""


@pytest.fixture
def hints_mod(iso):
    import importlib.util
    p = iso / "hints_prog.py"
    p.write_text(HINTS_SRC)
    spec = importlib.util.spec_from_file_location("hints_prog", p)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_perf_hints_and_warnings(iso, hints_mod):
    ir.compile(hints_mod.Hints, output_dir=iso / "h", dump_passes=False)
    hints = (iso / "h" / "report" / "perf_hints.log").read_text()
    for check, line in (("TileInnermostDimGranularity", 11), ("UBUnderused", 9), ("SmallKernel", 9)):
        assert any(check in ln and f"hints_prog.py:{line}:" in ln for ln in hints.splitlines()), check
    warns = (iso / "h" / "report" / "diagnostics.log").read_text()
    assert "hints_prog.py:12:" in warns and "[UnusedVariable]" in warns
    assert "hints_prog.py:7:" in warns and "[OutParamWriteDropped]" in warns
    ir.compile(hints_mod.Inv, output_dir=iso / "m", dump_passes=False)
    inv = (iso / "m" / "report" / "perf_hints.log").read_text()
    assert "[LoopInvariantLoad]" in inv and "hints_prog.py:24:" in inv
    assert "hints_prog.py:23:" not in inv            # that load moves with i


def test_diagnostics_gated_by_phase_and_disabled(iso, hints_mod):
    ir.compile(hints_mod.Hints, output_dir=iso / "none", dump_passes=False,
               diagnostic_phase=ir.DiagnosticPhase.NONE)
    assert not list((iso / "none" / "report").glob("*.log"))
    assert _stages_ran(iso / "none") <= {"frontend", "config", "pass", "layout", "pto", "ptoas",
                                         "kernel", "orchestration"}
    ir.compile(hints_mod.Hints, output_dir=iso / "dis", dump_passes=False,
               disabled_diagnostics={ir.DiagnosticCheck.UnusedVariable, "SmallKernel"})
    assert "UnusedVariable" not in (iso / "dis" / "report" / "diagnostics.log").read_text()
    assert "SmallKernel" not in (iso / "dis" / "report" / "perf_hints.log").read_text()
    # only the frontend and the layout steps (perf hints per function) read them
    assert _stages_ran(iso / "dis") <= {"frontend", "layout"}
    ir.compile(hints_mod.Hints, output_dir=iso / "pp", diagnostic_phase="POST_PASS")
    logs = sorted(p.name for p in (iso / "pp" / "passes_dump").glob("*.log"))
    assert logs and all("_after_" in n for n in logs)
    with pytest.raises(ValueError, match="unknown check"):
        ir.compile(hints_mod.Hints, output_dir=iso / "bad", disabled_diagnostics={"Nope"})


TWO_STAGE = """
import pypto.language as pl

@pl.program
class Two:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[64, 64], pl.FP32], c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        t = pl.create_tensor([64, 64], dtype=pl.FP32)
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="first"):
            t = pl.store(pl.exp(pl.load(a, [0, 0], [64, 64])), [0, 0], t)
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="second"):
            c = pl.store(pl.add(pl.load(t, [0, 0], [64, 64]), 1.0), [0, 0], c)
        return c
"""


def test_analyze_auto_scopes_for_deps_writes_edges(iso):
    import importlib.util
    p = iso / "two_prog.py"
    p.write_text(TWO_STAGE)
    spec = importlib.util.spec_from_file_location("two_prog", p)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    ir.compile(mod.Two, output_dir=iso / "off")
    ir.compile(mod.Two, output_dir=iso / "on", analyze_auto_scopes_for_deps=True)
    off = sorted((iso / "off" / "passes_dump").glob("*AutoDeriveTaskDependencies.py"))[0].read_text()
    on = sorted((iso / "on" / "passes_dump").glob("*AutoDeriveTaskDependencies.py"))[0].read_text()
    assert '"deps"' not in off and '"deps": [0]' in on
    ran = {t["name"] for t in tasks(iso / "on") if t["status"] == "ran"}
    assert not [n for n in ran if "ConvertToSSA" in n or "OutlineIncoreScopes" in n]
    a = torch.randn(64, 64)
    from pypto.runtime import CompiledProgram
    assert torch.allclose(CompiledProgram(iso / "on")(a), torch.exp(a) + 1.0, rtol=1e-5, atol=1e-6)
