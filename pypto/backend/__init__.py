"""Backends (chip generations) and platforms, with the on-chip numbers passes plan against."""
from __future__ import annotations

import enum
from dataclasses import dataclass

from pypto.ir.nodes import MemorySpace


class BackendType(enum.Enum):
    Ascend910B = "Ascend910B"
    Ascend950 = "Ascend950"


@dataclass(frozen=True)
class Chip:
    arch: str                         # pto.target_arch
    capacity: dict                    # MemorySpace -> usable bytes per core
    align: dict                       # MemorySpace -> planner alignment in bytes
    aic_cores: int
    aiv_cores: int
    acc_to_vec: bool                  # L0C -> UB data path
    vec_to_mat: bool                  # UB -> L1 data path
    gm_granularity: int               # bytes per GM access


_KIB = 1024
_ALIGN = {MemorySpace.Vec: 128, MemorySpace.Mat: 128, MemorySpace.Left: 64,
          MemorySpace.Right: 64, MemorySpace.Acc: 128, MemorySpace.Bias: 64,
          MemorySpace.LeftScale: 32, MemorySpace.RightScale: 32}
# a2/a3 has no MX scale buffers (its cube has no MX matmul)

CHIPS = {
    BackendType.Ascend910B: Chip(
        "a2a3",
        {MemorySpace.Vec: 184 * _KIB, MemorySpace.Mat: 512 * _KIB, MemorySpace.Left: 64 * _KIB,
         MemorySpace.Right: 64 * _KIB, MemorySpace.Acc: 128 * _KIB, MemorySpace.Bias: 1 * _KIB,
         MemorySpace.LeftScale: 0, MemorySpace.RightScale: 0},
        _ALIGN, 24, 48, False, False, 512),
    BackendType.Ascend950: Chip(
        "a5",
        {MemorySpace.Vec: 240 * _KIB, MemorySpace.Mat: 512 * _KIB, MemorySpace.Left: 64 * _KIB,
         MemorySpace.Right: 64 * _KIB, MemorySpace.Acc: 256 * _KIB, MemorySpace.Bias: 4 * _KIB,
         # the scales of both operands share one buffer (PTO's `scaling`): planned as one
         MemorySpace.LeftScale: 4 * _KIB, MemorySpace.RightScale: 4 * _KIB},
        _ALIGN, 36, 72, True, True, 128),
}

PLATFORMS = {"a2a3sim": BackendType.Ascend910B, "a2a3": BackendType.Ascend910B,
             "a5sim": BackendType.Ascend950, "a5": BackendType.Ascend950}
SIM_PLATFORMS = ("a2a3sim", "a5sim")


def backend_for_platform(platform: str) -> BackendType:
    try:
        return PLATFORMS[platform]
    except KeyError:
        raise ValueError(f"unknown platform {platform!r}; valid platforms: "
                         f"{', '.join(PLATFORMS)}") from None


def chip(backend: BackendType) -> Chip:
    return CHIPS[backend]


# -- the process's configured backend (the reference's set_backend_type) ------------------
# What passes run directly (PassOptions(), the PassManager) plan against when they are not
# given a backend; ir.compile always takes its own (backend_type= / platform=).
_configured: BackendType | None = None


def set_backend_type(backend_type: BackendType) -> None:
    """Configure the backend once per process; the same one again is a no-op."""
    global _configured
    if not isinstance(backend_type, BackendType):
        raise TypeError(f"set_backend_type takes a BackendType, got {backend_type!r}")
    if _configured is not None and _configured is not backend_type:
        raise ValueError(f"the backend is already {_configured.name}; it cannot change to "
                         f"{backend_type.name} in this process (tests: reset_for_testing())")
    _configured = backend_type


def get_backend_type() -> BackendType:
    if _configured is None:
        raise ValueError("no backend is configured: call pypto.backend.set_backend_type(...)")
    return _configured


def is_backend_configured() -> bool:
    return _configured is not None


def configured_backend() -> BackendType | None:
    return _configured


def reset_for_testing() -> None:
    """Forget the configured backend (tests only)."""
    global _configured
    _configured = None


def __getattr__(name: str):
    # the SoC model (pypto/backend/soc.py) on first use: `backend.Backend910B.instance()`
    if name in ("Backend", "Backend910B", "Backend950", "CoreType"):
        from pypto.backend import soc
        return getattr(soc, name)
    raise AttributeError(f"module 'pypto.backend' has no attribute {name!r}")
