"""Per-architecture facts ptoas checks against: on-chip capacities and data paths.

The same numbers are compiled into pto_sim_base.hpp (kCapacity); keep them in step.
"""
from __future__ import annotations

from dataclasses import dataclass

ALIGN = 32  # every tile address is a 32-byte aligned offset inside its space


@dataclass(frozen=True)
class Arch:
    name: str  # "a2a3" or "a5"
    capacity: dict  # space -> usable bytes per core
    moves: frozenset  # allowed (src space, dst space) pairs of pto.tmov


_COMMON_MOVES = {("mat", "left"), ("mat", "right"), ("mat", "bias"), ("mat", "scaling"),
                 ("acc", "mat"), ("vec", "vec"), ("mat", "mat")}

A2A3 = Arch(
    "a2a3",
    # UB is 192 KiB but only 184 KiB is safe to plan (the top 8 KiB is corrupted, pto-isa #170)
    {"vec": 188416, "mat": 524288, "left": 65536, "right": 65536, "acc": 131072,
     "bias": 1024, "scaling": 2048},
    frozenset(_COMMON_MOVES),
)
A5 = Arch(
    "a5",
    {"vec": 245760, "mat": 524288, "left": 65536, "right": 65536, "acc": 262144,
     "bias": 4096, "scaling": 4096},
    frozenset(_COMMON_MOVES | {("acc", "vec"), ("vec", "mat")}),  # fused cube<->vector paths
)

ARCHES = {"a2a3": A2A3, "a3": A2A3, "a2": A2A3, "a5": A5}
SPACES = ("vec", "mat", "left", "right", "acc", "bias", "scaling")
CUBE_SPACES = {"mat", "left", "right", "acc", "bias", "scaling"}
# pto_sim's Space enum spelling
CXX_SPACE = {"vec": "pto::VEC", "mat": "pto::MAT", "left": "pto::LEFT", "right": "pto::RIGHT",
             "acc": "pto::ACC", "bias": "pto::BIAS", "scaling": "pto::SCALING"}


def get_arch(name: str) -> Arch:
    try:
        return ARCHES[name]
    except KeyError:
        raise ValueError(f"unknown pto arch '{name}': use a2a3 (or a3) or a5") from None
