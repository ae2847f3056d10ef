"""How each DSL operator is called: used in error hints and as stub docstrings."""
from __future__ import annotations

from pypto.ir import ops

_SIG = {
    "load": "pl.load(tensor, offsets, shapes, target_memory=pl.Mem.Vec)  (Vec or Mat only)",
    "store": "pl.store(tile, offsets, out_tensor)",
    "move": "pl.move(tile, target_memory=pl.Mem.Left)",
    "create_tile": "pl.create_tile([M, N], dtype=pl.FP32, target_memory=pl.Mem.Vec)",
    "create_tensor": "pl.create_tensor([M, N], dtype=pl.FP32)  (orchestration only)",
    "full": "pl.full([M, N], dtype=pl.FP32, value=0.0)",
    "assemble": "pl.assemble(dst, src, [row_offset, col_offset])  (or dst[i:i+m, :] = src)",
    "matmul": "pl.matmul(lhs, rhs)  (tile level: Left x Right -> Acc)",
    "matmul_acc": "pl.matmul_acc(acc, lhs, rhs)",
    "cast": "pl.cast(x, pl.FP16)",
    "reshape": "pl.reshape(x, [M, N])",
    "create": "pl.tile.create([M, N], dtype=pl.FP32, target_memory=pl.Mem.Vec)",
    "alloc": "pl.tile.alloc(pl.Mem.Vec, size_in_bytes)",
}
for _o in ops.BINARY:
    _SIG[_o] = f"pl.{_o}(a, b)  (same dtype; equal shapes, add/sub/mul/div also broadcast [M,1] or [1,N])"
for _o, _s in ops.SCALAR_FORM.items():
    _SIG[_s] = f"pl.{_s}(x, scalar)"
for _o in ops.UNARY:
    _SIG[_o] = f"pl.{_o}(x)"
for _o in ops.ROW_REDUCE:
    _SIG[_o] = f"pl.{_o}(x, tmp)  ([M,N] -> [M,1]; a tile needs a scratch tile tmp of x's shape)"
for _o in ops.COL_REDUCE:
    _SIG[_o] = f"pl.{_o}(x)  ([M,N] -> [1,N])"
for _o in ops.ROW_EXPAND:
    _SIG[_o] = f"pl.{_o}(x, v)  (x [M,N], v [M,1])"
for _o in ops.COL_EXPAND:
    _SIG[_o] = f"pl.{_o}(x, v)  (x [M,N], v [1,N])"


def signature(name: str) -> str:
    """The call form of `pl.<name>` ('' when unknown)."""
    return _SIG.get(name, "")
