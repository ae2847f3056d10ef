"""pypto.runtime.run (golden checks) and pypto.runtime.benchmark on a compiled quickstart."""
import math

import numpy as np
import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.runtime import (BenchmarkResult, ChipWorker, GoldenMismatchError, RunConfig, RunResult,
                           benchmark, run)
from pypto.runtime.harness import compare

from runtime_helpers import isolated_compiler


@pl.program
class Quickstart:
    @pl.function
    def add(self, a: pl.Tensor[[128, 128], pl.FP32], b: pl.Tensor[[128, 128], pl.FP32],
            out: pl.Out[pl.Tensor[[128, 128], pl.FP32]]) -> pl.Tensor[[128, 128], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.add(a, b)
        return out


@pl.jit
def jit_add(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, b)
    return out


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    with isolated_compiler(tmp_path_factory.mktemp("harness")) as base:
        yield base


@pytest.fixture(scope="module")
def quick(env):
    compiled = ir.compile(Quickstart, output_dir=env / "quick", platform="a2a3sim")
    assert not (env / "quick" / "dfx_outputs").exists()      # compiling writes no DFX
    return compiled


def abc(seed=0, n=128):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, n, generator=g), torch.randn(n, n, generator=g), torch.zeros(n, n)


def test_run_checks_against_the_golden(quick):
    a, b, out = abc()
    result = run(quick, a, b, out, golden=lambda a, b, out: {"out": a + b})
    assert isinstance(result, RunResult) and result.passed and bool(result)
    check = result.checks["out"]
    assert check.passed and check.mismatched == 0 and check.numel == 128 * 128
    assert check.max_abs_err == 0.0 and result.max_abs_err == {"out": 0.0}
    assert result.max_rel_err == {"out": 0.0}
    assert result.outputs["out"] is out and torch.equal(out, a + b)
    assert result.rtol == result.atol == 1e-5              # RunConfig defaults
    assert len(result.record.tasks) == 1 and result.record.tasks[0].kernel == "add_incore_0"
    assert result.record.device_wall_ns > 0
    assert "PASS" in result.summary() and "'out' matches" in result.summary()


def test_golden_forms(quick):
    a, b, out = abc(1)
    want = a + b
    assert run(quick, a, b, out, golden=lambda a, b, out: a + b).passed                  # one tensor
    assert run(quick, a, b, out, golden=lambda a, b, out: (a + b,)).passed               # tuple
    assert run(quick, a, b, out, golden=lambda a, b, out: {2: a + b}).passed             # by index
    assert run(quick, a, b, out, golden=lambda a, b, out: (a + b).numpy()).passed        # numpy

    def in_place(a, b, out):
        assert torch.all(out == want)            # a copy of `out` as it was before this run
        out.copy_(a + b)
    assert run(quick, a, b, out, golden=in_place).passed
    # the golden's copies are its own: the program's inputs are untouched by it
    a0 = a.clone()
    run(quick, a, b, out, golden=lambda a, b, out: a.add_(b))
    assert torch.equal(a, a0)


def test_return_style_gets_allocated_outputs(quick):
    a, b, _ = abc(2)
    seen = {}

    def golden(a, b, out):                        # every parameter, the Out one freshly zeroed
        seen["out"] = out.clone()
        return {"out": a + b}
    result = run(quick, a, b, golden=golden)
    assert torch.equal(seen["out"], torch.zeros(128, 128))
    assert result.passed and torch.equal(result.returned, a + b)
    assert result.outputs["out"] is result.returned
    # numpy in, numpy out
    an, bn = a.numpy(), b.numpy()
    result = run(quick, an, bn, golden=lambda a, b, out: {"out": a + b})
    assert isinstance(result.returned, np.ndarray) and result.passed


def test_mismatch_raises_naming_output_and_error(quick):
    a, b, out = abc(3)
    with pytest.raises(GoldenMismatchError) as info:
        run(quick, a, b, out, golden=lambda a, b, out: {"out": a - b})
    err = info.value
    assert isinstance(err, AssertionError)
    text = str(err)
    assert "'out'" in text and "max abs err" in text and "max rel err" in text
    assert "rtol=1e-05" in text and "worst at [" in text
    result = err.result
    assert not result.passed and result.checks["out"].mismatched > 0
    worst = result.checks["out"]
    i, j = worst.worst_index
    assert worst.actual_value == pytest.approx(float(out[i, j]))
    assert worst.expected_value == pytest.approx(float(a[i, j] - b[i, j]))
    assert worst.max_abs_err == pytest.approx(float((2 * b).abs().max()), rel=1e-6)

    # check=False: no exception, the result says what failed
    result = run(quick, a, b, out, golden=lambda a, b, out: {"out": a - b}, check=False)
    assert not result.passed and [c.name for c in result.failures] == ["out"]
    assert "FAIL" in result.summary()


def test_tolerances_from_config_and_arguments(quick):
    a, b, out = abc(4)
    near = lambda a, b, out: {"out": a + b + 1e-3}       # noqa: E731
    with pytest.raises(GoldenMismatchError, match="atol=1e-05"):
        run(quick, a, b, out, golden=near)
    assert run(quick, a, b, out, golden=near, config=RunConfig(atol=2e-3)).passed
    assert run(quick, a, b, out, golden=near, atol=2e-3).passed
    with pytest.raises(GoldenMismatchError, match="atol=0.0001"):
        run(quick, a, b, out, golden=near, config=RunConfig(atol=2e-3), atol=1e-4)
    # rtol alone covers it when the values are large enough
    big = (a.abs() + 10, b.abs() + 10)
    assert run(quick, *big, out, golden=near, rtol=1e-3, atol=0).passed


def test_golden_errors_name_the_outputs(quick):
    a, b, out = abc()
    with pytest.raises(KeyError, match="'y'.*outputs are out"):
        run(quick, a, b, out, golden=lambda a, b, out: {"y": a})
    with pytest.raises(KeyError, match="index 0"):
        run(quick, a, b, out, golden=lambda a, b, out: {0: a})
    with pytest.raises(ValueError, match="returned 2 values"):
        run(quick, a, b, out, golden=lambda a, b, out: (a, b))
    with pytest.raises(TypeError, match="golden must be a callable"):
        run(quick, a, b, out, golden=a)
    with pytest.raises(GoldenMismatchError, match=r"shape \[128, 128\] but the golden has \[3\]"):
        run(quick, a, b, out, golden=lambda a, b, out: torch.zeros(3))
    with pytest.raises(TypeError, match="@pl.jit function, a CompiledProgram"):
        run(42, a, b, out)


def test_no_golden_just_runs(quick):
    a, b, out = abc(5)
    result = run(quick, a, b, out)
    assert result.passed and not result.checked and result.checks == {}
    assert torch.equal(out, a + b) and "not checked" in result.summary()


def test_run_compiles_a_jit_function(env):
    a, b, out = abc(6)
    result = run(jit_add, a, b, out, golden=lambda a, b, out: {"out": a + b},
                 config=RunConfig(platform="a2a3sim"))
    assert result.passed
    assert result.compiled is jit_add.compile(a, b, out, config=RunConfig(platform="a2a3sim"))


def test_run_on_a_callers_worker_with_device_tensors(quick):
    a, b, _ = abc(7)
    with ChipWorker(RunConfig()) as w:
        da, db = w.alloc_tensor([128, 128], "fp32", init=a), w.alloc_tensor([128, 128], "fp32", init=b)
        dout = w.alloc_tensor([128, 128], "fp32", init=-1.0)
        seen = {}

        def golden(a, b, out):
            seen["types"] = {type(a), type(b), type(out)}
            seen["out"] = out.clone()
            return {"out": a + b}
        result = run(quick, da, db, dout, golden=golden)
        assert w.stats["launches"] == 1             # ran on this worker
    assert seen["types"] == {torch.Tensor} and torch.all(seen["out"] == -1)
    assert result.passed and torch.equal(result.outputs["out"], a + b)


def test_compare_semantics():
    t = torch.tensor
    c = compare("x", t([1.0, 2.0, float("inf")]), t([1.0, 2.0 + 1e-6, float("inf")]), 1e-5, 0)
    assert c.passed and c.max_abs_err == pytest.approx(1e-6, rel=0.1)   # fp32 spacing near 2
    c = compare("x", t([1.0, float("nan")]), t([1.0, float("nan")]), 1e-5, 1e-5)
    assert not c.passed and c.mismatched == 1 and math.isnan(c.max_abs_err)   # NaN never close
    c = compare("x", t([[1.0, 1.0], [1.0, 5.0]]), t([1.0]), 0, 0.5)          # broadcast golden
    assert not c.passed and c.worst_index == (1, 1) and c.expected_value == 1.0
    c = compare("x", t([0.0, 1.0]), t([0.0, 0.0]), 1e-5, 1e-5)
    assert c.max_rel_err == math.inf and c.worst_index == (1,)
    c = compare("x", t([1, 2], dtype=torch.int32), np.array([1, 2]), 0, 0)
    assert c.passed
    c = compare("x", t([1.0, 2.0], dtype=torch.bfloat16), t([1.0, 2.0]), 0, 0)
    assert c.passed


# -- benchmark ---------------------------------------------------------------------------------
def test_benchmark_registers_once_and_reports_per_launch(quick):
    a, b, out = abc(8)
    with ChipWorker(RunConfig()) as w:
        stats = benchmark(quick, (a, b, out), rounds=5, warmup=2)
        assert w.stats["launches"] == 7 and len(w._registrations) == 1
    assert isinstance(stats, BenchmarkResult)
    assert len(stats.samples) == 5 and len(stats.device_wall) == 5
    assert all(s > 0 for s in stats.samples) and all(d > 0 for d in stats.device_wall)
    assert stats.min <= stats.median <= stats.max and stats.min <= stats.mean <= stats.max
    assert stats.device_wall_min <= stats.device_wall_median
    # the device wall is one kernel inside each timed launch
    assert all(d < s for d, s in zip(stats.device_wall, stats.samples))
    assert stats.n_tasks == 1 and stats.n_threads >= 2 and stats.rounds == 5 and stats.warmup == 2
    assert torch.equal(out, a + b)
    d = stats.as_dict()
    assert d["median_s"] == stats.median and len(d["samples_s"]) == 5
    assert "5 rounds (+2 warmup)" in str(stats)
    # the reference's names, in microseconds
    assert stats.device_wall_us == [d * 1e6 for d in stats.device_wall] and not stats.all_zero_device
    assert 0 < stats.device_us_min <= stats.device_us_median <= stats.device_us_max


def test_benchmark_one_shot_worker_and_dfx_after_timing(quick):
    a, b, out = abc(9)
    cfg = RunConfig(enable_chip_swimlane=1)
    stats = benchmark(quick, [a, b, out], rounds=3, warmup=0, config=cfg)
    assert len(stats.samples) == 3
    # DFX files come from one extra, untimed launch
    assert set(stats.dfx_outputs) == {"chip_swimlane_records.json", "chip_swimlane_trace.json",
                                      "chip_swimlane.svg", "name_map_program.json"}
    assert all(p.is_file() for p in stats.dfx_outputs.values())


def test_benchmark_argument_checks(quick):
    a, b, out = abc()
    with pytest.raises(ValueError, match="rounds"):
        benchmark(quick, (a, b, out), rounds=0)
    with pytest.raises(ValueError, match="warmup"):
        benchmark(quick, (a, b, out), warmup=-1)
    with pytest.raises(TypeError, match="tuple or list"):
        benchmark(quick, a)


def test_run_compiles_a_program_with_the_configs_options(tmp_path):
    """run(program, ...) as the reference's examples call it: ir.compile with the
    RunConfig's platform and options, into its save_kernels_dir."""
    a, b = torch.randn(128, 128), torch.randn(128, 128)
    out = torch.zeros(128, 128)
    cfg = RunConfig(platform="a5sim", save_kernels_dir=str(tmp_path / "k"), dump_passes=True)
    res = run(Quickstart, a, b, out, golden=lambda a_, b_, o_: {"out": a_ + b_}, config=cfg)
    assert res.passed and torch.allclose(out, a + b)
    assert '"platform": "a5sim"' in (tmp_path / "k" / "compiled_meta.json").read_text()
    assert any((tmp_path / "k" / "passes_dump").iterdir())
    with pytest.raises(GoldenMismatchError):
        run(Quickstart, a, b, out, golden=lambda a_, b_, o_: {"out": a_ - b_}, config=cfg)


def test_run_of_a_program_without_tensors_only_compiles(tmp_path):
    """run(program, config=...) with no tensors is PyPTO's compile-only form: it returns
    the CompiledProgram (nothing ran), which is then called with the tensors."""
    from pypto.ir.compiled_program import CompiledProgram
    cfg = RunConfig(platform="a2a3sim", save_kernels_dir=str(tmp_path / "k"))
    compiled = run(Quickstart, config=cfg)
    assert isinstance(compiled, CompiledProgram)
    assert (tmp_path / "k" / "compiled_meta.json").exists()
    a, b = torch.randn(128, 128), torch.randn(128, 128)
    out = torch.zeros(128, 128)
    compiled(a, b, out, config=cfg)
    assert torch.allclose(out, a + b)
    # a compiled program given no tensors is still a call (its arguments are missing)
    with pytest.raises(TypeError, match="arguments"):
        run(compiled, config=cfg)
