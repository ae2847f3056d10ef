"""What every pass shares: its options, and fresh-name generation."""
from __future__ import annotations

from dataclasses import dataclass, field

from pypto.backend import BackendType, Chip, chip
from pypto.ir import ops

# elementwise tile ops: each output element depends only on the same element of its
# full-shape operands, so the result may be written over such an operand in place
IN_PLACE_OPS = frozenset({f"tile.{o}" for o in ops.BINARY + ops.UNARY + ops.ROW_EXPAND + ops.COL_EXPAND}
                         | {f"tile.{ops.SCALAR_FORM[o]}" for o in ops.BINARY})


@dataclass(frozen=True)
class PassOptions:
    backend_type: BackendType = BackendType.Ascend910B
    memory_planner: str = "PYPTO"             # PYPTO | DSA_RP | PTOAS
    analyze_auto_scopes_for_deps: bool = False
    l0c_double_buffer: bool = False

    @property
    def chip(self) -> Chip:
        return chip(self.backend_type)

    def read(self, names) -> dict:
        """The subset of options a pass reads (its build key includes only these)."""
        out = {}
        for n in names:
            v = getattr(self, n)
            out[n] = v.value if hasattr(v, "value") else v
        return out


@dataclass
class Namer:
    """Fresh names `<base>__<tag>_v<k>` unique within one function."""
    taken: set = field(default_factory=set)

    def fresh(self, base: str, tag: str) -> str:
        base = base.split("__")[0] or "v"
        k = 0
        while f"{base}__{tag}_v{k}" in self.taken:
            k += 1
        name = f"{base}__{tag}_v{k}"
        self.taken.add(name)
        return name
