"""The enums of `ir.compile`'s parameters, where users look for them (`ir.X`)."""
from __future__ import annotations

import enum


class PassDumpLevel(enum.Enum):
    NONE = 0
    CONCISE = 1
    EXPLICIT = 2


class VerificationLevel(enum.Enum):
    NONE = "none"
    BASIC = "basic"
    ROUNDTRIP = "roundtrip"


class MemoryPlanner(enum.Enum):
    PYPTO = "PYPTO"
    DSA_RP = "DSA_RP"
    PTOAS = "PTOAS"


class RuntimeKind(enum.Enum):
    TENSORMAP_AND_RINGBUFFER = "tensormap_and_ringbuffer"
    HOST_BUILD_GRAPH = "host_build_graph"


class OptimizationStrategy(enum.Enum):
    Default = "Default"


class DiagnosticPhase(enum.Enum):
    NONE = "none"
    PRE_PIPELINE = "pre_pipeline"
    POST_PASS = "post_pass"
    POST_PIPELINE = "post_pipeline"


class DiagnosticCheck(enum.Enum):
    UnusedVariable = "UnusedVariable"
    UnusedControlFlowResult = "UnusedControlFlowResult"
    OutParamWriteDropped = "OutParamWriteDropped"
    TileInnermostDimGranularity = "TileInnermostDimGranularity"
    LoopInvariantLoad = "LoopInvariantLoad"
    UBUnderused = "UBUnderused"
    SmallKernel = "SmallKernel"


# the checks by kind (pypto.diagnostics runs them), and those off unless asked for
WARNINGS = ("UnusedVariable", "UnusedControlFlowResult", "OutParamWriteDropped")
HINTS = ("TileInnermostDimGranularity", "LoopInvariantLoad", "UBUnderused", "SmallKernel")
DEFAULT_DISABLED = frozenset({"UnusedControlFlowResult"})


def coerce(enum_cls, value, param: str):
    """Accept an enum member, its name or its value; anything else is a ValueError
    naming the parameter and the valid choices."""
    if isinstance(value, enum_cls):
        return value
    for m in enum_cls:
        if value == m.name or value == m.value or (isinstance(value, str) and value.lower() == str(m.value).lower()):
            return m
    if hasattr(value, "name") and value.name in enum_cls.__members__:
        return enum_cls[value.name]
    valid = ", ".join(m.name for m in enum_cls)
    raise ValueError(f"{param}={value!r} is not valid; choose one of {valid}")
