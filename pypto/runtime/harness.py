"""`pypto.runtime.run`: compile if needed, run on the simulator, check against a golden.

    result = run(add, a, b, out, golden=lambda a, b, out: {"out": a + b})
    result.passed, result.checks["out"].max_abs_err, result.record.device_wall_ns

The golden gets copies of every parameter, in parameter order, taken before the run
(so in-place outputs and InOut tensors hold their initial values; Out tensors left off
a return-style call are the zero tensors allocated for it) and returns the expected
outputs: a dict by output name (or parameter index), a tuple/list in output-parameter
order, a single tensor, or None after writing its own copies of the outputs in place.
Outputs are compared with torch.allclose semantics: |actual - expected| <= atol +
rtol * |expected|, NaN never close.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .config import RunConfig
from .records import RunRecord
from .tensors import DeviceTensor, is_numpy_array, is_torch_tensor


class GoldenMismatchError(AssertionError):
    """An output of `run(...)` differs from the golden beyond rtol/atol."""

    def __init__(self, message: str, result: "RunResult"):
        super().__init__(message)
        self.result = result


@dataclass
class OutputCheck:
    """How one output compares with its golden value."""
    name: str
    passed: bool
    max_abs_err: float
    max_rel_err: float
    mismatched: int            # elements outside tolerance
    numel: int
    rtol: float
    atol: float
    worst_index: tuple | None = None     # the element furthest outside tolerance (or max err)
    actual_value: Any = None
    expected_value: Any = None
    note: str = ""                        # e.g. a shape mismatch

    def describe(self) -> str:
        if self.note:
            return f"output '{self.name}': {self.note}"
        head = (f"output '{self.name}' {'matches' if self.passed else 'does not match'} the golden "
                f"(rtol={self.rtol:g}, atol={self.atol:g}): ")
        body = (f"{self.mismatched} of {self.numel} elements outside tolerance; max abs err "
                f"{self.max_abs_err:.6g}, max rel err {self.max_rel_err:.6g}")
        if not self.passed and self.worst_index is not None:
            body += (f"; worst at {list(self.worst_index)}: got {self.actual_value!r}, "
                     f"expected {self.expected_value!r}")
        return head + body


@dataclass
class RunResult:
    """What `run(...)` did: the outputs, their checks and the launch record."""
    compiled: Any
    record: RunRecord
    outputs: dict                   # output name -> the tensor the program wrote
    expected: dict                  # output name -> golden value (only with a golden)
    checks: dict                    # output name -> OutputCheck
    rtol: float
    atol: float
    returned: Any = None            # what calling the program returned
    golden_seconds: float = 0.0
    dfx_outputs: dict = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks.values())

    @property
    def checked(self) -> bool:
        return bool(self.checks)

    @property
    def max_abs_err(self) -> dict:
        return {n: c.max_abs_err for n, c in self.checks.items()}

    @property
    def max_rel_err(self) -> dict:
        return {n: c.max_rel_err for n, c in self.checks.items()}

    @property
    def failures(self) -> list:
        return [c for c in self.checks.values() if not c.passed]

    def __bool__(self) -> bool:
        return self.passed

    def summary(self) -> str:
        rec = self.record
        lines = [f"{'PASS' if self.passed else 'FAIL'} {Path(str(self.compiled.output_dir)).name}: "
                 f"{len(rec.tasks)} tasks, device wall {rec.device_wall_ns / 1e6:.3f} ms, "
                 f"host wall {(rec.end_ns - rec.start_ns) / 1e6:.3f} ms"]
        if not self.checks:
            lines.append("  (no golden: outputs not checked)")
        lines += ["  " + c.describe() for c in self.checks.values()]
        return "\n".join(lines)

    def raise_for_mismatch(self) -> "RunResult":
        if not self.passed:
            bad = self.failures
            names = ", ".join(f"'{c.name}'" for c in bad)
            message = (f"{Path(str(self.compiled.output_dir)).name}: output{'s' if len(bad) > 1 else ''} "
                       f"{names} differ{'' if len(bad) > 1 else 's'} from the golden\n"
                       + "\n".join("  " + c.describe() for c in bad))
            raise GoldenMismatchError(message, self)
        return self

    def __repr__(self) -> str:
        state = "passed" if self.passed else "FAILED"
        errs = ", ".join(f"{n}: abs {c.max_abs_err:.3g}" for n, c in self.checks.items())
        return f"<RunResult {state} ({errs or 'unchecked'}), {len(self.record.tasks)} tasks>"


# -- resolving what to run ------------------------------------------------------------------
def resolve_program(kernel_or_compiled, args: tuple, config: RunConfig | None):
    """A CompiledProgram for a CompiledProgram, an output directory, a @pl.program
    (compiled with ir.compile and the config's compile options: platform, strategy,
    dump_passes, ...; its save_kernels_dir as the output directory), or a @pl.jit
    function (compiled with kernel.compile(*args, config=config))."""
    from .compiled import CompiledProgram
    if isinstance(kernel_or_compiled, CompiledProgram):
        return kernel_or_compiled
    if isinstance(kernel_or_compiled, (str, Path)):
        return CompiledProgram(kernel_or_compiled)
    from pypto.ir.nodes import Program
    if isinstance(kernel_or_compiled, Program):
        from pypto.ir.compiling import compile_program_for
        return compile_program_for(kernel_or_compiled, config)
    compile_fn = getattr(kernel_or_compiled, "compile", None)
    if callable(compile_fn) and hasattr(kernel_or_compiled, "lower"):
        compiled = compile_fn(*args, config=config if config is not None else RunConfig())
        if not isinstance(compiled, CompiledProgram):
            raise TypeError(f"{kernel_or_compiled!r}.compile(...) returned "
                            f"{type(compiled).__name__}, not a CompiledProgram")
        return compiled
    raise TypeError("expected a @pl.jit function, a CompiledProgram or a compiled output "
                    f"directory, got {type(kernel_or_compiled).__name__}")


def default_config(compiled, config: RunConfig | None) -> RunConfig:
    if config is None:
        return RunConfig(platform=compiled.platform, runtime=compiled.runtime_name)
    if config.runtime is None:
        return config.replace(runtime=compiled.runtime_name)
    return config


def worker_for(worker, config: RunConfig):
    """The worker to run on: the one given, the current one, or the process's shared
    worker for the config's platform and runtime (runtime.shared: no pool to start per
    run; the caller passes its config with each launch)."""
    from .shared import shared_worker
    from .worker import current_worker
    worker = worker if worker is not None else current_worker()
    if worker is None:
        worker = shared_worker(config.platform, config.runtime_name, config.device_id)
    return worker


# -- run --------------------------------------------------------------------------------------
def run(kernel_or_compiled, *args, golden: Callable | None = None, config: RunConfig | None = None,
        rtol: float | None = None, atol: float | None = None, check: bool = True,
        worker=None) -> RunResult:
    """Compile (for a @pl.jit function), run once and compare with `golden`.

    rtol / atol default to the RunConfig's. Raises GoldenMismatchError (an
    AssertionError) naming the output and its error when an output differs, unless
    check=False. A @pl.program given no tensors (and no golden) is only compiled: the
    CompiledProgram is returned, as PyPTO's `run(program, config=...)` does. Runs on
    `worker`, else the current `with ChipWorker(...)`, else the
    process's shared worker (runtime.shared) with `config`.
    """
    given_config = config
    compiled = resolve_program(kernel_or_compiled, args, config)
    from pypto.ir.nodes import Program
    if (not args and golden is None and compiled.params and isinstance(kernel_or_compiled, Program)) \
            or getattr(config, "codegen_only", False):
        # a program given no tensors, or RunConfig(codegen_only=True): compiled, not run
        return compiled
    config = default_config(compiled, config)
    rtol = config.rtol if rtol is None else float(rtol)
    atol = config.atol if atol is None else float(atol)
    if rtol < 0 or atol < 0 or math.isnan(rtol) or math.isnan(atol):
        raise ValueError(f"rtol and atol must be non-negative numbers, got {rtol!r}, {atol!r}")
    if golden is not None and not callable(golden):
        raise TypeError(f"golden must be a callable taking the inputs, got {type(golden).__name__}")

    full_args, allocated = compiled._prepare_call(tuple(args))
    out_idx = output_indices(compiled)
    w = worker_for(worker, config)
    expected, golden_seconds = {}, 0.0
    if golden is not None:
        import time
        copies = [_host_copy(a, w) for a in full_args]
        t = time.perf_counter()
        value = golden(*copies)
        golden_seconds = time.perf_counter() - t
        expected = _expected(compiled, value, copies, out_idx)
    # a caller's worker uses its own config unless one was given
    _, record = w.run_with_record(compiled, *full_args, config=given_config)
    outputs = {compiled.params[i].name: _host_result(full_args[i], w) for i in out_idx}
    checks = {name: compare(name, outputs[name], exp, rtol, atol) for name, exp in expected.items()}
    if allocated is not None:
        outs = tuple(full_args[i] for i in allocated)
        returned = outs[0] if len(outs) == 1 else outs
    else:
        returned = compiled._results(full_args, None)
    result = RunResult(compiled, record, outputs, expected, checks, rtol, atol, returned,
                       golden_seconds, dict(record.dfx_outputs))
    if check:
        result.raise_for_mismatch()
    return result


def output_indices(compiled) -> list[int]:
    """Out and InOut tensor parameters, in parameter order."""
    return [i for i, p in enumerate(compiled.params)
            if p.is_tensor and p.direction in ("Out", "InOut")]


def _host_copy(value, worker):
    """A copy of one argument for the golden: torch/numpy clones, DeviceTensors as torch."""
    if is_torch_tensor(value):
        return value.detach().clone()
    if is_numpy_array(value):
        return value.copy()
    if isinstance(value, DeviceTensor):
        return _device_to_torch(value, worker)
    return value


def _host_result(value, worker):
    if isinstance(value, DeviceTensor):
        return _device_to_torch(value, value.worker if value.worker is not None else worker)
    return value


def _device_to_torch(t: DeviceTensor, worker):
    import torch
    from . import dtypes
    host = torch.empty(t.shape, dtype=dtypes.torch_dtype(t.dtype))
    (t.worker or worker).copy_from(host, t)
    return host


def _expected(compiled, value, copies: list, out_idx: list) -> dict:
    params = compiled.params
    names = [params[i].name for i in out_idx]
    only_out = [params[i].name for i in out_idx if params[i].direction == "Out"]
    what = f"{compiled._name()}'s outputs are {', '.join(names) or '(none)'}"
    if value is None:
        return {params[i].name: copies[i] for i in out_idx}
    if isinstance(value, dict):
        exp = {}
        for key, v in value.items():
            if isinstance(key, int) and not isinstance(key, bool):
                if not 0 <= key < len(params) or key not in out_idx:
                    raise KeyError(f"golden returned index {key}, which is not an output parameter; {what}")
                key = params[key].name
            if key not in names:
                raise KeyError(f"golden returned {key!r}, which is not an output; {what}")
            exp[key] = v
        return exp
    if isinstance(value, (tuple, list)):
        if len(value) == len(names):
            return dict(zip(names, value))
        if len(value) == len(only_out):
            return dict(zip(only_out, value))
        raise ValueError(f"golden returned {len(value)} values; {what}")
    if len(names) == 1:
        return {names[0]: value}
    if len(only_out) == 1:
        return {only_out[0]: value}
    raise ValueError(f"golden returned a single value; {what} (return a dict or a tuple)")


def _as_torch(value):
    import torch
    if is_torch_tensor(value):
        return value.detach()
    if is_numpy_array(value):
        return torch.from_numpy(value.copy())
    return torch.as_tensor(value)


def compare(name: str, actual, expected, rtol: float, atol: float) -> OutputCheck:
    """torch.allclose(actual, expected, rtol, atol) with the errors that explain it."""
    import torch
    a = _as_torch(actual).cpu().to(torch.float64)
    e = _as_torch(expected).cpu().to(torch.float64)
    numel = a.numel()
    if e.shape != a.shape:
        try:
            e = torch.broadcast_to(e, a.shape)
        except RuntimeError:
            return OutputCheck(name, False, math.inf, math.inf, numel, numel, rtol, atol,
                               note=f"shape {list(a.shape)} but the golden has {list(e.shape)}")
    if numel == 0:
        return OutputCheck(name, True, 0.0, 0.0, 0, 0, rtol, atol)
    close = torch.isclose(a, e, rtol=rtol, atol=atol)
    diff = torch.where(a == e, torch.zeros_like(a), (a - e).abs())      # equal infinities: 0
    rel = torch.where(diff == 0, torch.zeros_like(a), diff / e.abs())
    nan = diff.isnan()
    max_abs = math.nan if bool(nan.any()) else float(diff.max())
    max_rel = math.nan if bool(nan.any()) else float(rel.max())
    mismatched = int((~close).sum())
    if mismatched:
        excess = (diff - (atol + rtol * e.abs())).nan_to_num(nan=math.inf)
        excess = torch.where(close, torch.full_like(excess, -math.inf), excess)
        flat = int(excess.argmax())
    else:
        flat = int(diff.nan_to_num(nan=math.inf).argmax())
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), a.shape)) if a.dim() else ()
    return OutputCheck(name, mismatched == 0, max_abs, max_rel, mismatched, numel, rtol, atol,
                       index, float(a.reshape(-1)[flat]), float(e.reshape(-1)[flat]))
