"""How each DSL operator is called: used in error hints and as stub docstrings. The
call forms are declared with the operators themselves (pypto.ir.ops, by family)."""
from __future__ import annotations

from pypto.ir import ops


def signature(name: str) -> str:
    """The call form of `pl.<name>` ('' when unknown)."""
    op = ops.TILE_ONLY.get(name) or ops.TENSOR_ONLY.get(name)
    for full in ([op] if op else []) + [f"tile.{name}", f"tensor.{name}"]:
        d = ops.OPS.get(full)
        if d is not None and d.sig:
            return d.sig
    return ""
