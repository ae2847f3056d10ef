"""Errors raised by the simulator runtime.

Every failure a user can cause (a bad artifact, a wrong argument, a kernel that reports
an error) surfaces as one of these exceptions; nothing is allowed to take the
interpreter down.
"""
from __future__ import annotations


class ArtifactError(ValueError):
    """An output directory is incomplete or its files cannot be read."""


class DigestMismatchError(ArtifactError):
    """A binary's bytes do not match the digest recorded by the compiler."""

    def __init__(self, what: str, path: str, expected: str, actual: str):
        self.what, self.path, self.expected, self.actual = what, path, expected, actual
        super().__init__(
            f"{what}: {path} has xxh3_128 {actual} but kernel_config.py records {expected}; "
            "refusing to load an unverified binary (recompile the program)")


class PlatformMismatchError(ValueError):
    """A program was built for another platform or runtime kind than the worker's."""


class DeviceUnavailableError(RuntimeError):
    """A hardware platform was requested but there is no NPU to run on."""


class SimulatorError(RuntimeError):
    """Base class of failures while a program runs."""


class OrchestrationError(SimulatorError):
    """The host orchestration failed or misused the runtime API."""


class KernelExecutionError(SimulatorError):
    """A device kernel returned a non-zero status."""

    def __init__(self, kernel: str, func_id: int, task_id: int, code: int, message: str,
                 core_type: str = ""):
        self.kernel, self.func_id, self.task_id = kernel, func_id, task_id
        self.code, self.kernel_message, self.core_type = code, message, core_type
        text = message or "(no message)"
        super().__init__(
            f"kernel '{kernel}' (func_id {func_id}, task {task_id}) failed with status {code}: {text}")
