"""FlattenTileNdTo2D: PTO tiles are 2-D. In kernels, every tile of rank 3 or more
becomes 2-D by merging all dimensions but the last: `[2, 16, 64]` -> `[32, 64]`.

- `tile.load` keeps its N-D window on the tensor and yields the 2-D tile
  (`flatten=True`);
- `tile.store` of a flattened tile into an N-D tensor carries the N-D window as a
  4th operand (`[2, 16, 64]`), since the tile alone no longer says it -- unless the
  window's leading dims are all 1 (the 2-D tile padded with 1s is the window);
- `tile.create` and `tile.full` are made 2-D; elementwise ops are re-typed on their flattened operands;
  loop-carried and if-merged tiles follow;
- a `tile.reshape` to or from an N-D shape reshapes to/from its 2-D form;
- `tile.batch_matmul` becomes one matmul per batch: the operands' batch windows
  (`tile.slice` of the flattened Mat tiles; a 3-D `tile.transpose_view` is taken per
  batch on the window) multiplied into windows of one flattened Acc tile
  (`matmul_acc` with init_cond=True: a fresh product written into the window); one whose
  whole operands overflow Mat is first written batch by batch (batch_split.py).
Any other op on an N-D tile has no 2-D form and is an error (the op table already
keeps reductions, broadcasts and matmuls 2-D). 1-D and 2-D tiles are left as they are.
"""
from __future__ import annotations

from pypto import dtype as dt
from pypto.errors import CodegenError
from pypto.ir import ops
from pypto.ir.ops.memory import flat_valid
from pypto.ir.nodes import (While, Assign, Call, Const, Eval, For, Function, If, IterArg, MemorySpace,
                            Program, TileType, TupleExpr, Var)
from pypto.ir.visit import Rewriter, walk
from pypto.passes.batch_split import per_batch

NAME = "FlattenTileNdTo2D"
READS = ("backend_type",)      # the Mat capacity: batch_split.py

_ELEMENTWISE = set(ops.BINARY) | set(ops.SCALAR_FORM.values()) | set(ops.UNARY) | {"cast"}


def run(prog: Program, opts) -> Program:
    from pypto.backend import chip
    mat = chip(opts.backend_type).capacity[MemorySpace.Mat]
    out = []
    for f in prog.functions:
        if f.is_kernel and any(_nd(v) for s in walk(f.body) for v in _typed(s)):
            body = per_batch(f.body, mat)
            if body is not f.body:
                f = Function(f.name, f.params, f.return_types, body, f.func_type, f.level, f.role,
                             dict(f.attrs), f.span)
            f = _Flatten().function(f)
        out.append(f)
    return Program(prog.name, out, prog.source)


def _typed(s):
    if isinstance(s, Assign):
        yield s.var
    if isinstance(s, (For, While)):
        yield from (a.var for a in s.iter_args)
        yield from s.return_vars
    if isinstance(s, If):
        yield from s.return_vars


def _nd(v) -> bool:
    t = getattr(v, "type", None)
    return isinstance(t, TileType) and len(t.shape) > 2


def flat_shape(shape) -> tuple:
    if len(shape) <= 2:
        return tuple(shape)
    lead = 1
    for d in shape[:-1]:
        lead *= d
    return (lead, shape[-1])


def _flat(t: TileType) -> TileType:
    # an N-D valid part is a block of whole rows (the load refuses others)
    valid = t.valid if t.valid is None or len(t.shape) <= 2 else flat_valid(t.shape, t.valid)
    return TileType(flat_shape(t.shape), t.dtype, t.memory_space, t.memref, valid, t.slot)


def _ints(shape, span):
    return TupleExpr([Const(d, dt.INDEX, span) for d in shape], span)


class _Flatten(Rewriter):
    def __init__(self):
        self.map: dict[int, Var] = {}        # N-D tile var -> its 2-D var
        self.tview: dict[int, Var] = {}      # a 3-D transpose_view -> its (flattened) source

    def var(self, v: Var) -> Var:
        """The 2-D version of a defined N-D tile var (the var itself otherwise)."""
        if not _nd(v):
            return v
        if id(v) not in self.map:
            self.map[id(v)] = Var(v.name, _flat(v.type), v.span)
        return self.map[id(v)]

    def expr(self, e):
        if isinstance(e, Var):
            return self.map.get(id(e), e)
        return super().expr(e)

    def stmt(self, s):
        if isinstance(s, For):
            inits = [self.expr(a.init) for a in s.iter_args]
            iters = [IterArg(self.var(a.var), i) for a, i in zip(s.iter_args, inits)]
            body = self.body(s.body)
            return [For(s.loop_var, self.expr(s.start), self.expr(s.stop), self.expr(s.step), body,
                        iters, [self.var(r) for r in s.return_vars], s.kind, s.span, s.stage, dict(s.attrs))]
        if isinstance(s, While):
            inits = [self.expr(a.init) for a in s.iter_args]
            iters = [IterArg(self.var(a.var), i) for a, i in zip(s.iter_args, inits)]
            return [While(self.expr(s.cond), self.body(s.body), iters, [self.var(r) for r in s.return_vars],
                          s.span)]
        if isinstance(s, If):
            new = self.default_stmt(s)
            new.return_vars = [self.var(r) for r in s.return_vars]
            return [new]
        c = s.value if isinstance(s, Assign) else (s.expr if isinstance(s, Eval) else None)
        if not (isinstance(c, Call) and c.op.startswith("tile.")):
            return [self.default_stmt(s)]
        if c.op == "tile.transpose_view" and isinstance(s, Assign) and _nd(s.var):
            self.tview[id(s.var)] = self.expr(c.args[0])     # taken per batch by batch_matmul
            return []
        if c.op in ("tile.batch_matmul", "tile.batch_matmul_acc") and isinstance(s, Assign):
            return self.batch_matmul(s, c)
        if c.op == "tile.transpose" and isinstance(s, Assign) and _nd(s.var):
            return self.transpose(s, c)
        for a in c.args:
            if id(a) in self.tview:
                raise CodegenError(f"{c.op}: a transposed 3-D tile ({a.name!r}) only feeds "
                                   f"pl.batch_matmul", s.span, "transpose 2-D tiles for other ops")
        new = self.call(c, s)
        if isinstance(s, Assign):
            return [Assign(self.var(s.var), new, s.span)]
        return [Eval(new, s.span)]

    def batch_matmul(self, s: Assign, c: Call) -> list:
        """A matmul per batch into windows of one flattened Acc tile: a fresh one, or the
        accumulator's (batch_matmul_acc adds into it in place)."""
        span = s.span
        batch, m, n = s.var.type.shape
        accumulate = c.op == "tile.batch_matmul_acc"
        if accumulate:
            out = self.expr(c.args[0])
            self.map[id(s.var)] = out
            stmts = []
        else:
            out = self.var(s.var)                         # [B * M, N] in Acc
            stmts = [Assign(out, Call("tile.create", [_ints(out.type.shape, span)],
                                      {"dtype": out.type.dtype, "target_memory": out.type.memory_space},
                                      TileType(out.type.shape, out.type.dtype, out.type.memory_space),
                                      {}, span), span)]
        operands = c.args[1:] if accumulate else c.args

        def window(x, b, what):
            """Batch b of operand x: a Mat window of its flattened tile (transposed per batch
            when x is a 3-D transpose_view); a 2-D operand is every batch's."""
            if id(x) in self.tview:
                src = self.tview[id(x)]
                rows, cols = x.type.shape[-1], x.type.shape[-2]       # the source's [.., rows, cols]
                part = self._bind(stmts, f"{x.name}_b{b}", "tile.slice",
                                  [src, _ints((rows, cols), span), _ints((b * rows, 0), span)], span)
                return self._bind(stmts, f"{x.name}_t{b}", "tile.transpose_view", [part], span)
            if len(x.type.shape) == 2:
                return x
            rows, cols = x.type.shape[-2:]
            return self._bind(stmts, f"{x.name}_b{b}", "tile.slice",
                              [self.expr(x), _ints((rows, cols), span), _ints((b * rows, 0), span)], span)

        for b in range(batch):
            lhs, rhs = window(operands[0], b, "lhs"), window(operands[1], b, "rhs")
            dst = self._bind(stmts, f"{s.var.name}_b{b}", "tile.slice",
                             [out, _ints((m, n), span), _ints((b * m, 0), span)], span)
            self._bind(stmts, f"{s.var.name}_b{b}", "tile.matmul_acc",
                       [dst, lhs, rhs, Const(not accumulate, dt.BOOL, span)], span)
        return stmts

    def transpose(self, s: Assign, c: Call) -> list:
        """The last two dims swapped batch by batch: each [A, B] window of the flattened
        source transposed (a 2-D ttrans) into its [B, A] window of a new tile."""
        span = s.span
        src = self.expr(c.args[0])
        a, b = c.args[0].type.shape[-2:]
        batches = src.type.shape[0] // a
        out = self.var(s.var)
        t = TileType(out.type.shape, out.type.dtype, out.type.memory_space)
        stmts = [Assign(out, Call("tile.create", [_ints(out.type.shape, span)],
                                  {"dtype": t.dtype, "target_memory": t.memory_space}, t, {}, span), span)]
        cur = out
        for k in range(batches):
            page = self._bind(stmts, f"{s.var.name}_p{k}", "tile.slice",
                              [src, _ints((a, b), span), _ints((k * a, 0), span)], span)
            flipped = self._bind(stmts, f"{s.var.name}_t{k}", "tile.transpose", [page], span,
                                 {"axis1": 0, "axis2": 1})
            cur = self._bind(stmts, out.name, "tile.assemble", [cur, flipped, _ints((k * b, 0), span)], span)
        self.map[id(s.var)] = cur
        return stmts

    @staticmethod
    def _bind(stmts, name, op, args, span, kwargs=None) -> Var:
        t = ops.infer_type(op, args, kwargs or {}, span)
        v = Var(name, t, span)
        stmts.append(Assign(v, Call(op, args, kwargs or {}, t, {}, span), span))
        return v

    def call(self, c: Call, s) -> Call:
        op = c.op.split(".", 1)[1]
        args = [self.expr(a) for a in c.args]
        kwargs = dict(c.kwargs)
        nd_args = [a for a in c.args if _nd(a)]
        if op == "load":
            if isinstance(s, Assign) and _nd(s.var):
                kwargs["flatten"] = True
        elif op == "store":
            tile = c.args[0]
            if _nd(tile) and len(args) == 3:
                window = tuple(tile.type.shape)
                if any(d != 1 for d in window[:-2]):
                    args.append(_ints(window, s.span))
        elif op in ("create", "full"):
            if isinstance(s, Assign) and _nd(s.var):
                args = [_ints(flat_shape(s.var.type.shape), s.span)]
        elif op == "reshape":
            shape = [const.value for const in args[1].items]
            args[1] = _ints(flat_shape(shape), s.span)
        elif nd_args and op not in _ELEMENTWISE and op != "move":
            raise CodegenError(f"{c.op} has no 2-D form for a {len(nd_args[0].type.shape)}-D tile",
                               s.span, "use 2-D tiles for it")
        t = ops.infer_type(c.op, args, kwargs, s.span)
        if isinstance(s, Assign) and isinstance(s.var.type, TileType):
            # keep what later passes already gave the result (memory space)
            want = self.var(s.var).type
            if isinstance(t, TileType) and tuple(t.shape) != tuple(want.shape):
                raise CodegenError(f"{c.op}: flattened result {list(t.shape)} is not "
                                   f"{list(want.shape)}", s.span)
            t = want
        return Call(c.op, args, kwargs, t, dict(c.attrs), c.span)
