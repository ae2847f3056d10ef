"""The verifier's checks of where tiles live: pto.alloc_tile and pto.alloc_multi_tile
(their addresses at level3, none at level2), the slots pto.multi_tile_get selects, and
what a tile type may be on the arch (space, dtype, shape, layout, fractal).
Mixed into pypto.ptoas.verify.Verifier (self.error, self.defs, self.arch, self.level, self.f)."""
from __future__ import annotations

from ..dtype import BY_MLIR
from .analysis import const_int, slot_bytes, tile_bytes
from .arch import ALIGN, CUBE_SPACES
from .ir import MultiTileType, Op, TileType
from .ops import FP8_DTYPES, TILE_DTYPES


class TileChecks:
    def alloc_tile(self, op: Op) -> None:
        multi = op.name == "pto.alloc_multi_tile"
        if len(op.results) != 1 or not isinstance(op.results[0].type, MultiTileType if multi else TileType):
            raise self.error(op, f"{op.name[4:]} must define one "
                                 f"{'!pto.multi_tile_buf' if multi else '!pto.tile_buf'} value")
        t: TileType = op.results[0].type.tile if multi else op.results[0].type
        count = op.results[0].type.count if multi else 1
        if multi and not 2 <= count <= 16:
            raise self.error(op, f"a multi-slot buffer has 2 to 16 slots, not {count}")
        self.tile_type(op, t)
        if self.f.kernel_kind == "vector" and t.loc in CUBE_SPACES:
            raise self.error(op, f"a vector (AIV) kernel has no '{t.loc}' buffer: cube tiles belong in a cube kernel")
        if self.f.kernel_kind == "cube" and t.loc == "vec":
            raise self.error(op, "a cube (AIC) kernel has no 'vec' buffer (UB): vector work belongs in a vector kernel")
        for key, full in (("valid_row", t.rows), ("valid_col", t.cols)):
            if key in op.operands:
                v = op.operands[key][0]
                self.index_like(op, v, key)
                c = const_int(v, self.defs)
                if c is not None and not 0 <= c <= full:
                    raise self.error(op, f"{key} = {c} is outside [0, {full}] of the {t.rows}x{t.cols} tile")
        has_addr = "addr" in op.operands
        if self.level == "level3" and not has_addr:
            raise self.error(op, "--pto-level=level3 requires 'addr = ...' on every pto.alloc_tile "
                                 "(plan memory in pypto, or compile with level2 to let ptoas plan)")
        if self.level != "level3" and has_addr:
            raise self.error(op, f"--pto-level={self.level} forbids 'addr = ...' on pto.alloc_tile "
                                 "(ptoas plans memory itself; use level3 for pre-planned addresses)")
        if has_addr:
            a = op.operands["addr"][0]
            self.index_like(op, a, "addr")
            addr = const_int(a, self.defs)
            if addr is not None:
                self.placed(op, t, addr, count)

    def multi_tile_get(self, op: Op) -> None:
        region, slot = op.group("source")[0], op.group("slot")[0]
        rt = region.type
        if not isinstance(rt, MultiTileType):
            raise self.error(op, f"multi_tile_get reads a !pto.multi_tile_buf, not {rt}")
        self.index_like(op, slot, "the slot")
        k = const_int(slot, self.defs)
        if k is not None and not 0 <= k < rt.count:
            raise self.error(op, f"slot {k} of a {rt.count}-slot buffer")
        if len(op.results) != 1 or op.results[0].type != rt.tile:
            raise self.error(op, f"multi_tile_get gives a slot's tile, {rt.tile}")

    def placed(self, op: Op, t: TileType, addr: int, count: int = 1) -> None:
        """A tile (or `count` slots of one) at a known byte offset: aligned and inside its space."""
        size = tile_bytes(t, BY_MLIR[t.dtype].nbytes)
        if count > 1:
            size = slot_bytes(t) * count
        cap = self.arch.capacity[t.loc]
        if addr < 0 or addr % ALIGN:
            raise self.error(op, f"tile address {addr} in '{t.loc}' is not a multiple of {ALIGN} bytes")
        if addr + size > cap:
            raise self.error(op, f"tile [{addr}, {addr + size}) overflows '{t.loc}': capacity is {cap} "
                                 f"bytes on {self.arch.name}")
        used = self.usage[self.f.name]
        used[t.loc] = max(used.get(t.loc, 0), addr + size)

    def tile_type(self, op: Op, t: TileType) -> None:
        if t.loc not in self.arch.capacity:
            raise self.error(op, f"unknown tile space loc={t.loc} (known: {', '.join(self.arch.capacity)})")
        if t.dtype in FP8_DTYPES and self.arch.name != "a5":
            raise self.error(op, f"{t.dtype} tiles exist on a5, not {self.arch.name}")
        if t.dtype == "!pto.f4E2M1x2" and t.loc != "vec":
            raise self.error(op, f"FP4 pairs are loaded into 'vec' and converted there, not kept in '{t.loc}'")
        if t.dtype not in TILE_DTYPES:
            raise self.error(op, f"tile dtype {t.dtype} is not supported (use one of {', '.join(sorted(TILE_DTYPES))})")
        if t.rows < 1 or t.cols < 1:
            raise self.error(op, f"tile shape {t.rows}x{t.cols} must be positive")
        for name, v, full in (("v_row", t.v_row, t.rows), ("v_col", t.v_col, t.cols)):
            if v is not None and not 0 <= v <= full:
                raise self.error(op, f"{name}={v} exceeds the tile shape {t.rows}x{t.cols}")
        nb = BY_MLIR[t.dtype].nbytes
        if t.blayout not in ("row_major", "col_major"):
            raise self.error(op, f"unknown blayout '{t.blayout}'")
        if not t.boxed:
            if t.blayout == "row_major" and t.cols * nb % ALIGN:
                raise self.error(op, f"a row-major {t.dtype} tile row is {t.cols * nb} bytes: cols*{nb} must "
                                     f"be a multiple of {ALIGN} (e.g. cols={ALIGN // nb * -(-t.cols * nb // ALIGN)})")
            if t.blayout == "col_major" and t.rows * nb % ALIGN:
                raise self.error(op, f"a col-major {t.dtype} tile column is {t.rows * nb} bytes: rows*{nb} "
                                     f"must be a multiple of {ALIGN}")
        else:
            if t.fractal == 1024 or t.loc == "acc":
                box = (16, 16)
            elif t.fractal == 32:          # MX scales: 16x2 (left, zz) or 2x16 (right, nn) blocks
                box = (16, 2) if t.blayout == "row_major" else (2, 16)
            elif t.slayout == "col_major":
                box = (ALIGN // nb, 16)
            else:
                box = (16, ALIGN // nb)
            one_row = t.rows == 1 and t.loc == "left"      # gemv's row vector: part of a fractal
            if (t.rows % box[0] and not one_row) or t.cols % box[1]:
                raise self.error(op, f"a boxed ({t.slayout}) {t.dtype} tile must be a multiple of the "
                                     f"{box[0]}x{box[1]} fractal, got {t.rows}x{t.cols}")
