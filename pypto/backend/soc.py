"""The chip as its parts: a SoC is dies, a die clusters (core groups), a cluster cores
of a type; `Backend910B.instance().soc` is what programs read to size a launch that
fills the chip (e.g. one block per vector core for a hard all-core barrier). The counts
are the Chip table's (pypto.backend.CHIPS): one die, one cluster per cube core, each
with one cube core and its vector cores."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field

from pypto.backend import BackendType, chip


class CoreType(enum.Enum):
    VECTOR = "AIV"
    CUBE = "AIC"


@dataclass(frozen=True)
class Core:
    core_type: CoreType


@dataclass(frozen=True, eq=False)
class Cluster:
    core_counts: dict = field(default_factory=dict)     # Core -> how many


@dataclass(frozen=True, eq=False)
class Die:
    cluster_counts: dict = field(default_factory=dict)  # Cluster -> how many


@dataclass(frozen=True, eq=False)
class SoC:
    die_counts: dict = field(default_factory=dict)      # Die -> how many

    def cores(self, core_type: CoreType) -> int:
        return sum(n_core * n_cluster * n_die
                   for die, n_die in self.die_counts.items()
                   for cluster, n_cluster in die.cluster_counts.items()
                   for core, n_core in cluster.core_counts.items() if core.core_type is core_type)


def _soc(backend_type: BackendType) -> SoC:
    c = chip(backend_type)
    group = Cluster({Core(CoreType.CUBE): 1, Core(CoreType.VECTOR): c.aiv_cores // c.aic_cores})
    return SoC({Die({group: c.aic_cores}): 1})


class Backend:
    """One chip generation: its type and its SoC model (`instance()` per subclass)."""
    backend_type: BackendType
    _instances: dict = {}

    def __init__(self):
        self.soc = _soc(self.backend_type)

    @classmethod
    def instance(cls) -> "Backend":
        if cls is Backend:
            raise TypeError("Backend.instance(): ask a generation, e.g. Backend910B.instance()")
        if cls not in Backend._instances:
            Backend._instances[cls] = cls()
        return Backend._instances[cls]

    @property
    def type(self) -> BackendType:
        return self.backend_type


class Backend910B(Backend):
    backend_type = BackendType.Ascend910B


class Backend950(Backend):
    backend_type = BackendType.Ascend950
