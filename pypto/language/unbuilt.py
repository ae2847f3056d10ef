"""Names the reference language has that this pypto does not build yet: using one is a
NotBuiltError at the user's line that says so and why, not "unknown operator"."""
from __future__ import annotations

NOT_BUILT = {
    "pl.matmul_mx": ("MX-scaled matmuls (a5, FP4 / HF8 operands with per-block scales)",
                     "use fp16 / bf16 / fp8 operands with pl.matmul"),
    "pl.tile.matmul_mx": ("MX-scaled matmuls (a5, FP4 / HF8 operands with per-block scales)",
                          "use fp16 / bf16 / fp8 operands with pl.matmul"),
}
