"""FlattenTileNdTo2D's fallback for a batch matmul too large for L1: one batch at a time.

    a_t = tile.load(a, [o, 0, 0], [B, M, K], Mat)           # whole operands in Mat
    b_t = tile.load(b, [p, 0, 0], [B, N, K], Mat); bt = tile.transpose_view(b_t)
    c_t = tile.batch_matmul(a_t, bt)                         # [B, M, N] in Acc
    out = tile.store(c_t, [q, 0, 0], c)

needs B times one batch's operands in Mat and its result in L0C. When the whole operands
do not fit Mat, the same statements are written per batch and, where one batch is still
too much, per block of the result's columns (a [1, M, K] load of A's batch, B's columns
of the block, its transpose_view (a copy in the simulator), a one-batch matmul, its store
at [q + i, 0, n0]), so only one step's operands are live at a time; the flattening then
lowers each as usual. Only this shape is rewritten: both operands loaded whole for the
matmul alone, the result stored and read by nothing else.
"""
from __future__ import annotations

from pypto import dtype as dt
from pypto.ir.nodes import Assign, BinOp, Call, Const, MemorySpace, TileType, TupleExpr, Var
from pypto.ir.visit import users_by_var


def per_batch(body: list, mat_bytes: int) -> list:
    """`body` with each batch matmul whose operands overflow Mat written per batch."""
    defs = {id(s.var): s for s in body if isinstance(s, Assign)}
    users = users_by_var(body)
    out, drop, changed = [], set(), False
    for s in body:
        plan = _plan(s, defs, users, mat_bytes)
        if plan is None:
            out.append(s)
            continue
        sources, store, bn = plan
        drop |= {id(x) for src in sources for x in src if x is not None} | {id(store)}
        out = [x for x in out if id(x) not in drop]
        out.extend(_batches(s, sources, store, bn))
        changed = True
    return [s for s in out if id(s) not in drop] if changed else body


def _call(s, op):
    return isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op == op


def _only_use(v, users, s) -> bool:
    return [id(x) for x in users.get(id(v), [])] == [id(s)]


def _plan(s, defs, users, mat_bytes):
    if not _call(s, "tile.batch_matmul") or len(s.var.type.shape) != 3:
        return None
    sources = []
    for x in s.value.args:
        view, load = None, defs.get(id(x))
        if _call(load, "tile.transpose_view"):
            view, load = load, defs.get(id(load.value.args[0]))
            if not _only_use(view.var, users, s):
                return None
        user = view if view is not None else s
        if not (_call(load, "tile.load") and len(load.value.args) == 3
                and load.value.kwargs.get("target_memory") is MemorySpace.Mat
                and len(load.var.type.shape) == 3 and load.var.type.valid is None
                and _only_use(load.var, users, user)):
            return None
        sources.append((load, view))
    stores = users.get(id(s.var), [])
    if len(stores) != 1 or not _call(stores[0], "tile.store") or stores[0].value.args[0] is not s.var \
            or len(stores[0].value.args) != 3:
        return None
    if sum(load.var.type.nbytes() for load, _ in sources) <= mat_bytes:
        return None
    bn = _column_block(sources, s.var.type.shape[2], mat_bytes)
    return (sources, stores[0], bn) if bn else None


def _column_block(sources, n: int, mat_bytes: int) -> int | None:
    """The widest block of the result's columns (a multiple of 16 dividing N) whose one
    batch of operands fits Mat: A's batch, and B's columns of the block (twice when B is
    seen transposed: the view is a copy)."""
    (a, _), (b, b_view) = sources
    a_bytes = TileType(a.var.type.shape[1:], a.var.type.dtype, MemorySpace.Mat).nbytes()
    per_col = b.var.type.shape[2 if b_view is not None else 1] * b.var.type.dtype.nbytes
    for bn in range(n, 0, -16):
        if n % bn == 0 and bn % 16 == 0 and a_bytes + per_col * bn * (2 if b_view else 1) <= mat_bytes:
            return bn
    return None


def _shift(offsets: TupleExpr, by: dict, span) -> TupleExpr:
    """`offsets` with `by[axis]` added to those axes."""
    items = []
    for axis, e in enumerate(offsets.items):
        d = by.get(axis, 0)
        if not d:
            items.append(e)
        elif isinstance(e, Const):
            items.append(Const(e.value + d, dt.INDEX, span))
        else:
            items.append(BinOp("+", e, Const(d, dt.INDEX, span), dt.INDEX, span))
    return TupleExpr(items, span)


def _window(load: Assign, at: dict, shape: tuple, name: str, span) -> tuple[Assign, Var]:
    lt = load.var.type
    t = TileType(shape, lt.dtype, lt.memory_space)
    tensor, offs, _ = load.value.args
    v = Var(name, t, span)
    sizes = TupleExpr([Const(d, dt.INDEX, span) for d in shape], span)
    return Assign(v, Call("tile.load", [tensor, _shift(offs, at, span), sizes], dict(load.value.kwargs),
                          t, {}, span), load.span), v


def _batches(s: Assign, sources, store: Assign, bn: int) -> list:
    span = s.span
    batches, m, n = s.var.type.shape
    (a, _), (b, b_view) = sources
    stmts, cur = [], store.value.args[2]
    steps = [(i, n0) for i in range(batches) for n0 in range(0, n, bn)]
    for i, n0 in steps:
        tag = f"b{i}" if bn == n else f"b{i}_n{n0}"
        load_a, va = _window(a, {0: i}, (1, *a.var.type.shape[1:]), f"{a.var.name}_{tag}", span)
        bs = b.var.type.shape
        if b_view is not None:       # [B, N, K] seen as [B, K, N]: rows n0.. of batch i
            load_b, vb = _window(b, {0: i, 1: n0}, (1, bn, bs[2]), f"{b.var.name}_{tag}", span)
            vt = TileType((1, bs[2], bn), vb.type.dtype, vb.type.memory_space)
            tv = Var(f"{b_view.var.name}_{tag}", vt, span)
            stmts += [load_a, load_b,
                      Assign(tv, Call("tile.transpose_view", [vb], {}, vt, {}, span), b_view.span)]
            vb = tv
        else:                        # [B, K, N]: columns n0.. of batch i
            load_b, vb = _window(b, {0: i, 2: n0}, (1, bs[1], bn), f"{b.var.name}_{tag}", span)
            stmts += [load_a, load_b]
        rt = TileType((1, m, bn), s.var.type.dtype, s.var.type.memory_space)
        res = Var(f"{s.var.name}_{tag}", rt, span)
        stmts.append(Assign(res, Call("tile.batch_matmul", [va, vb], {}, rt, {}, span), span))
        last = (i, n0) == steps[-1]
        nxt = store.var if last else Var(f"{store.var.name}_{tag}", store.var.type, span)
        stmts.append(Assign(nxt, Call("tile.store", [res, _shift(store.value.args[1], {0: i, 2: n0}, span), cur],
                                      dict(store.value.kwargs), store.var.type, {}, span), store.span))
        cur = nxt
    return stmts
