"""RunConfig and the platform / runtime-kind tables."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

# platform -> (backend type, architecture, is a simulator)
PLATFORMS = {
    "a2a3sim": ("Ascend910B", "a2a3", True),
    "a2a3": ("Ascend910B", "a2a3", False),
    "a5sim": ("Ascend950", "a5", True),
    "a5": ("Ascend950", "a5", False),
}

# architecture -> modelled core slots (cube / vector)
CORE_SLOTS = {
    "a2a3": {"aic": 24, "aiv": 48},
    "a5": {"aic": 36, "aiv": 72},
}

TENSORMAP_AND_RINGBUFFER = "tensormap_and_ringbuffer"
HOST_BUILD_GRAPH = "host_build_graph"
RUNTIME_KINDS = (TENSORMAP_AND_RINGBUFFER, HOST_BUILD_GRAPH)
DEFAULT_RUNTIME = TENSORMAP_AND_RINGBUFFER


def enum_text(value: Any) -> Any:
    """Loosely turn an enum-ish value into its name: enum members and strings alike."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    name = getattr(value, "name", None)
    if isinstance(name, str):
        return name
    return value


def check_platform(platform: Any) -> str:
    text = enum_text(platform)
    if not isinstance(text, str) or text not in PLATFORMS:
        raise ValueError(
            f"unknown platform {platform!r}; valid platforms are {', '.join(PLATFORMS)}")
    return text


def backend_for_platform(platform: str) -> str:
    return PLATFORMS[check_platform(platform)][0]


def arch_of(platform: str) -> str:
    return PLATFORMS[check_platform(platform)][1]


def is_simulator(platform: str) -> bool:
    return PLATFORMS[check_platform(platform)][2]


def runtime_kind_name(value: Any) -> str:
    """Normalise a runtime kind (None, a string in any case, or an enum) to its config
    spelling; None means the default, TENSORMAP_AND_RINGBUFFER."""
    if value is None:
        return DEFAULT_RUNTIME
    text = enum_text(value)
    if not isinstance(text, str):
        text = getattr(value, "value", text)
    if isinstance(text, str):
        low = text.strip().lower()
        if low.startswith("runtimekind."):
            low = low[len("runtimekind."):]
        if low in RUNTIME_KINDS:
            return low
    raise ValueError(
        f"unknown runtime kind {value!r}; valid kinds are TENSORMAP_AND_RINGBUFFER "
        "('tensormap_and_ringbuffer') and HOST_BUILD_GRAPH ('host_build_graph')")


@dataclass
class RunConfig:
    """Options for compiling and running a program.

    Compile-side fields are plain data read by the compiler; run-side fields are read
    by the runtime. Enum-valued fields accept the enum member or its name.
    """

    platform: str = "a2a3sim"
    device_id: int = 0
    rtol: float = 1e-5
    atol: float = 1e-5
    strategy: Any = "Default"
    backend_type: Any = None          # always derived from platform
    dump_passes: Any = False
    save_kernels: bool = False
    save_kernels_dir: Any = None
    enable_chip_swimlane: int = 0
    enable_dump_args: int = 0
    enable_pmu: int = 0
    enable_dep_gen: bool = False
    dfx_output_dir: Any = None        # DFX files go here instead of <output_dir>/dfx_outputs
    enable_scope_stats: bool = False
    compile_profiling: bool = False
    diagnostic_phase: Any = None
    disabled_diagnostics: Any = None
    aicpu_thread_num: Any = None
    distributed_config: Any = None
    analyze_auto_scopes_for_deps: bool = False
    memory_planner: Any = None
    dump_ptoas_passes: bool = False
    runtime: Any = None
    codegen_only: bool = False        # compile (every artifact built), do not run

    def __post_init__(self) -> None:
        self.platform = check_platform(self.platform)
        # backend_type follows platform: a5* -> Ascend950, otherwise Ascend910B.
        self.backend_type = backend_for_platform(self.platform)
        if not isinstance(self.device_id, int) or self.device_id < 0:
            raise ValueError(f"device_id must be a non-negative int, got {self.device_id!r}")
        for name in ("rtol", "atol"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"{name} must be a non-negative number, got {value!r}")
        swim = self.enable_chip_swimlane
        if isinstance(swim, bool) or swim is None:
            pass
        elif not isinstance(swim, int) or not 0 <= swim <= 4:
            raise ValueError(f"enable_chip_swimlane must be 0..4 or a bool, got {swim!r}")
        if self.runtime is not None:
            runtime_kind_name(self.runtime)  # validate early, keep the caller's spelling
        if self.aicpu_thread_num is not None and (
                not isinstance(self.aicpu_thread_num, int) or self.aicpu_thread_num < 0):
            raise ValueError(
                f"aicpu_thread_num must be None or a non-negative int, got {self.aicpu_thread_num!r}")

    # -- derived views used by the runtime ---------------------------------------------
    @property
    def runtime_name(self) -> str:
        """The runtime kind in config spelling; None means tensormap_and_ringbuffer."""
        return runtime_kind_name(self.runtime)

    @property
    def arch(self) -> str:
        return arch_of(self.platform)

    @property
    def is_simulator(self) -> bool:
        return is_simulator(self.platform)

    def replace(self, **changes: Any) -> "RunConfig":
        return dataclasses.replace(self, **changes)
