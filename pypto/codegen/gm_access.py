"""Kernel codegen of GM access: partitions of a tensor, loads (their valid region, a
clamped window's extent computed in the kernel), stores of a tile's valid region,
scatter stores and element writes. Mixed into pypto.codegen.pto._Kernel."""
from __future__ import annotations

from pypto import dtype as dt
from pypto.codegen.common import fail
from pypto.codegen.values import _Tensor, _const_int, _mlir_name, _numel
from pypto.ir.ops.memory import partial_lead, row_block
from pypto.ir.nodes import AtomicType, BinOp, Call, Const, MemorySpace as _M, TensorType, TileType, TupleExpr, Var


class GmAccess:
    def write(self, c: Call, span, v: Var | None = None):
        """One element written: pto.tsetval into a Vec tile, pto.store_scalar through a
        1x1 partition of a tensor. A statement writes the target in place; an assigned
        tile.write writes its result's buffer (the target's data first, unless the
        planner gave both one buffer). Returns the written value."""
        if c.op == "tile.write":
            dst = tgt = self.tile(c.args[0], span)
            if v is not None:
                dst = self.alloc(v, span)
                if not self.same_buffer(dst, tgt):
                    self.op("tmov", [tgt], dst, span)
            off = self.flat_offset(c.args[1], dst.tile.shape, span)
            val = self.scalar(c.args[2], dst.tile.dtype.mlir, span)
            self.emit(f"pto.tsetval ins({off}, {val.ssa} : index, {val.ty}) outs({dst.ssa} : {dst.ty})",
                      span)
            return dst
        dst = self.tensor(c.args[0], span)
        items = c.args[1].items if isinstance(c.args[1], TupleExpr) else [c.args[1]]
        pview, pty = self.partition(dst, items, [1] * len(items), span)
        val = self.scalar(c.args[2], dst.param.type.dtype.mlir, span)
        self.emit(f"pto.store_scalar {val.ssa}, {pview} : {val.ty}, {pty}", span)
        return dst

    def partition(self, tensor: _Tensor, offsets, sizes: list[int], span,
                  transposed: bool = False) -> tuple[str, str]:
        ty: TensorType = tensor.param.type
        if len(offsets) != len(ty.shape) or len(sizes) != len(ty.shape):
            fail(f"tensor {tensor.param.name!r} has rank {len(ty.shape)} but the window has "
                 f"{len(offsets)} offsets and {len(sizes)} sizes", span)
        if ty.dtype.pack > 1:              # FP4: the window in pairs (its ends are even)
            p = ty.dtype.pack
            last = offsets[-1]
            offsets = list(offsets[:-1]) + [Const(last.value // p, dt.INDEX, span) if isinstance(last, Const)
                                            else BinOp("//", last, Const(p, dt.INDEX, span), dt.INDEX, span)]
            sizes = list(sizes[:-1]) + [sizes[-1] // p]
        offs = [self.index(o, span) for o in offsets]
        # a size is an int, or an SSA index value (a valid extent known at run time)
        szs = [s if isinstance(s, str) else self.const(int(s), "index") for s in sizes]
        view = self.view_name(tensor, transposed)
        name = "%" + self.names.fresh(_mlir_name(tensor.param.name) + "_pview")
        q = "x".join("?" for _ in sizes)
        pty = ("!pto.partition_tensor_view<"
               f"{'x'.join('?' if isinstance(s, str) else str(s) for s in sizes)}x{ty.dtype.mlir}>")
        self.emit(f"{name} = pto.partition_view {view}, offsets = [{', '.join(offs)}], "
                  f"sizes = [{', '.join(szs)}] : !pto.tensor_view<{q}x{ty.dtype.mlir}> -> {pty}", span)
        return name, pty

    def load(self, v: Var, c: Call, span):
        if len(c.args) < 3 or not isinstance(c.args[1], TupleExpr) or not isinstance(c.args[2], TupleExpr):
            fail("tile.load(tensor, [offsets], [shapes]) expected", span)
        src = self.tensor(c.args[0], span)
        sizes = [_const_int(x) for x in c.args[2].items]
        if any(s is None for s in sizes):
            fail("tile.load: window shapes must be integer constants", span)
        t: TileType = v.type
        flat = len(sizes) != len(t.shape)           # an N-D window into a 2-D tile
        req = c.args[3].items if len(c.args) > 3 else [Const(n, dt.INDEX, span) for n in sizes]
        nd_valid = [_const_int(x) for x in req] if flat else (list(t.valid) if t.valid else sizes)
        valid = nd_valid if flat else (list(t.valid_shape) if t.valid is not None else sizes)
        dyn = tile_valid = None
        if t.valid is not None and None in t.valid:      # known when the kernel runs
            clamp = [self.clamp_extent(c.args[0].type.shape[i], c.args[1].items[i], req[i], span)
                     if c.kwargs.get("clamp") and nd_valid[i] is None else None
                     for i in range(len(sizes))]
            dyn = [cl or (self.index(x, span) if x_static is None else self.const(x_static, "index"))
                   for x, x_static, cl in zip(req, nd_valid, clamp)]
            tile_valid = self.merged_rows(sizes, nd_valid, dyn, span) if flat else tuple(dyn)
        if t.memory_space not in (_M.Vec, _M.Mat):
            fail(f"tile.load lands in Vec or Mat, not {t.memory_space.name if t.memory_space else None}",
                 span)
        n = 1
        for s in sizes:
            n *= s
        if n != _numel(t.shape):
            fail(f"tile.load: window {sizes} does not match tile shape {list(t.shape)}", span)
        dst = self.alloc(v, span, valid=tile_valid)
        # only the valid region is read from GM; the rest of the tile is padding
        pview, pty = self.partition(src, c.args[1].items, dyn or valid, span,
                                    bool(c.kwargs.get("transpose")))
        self.emit(f"pto.tload ins({pview} : {pty}) outs({dst.ssa} : {dst.ty})", span)

    def merged_rows(self, sizes, nd_valid, dyn, span) -> tuple:
        """The (rows, cols) valid extents of a 2-D tile holding an N-D window whose one
        partial leading dim (flat_valid) is known at run time: its extent times the whole
        dims after it."""
        i, after = partial_lead(sizes, nd_valid)
        if after == 1:
            return dyn[i], dyn[-1]
        rows = self.tmp()
        self.emit(f"{rows} = arith.muli {dyn[i]}, {self.const(after, 'index')} : index", span)
        return rows, dyn[-1]

    def unmerged_rows(self, window, src, span) -> list:
        """The N-D window of the valid part of a tile flattened from `window`: its valid
        rows are one leading dim's extent times the whole dims after it (row_block)."""
        i, after = row_block(window)
        rows, cols = src.tile.valid_shape
        if rows is None:                     # known when the kernel runs
            rows = src.valid[0]
            if after != 1:
                q = self.tmp()
                self.emit(f"{q} = arith.divsi {rows}, {self.const(after, 'index')} : index", span)
                rows = q
        else:
            rows //= after
        out = [1] * i + [rows] + window[i + 1:-1] + [src.valid[1] if cols is None else cols]
        if all(isinstance(x, int) for x in out):
            return out
        return [self.const(x, "index") if isinstance(x, int) else x for x in out]

    def clamp_extent(self, dim, off, req, span) -> str:
        """A clamped load's valid extent when the kernel runs: min(req, max(dim - off, 0))."""
        d, o, r = self.dim_value(dim), self.index(off, span), self.index(req, span)
        left, kept, ext = self.tmp(), self.tmp(), self.tmp()
        self.emit(f"{left} = arith.subi {d}, {o} : index", span)
        self.emit(f"{kept} = arith.maxsi {left}, {self.const(0, 'index')} : index", span)
        self.emit(f"{ext} = arith.minsi {kept}, {r} : index", span)
        return ext

    def store(self, c: Call, span) -> _Tensor:
        if len(c.args) not in (3, 4) or not isinstance(c.args[1], TupleExpr):
            fail("tile.store(tile, [offsets], tensor) expected", span)
        src = self.tile(c.args[0], span)
        dst = self.tensor(c.args[2], span)
        rank = len(dst.param.type.shape)
        # an atomic-add store adds into GM (split-K partial products from parallel kernels)
        atomic = (" {atomicType = #pto<atomic_type atomic_add>}"
                  if c.kwargs.get("atomic") is AtomicType.Add else "")
        if len(c.args) == 4:     # a flattened N-D tile: its window in the tensor's rank
            window = [_const_int(x) for x in c.args[3].items]
            if src.tile.valid is not None:       # of a partial tile, the valid part's
                window = self.unmerged_rows(window, src, span)
            pview, pty = self.partition(dst, c.args[1].items, window, span)
            self.emit(f"pto.tstore ins({src.ssa} : {src.ty}) outs({pview} : {pty}){atomic}", span)
            return dst
        shape = list(src.tile.valid_shape)           # the valid region is written
        if None in shape:                            # ... as it is when the kernel runs
            shape = [src.valid[i] if d is None else d for i, d in enumerate(shape)]
        while len(shape) > rank and shape[0] == 1:
            shape.pop(0)
        shape = [1] * (rank - len(shape)) + shape
        if len(shape) != rank:
            fail(f"tile.store: tile {list(src.tile.shape)} does not fit rank-{rank} tensor", span)
        pview, pty = self.partition(dst, c.args[1].items, shape, span)
        self.emit(f"pto.tstore ins({src.ssa} : {src.ty}) outs({pview} : {pty}){atomic}", span)
        return dst

    def mscatter(self, c: Call, span) -> _Tensor:
        """Each element of a tile stored at its own position of the tensor (pto.mscatter
        into a partition of the whole tensor)."""
        src, idx = self.tile(c.args[0], span), self.tile(c.args[1], span)
        dst = self.tensor(c.args[2], span)
        shape = list(dst.param.type.shape)
        zeros = [Const(0, dt.INDEX, span) for _ in shape]
        pview, pty = self.partition(dst, zeros, shape, span)
        self.emit(f"pto.mscatter ins({src.ssa}, {idx.ssa} : {src.ty}, {idx.ty}) outs({pview} : {pty})",
                  span)
        return dst

# ----------------------------------------------------------------------------- helpers
