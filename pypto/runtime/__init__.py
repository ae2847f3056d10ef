"""The simulator runtime: run compiled programs on CPU threads.

    from pypto.runtime import RunConfig, ChipWorker

    with ChipWorker(config=RunConfig(platform="a2a3sim")) as worker:
        out = compiled(a, b)             # dispatched to `worker`

    result = run(kernel, a, b, out, golden=lambda a, b, out: {"out": a + b})
    stats = benchmark(compiled, (a, b, out), rounds=20, warmup=3)

Importing this package is cheap: numpy and torch are imported only when tensors are
touched.
"""
import importlib

# name -> submodule: loaded on first use, so `from pypto.runtime import RunConfig`
# (or ir.compile handing back a CompiledProgram) does not import the whole runtime
_WHERE = {
    "BenchmarkResult": "bench", "benchmark": "bench",
    "CompiledProgram": "compiled", "RunConfig": "config",
    "ArtifactError": "errors", "DeviceUnavailableError": "errors",
    "DigestMismatchError": "errors", "KernelExecutionError": "errors",
    "OrchestrationError": "errors", "PlatformMismatchError": "errors",
    "SimulatorError": "errors",
    "GoldenMismatchError": "harness", "OutputCheck": "harness", "RunResult": "harness",
    "run": "harness",
    "RunRecord": "records", "TaskRecord": "records",
    "DeviceTensor": "tensors", "TensorSpec": "tensor_spec", "ScalarSpec": "tensor_spec",
    "ChipWorker": "worker", "RegistrationHandle": "worker", "current_worker": "worker",
    "DistributedWorker": "distributed_worker", "DistributedDeviceTensor": "distributed_worker",
    "Worker": "worker", "ensure_pto_isa_root": "worker",
}


def __getattr__(name):
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'pypto.runtime' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{where}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_WHERE))


__all__ = [
    "RunConfig", "ChipWorker", "Worker", "ensure_pto_isa_root", "DeviceTensor", "DistributedWorker",
    "DistributedDeviceTensor", "CompiledProgram", "RegistrationHandle",
    "current_worker", "RunRecord", "TaskRecord", "TensorSpec", "ScalarSpec",
    "run", "RunResult", "OutputCheck", "GoldenMismatchError", "benchmark", "BenchmarkResult",
    "ArtifactError", "DigestMismatchError", "PlatformMismatchError", "DeviceUnavailableError",
    "SimulatorError", "OrchestrationError", "KernelExecutionError",
]
