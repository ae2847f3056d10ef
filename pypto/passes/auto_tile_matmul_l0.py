"""AutoTileMatmulL0: a matmul whose operands or result do not fit the cube's buffers (L0A
for Left, L0B for Right, L0C for Acc) runs as blocks that do.

`c = tile.matmul(move(A -> Left), move(B -> Right))` with A [M, K] and B [K, N] in Mat
(or tile.matmul_bias with a [1, N] bias row from Mat: its window of each column block goes
to Bias and is added with the first K step) becomes, for each [bm, bn] block of the result, a loop over K in steps of bk: the blocks
of A and B are extracted from Mat straight into Left / Right (pto.textract) and multiplied
(the first step tile.matmul, the others tile.matmul_acc). Where each result block goes
follows from how `c` is used:

  - stored to a tensor (`tile.store(c, ...)`): each block is stored at its place;
  - cast for the next matmul (`tile.cast(c)`, in Mat: the cube's write-back converts):
    each block is assembled into a Mat tile of the cast's dtype (Acc -> Mat), which the
    next matmul reads (and is itself tiled if it has to be);
  - a result that fits L0C with operands that do not (only K is split) is used as is;
    so is `tile.matmul_acc(acc, move(A -> Left), move(B -> Right))`, whose K steps all
    add into `acc` (its result is the accumulator: it is never blocked over M or N).

A split-K loop whose accumulator does not fit L0C runs once per block of the result
(carried_acc_blocks.py).

The block shape is chosen from the shapes and the chip: full K if it fits, each block at
most half of its buffer (the other half for the planner's double buffering); block edges
are whole fractals and divide the matrix. Matmuls that fit, or that cannot be blocked
that way, are left alone (InitMemRef's overflow error names the buffer).
"""
from __future__ import annotations

from typing import NamedTuple

from pypto import dtype as dt
from pypto.ir.nodes import (Assign, BinOp, Call, Const, For, Function, IterArg, MemorySpace as M, Program,
                            ScalarType, TileType, TupleExpr, Var, Yield)
from pypto.ir.visit import bodies, defs, users_by_var, walk
from pypto.passes.base import Namer
from pypto.passes.carried_acc_blocks import blocked, carried_acc

NAME = "AutoTileMatmulL0"
READS = ("backend_type",)


def run(prog: Program, opts) -> Program:
    from pypto.backend import chip
    cap = chip(opts.backend_type).capacity
    out = []
    for f in prog.functions:
        if f.is_kernel:
            names = Namer({p.var.name for p in f.params} | {v.name for s in walk(f.body) for v in defs(s)})
            f = Function(f.name, f.params, f.return_types, _Tiler(cap, names).body(f.body),
                         f.func_type, f.level, f.role, dict(f.attrs), f.span)
        out.append(f)
    return Program(prog.name, out, prog.source)


def _idx(n, span):
    return Const(n, dt.INDEX, span)


def _divisors(n: int, step: int, limit: int | None = None) -> list[int]:
    """Multiples of `step` that divide n, largest first (at most `limit`)."""
    return [d for d in range(n, 0, -1) if n % d == 0 and d % step == 0 and (limit is None or d <= limit)]


def choose_blocks(rows: int, N: int, K: int, nbytes: int, cap: dict,
                  bias_nbytes: int = 0) -> tuple[int, int, int] | None:
    """(bm, bn, bk): the largest result block that fits half of L0C (and whose bias, if
    any, fits the Bias buffer), then the largest K step whose Left and Right blocks fit half
    of L0A / L0B; None if no whole-fractal split fits."""
    k_step = max(16, 32 // nbytes)
    best = None
    for bm in _divisors(rows, 16):
        for bn in _divisors(N, 16):
            if bm * bn * 4 > cap[M.Acc] // 2 or bn * bias_nbytes > cap[M.Bias]:
                continue
            for bk in _divisors(K, k_step):
                if bm * bk * nbytes <= cap[M.Left] // 2 and bk * bn * nbytes <= cap[M.Right] // 2:
                    score = (bm * bn, bk)
                    if best is None or score > best[0]:
                        best = (score, (bm, bn, bk))
                    break
    return best[1] if best else None


class _Tiler:
    def __init__(self, cap: dict, names: Namer):
        self.cap, self.names = cap, names
        self.bias = None          # the bias of the matmul being blocked (a Bias or a Mat tile)

    def body(self, stmts: list) -> list:
        for s in stmts:
            for b in bodies(s):
                b[:] = self.body(b)
        made = {id(s.var): s for s in stmts if isinstance(s, Assign)}
        uses = users_by_var(stmts)
        out, drop = [], set()
        for s in stmts:
            if id(s) in drop:
                continue
            carried = carried_acc(s, made, uses, self.cap)
            if carried is not None:        # a split-K loop over a too-large accumulator
                init, store, (bm, bn) = carried
                drop |= {id(init), id(store)}
                out = [x for x in out if x is not init]
                out.extend(self.body(blocked(s, init, store, bm, bn, self)))
                continue
            plan = self.plan(s, made, uses)
            if plan is None:
                out.append(s)
                continue
            new, dropped = self.rewrite(s, plan, uses)
            drop |= dropped
            out = [x for x in out if id(x) not in dropped]
            out.extend(new)
        return out

    def plan(self, s, made, uses):
        """(A, B, M, N, K, blocks, placement) for a matmul that has to be blocked, else None."""
        if not (isinstance(s, Assign) and isinstance(s.value, Call)
                and s.value.op in ("tile.matmul", "tile.matmul_bias", "tile.matmul_acc")):
            return None
        accumulate = s.value.op == "tile.matmul_acc"     # (acc, lhs, rhs): only K can be split
        lm, rm = (made.get(id(a)) for a in (s.value.args[1:3] if accumulate else s.value.args[:2]))
        bias = None
        if s.value.op == "tile.matmul_bias":         # the bias comes from a [1, N] Mat row
            bm_ = made.get(id(s.value.args[2]))
            if not (bm_ is not None and isinstance(bm_.value, Call) and bm_.value.op == "tile.move"
                    and len(uses.get(id(bm_.var), [])) == 1
                    and getattr(bm_.value.args[0].type, "memory_space", None) is M.Mat):
                return None
            bias = bm_
        srcs = []
        for mv, space in ((lm, M.Left), (rm, M.Right)):
            got = _mat_window(mv, space, uses)
            if got is None:
                return None
            srcs.append(got)
        A, B = srcs
        (Mm, K), (_, N) = A.shape, B.shape
        nb = A.src.type.dtype.nbytes
        bias_nb = bias.var.type.dtype.nbytes if bias is not None else 0
        fits = (Mm * K * nb <= self.cap[M.Left], K * N * nb <= self.cap[M.Right],
                Mm * N * 4 <= self.cap[M.Acc] and N * bias_nb <= self.cap[M.Bias])
        if all(fits) or accumulate and not fits[2]:
            return None
        users = uses.get(id(s.var), [])
        placement = None
        if not fits[2]:                  # the result is blocked too: where do the blocks go?
            if len(users) != 1 or not isinstance(users[0], Assign) or not isinstance(users[0].value, Call):
                return None
            u = users[0].value
            if u.op == "tile.store" and u.args[0] is s.var:
                placement = ("store", users[0])
            elif u.op == "tile.cast" and users[0].var.type.memory_space is M.Mat:
                placement = ("mat", users[0])
            else:
                return None
        blocks = choose_blocks(Mm, N, K, nb, self.cap, bias_nb)
        if blocks is None:
            return None
        if placement is None:           # only K is split: one block covers the result
            blocks = (Mm, N, blocks[2])
        return A, B, Mm, N, K, blocks, placement, (lm, rm), bias

    def rewrite(self, s: Assign, plan, uses):
        A, B, Mm, N, K, (bm, bn, bk), placement, moves, bias = plan
        span = s.span
        dropped = {id(moves[0]), id(moves[1])}
        # a bias block per column block, or the whole bias moved once (kept where it is)
        self.bias = None if bias is None else (bias.var if bn == N else bias.value.args[0])
        if bias is not None and bn != N:
            dropped.add(id(bias))
        if placement is None:
            init = s.value.args[0] if s.value.op == "tile.matmul_acc" else None
            # matmul_acc's init_cond (a fresh product when true) belongs to its first K step
            first_cond = s.value.args[3:4] if init is not None else []
            stmts, acc = self.k_loop(A, B, _idx(0, span), _idx(0, span), bm, bn, bk, K, s.var, span, init,
                                     first_cond)
            return self.bind(stmts, acc, s.var, span), dropped
        kind, user = placement
        dropped.add(id(user))
        if kind == "store":
            st: Call = user.value
            target, offs = st.args[2], st.args[1].items
            carried, final = target, user.var
        else:
            cast: Call = user.value
            scratch = Var(self.names.fresh(user.var.name, "scratch"),
                          TileType((Mm, N), cast.kwargs["dtype"], M.Mat), span)
            init = Assign(scratch, Call("tile.create", [TupleExpr([_idx(Mm, span), _idx(N, span)], span)],
                                        {"dtype": cast.kwargs["dtype"], "target_memory": M.Mat},
                                        scratch.type, {}, span), span)
            carried, final, offs = scratch, user.var, None

        def block(mi, ni, cur):
            stmts, acc = self.k_loop(A, B, mi, ni, bm, bn, bk, K, s.var, span)
            nxt = Var(self.names.fresh(final.name, "blk"), cur.type, span)
            if kind == "store":
                at = TupleExpr([_add(offs[0], mi, span), _add(offs[1], ni, span)], span)
                stmts.append(Assign(nxt, Call("tile.store", [acc, at, cur], dict(user.value.kwargs),
                                              cur.type, {}, span), span))
            else:
                stmts.append(Assign(nxt, Call("tile.assemble", [cur, acc, TupleExpr([mi, ni], span)], {},
                                              cur.type, {}, span), span))
            return stmts, nxt

        loops = self.grid(Mm, N, bm, bn, carried, final, block, span)
        return ([init] if kind == "mat" else []) + loops, dropped

    def bind(self, stmts, acc, var, span):
        """The K loop's result bound to the matmul's own name (its users read it)."""
        last = stmts[-1]
        if isinstance(last, Assign) and last.var is acc:
            last.var = var
            return stmts
        if isinstance(last, For) and last.return_vars and last.return_vars[0] is acc:
            last.return_vars[0] = var
            return stmts
        return stmts + [Assign(var, acc, span)]

    def grid(self, Mm, N, bm, bn, carried, final, block, span):
        """for mi, for ni over the result's blocks, `carried` threaded through; bound to final."""
        mi = Var(self.names.fresh("mi", "blk"), ScalarType(dt.INDEX), span)
        ni = Var(self.names.fresh("ni", "blk"), ScalarType(dt.INDEX), span)
        outer_it = Var(self.names.fresh(final.name, "iter"), carried.type, span)
        inner_it = Var(self.names.fresh(final.name, "iter"), carried.type, span)
        inner_out = Var(self.names.fresh(final.name, "row"), carried.type, span)
        inner_body, nxt = block(mi, ni, inner_it)
        inner_body.append(Yield([nxt], span))
        inner = For(ni, _idx(0, span), _idx(N, span), _idx(bn, span), inner_body,
                    [IterArg(inner_it, outer_it)], [inner_out], span=span)
        outer = For(mi, _idx(0, span), _idx(Mm, span), _idx(bm, span), [inner, Yield([inner_out], span)],
                    [IterArg(outer_it, carried)], [final], span=span)
        return [outer]

    def k_loop(self, A, B, mi, ni, bm, bn, bk, K, like: Var, span, init=None, first_cond=()):
        """(statements, Acc block [bm, bn]) of A[mi:, :] @ B[:, ni:] in K steps of bk, added
        to the accumulator `init` when given (a matmul_acc whose operands were too large)."""
        acc_t = TileType((bm, bn), like.type.dtype, M.Acc)

        def operands(k, out):
            l_t = TileType((bm, bk), A.src.type.dtype, M.Left)
            r_t = TileType((bk, bn), B.src.type.dtype, M.Right)
            lv = Var(self.names.fresh(A.src.name, "left"), l_t, span)
            rv = Var(self.names.fresh(B.src.name, "right"), r_t, span)
            out.append(Assign(lv, Call("tile.extract", [A.src, _add(A.row, mi, span), _add(A.col, k, span),
                                                        TupleExpr([_idx(bm, span), _idx(bk, span)], span)],
                                       {"target_memory": M.Left}, l_t, {}, span), span))
            out.append(Assign(rv, Call("tile.extract", [B.src, _add(B.row, k, span), _add(B.col, ni, span),
                                                        TupleExpr([_idx(bk, span), _idx(bn, span)], span)],
                                       {"target_memory": M.Right}, r_t, {}, span), span))
            return lv, rv

        stmts: list = []
        l0, r0 = operands(_idx(0, span), stmts)
        first = Var(self.names.fresh(like.name, "blk"), acc_t, span)
        bias = self.bias_block(ni, bn, stmts, span)
        if init is not None:
            stmts.append(Assign(first, Call("tile.matmul_acc", [init, l0, r0, *first_cond], {}, acc_t, {},
                                            span), span))
        elif bias is None:
            stmts.append(Assign(first, Call("tile.matmul", [l0, r0], {}, acc_t, {}, span), span))
        else:                                   # the bias is added once, with the first K step
            stmts.append(Assign(first, Call("tile.matmul_bias", [l0, r0, bias], {}, acc_t, {}, span), span))
        if bk == K:
            return stmts, first
        ki = Var(self.names.fresh("ki", "blk"), ScalarType(dt.INDEX), span)
        it = Var(self.names.fresh(like.name, "kiter"), acc_t, span)
        body: list = []
        lv, rv = operands(ki, body)
        nxt = Var(self.names.fresh(like.name, "kacc"), acc_t, span)
        body.append(Assign(nxt, Call("tile.matmul_acc", [it, lv, rv], {}, acc_t, {}, span), span))
        body.append(Yield([nxt], span))
        done = Var(self.names.fresh(like.name, "ksum"), acc_t, span)
        stmts.append(For(ki, _idx(bk, span), _idx(K, span), _idx(bk, span), body, [IterArg(it, first)],
                         [done], span=span))
        return stmts, done


    def bias_block(self, ni, bn, out, span):
        """The Bias tile of this column block: the whole bias (moved once), or its window of
        the [1, N] Mat row moved into Bias."""
        src = self.bias
        if src is None or src.type.memory_space is M.Bias:
            return src
        win_t = TileType((1, bn), src.type.dtype, M.Mat)
        win = Var(self.names.fresh(src.name, "win"), win_t, span)
        out.append(Assign(win, Call("tile.slice", [src, TupleExpr([_idx(1, span), _idx(bn, span)], span),
                                                   TupleExpr([_idx(0, span), ni], span)], {}, win_t, {}, span), span))
        b_t = TileType((1, bn), src.type.dtype, M.Bias)
        b = Var(self.names.fresh(src.name, "bias"), b_t, span)
        out.append(Assign(b, Call("tile.move", [win], {"target_memory": M.Bias}, b_t, {}, span), span))
        return b


class _Window(NamedTuple):
    """A matmul operand as a window of a Mat tile: `shape` at (row, col) of `src`."""
    src: Var
    row: object
    col: object
    shape: tuple


def _mat_window(mv, space, uses) -> _Window | None:
    """The operand `mv` defines (used once): a Mat tile moved whole into Left/Right, or a
    window of one extracted there (carried_acc_blocks' non-fractal windows)."""
    if not (mv is not None and isinstance(mv.value, Call) and mv.value.kwargs.get("target_memory") is space
            and len(uses.get(id(mv.var), [])) == 1):
        return None
    c = mv.value
    src = c.args[0]
    if not (isinstance(src.type, TileType) and src.type.memory_space is M.Mat and src.type.valid is None
            and all(isinstance(d, int) for d in src.type.shape)):
        return None
    if c.op == "tile.move":
        return _Window(src, _idx(0, mv.span), _idx(0, mv.span), tuple(src.type.shape))
    if c.op == "tile.extract" and all(isinstance(d, Const) for d in c.args[3].items):
        return _Window(src, c.args[1], c.args[2], tuple(d.value for d in c.args[3].items))
    return None


def _add(a, b, span):
    if isinstance(a, Const) and a.value == 0:
        return b
    if isinstance(b, Const) and b.value == 0:
        return a
    return BinOp("+", a, b, dt.INDEX, span)
