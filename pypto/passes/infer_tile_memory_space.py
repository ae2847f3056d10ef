"""InferTileMemorySpace: every tile gets a memory space.

Loads land where `target_memory` says, moves where they are sent, matmul results in
Acc, a reshape stays where its source is, a cast of a matmul result lands in Mat (the
cube's write-back converts), everything else computes in Vec. Where an operand sits in the wrong space for its
consumer, a `tile.move` is inserted when the chip has that data path -- through Mat
when a tile bound for Left/Right has no direct path there (a matmul result feeding
another matmul goes Acc -> Mat -> Left, also for an explicit move); otherwise the
error says which path is missing.
"""
from __future__ import annotations

from pypto.errors import CodegenError
from pypto.ir import ops
from pypto.ir.nodes import SCALE_SPACES, While, Assign, Call, Eval, For, If, MemorySpace as M, Program, TileType, Var, Yield
from pypto.ir.visit import Rewriter, defs, stmt_uses, walk
from pypto.passes.base import Namer

NAME = "InferTileMemorySpace"
READS = ("backend_type",)

_MX = (M.Left, M.LeftScale, M.Right, M.RightScale)
_OPERANDS = {"tile.matmul": (M.Left, M.Right), "tile.matmul_acc": (M.Acc, M.Left, M.Right),
             "tile.matmul_bias": (M.Left, M.Right, M.Bias), "tile.gemv": (M.Left, M.Right),
             "tile.gemv_acc": (M.Acc, M.Left, M.Right), "tile.gemv_bias": (M.Left, M.Right, M.Bias),
             "tile.matmul_mx": _MX, "tile.matmul_mx_acc": (M.Acc,) + _MX,
             "tile.matmul_mx_bias": _MX + (M.Bias,)}
_PRODUCES = dict.fromkeys(_OPERANDS, M.Acc)
_KEEP = ("tile.load", "tile.move", "tile.create", "tile.store", "tile.alloc", "tile.extract", "tile.mgather",
         "tile.aiv_shard", "tile.aic_gather", "tile.tpop_from_aiv", "tile.tpop_from_aic")
# views: where their source is; writes into a target: where the target is
VIEWS = ("tile.reshape", "tile.transpose_view", "tile.slice", "tile.set_validshape", "tile.reinterpret_view")
INTO_TARGET = ("tile.assemble", "tile.gather_row")


def run(prog: Program, opts) -> Program:
    out = []
    for f in prog.functions:
        if f.is_kernel:
            namer = Namer({p.var.name for p in f.params} | {v.name for s in walk(f.body) for v in defs(s)})
            f = _Infer(namer, opts.chip, _stored_only(f.body)).function(f)
        out.append(f)
    return Program(prog.name, out, prog.source)


def _paths(chip):
    # Acc -> Vec, Mat -> Vec and Vec -> Mat cross from the cube core to a vector core or back: a kernel
    # holding one becomes a Group (ExpandMixedKernel) whose two halves pass the tile through
    # a pipe, on every chip (on a2/a3 that is the only way: the cores share no buffer)
    # (the MX scale buffers are a5's)
    scales = {(M.Mat, M.LeftScale), (M.Mat, M.RightScale)} if chip.capacity.get(M.LeftScale) else set()
    return {(M.Mat, M.Left), (M.Mat, M.Right), (M.Mat, M.Bias), (M.Acc, M.Mat), (M.Vec, M.Vec),
            (M.Acc, M.Vec), (M.Vec, M.Mat), (M.Mat, M.Vec)} | scales


def _stored_only(body) -> set:
    """ids of the vars whose every use is as the tile a tile.store writes out."""
    ok, bad = set(), set()
    for s in walk(body):
        c = s.value if isinstance(s, Assign) else s.expr if isinstance(s, Eval) else None
        for v in stmt_uses(s):
            if isinstance(c, Call) and c.op == "tile.store" and c.args[0] is v \
                    and sum(a is v for a in c.args) == 1:
                ok.add(id(v))
            else:
                bad.add(id(v))
    return ok - bad


class _Infer(Rewriter):
    def __init__(self, namer, chip, stored_only=frozenset()):
        self.namer = namer
        self.chip = chip
        self.paths = _paths(chip)
        self.emit = []
        self.stored_only = stored_only
        self.alias: dict[int, Var] = {}      # a cast folded into the stores that write it out

    def expr(self, e):
        if isinstance(e, Var) and id(e) in self.alias:
            return self.alias[id(e)]
        return super().expr(e)

    def body(self, stmts):
        out = []
        for s in stmts:
            self.emit = []
            new = self.stmt(s)
            out.extend(self.emit)
            out.extend(new)
        return out

    def stmt(self, s):
        if isinstance(s, (For, While)):
            for a in s.iter_args:           # a carried tile lives where its initial value does
                _set_space(a.var, _space(a.init))
            emit = self.emit
            new = self.default_stmt(s)
            self.emit = emit
            for a, r in zip(new.iter_args, new.return_vars):
                _set_space(r, _space(a.var))
            return [new]
        if isinstance(s, If):
            emit = self.emit
            new = self.default_stmt(s)
            self.emit = emit
            for i, r in enumerate(new.return_vars):   # a phi lives where its branch values do
                spaces = {_space(b[-1].values[i]) for b in (new.then_body, new.else_body or [])
                          if b and isinstance(b[-1], Yield)} - {None}
                if len(spaces) > 1:
                    raise CodegenError(
                        f"the branches of this if give {r.name!r} tiles in different memory spaces "
                        f"({', '.join(sorted(m.name for m in spaces))})", s.span,
                        "pl.move the tile in one branch so both yield the same space")
                _set_space(r, spaces.pop() if spaces else None)
            return [new]
        if isinstance(s, Eval) and isinstance(s.expr, Call) and s.expr.op == "tile.store":
            self.check_store(s.expr, s)          # a store written as a statement
            return [self.default_stmt(s)]
        if not (isinstance(s, Assign) and isinstance(s.value, Call)):
            return [self.default_stmt(s)]
        c = s.value
        if c.op in _KEEP or not c.op.startswith("tile."):
            if isinstance(s.var.type, TileType) and s.var.type.memory_space is None:
                _set_space(s.var, c.kwargs.get("target_memory", M.Vec))
            if c.op == "tile.move":
                src = self.via_mat(c.args[0], c.kwargs["target_memory"], s)
                self.check_path(_space(src), c.kwargs["target_memory"], s)
                if src is not c.args[0]:
                    return [Assign(s.var, Call(c.op, [src], dict(c.kwargs), c.type, dict(c.attrs),
                                               c.span), s.span)]
            if c.op == "tile.store":
                self.check_store(c, s)
            return [self.default_stmt(s)]
        if c.op in INTO_TARGET:                # in the target's space, operands where they are
            _set_space(s.var, _space(c.args[0]))
            return [self.default_stmt(s)]
        if c.op in VIEWS:                      # views: where their source is
            _set_space(s.var, _space(c.args[0]))
            return [self.default_stmt(s)]
        if c.op == "tile.cast" and _space(c.args[0]) is M.Acc:
            # the cube's write-back converts on the way to Mat (a matmul result cast for the
            # next matmul) or to GM (one only stored: the store converts, the fix-pipe's
            # way): no Acc -> Vec path on a2/a3, and no vector work in a cube kernel
            if c.kwargs.get("mode") not in (None, "rint", "RINT", "none", "NONE"):
                raise CodegenError(f"casting the matmul result {c.args[0].name!r} happens in the "
                                   f"cube's write-back to Mat, which rounds to nearest even", s.span,
                                   "use mode='rint' (or no mode)")
            if id(s.var) in self.stored_only and c.args[0].type.valid == s.var.type.valid:
                self.alias[id(s.var)] = self.expr(c.args[0])
                return []
            _set_space(s.var, M.Mat)
            return [self.default_stmt(s)]
        want = _OPERANDS.get(c.op)
        args = []
        for i, a in enumerate(c.args):
            if isinstance(getattr(a, "type", None), TileType):
                target = want[i] if want else M.Vec
                a = self.place(a, target, s)
            args.append(a)
        _set_space(s.var, _PRODUCES.get(c.op, M.Vec))
        return [Assign(s.var, Call(c.op, args, dict(c.kwargs), s.var.type, dict(c.attrs), c.span), s.span)]

    def check_store(self, c: Call, s):
        if _space(c.args[0]) not in (M.Vec, M.Acc, None):
            raise CodegenError(f"no data path from {_space(c.args[0]).name} to GM: stores "
                               f"come from Vec or Acc", s.span,
                               "store the tile you loaded it from, or the matmul result")

    def place(self, v: Var, target, s):
        have = _space(v)
        if have == target:
            return v
        v = self.via_mat(v, target, s)
        self.check_path(_space(v), target, s)
        return self.move(v, target, s)

    def via_mat(self, v: Var, target, s) -> Var:
        """A tile bound for Left/Right from a space with no direct path there (Acc, or Vec
        where the chip has UB -> L1) goes through Mat first: matmul(matmul(a, b), c)
        moves the first result Acc -> Mat -> Left."""
        have = _space(v)
        if target in (M.Left, M.Right, M.Bias, M.LeftScale, M.RightScale) and (have, target) not in self.paths \
                and (have, M.Mat) in self.paths:
            return self.move(v, M.Mat, s)
        return v

    def move(self, v, target, s):
        t = ops.infer_type("tile.move", [v], {"target_memory": target}, s.span)   # (scales: E8M0)
        nv = Var(self.namer.fresh(v.name, target.value), t, s.span)
        self.emit.append(Assign(nv, Call("tile.move", [v], {"target_memory": target}, t, {}, s.span), s.span))
        return nv

    def check_path(self, src, dst, s):
        if dst in SCALE_SPACES and not self.chip.capacity.get(dst):
            raise CodegenError(f"{dst.name}: {self.chip.arch} has no MX scale buffers (MX matmuls run on "
                               f"a5)", s.span, "compile for platform='a5sim' (backend Ascend950)")
        if src != dst and (src, dst) not in self.paths:
            hint = ("only pl.matmul / pl.matmul_acc write Acc: compute into it with pl.matmul(lhs, rhs) "
                    "on Left and Right tiles" if dst == M.Acc else
                    "load the data from GM into the space you need, or move it through Mat")
            raise CodegenError(f"no data path from {src.name} to {dst.name} on {self.chip.arch}",
                               s.span, hint)


def _space(v):
    t = getattr(v, "type", None)
    return t.memory_space if isinstance(t, TileType) else None


def _set_space(v, space):
    t = v.type
    if isinstance(t, TileType) and space is not None:
        v.type = TileType(t.shape, t.dtype, space, t.memref, t.valid, t.slot)

