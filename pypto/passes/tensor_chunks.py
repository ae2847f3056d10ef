"""Tensor ops of a kernel laid out as tiles, chunk by chunk: which elementwise ops form a
group that can run over row chunks of a size that fits the UB budget, and the loops that
run it (pypto.passes.convert_tensor_to_tile_ops uses them), with the small helpers both
share."""
from __future__ import annotations

from dataclasses import dataclass, field

from pypto import dtype as dt
from pypto.errors import CodegenError
from pypto.ir import ops
from pypto.ir.nodes import (Assign, BinOp, Call, Const, Eval, For, If, IterArg, MemorySpace, ScalarType,
                            TensorType, TileType, TupleExpr, Var, While, Yield)
from pypto.ir.visit import const_int, stmt_uses, walk
from pypto.passes.base import IN_PLACE_OPS, index_tuple

BUDGET = 0.5            # share of UB the live chunk tiles of one tiled group may use

_ELEMENTWISE = (set(ops.BINARY) | set(ops.SCALAR_FORM.values()) | set(ops.UNARY) | {"cast"}
                | set(ops.ROW_EXPAND) | set(ops.COL_EXPAND) | {"row_expand", "col_expand"})
_ROW_REDUCE = set(ops.ROW_REDUCE)


def _zeros(n, span):
    return index_tuple((0,) * n, span)


def _shape(shape, span):
    return index_tuple(shape, span)


def _add(a, b, span):
    """a + b for index offsets, folded when both are constants."""
    if isinstance(a, Const) and isinstance(b, Const):
        return Const(a.value + b.value, dt.INDEX, span)
    if isinstance(a, Const) and a.value == 0:
        return b
    if isinstance(b, Const) and b.value == 0:
        return a
    return BinOp("+", a, b, dt.INDEX, span)


def _call_of(s):
    return s.value if isinstance(s, Assign) else (s.expr if isinstance(s, Eval) else None)


def _tensor_op(s) -> str | None:
    c = _call_of(s)
    if isinstance(c, Call) and (ops.is_tensor_op(c.op) or c.op == "tensor.full"):
        return c.op.split(".", 1)[1]
    return None


def _computed(stmts) -> set[int]:
    """ids of the tensor values computed by tensor ops (not writes) in a body, and of
    the results of its loops and ifs that carry such a value (a tensor a nested loop
    only writes into stays a tensor)."""
    out = set()
    for s in stmts:
        op = _tensor_op(s)
        if op is not None and op != "assemble" and isinstance(s, Assign):
            out.add(id(s.var))
        bodies = [s.body] if isinstance(s, (For, While)) else \
            [s.then_body, s.else_body or []] if isinstance(s, If) else []
        for b in bodies:
            inner = _computed(b)
            out |= inner
            if b and isinstance(b[-1], Yield):
                out |= {id(r) for r, v in zip(s.return_vars, b[-1].values)
                        if isinstance(r.type, TensorType) and id(v) in inner}
    return out


@dataclass
class _Group:
    stmts: list                                  # members in program order (sinks included)
    shape: tuple = ()                            # the iteration space S
    chunk: tuple = ()                            # the chunk C (a divisor of S per dim)
    leaves: list = field(default_factory=list)   # tensors the group reads (loaded per chunk)


def _scratch(op: str | None, call) -> bool:
    """Ops whose tile form takes a scratch tile of the operand's shape: the row reductions
    and the precise rsqrt."""
    return op in _ROW_REDUCE or (op == "rsqrt" and bool(call.kwargs.get("high_precision")))


def _is_member_op(op: str | None) -> bool:
    return op in _ELEMENTWISE or op in _ROW_REDUCE or op in ("assemble", "full")


def _static(t) -> tuple | None:
    if isinstance(t, (TensorType, TileType)) and all(isinstance(d, int) for d in t.shape):
        return tuple(t.shape)
    return None


def _plan(stmts, conv) -> list[_Group]:
    """The groups of this body that must be tiled (their whole-tensor form overflows UB)."""
    members = [s for s in stmts if isinstance(s, (Assign, Eval)) and _is_member_op(_tensor_op(s))]
    if not members:
        return []
    defined_by = {id(s.var): s for s in members if isinstance(s, Assign)}
    # connected components over operand edges
    parent = {id(s): id(s) for s in members}

    def find(k):
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    for s in members:
        for a in _call_of(s).args:
            d = defined_by.get(id(a)) if isinstance(a, Var) else None
            if d is not None and _tensor_op(d) != "assemble":
                parent[find(id(s))] = find(id(d))
    comps: dict[int, list] = {}
    for s in members:
        comps.setdefault(find(id(s)), []).append(s)
    cap = conv.chip.capacity[MemorySpace.Vec]
    groups = []
    for comp in comps.values():
        g = _group(stmts, comp, conv)
        if g is None:
            continue
        if _peak(g, g.shape, in_place=True) <= cap:
            continue                 # fits whole (with buffer sharing): leave it as is
        g.chunk = _choose_chunk(g, cap)
        groups.append(g)
    return groups


def _group(stmts, comp: list, conv) -> _Group | None:
    """Check a component can be tiled; None when it cannot (it then stays whole)."""
    ids = {id(s) for s in comp}
    values = {id(s.var) for s in comp if isinstance(s, Assign) and _tensor_op(s) != "assemble"}
    sinks = [s for s in comp if _tensor_op(s) == "assemble"]
    if not sinks:
        return None
    sink_results = {id(s.var) for s in sinks if isinstance(s, Assign)}
    sink_dsts = {id(_call_of(s).args[0]) for s in sinks}
    # values used only by members; written tensors not read by members
    first = min(stmts.index(s) for s in comp)
    lastpos = max(stmts.index(s) for s in comp)
    for i, s in enumerate(stmts):
        if id(s) in ids:
            continue
        used = {id(v) for x in walk([s]) for v in stmt_uses(x)}
        if used & values:
            return None
        if first < i < lastpos:
            # the loop replaces the members at the last one's place: what lies between
            # must be pure and independent of the group's writes
            if not (isinstance(s, Assign) and isinstance(s.value, (Call, BinOp, Const, Var))
                    and not (isinstance(s.value, Call) and (s.value.callee or not ops.OPS.get(s.value.op) or
                                                            not ops.OPS[s.value.op].pure))):
                return None
            if used & sink_results:
                return None
    computed = _computed(stmts)
    leaves, seen = [], set()
    for s in comp:
        c = _call_of(s)
        args = c.args[1:2] if _tensor_op(s) == "assemble" else c.args
        for a in args:
            if isinstance(a, Var) and isinstance(a.type, TensorType) and id(a) not in values:
                if id(a) in sink_results or id(a) in sink_dsts or id(a) in conv.tiles \
                        or id(a) in computed:
                    return None      # reads what the group writes, or a value held whole
                if id(a) not in seen:
                    seen.add(id(a))
                    leaves.append(a)
    # the iteration space: every value and leaf has S's extent or 1 in each dim
    shapes = []
    for s in comp:
        c = _call_of(s)
        if _tensor_op(s) == "assemble":
            shapes.append(_static(c.args[1].type))
        else:
            shapes.append(_static(s.var.type))
    shapes += [_static(a.type) for a in leaves]
    if any(sh is None for sh in shapes) or len({len(sh) for sh in shapes}) != 1:
        return None
    rank = len(shapes[0])
    S = tuple(max(sh[d] for sh in shapes) for d in range(rank))
    if any(sh[d] not in (1, S[d]) for sh in shapes for d in range(rank)):
        return None
    if any(_tensor_op(s) in _ROW_REDUCE for s in comp) and rank != 2:
        return None
    return _Group(sorted(comp, key=stmts.index), S, (), leaves)


def _chunk_of(shape, S, C) -> tuple:
    """A value's chunk: C along the dims it spans, 1 along its broadcast dims."""
    return tuple(1 if (shape[d] == 1 and S[d] != 1) else C[d] for d in range(len(S)))


def _invariant(shape, S, looped) -> bool:
    """Does a value of this shape span none of the looped dims (same chunk every time)?"""
    return all(shape[d] == 1 and S[d] != 1 for d in looped)


def _nbytes(shape, dtype) -> int:
    n = dtype.nbytes
    for d in shape:
        n *= d
    return n


def _peak(g: _Group, C, in_place: bool) -> int:
    """Peak bytes of the tiles live at once in one chunk iteration (loads placed before
    their first use). With in_place, an elementwise result may take the buffer of an
    operand of its shape that dies at that op (as MemoryReuse does)."""
    S = g.shape
    looped = set(range(max((d for d in range(len(S)) if C[d] != S[d]), default=-1) + 1))
    events = []                  # per member: (defs [(key, bytes)], uses [keys])
    # leaves loaded once before the loop are live through the whole iteration
    hoisted = [a for a in g.leaves if looped and _invariant(a.type.shape, S, looped)]
    loaded = {id(a) for a in hoisted}
    for s in g.stmts:
        c = _call_of(s)
        op = _tensor_op(s)
        args = [c.args[1]] if op == "assemble" else list(c.args)
        defs, uses = [], []
        for a in args:
            if not (isinstance(a, Var) and isinstance(a.type, TensorType)):
                continue
            if any(a is leaf for leaf in g.leaves) and id(a) not in loaded:
                loaded.add(id(a))
                defs.append((id(a), _nbytes(_chunk_of(a.type.shape, S, C), a.type.dtype)))
            uses.append(id(a))
        if _scratch(op, _call_of(s)):
            t = args[0].type
            defs.append((("scratch", id(s)), _nbytes(_chunk_of(t.shape, S, C), t.dtype)))
            uses.append(("scratch", id(s)))
        if op != "assemble":
            t = s.var.type
            defs.append((id(s.var), _nbytes(_chunk_of(t.shape, S, C), t.dtype), op, args, t))
        events.append((defs, uses))
    last = {}
    for i, (_, uses) in enumerate(events):
        for k in uses:
            last[k] = i
    live: dict = {}
    for a in hoisted:
        live[id(a)] = _nbytes(_chunk_of(a.type.shape, S, C), a.type.dtype)
        last[id(a)] = len(events)
    peak = 0
    for i, (defs, uses) in enumerate(events):
        for d in defs:
            key, size = d[0], d[1]
            if in_place and len(d) > 2 and ("tile." + d[2]) in IN_PLACE_OPS:
                t = d[4]
                shape = _chunk_of(t.shape, S, C)
                donor = next((id(a) for a in d[3] if isinstance(a, Var) and id(a) in live
                              and last.get(id(a)) == i and _chunk_of(a.type.shape, S, C) == shape
                              and a.type.dtype == t.dtype), None)
                if donor is not None:
                    live[key] = 0                 # shares the donor's buffer
                    continue
            live[key] = size
        peak = max(peak, sum(live.values()))
        for k in [k for k in live if last.get(k, -1) <= i]:
            del live[k]
    return peak


def _choose_chunk(g: _Group, cap: int) -> tuple:
    S = g.shape
    rank = len(S)
    reduce_rows = any(_tensor_op(s) in _ROW_REDUCE for s in g.stmts)
    typed = [a.type for a in g.leaves] + [s.var.type for s in g.stmts
                                           if isinstance(s, Assign) and _tensor_op(s) != "assemble"]
    budget = int(cap * BUDGET)
    candidates = []
    for j in range(rank):
        if reduce_rows and j == rank - 1:
            break                                  # a row reduction keeps whole rows
        for k in range(S[j], 0, -1):
            if S[j] % k:
                continue
            C = (1,) * j + (k,) + tuple(S[j + 1:])
            if C == S:
                continue
            # every chunk tile must keep the 32-byte rows (columns, for an [R, 1] vector)
            # a Vec tile needs -- unless the whole value already breaks the rule
            if all(_vec_tile_ok(_chunk_of(t.shape, S, C), t.dtype) or
                   not _vec_tile_ok(tuple(t.shape), t.dtype) for t in typed):
                candidates.append(C)
    candidates.sort(key=lambda C: -_numel(C))
    # leave room for the kernel's other tiles; failing that, the group may take all of UB
    for limit in (budget, cap):
        for C in candidates:
            if _peak(g, C, in_place=False) <= limit:
                return C
    s = g.stmts[0]
    raise CodegenError(
        f"tensor ops on {list(S)} cannot be split into chunks whose tiles fit UB "
        f"({cap} bytes) with 32-byte aligned rows", s.span,
        "load windows of the tensors yourself with pl.load in a pl.range loop"
        + (" (a row reduction needs whole rows)" if reduce_rows else ""))


def _vec_tile_ok(shape, dtype) -> bool:
    """A Vec tile's rows (row-major) or, for an [R, 1] column vector, its column are a
    whole number of 32-byte blocks (after merging the leading dims)."""
    cols = shape[-1]
    rows = _numel(shape[:-1])
    n = rows if (cols == 1 and rows > 1) else cols
    return n * dtype.nbytes % 32 == 0


def _numel(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _emit_tiled(conv, g: _Group) -> list:
    """The loop nest over chunks that replaces a group."""
    S, C = g.shape, g.chunk
    span = g.stmts[-1].span
    # the leading dims the chunk does not take whole (1, .., 1, k): one loop each
    j = max(d for d in range(len(S)) if C[d] != S[d])
    looped = set(range(j + 1))
    sinks = [s for s in g.stmts if _tensor_op(s) == "assemble"]
    sink_results = {id(s.var) for s in sinks if isinstance(s, Assign)}
    roots = []                                   # the tensors written, carried by the loops
    for s in sinks:
        dst = _call_of(s).args[0]
        if id(dst) not in sink_results and all(r is not dst for r in roots):
            roots.append(dst)
    root_of: dict[int, int] = {}
    for s in sinks:
        dst = _call_of(s).args[0]
        k = root_of[id(dst)] if id(dst) in sink_results else next(i for i, r in enumerate(roots) if r is dst)
        if isinstance(s, Assign):
            root_of[id(s.var)] = k
    outer = [conv.expr(r) for r in roots]

    def level(d, carried):
        """Loops d..j around the chunk body; returns (statements, results)."""
        lv = Var(conv.namer.fresh("i", "chunk"), ScalarType(dt.INDEX), span)
        offs[d] = lv
        iters = [IterArg(Var(conv.namer.fresh(r.name, "iter"), r.type, span), c)
                 for r, c in zip(roots, carried)]
        inner = [a.var for a in iters]
        if d < j:
            body, results = level(d + 1, inner)
        else:
            body, results = chunk_body(inner)
        rets = [Var(conv.namer.fresh(r.name, "rv"), r.type, span) for r in roots]
        body.append(Yield(list(results), span))
        step = C[d]
        loop = For(lv, Const(0, dt.INDEX, span), Const(S[d], dt.INDEX, span),
                   Const(step, dt.INDEX, span), body, iters, rets, span=span)
        return [loop], rets

    offs: dict[int, Var] = {}

    def at(shape, base=None):
        """Offsets of a chunk of a value of `shape` (plus a region write's own offsets)."""
        out = []
        for d in range(len(S)):
            o = offs.get(d) if not (shape[d] == 1 and S[d] != 1) else None
            b = base[d] if base is not None else None
            if o is None:
                out.append(b if b is not None else Const(0, dt.INDEX, span))
            elif b is None or const_int(b) == 0:
                out.append(o)
            else:
                out.append(BinOp("+", b, o, dt.INDEX, span))
        return TupleExpr(out, span)

    def load(a):
        src = conv.expr(a)
        shape = _chunk_of(a.type.shape, S, C)
        where = at(a.type.shape)
        if id(src) in conv.views:                # a chunk of a slice: of the sliced tensor
            src, base, valid = conv.views[id(src)]
            if valid is not None:
                from pypto.errors import NotBuiltError
                raise NotBuiltError(f"{a.name!r} has a narrowed valid shape and is read by ops "
                                    f"tiled in chunks; this is not supported by this pypto yet", span,
                                    "pl.fillpad it first, or work on tiles you load")
            where = TupleExpr([_add(b, o, span) for b, o in zip(base.items, where.items)], span)
        return conv.new(a.name, "tile.load", [src, where, _shape(shape, span)],
                        {"target_memory": MemorySpace.Vec}, span)

    # a leaf the loops do not move through (a [1, N] row under row chunks) is loaded once,
    # before them
    hoisted: dict[int, Var] = {}
    for a in g.leaves:
        if _invariant(a.type.shape, S, looped):
            hoisted[id(a)] = load(a)

    def chunk_body(carried):
        saved_emit, conv.emit = conv.emit, []
        local: dict[int, Var] = dict(hoisted)
        cur = list(carried)

        def tile(a):
            if not (isinstance(a, Var) and isinstance(a.type, TensorType)):
                return conv.expr(a)
            if id(a) not in local:               # a leaf: its chunk, loaded once
                local[id(a)] = load(a)
            return local[id(a)]

        for s in g.stmts:
            c = _call_of(s)
            op = _tensor_op(s)
            if op == "assemble":
                dst, src, base = c.args
                k = root_of[id(dst)] if id(dst) in root_of else next(i for i, r in enumerate(roots) if r is dst)
                t = tile(src)
                store_offs = at(src.type.shape, base.items if isinstance(base, TupleExpr) else None)
                nv = Var(conv.namer.fresh(roots[k].name, "ssa"), roots[k].type, s.span)
                kw = {"atomic": c.kwargs["atomic"]} if "atomic" in c.kwargs else {}
                conv.emit.append(Assign(nv, Call("tile.store", [t, store_offs, cur[k]], kw, nv.type, {},
                                                 s.span), s.span))
                cur[k] = nv
                if isinstance(s, Assign):
                    root_of[id(s.var)] = k
                continue
            if op == "full":                      # a chunk of the filled tensor
                args = [_shape(_chunk_of(s.var.type.shape, S, C), s.span)]
            else:
                args = [tile(a) for a in c.args]
            if _scratch(op, c) and len(args) == 1:
                t = args[0].type
                args.append(conv.new(s.var.name, "tile.create", [_shape(t.shape, s.span)],
                                     {"dtype": t.dtype, "target_memory": MemorySpace.Vec}, s.span, "scratch"))
            local[id(s.var)] = conv.new(s.var.name, "tile." + op, args, dict(c.kwargs), s.span)
        body, conv.emit = conv.emit, saved_emit
        return body, cur

    stmts, results = level(0, outer)
    for s in sinks:
        if isinstance(s, Assign):
            conv.subst[id(s.var)] = results[root_of[id(s.var)]]
    return stmts
