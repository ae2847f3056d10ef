"""What a compile is asked for and what it gives back, as plain data: the graph's
options (normalised by ir.compile) and a build's result."""
from __future__ import annotations

from pathlib import Path


class BuildOptions:
    """Everything the graph reads, already validated and normalised by ir.compile.
    Immutable; a plain class rather than a dataclass, whose generated methods would
    cost every unchanged compile a millisecond to make."""
    DEFAULTS = {
        "platform": "a2a3sim",
        "backend_type": "Ascend910B",
        "arch": "a2a3",
        "dump": "concise",                    # none | concise | explicit
        "skip_ptoas": False,
        "verify": "basic",                    # none | basic | roundtrip
        "memory_planner": "PYPTO",
        "emit_loc": True,
        "dump_ptoas_passes": False,
        "profiling": False,
        "analyze_auto_scopes_for_deps": False,
        "l0c_double_buffer": False,
        "diag_phase": "pre_pipeline",         # none | pre_pipeline | post_pass | post_pipeline
        "disabled": ("UnusedControlFlowResult",),
        "runtime": "tensormap_and_ringbuffer",
        "passes": (),                         # (name, module, reads) of the passes to run
    }
    __slots__ = tuple(DEFAULTS)

    def __init__(self, **values):
        unknown = set(values) - set(self.DEFAULTS)
        if unknown:
            raise TypeError(f"BuildOptions has no option {', '.join(sorted(unknown))}")
        for name, default in self.DEFAULTS.items():
            object.__setattr__(self, name, values.get(name, default))

    def __setattr__(self, name, value):
        raise AttributeError(f"BuildOptions is immutable: cannot set {name!r}")

    def as_dict(self) -> dict:
        return {name: getattr(self, name) for name in self.DEFAULTS}

    def __eq__(self, other):
        return type(other) is BuildOptions and self.as_dict() == other.as_dict()

    def __hash__(self):
        return hash(tuple(self.as_dict().values()))

    def __repr__(self) -> str:
        return "BuildOptions(" + ", ".join(f"{k}={v!r}" for k, v in self.as_dict().items()) + ")"


class Build:
    """What a compile built: its output directory, one record per task, and the
    program before any pass (printed). `load_records`: a compile served whole reads
    its records only when asked (most callers never do)."""
    __slots__ = ("output_dir", "_records", "_load", "frontend")

    def __init__(self, output_dir: Path, records: list | None = None, frontend: str = "",
                 load_records=None):
        self.output_dir = output_dir
        self._records = [] if records is None and load_records is None else records
        self._load = load_records
        self.frontend = frontend

    @property
    def records(self) -> list:
        if self._records is None:
            self._records = self._load()
        return self._records

    def __repr__(self) -> str:
        return f"Build({self.output_dir!r}, {len(self.records)} records)"
