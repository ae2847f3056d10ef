"""AutoTileMatmulL0: a matmul whose operands or result do not fit the cube's buffers (L0A
for Left, L0B for Right, L0C for Acc) runs as tiles that do.

The tile (m, n, k), which operand stays in L0 across the tile grid and whether L0C holds
two accumulators are the L0 tile chooser's (l0_tile_chooser.py: the reference's roofline
model with the chip's buffer sizes). `c = tile.matmul(A, B)` with A [M, K] and B [K, N]
in Mat (or moved whole from Mat into Left / Right) then becomes:

  - K loop: each [m, n] output tile is `pl.pipeline(0, K', k, stage=2)` over K whose
    iterations extract the [m, k] / [k, n] windows from Mat straight into Left / Right
    (pto.textract) and multiply them, the first iteration with tile.matmul (or
    matmul_bias: the bias is added once), the others with tile.matmul_acc into the carried
    Acc; a last K block the step does not divide (K' = K - K % k) is peeled after the
    loop. `tile.matmul_acc(acc, A, B)` carries `acc` instead (its init_cond belongs to the
    first iteration).
  - output grid (the result does not fit L0C): the [M, N] result is cut into [m, n]
    tiles. With k == K the held operand's panel is extracted once per outer iteration
    (rows outer when A is held, columns outer when B is) and the inner loop is
    `pl.pipeline(..., stage=2)`; when the chooser double-buffers L0C the inner loop says so
    (`attrs={"pipeline_double_buffer_c": True}`: DoubleBufferAcc gives its iterations two
    Acc buffers). Tiles the tile size does not divide (the L-shaped boundary) are peeled
    after the loops as straight-line partial tiles. Each tile goes where the result went:
      * stored to a tensor (`tile.store(c, ...)`): stored at its place;
      * cast for the next matmul (`tile.cast(c)` used only as matmul operands, or in Mat):
        assembled into a Mat tile of the cast's dtype (Acc -> Mat, the cube's write-back
        converts), which the next matmul reads (and is itself tiled if it has to be).
    A result used any other way is left whole (InitMemRef's overflow error names it).

Partial operands (a fractal box valid to fewer rows or columns, _on_fractals): the loops
walk only the blocks wholly inside the valid part -- extracted from a window of the operand
trimmed to them, so each block's type is whole -- and the blocks at the edge, at offsets
known here, are peeled with their valid parts; blocks of padding only are not computed.

A split-K loop whose accumulator does not fit L0C runs once per block of the result
(carried_acc_blocks.py). Matmuls that fit, or for which the chooser finds no tile, are
left alone.
"""
from __future__ import annotations

from typing import NamedTuple

from pypto import dtype as dt
from pypto.errors import NotBuiltError
from pypto.ir import ops
from pypto.ir.nodes import (DOUBLE_BUFFER_C, Assign, BinOp, Call, Const, For, Function, If, IterArg,
                            MemorySpace as M, Program, ScalarType, TileType, TupleExpr, Var, Yield)
from pypto.ir.visit import bodies, defs, users_by_var, walk
from pypto.passes import l0_tile_chooser as l0
from pypto.passes.base import Namer
from pypto.passes.carried_acc_blocks import blocked, carried_acc

NAME = "AutoTileMatmulL0"
READS = ("backend_type", "memory_planner", "l0c_double_buffer")

DBC = DOUBLE_BUFFER_C                 # the For attribute DoubleBufferAcc acts on
_MATMULS = ("tile.matmul", "tile.matmul_acc", "tile.matmul_bias")


def run(prog: Program, opts) -> Program:
    from pypto.backend import BackendType, chip
    cap = chip(opts.backend_type).capacity
    # two accumulators: the planners that place by lifetime always; ours when asked
    dbc = opts.memory_planner != "PYPTO" or opts.l0c_double_buffer
    out = []
    for f in prog.functions:
        if f.is_kernel:
            names = Namer({p.var.name for p in f.params} | {v.name for s in walk(f.body) for v in defs(s)})
            tiler = _Tiler(cap, names, dbc, opts.backend_type is BackendType.Ascend910B)
            f = Function(f.name, f.params, f.return_types, tiler.body(f.body),
                         f.func_type, f.level, f.role, dict(f.attrs), f.span)
        out.append(f)
    return Program(prog.name, out, prog.source)


def _idx(n, span):
    return Const(n, dt.INDEX, span)


def choose(Mm: int, N: int, K: int, nbytes: int, cap: dict, *, acc_dtype=dt.FP32, bias: bool = False,
           accumulate: bool = False, dbc: bool = False, hold: bool = True,
           wide_int_rows: bool = False) -> l0.L0TileResult | None:
    """The chooser's design point for this matmul on this chip, None when it finds none."""
    k_align = max(16, 32 // nbytes)            # a K fractal is 32 bytes of the operand
    cfg = l0.L0TileConfig(M=Mm, N=N, K=K, l0a_bytes=cap[M.Left], l0b_bytes=cap[M.Right],
                          l0c_bytes=cap[M.Acc], bytes_a=nbytes, bytes_b=nbytes, bytes_c=acc_dtype.nbytes,
                          min_k=k_align, align_k=k_align, allow_a_stationary=hold, allow_b_stationary=hold,
                          allow_double_buffer_c=dbc, allow_k_boundary=True, c_read=accumulate,
                          l0c_align_m=32 if wide_int_rows and not acc_dtype.is_float else 16)
    if bias:                                    # the Bias buffer holds one row of n
        cfg.max_n = cap[M.Bias] // acc_dtype.nbytes
    try:
        return l0.choose_l0_tile(cfg)
    except l0.L0TileError:
        return None


def k_only(Mm: int, N: int, K: int, nbytes: int, cap: dict) -> int | None:
    """The K step for a result that stays whole: the largest whole-fractal k whose Left and
    Right blocks fit half of L0A / L0B (the other half for the next step's), else all of
    them (the steps then take turns)."""
    k_align = max(16, 32 // nbytes)
    for share in (2, 1):
        for k in range(K - K % k_align, 0, -k_align):
            if Mm * k * nbytes <= cap[M.Left] // share and k * N * nbytes <= cap[M.Right] // share:
                return k
    return None


class _Plan(NamedTuple):
    A: "_Window"
    B: "_Window"
    M: int
    N: int
    K: int
    tile: tuple                 # (m, n, k)
    rows_outer: bool            # the grid's outer loop walks rows (A's panel is held)
    dbc: bool                   # the inner loop alternates two accumulators
    placement: tuple | None     # ("store" | "mat", the using statement), None: result whole
    moves: tuple                # the statements moving A and B into L0 (replaced)
    bias: Assign | None
    valid: tuple                # (M, N, K) of the product that is valid (partial operands)


class _Tiler:
    def __init__(self, cap: dict, names: Namer, dbc: bool = False, wide_int_rows: bool = False):
        self.cap, self.names, self.dbc, self.wide_int_rows = cap, names, dbc, wide_int_rows
        self.bias = None          # the bias of the matmul being tiled (a Bias or a Mat tile)
        self.plan_now = None      # the plan being rewritten, and the views made for it
        self.views: dict = {}
        self.pre: list = []

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
            new, dropped = self.rewrite(s, plan)
            drop |= dropped
            out = [x for x in out if id(x) not in dropped]
            out.extend(new)
        return out

    def plan(self, s, made, uses) -> _Plan | None:
        if not (isinstance(s, Assign) and isinstance(s.value, Call)
                and s.value.op in _MATMULS):
            return None
        accumulate = s.value.op == "tile.matmul_acc"     # (acc, lhs, rhs): only K can be split
        lhs, rhs = s.value.args[1:3] if accumulate else s.value.args[:2]
        bias = None
        if s.value.op == "tile.matmul_bias":         # the bias comes from a [1, N] Mat row
            bm_ = made.get(id(s.value.args[2]))
            if not (bm_ is not None and isinstance(bm_.value, Call) and bm_.value.op == "tile.move"
                    and len(uses.get(id(bm_.var), [])) == 1
                    and getattr(bm_.value.args[0].type, "memory_space", None) is M.Mat):
                return None
            bias = bm_
        A, mv_a = _mat_window(lhs, made.get(id(lhs)), M.Left, uses)
        B, mv_b = _mat_window(rhs, made.get(id(rhs)), M.Right, uses)
        if A is None or B is None:
            return None
        (Mm, K), (_, N) = A.shape, B.shape
        nb = A.src.type.dtype.nbytes
        if nb < 1 or not isinstance(nb, int):        # sub-byte operands: the cube path has none
            return None
        partial = A.src.type.valid is not None or B.src.type.valid is not None
        if partial and Mm * K * nb <= self.cap[M.Left] \
                and K * N * nb <= self.cap[M.Right] and Mm * N * s.var.type.dtype.nbytes <= self.cap[M.Acc]:
            return None       # partial operands that fit L0 whole: their windows need no blocking
        (mv, ka), (kb, nv) = _operand_valid(A), _operand_valid(B)
        valid = (mv, nv, min(ka, kb))
        users = uses.get(id(s.var), [])
        placement = None if accumulate else _placement(s, users, uses)
        if partial and placement is not None and placement[0] == "mat":
            raise NotBuiltError(f"matmul: a product of partial operands ({list(A.shape)} valid to "
                                f"{[mv, ka]}, {list(B.shape)} valid to {[kb, nv]}) blocked for L0 and "
                                f"cast for the next matmul is not supported by this pypto yet", s.span,
                                "store the product to a tensor and load it for the next matmul")
        choice = choose(Mm, N, K, nb, self.cap, acc_dtype=s.var.type.dtype, bias=bias is not None,
                        accumulate=accumulate, dbc=self.dbc and placement is not None,
                        hold=placement is None or placement[0] == "store" or self.dbc,
                        wide_int_rows=self.wide_int_rows)
        if choice is None:
            return None
        tile = (choice.m, choice.n, choice.k)
        if (choice.m, choice.n) != (Mm, N) and placement is None:
            # the result must stay whole: tile K only, if the whole result fits L0C
            if Mm * N * s.var.type.dtype.nbytes > self.cap[M.Acc]:
                return None
            k = k_only(Mm, N, K, nb, self.cap)
            if k is None:
                return None
            tile = (Mm, N, k)
        if tile == (Mm, N, K):
            return None
        rows_outer = (choice.stationarity is l0.Stationarity.AStationary
                      or choice.stationarity is l0.Stationarity.OutputStationary and choice.os_holds_a)
        dbc = choice.double_buffer_c and tile[2] == K and (tile[0], tile[1]) != (Mm, N)
        return _Plan(A, B, Mm, N, K, tile, rows_outer, dbc, placement if (tile[0], tile[1]) != (Mm, N) else None,
                     (mv_a, mv_b), bias, valid)

    def rewrite(self, s: Assign, plan: _Plan):
        self.plan_now, self.views, self.pre = plan, {}, []
        try:
            stmts, dropped = self._rewrite(s, plan)
            return self.pre + stmts, dropped
        finally:            # (grid() also serves carried_acc_blocks, which has no plan)
            self.plan_now = None

    def _rewrite(self, s: Assign, plan: _Plan):
        A, B, Mm, N, K = plan.A, plan.B, plan.M, plan.N, plan.K
        bm, bn, bk = plan.tile
        span = s.span
        dropped = {id(m) for m in plan.moves if m is not None}
        bias = plan.bias
        # a bias block per column block, or the whole bias moved once (kept where it is)
        self.bias = None if bias is None else (bias.var if bn == N else bias.value.args[0])
        if bias is not None and bn != N:
            dropped.add(id(bias))
        if plan.placement is None:
            init = s.value.args[0] if s.value.op == "tile.matmul_acc" else None
            # matmul_acc's init_cond (a fresh product when true) belongs to its first K step
            first_cond = s.value.args[3:4] if init is not None else []
            stmts, acc = self.k_loop(A, B, _idx(0, span), _idx(0, span), bm, bn, bk, K, s.var, span, init,
                                     first_cond)
            return self.bind(stmts, acc, s.var, span), dropped
        kind, user = plan.placement
        dropped.add(id(user))
        head = []
        if kind == "store":
            st: Call = user.value
            target, offs = st.args[2], st.args[1].items
            carried, final = target, user.var
        else:
            cast: Call = user.value
            scratch_t = TileType((Mm, N), cast.kwargs["dtype"], M.Mat)
            scratch = Var(self.names.fresh(user.var.name, "scratch"), scratch_t, span)
            head.append(Assign(scratch, Call("tile.create", [TupleExpr([_idx(Mm, span), _idx(N, span)], span)],
                                             {"dtype": cast.kwargs["dtype"], "target_memory": M.Mat},
                                             scratch_t, {}, span), span))
            user.var.type = scratch_t       # the cast's readers now read the Mat scratch
            carried, final, offs = scratch, user.var, None

        def place(mi, ni, th, tw, cur, held, out=None):
            stmts, acc = self.k_loop(A, B, mi, ni, th, tw, bk, K, s.var, span, held=held)
            nxt = out or Var(self.names.fresh(final.name, "blk"), cur.type, span)
            if kind == "store":
                at = TupleExpr([_add(offs[0], mi, span), _add(offs[1], ni, span)], span)
                stmts.append(Assign(nxt, Call("tile.store", [acc, at, cur], dict(user.value.kwargs),
                                              cur.type, {}, span), span))
            else:
                stmts.append(Assign(nxt, Call("tile.assemble", [cur, acc, TupleExpr([mi, ni], span)], {},
                                              cur.type, {}, span), span))
            return stmts, nxt

        held = self.held_panel(A, B, bm, bn, K, plan.rows_outer, span) if bk == K else None
        return head + self.grid(Mm, N, bm, bn, carried, final, place, span, plan.rows_outer, plan.dbc,
                                held), dropped

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

    def held_panel(self, A, B, bm, bn, K, rows_outer, span):
        """held(i) -> (statements, Left or Right tile): the panel of the held operand for
        outer index i ([bm, K] of A at row i, or [K, bn] of B at column i)."""
        def held(i):
            if rows_outer:
                v, st = self.extract(A, i, None, bm, K, M.Left, span)
                return [st], ("left", v)
            v, st = self.extract(B, None, i, K, bn, M.Right, span)
            return [st], ("right", v)
        return held

    def grid(self, Mm, N, bm, bn, carried, final, place, span, rows_outer=True, dbc=False, held=None):
        """The [bm, bn] tiles of the [Mm, N] result, `carried` threaded through them and
        bound to `final`: the whole tiles as a loop nest (outer over the held axis, the
        inner loop pipelined), then the partial tiles of the boundary one by one."""
        # the loops cover the blocks wholly inside the valid part (all of them, of whole
        # operands); the rest, at offsets known here, are peeled -- those with nothing valid
        # are not computed
        Mv, Nv = self.plan_now.valid[:2] if self.plan_now else (Mm, N)
        Mi, Ni = Mv - Mv % bm, Nv - Nv % bn
        o_stop, o_step, i_stop, i_step = (Mi, bm, Ni, bn) if rows_outer else (Ni, bn, Mi, bm)
        ov = Var(self.names.fresh("mi" if rows_outer else "ni", "blk"), ScalarType(dt.INDEX), span)
        iv = Var(self.names.fresh("ni" if rows_outer else "mi", "blk"), ScalarType(dt.INDEX), span)
        outer_it = Var(self.names.fresh(final.name, "iter"), carried.type, span)
        inner_it = Var(self.names.fresh(final.name, "iter"), carried.type, span)
        inner_out = Var(self.names.fresh(final.name, "row"), carried.type, span)
        peel = [(mi, ni) for mi in range(0, Mv, bm) for ni in range(0, Nv, bn) if mi >= Mi or ni >= Ni]

        def peeled(cur, out):
            for n_, (pm, pn) in enumerate(peel):
                stmts, cur = place(_idx(pm, span), _idx(pn, span), min(bm, Mm - pm), min(bn, N - pn), cur, None,
                                   final if n_ == len(peel) - 1 else None)
                out += stmts
            return out

        if not Mi or not Ni:                       # no block is wholly valid: all are peeled
            return peeled(carried, [])
        loop_out = Var(self.names.fresh(final.name, "grid"), carried.type, span) if peel else final
        outer_body, panel = [], None
        if held is not None:
            outer_body, panel = held(ov)
        mi, ni = (ov, iv) if rows_outer else (iv, ov)
        inner_body, nxt = place(mi, ni, bm, bn, inner_it, panel)
        inner_body.append(Yield([nxt], span))
        inner = For(iv, _idx(0, span), _idx(i_stop, span), _idx(i_step, span), inner_body,
                    [IterArg(inner_it, outer_it)], [inner_out], span=span,
                    stage=2 if held is not None else None, attrs={DBC: True} if dbc else {})
        outer_body += [inner, Yield([inner_out], span)]
        out = [For(ov, _idx(0, span), _idx(o_stop, span), _idx(o_step, span), outer_body,
                   [IterArg(outer_it, carried)], [loop_out], span=span)]
        return peeled(loop_out, out)

    def view(self, W, r, c, span):
        """W, or a window of it trimmed to the blocks the loops walk (whole ones) along each
        partial axis that a block offset known only in a loop (r, c) walks: the type of a
        window at a loop offset is then whole there."""
        plan = self.plan_now
        if plan is None or W.src.type.valid is None or W not in (plan.A, plan.B):
            return W
        Mv, Nv, Kv = plan.valid
        bm, bn, bk = plan.tile
        k_stop = Kv - Kv % bk
        rows, cols = ((Mv - Mv % bm, k_stop) if W is plan.A else (k_stop, Nv - Nv % bn))
        valid = _operand_valid(W)
        trim = tuple(n if off is not None and not isinstance(off, Const) and v < full else None
                     for n, off, v, full in zip((rows, cols), (r, c), valid, W.shape))
        if trim == (None, None):
            return W
        key = (id(W), trim)
        if key not in self.views:
            shape = tuple(t if t is not None else full for t, full in zip(trim, W.shape))
            src_shape = tuple(reversed(shape)) if W.trans else shape
            args = [W.src, TupleExpr([_idx(n, span) for n in src_shape], span), TupleExpr([W.row, W.col], span)]
            t = ops.infer_type("tile.slice", args, {}, span)
            v = Var(self.names.fresh(W.src.name, "whole"), t, span)
            self.pre.append(Assign(v, Call("tile.slice", args, {}, t, {}, span), span))
            self.views[key] = _Window(v, _idx(0, span), _idx(0, span), shape, W.trans)
        return self.views[key]

    def extract(self, W, r, c, h, w, space, span):
        """The [h, w] block of the operand at its offsets (r, c) (None: 0), into L0; of a
        transposed window (a Mat tile read transposed), the [w, h] block of its source at
        (c, r), read transposed."""
        args, kw, t = _window_read(self.view(W, r, c, span), r, c, h, w, space, span)
        v = Var(self.names.fresh(W.src.name, "left" if space is M.Left else "right"), t, span)
        return v, Assign(v, Call("tile.extract", args, kw, t, {}, span), span)

    def block_type(self, A, B, mi, ni, bm, bn, bk, like: Var, span) -> TileType:
        """The Acc block [bm, bn] at (mi, ni): of partial operands, the valid part of their
        product (the same at every K step)."""
        zero = _idx(0, span)
        lt = _window_read(self.view(A, mi, zero, span), mi, zero, bm, bk, M.Left, span)[2]
        rt = _window_read(self.view(B, zero, ni, span), zero, ni, bk, bn, M.Right, span)[2]
        valid = None
        if lt.valid is not None or rt.valid is not None:
            valid = ops.infer_type("tile.matmul", [Var("l", lt, span), Var("r", rt, span)], {}, span).valid
        return TileType((bm, bn), like.type.dtype, M.Acc, None, valid)

    def k_loop(self, A, B, mi, ni, bm, bn, bk, K, like: Var, span, init=None, first_cond=(), held=None):
        """(statements, Acc block [bm, bn]) of A[mi:, :] @ B[:, ni:] in K steps of bk (a
        pipelined loop over the whole steps, the rest peeled after it), added to the
        accumulator `init` when given. `held`: the operand already in L0 for all of K."""
        acc_t = self.block_type(A, B, mi, ni, bm, bn, bk, like, span)
        bias = None

        def operands(k, kw, out):
            if held is not None and held[0] == "left":
                lv = held[1]
            else:
                lv, st = self.extract(A, mi, k, bm, kw, M.Left, span)
                out.append(st)
            if held is not None and held[0] == "right":
                rv = held[1]
            else:
                rv, st = self.extract(B, k, ni, kw, bn, M.Right, span)
                out.append(st)
            return lv, rv

        def call(op, args, out, tag="blk"):
            v = Var(self.names.fresh(like.name, tag), acc_t, span)
            out.append(Assign(v, Call(op, args, {}, acc_t, {}, span), span))
            return v

        def first(lv, rv, out):
            if init is not None:               # (its init_cond decides whether to add)
                return call("tile.matmul_acc", [init, lv, rv, *first_cond], out)
            if bias is not None:               # the bias is added once, with the first K step
                return call("tile.matmul_bias", [lv, rv, bias], out)
            return call("tile.matmul", [lv, rv], out)

        stmts: list = []
        bias = self.bias_block(ni, bn, stmts, span)
        # whole steps over the valid part of K, then one step to the end of the box (its
        # valid part: a partial operand's padding is never read)
        Kv = self.plan_now.valid[2] if self.plan_now else K
        nfull = Kv // bk
        tail = K - nfull * bk
        if nfull == 0:
            bk, nfull, tail = K, 1, 0
        acc, k0 = init, 0
        if nfull < 2 or first_cond:
            # one step, or matmul_acc's conditional first step (ahead of the loop: its branches
            # would both write the carried accumulator)
            lv, rv = operands(_idx(0, span), bk, stmts)
            acc, k0 = first(lv, rv, stmts), bk
        if nfull * bk > k0:
            start = acc
            if start is None:
                box_t = TileType((bm, bn), like.type.dtype, M.Acc)
                start = Var(self.names.fresh(like.name, "l0init"), box_t, span)
                stmts.append(Assign(start, Call("tile.create", [TupleExpr([_idx(bm, span), _idx(bn, span)], span)],
                                                {"dtype": like.type.dtype, "target_memory": M.Acc}, box_t, {},
                                                span), span))
                if acc_t.valid is not None:      # the carried sum holds the product's valid part
                    box, start = start, Var(self.names.fresh(like.name, "l0init"), acc_t, span)
                    stmts.append(Assign(start, Call("tile.set_validshape",
                                                    [box] + [_idx(n, span) for n in acc_t.valid], {},
                                                    acc_t, {}, span), span))
            ko = Var(self.names.fresh("ko", "blk"), ScalarType(dt.INDEX), span)
            it = Var(self.names.fresh(like.name, "kiter"), acc_t, span)
            body: list = []
            lv, rv = operands(ko, bk, body)
            if acc is not None:                          # every step adds into the carried Acc
                nxt = call("tile.matmul_acc", [it, lv, rv], body, "kacc")
            else:                                        # the first step starts the sum
                then, other = [], []
                then.append(Yield([first(lv, rv, then)], span))
                other.append(Yield([call("tile.matmul_acc", [it, lv, rv], other, "kacc")], span))
                nxt = Var(self.names.fresh(like.name, "kphi"), acc_t, span)
                body.append(If(BinOp("==", ko, _idx(0, span), dt.BOOL, span), then, other, [nxt], span))
            body.append(Yield([nxt], span))
            acc = Var(self.names.fresh(like.name, "ksum"), acc_t, span)
            stmts.append(For(ko, _idx(k0, span), _idx(nfull * bk, span), _idx(bk, span), body,
                             [IterArg(it, start)], [acc], span=span, stage=2))
        if tail:
            lv, rv = operands(_idx(nfull * bk, span), tail, stmts)
            acc = call("tile.matmul_acc", [acc, lv, rv], stmts, "ktail")
        return stmts, acc

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


def _placement(s: Assign, users, uses):
    """Where the tiles of a result that is cut go: ("store", its store) or ("mat", the cast
    whose value only feeds matmuls, or is in Mat); None when used any other way."""
    if len(users) != 1 or not isinstance(users[0], Assign) or not isinstance(users[0].value, Call):
        return None
    u = users[0].value
    if u.op == "tile.store" and u.args[0] is s.var:
        return ("store", users[0])
    if u.op == "tile.cast":
        readers = uses.get(id(users[0].var), [])
        to_cube = readers and all(isinstance(r, Assign) and isinstance(r.value, Call) and (
            r.value.op == "tile.move" and r.value.kwargs.get("target_memory") in (M.Left, M.Right)
            or r.value.op in _MATMULS and _only_operand(r.value, users[0].var)) for r in readers)
        if users[0].var.type.memory_space is M.Mat or to_cube:
            return ("mat", users[0])
    return None


class _Window(NamedTuple):
    """A matmul operand as a window of a Mat tile: `shape` at (row, col) of `src`."""
    src: Var
    row: object
    col: object
    shape: tuple              # the operand's (of a transposed window: the source's, reversed)
    trans: bool = False       # the source is read transposed (a tile.move(transpose=True))


def _window_read(W: _Window, r, c, h, w, space, span):
    """(args, kwargs, type) of the tile.extract of the [h, w] block of operand W at its
    offsets (r, c) (None: 0); of a transposed window (a Mat tile read transposed), the
    [w, h] block of its source at (c, r), read transposed. A window of a partial tile
    holds its valid part."""
    if W.trans:
        r, c, h, w = c, r, w, h
    row = W.row if r is None else _add(W.row, r, span)
    col = W.col if c is None else _add(W.col, c, span)
    kw = {"target_memory": space, **({"transpose": True} if W.trans else {})}
    args = [W.src, row, col, TupleExpr([_idx(h, span), _idx(w, span)], span)]
    try:
        return args, kw, ops.infer_type("tile.extract", args, kw, span)
    except NotBuiltError:
        t = W.src.type
        raise NotBuiltError(f"matmul: blocking a {list(t.shape)} operand valid to {list(t.valid)} for "
                            f"L0 at offsets known only in the loop is not supported by this pypto yet",
                            span, "use extents that are whole 16 x 16 fractals (multiples of 16) where "
                                  "the operands need L0 blocking") from None


def _operand_valid(W: _Window) -> tuple:
    """The valid extents of operand W, in its own axes (its whole shape when whole)."""
    t = W.src.type
    if t.valid is None:
        return tuple(W.shape)
    offs = (W.row, W.col)
    if not all(isinstance(o, Const) for o in offs):
        return tuple(W.shape)            # (_window_read refuses what it cannot place)
    src = tuple(max(0, min(s, v - o.value)) for s, v, o in zip(reversed(W.shape) if W.trans else W.shape,
                                                               t.valid, offs))
    return tuple(reversed(src)) if W.trans else src


def _only_operand(c: Call, v) -> bool:
    """`v` is read by the matmul `c` only as its left or right matrix."""
    lo = 1 if c.op == "tile.matmul_acc" else 0
    return all((a is not v) or lo <= i < lo + 2 for i, a in enumerate(c.args))


def _mat_window(operand, mv, space, uses) -> tuple:
    """(window, the statement moving it into L0 or None): the operand is a Mat tile itself,
    or `mv` (its definition, used once) moves a Mat tile whole into Left/Right or extracts a
    window of one there (carried_acc_blocks' non-fractal windows). (None, None) otherwise."""
    if _static_mat(operand):
        return _Window(operand, _idx(0, operand.span), _idx(0, operand.span), tuple(operand.type.shape)), None
    if not (mv is not None and isinstance(mv.value, Call) and mv.value.kwargs.get("target_memory") is space
            and len(uses.get(id(mv.var), [])) == 1):
        return None, None
    c = mv.value
    src = c.args[0]
    if not _static_mat(src):
        return None, None
    if c.op == "tile.move":
        trans = bool(c.kwargs.get("transpose"))
        shape = tuple(reversed(src.type.shape)) if trans else tuple(src.type.shape)
        return _Window(src, _idx(0, mv.span), _idx(0, mv.span), shape, trans), mv
    if c.op == "tile.extract" and all(isinstance(d, Const) for d in c.args[3].items):
        return _Window(src, c.args[1], c.args[2], tuple(d.value for d in c.args[3].items)), mv
    return None, None


def _static_mat(v) -> bool:
    t = getattr(v, "type", None)
    # (a partial tile at static extents: its windows carry their valid parts)
    return (isinstance(v, Var) and isinstance(t, TileType) and t.memory_space is M.Mat
            and (t.valid is None or None not in t.valid)
            and len(t.shape) == 2 and all(isinstance(d, int) for d in t.shape))


def _add(a, b, span):
    if isinstance(a, Const) and a.value == 0:
        return b
    if isinstance(b, Const) and b.value == 0:
        return a
    return BinOp("+", a, b, dt.INDEX, span)
