"""AutoTileMatmulL0's rewrite of a split-K loop whose accumulator does not fit L0C.

    acc = tile.create([M, N], Acc)
    for kb, (it,) in range(n, init_values=(acc,)):      # loads A_k [M, k], B_k [k, N] into Mat,
        ...  c = tile.matmul(move(A_k -> Left), move(B_k -> Right))    # first step, or
        ...  c = tile.matmul_acc(it, move(A_k -> Left), move(B_k -> Right))
        yield c                                          # (through ifs as the source writes it)
    out = tile.store(r, offsets, dst)

becomes, for each [bm, bn] block of the result, the same loop on that block: the Acc tiles
are [bm, bn], each move into Left / Right takes the block's window of its Mat tile (rows
mi.. of A_k, columns ni.. of B_k), and the block is stored at its place. Each output block
then finishes all its K steps before the next starts (PyPTO #2232), and the matmuls of the
block loop are K-split by the tiler as usual when their operands are still too large.
Anything else reading the accumulator (a move out of Acc, an elementwise op) leaves the
loop as it is.
"""
from __future__ import annotations

from pypto import dtype as dt
from pypto.ir.nodes import (Assign, BinOp, Call, Const, For, If, MemorySpace as M, TileType, TupleExpr,
                            Var, While)
from pypto.ir.layout import allocated_rows_cols
from pypto.ir.visit import walk
from pypto.passes.base import Clone

_ACC_OPS = ("tile.matmul", "tile.matmul_acc")


def _i(n, span):
    return Const(n, dt.INDEX, span)


def _plus(a, b, span):
    if isinstance(b, Const) and b.value == 0:
        return a
    if isinstance(a, Const) and a.value == 0:
        return b
    return BinOp("+", a, b, dt.INDEX, span)


def _divisors16(n: int) -> list[int]:
    return [d for d in range(n, 0, -1) if n % d == 0 and d % 16 == 0]


def block_shape(Mm: int, N: int, acc_cap: int) -> tuple[int, int] | None:
    """The largest [bm, bn] Acc block (whole fractals dividing the result) within half of
    L0C, whole rows first: A's window is then all of A_k."""
    best = None
    for bm in _divisors16(Mm):
        for bn in _divisors16(N):
            if bm * bn * 4 <= acc_cap // 2:
                score = (bm * bn, bm)
                if best is None or score > best[0]:
                    best = (score, (bm, bn))
                break
    return best[1] if best else None


def carried_acc(s, made: dict, uses: dict, cap: dict):
    """(init statement, store statement, [bm, bn]) when `s` is such a loop, else None."""
    if not (isinstance(s, For) and len(s.iter_args) == 1 and len(s.return_vars) == 1):
        return None
    a = s.iter_args[0]
    t = a.var.type
    if not (isinstance(t, TileType) and t.memory_space is M.Acc and len(t.shape) == 2
            and t.nbytes() > cap[M.Acc] and t.valid is None and t.slot is None):
        return None
    init = made.get(id(a.init))
    users = uses.get(id(s.return_vars[0]), [])
    if not (init is not None and isinstance(init.value, Call) and init.value.op == "tile.create"
            and len(uses.get(id(a.init), [])) == 1 and len(users) == 1):
        return None
    store = users[0]
    if not (isinstance(store, Assign) and isinstance(store.value, Call) and store.value.op == "tile.store"
            and store.value.args[0] is s.return_vars[0] and isinstance(store.value.args[1], TupleExpr)):
        return None
    if not _only_accumulates(s, t.shape):
        return None
    Mm, N = t.shape
    blocks = block_shape(Mm, N, cap[M.Acc])
    return None if blocks is None else (init, store, blocks)


def _only_accumulates(loop: For, shape) -> bool:
    """Every [M, N] Acc value of the loop is made by a matmul (its operands moved from Mat
    into Left / Right) and only accumulated into, yielded, or carried."""
    accs = {id(loop.iter_args[0].var)}
    for x in walk(loop.body):
        if isinstance(x, (For, If, While)):
            for r in x.return_vars:
                if isinstance(r.type, TileType) and r.type.memory_space is M.Acc:
                    accs.add(id(r))
            if isinstance(x, (For, While)):
                accs |= {id(a.var) for a in x.iter_args if isinstance(a.var.type, TileType)
                         and a.var.type.memory_space is M.Acc}
        if isinstance(x, Assign) and isinstance(x.var.type, TileType) and x.var.type.memory_space is M.Acc:
            if not (isinstance(x.value, Call) and x.value.op in _ACC_OPS and x.var.type.shape == shape):
                return False
            accs.add(id(x.var))
    for x in walk(loop.body):
        if isinstance(x, Assign) and isinstance(x.value, Call):
            c = x.value
            for k, arg in enumerate(c.args):
                if isinstance(arg, Var) and id(arg) in accs and not (c.op == "tile.matmul_acc" and k == 0):
                    return False
            if c.op in _ACC_OPS:
                for arg, space in zip(c.args[-2:], (M.Left, M.Right)):
                    if not isinstance(arg, Var) or arg.type.memory_space is not space:
                        return False
    return True


class _Block(Clone):
    """The loop body for one [bm, bn] block: Acc tiles of the whole result retyped, moves
    into Left / Right take their block's window of the Mat tile."""

    def __init__(self, shape, bm, bn, mi, ni, names):
        self.shape, self.bm, self.bn, self.mi, self.ni, self.names = shape, bm, bn, mi, ni, names
        super().__init__({}, self.retyped)

    def retyped(self, v: Var) -> Var:
        t = v.type
        if isinstance(t, TileType) and t.memory_space is M.Acc and tuple(t.shape) == tuple(self.shape):
            t = TileType((self.bm, self.bn), t.dtype, M.Acc, None, None, None)
        return Var(self.names.fresh(v.name, "nblk"), t, v.span)

    def stmt(self, s):
        if isinstance(s, Assign) and isinstance(s.value, Call):
            c = s.value
            space = c.kwargs.get("target_memory")
            if c.op == "tile.move" and space in (M.Left, M.Right):
                return self.window(s, c, space)
            new = super().stmt(s)
            if isinstance(new.var.type, TileType) and new.var.type.memory_space is M.Acc:
                new.value.type = new.var.type
            return new
        return super().stmt(s)

    def body(self, stmts):
        out = []
        for s in stmts:
            got = self.stmt(s)
            out.extend(got if isinstance(got, list) else [got])
        return out

    def window(self, s: Assign, c: Call, space):
        src = self.expr(c.args[0])
        rows, cols = src.type.shape
        span = s.span
        if space is M.Left:        # rows mi.. of A_k
            shape, offs = (self.bm, cols), (self.mi, _i(0, span))
        else:                      # columns ni.. of B_k
            shape, offs = (rows, self.bn), (_i(0, span), self.ni)
        win_t = TileType(shape, src.type.dtype, M.Mat)
        out_t = TileType(shape, s.var.type.dtype, space)
        moved = self.define_as(s.var, out_t)
        sizes = TupleExpr([_i(d, span) for d in shape], span)
        if allocated_rows_cols(win_t) != tuple(shape):
            # a window that is not whole Mat fractals (int8 [128, 48]) cannot be a view of
            # its Mat tile: the cube takes it straight into L0 (pto.textract)
            return [Assign(moved, Call("tile.extract", [src, *offs, sizes], {"target_memory": space},
                                       out_t, {}, span), span)]
        win = Var(self.names.fresh(src.name, "win"), win_t, span)
        return [Assign(win, Call("tile.slice", [src, sizes, TupleExpr(list(offs), span)], {}, win_t,
                                 {}, span), span),
                Assign(moved, Call("tile.move", [win], dict(c.kwargs), out_t, {}, span), span)]

    def define_as(self, old: Var, t) -> Var:
        new = Var(self.names.fresh(old.name, "nblk"), t, old.span)
        self.map[id(old)] = new
        return new


def blocked(loop: For, init: Assign, store: Assign, bm: int, bn: int, tiler) -> list:
    """The grid of block loops that replaces `init`, `loop` and `store`."""
    span = loop.span
    shape = loop.iter_args[0].var.type.shape
    st: Call = store.value
    offs, target = st.args[1].items, st.args[2]

    def block(mi, ni, th, tw, cur, held=None, out=None):   # (bm, bn divide the result)
        clone = _Block(shape, bm, bn, mi, ni, tiler.names)
        acc_t = TileType((bm, bn), init.var.type.dtype, M.Acc)
        first = Var(tiler.names.fresh(init.var.name, "nblk"), acc_t, span)
        create = Assign(first, Call("tile.create", [TupleExpr([_i(bm, span), _i(bn, span)], span)],
                                    dict(init.value.kwargs), acc_t, {}, span), init.span)
        clone.map[id(loop.iter_args[0].init)] = first
        new_loop = clone.stmt(loop)
        done = new_loop.return_vars[0]
        nxt = out or Var(tiler.names.fresh(store.var.name, "blk"), cur.type, span)
        at = TupleExpr([_plus(offs[0], mi, span), _plus(offs[1], ni, span)], span)
        put = Assign(nxt, Call("tile.store", [done, at, cur], dict(st.kwargs), cur.type, {}, span), store.span)
        return [create, new_loop, put], nxt

    Mm, N = shape
    return tiler.grid(Mm, N, bm, bn, target, store.var, block, span)
