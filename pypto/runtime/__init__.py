"""The simulator runtime: run compiled programs on CPU threads.

    from pypto.runtime import RunConfig, ChipWorker

    with ChipWorker(config=RunConfig(platform="a2a3sim")) as worker:
        out = compiled(a, b)             # dispatched to `worker`

    result = run(kernel, a, b, out, golden=lambda a, b, out: {"out": a + b})
    stats = benchmark(compiled, (a, b, out), rounds=20, warmup=3)

Importing this package is cheap: numpy and torch are imported only when tensors are
touched.
"""
from .bench import BenchmarkResult, benchmark
from .compiled import CompiledProgram
from .config import RunConfig
from .errors import (ArtifactError, DeviceUnavailableError, DigestMismatchError,
                     KernelExecutionError, OrchestrationError, PlatformMismatchError,
                     SimulatorError)
from .harness import GoldenMismatchError, OutputCheck, RunResult, run
from .records import RunRecord, TaskRecord
from .tensors import DeviceTensor
from .worker import ChipWorker, RegistrationHandle, current_worker

__all__ = [
    "RunConfig", "ChipWorker", "DeviceTensor", "CompiledProgram", "RegistrationHandle",
    "current_worker", "RunRecord", "TaskRecord",
    "run", "RunResult", "OutputCheck", "GoldenMismatchError", "benchmark", "BenchmarkResult",
    "ArtifactError", "DigestMismatchError", "PlatformMismatchError", "DeviceUnavailableError",
    "SimulatorError", "OrchestrationError", "KernelExecutionError",
]
