"""ConvertTensorToTileOps: inside kernels, tensor ops become tile ops.

A tensor operand is loaded into a tile before its first use; `tensor.X` becomes
`tile.X` on those tiles; writing a result into a tensor (`out[:] = v`, i.e.
`tensor.assemble`) becomes a `tile.store`. A tensor-level matmul loads its operands
into Mat and moves them to Left/Right, accumulating in Acc.
"""
from __future__ import annotations

from pypto.errors import CodegenError
from pypto.ir import ops
from pypto.ir.nodes import (Assign, Call, Const, Eval, For, If, MemorySpace, Program, TensorType,
                            TupleExpr, Var)
from pypto.ir.visit import Rewriter, defs, walk
from pypto.passes.base import Namer
from pypto import dtype as dt

NAME = "ConvertTensorToTileOps"
READS = ()


def run(prog: Program, opts) -> Program:
    out = []
    for f in prog.functions:
        if f.is_kernel:
            namer = Namer({p.var.name for p in f.params} | {v.name for s in walk(f.body) for v in defs(s)})
            f = _Convert(namer).function(f)
        out.append(f)
    return Program(prog.name, out, prog.source)


def _zeros(n, span):
    return TupleExpr([Const(0, dt.INDEX, span) for _ in range(n)], span)


def _shape(shape, span):
    return TupleExpr([Const(d, dt.INDEX, span) for d in shape], span)


class _Convert(Rewriter):
    def __init__(self, namer):
        self.namer = namer
        # tile holding a tensor's value: id(var) for a computed value, (id(var), space) for a
        # load (a tensor read by both cube and vector ops is loaded into each space)
        self.tiles: dict = {}
        self.emit: list = []

    def new(self, base, op, args, kwargs, span, tag="tile"):
        t = ops.infer_type(op, args, kwargs, span)
        v = Var(self.namer.fresh(base, tag), t, span)
        self.emit.append(Assign(v, Call(op, args, kwargs, t, {}, span), span))
        return v

    def tile_of(self, v, span, space=MemorySpace.Vec):
        if not isinstance(getattr(v, "type", None), TensorType):
            return v
        have = self.tiles.get(id(v)) or self.tiles.get((id(v), space))
        if have is not None:
            return have
        t = v.type
        if any(not isinstance(d, int) for d in t.shape):
            raise CodegenError(f"tensor {v.name!r} has a dynamic shape; tensor ops on it need "
                               f"explicit tiling", span, "load fixed-size windows with pl.load in a pl.range loop")
        tile = self.new(v.name, "tile.load", [v, _zeros(len(t.shape), span), _shape(t.shape, span)],
                        {"target_memory": space}, span)
        self.tiles[(id(v), space)] = tile
        return tile

    def body(self, stmts):
        saved = dict(self.tiles)       # tiles made inside a body don't outlive it
        out = []
        for s in stmts:
            self.emit = []
            new = self.stmt(s)
            out.extend(self.emit)
            out.extend(new)
        self.tiles = saved
        return out

    def stmt(self, s):
        if isinstance(s, (For, If)):
            emit = self.emit
            new = self.default_stmt(s)
            self.emit = emit
            return [new]
        call = s.value if isinstance(s, Assign) else (s.expr if isinstance(s, Eval) else None)
        if not (isinstance(call, Call) and ops.is_tensor_op(call.op)):
            return [self.default_stmt(s)]
        span = s.span
        op = call.op.split(".", 1)[1]
        if op == "assemble":
            dst, src, offs = call.args
            tile = self.tile_of(src, span)
            st = Call("tile.store", [tile, offs, dst], {}, TensorType(dst.type.shape, dst.type.dtype), {}, span)
            return [Assign(s.var, st, span)] if isinstance(s, Assign) else [Eval(st, span)]
        if not isinstance(s, Assign):
            raise CodegenError(f"the result of {call.op} is not used", span,
                               "assign it, or write it into a tensor with out[...] = ...")
        base = s.var.name
        if op == "matmul":
            a, b = call.args
            left = self.new(base, "tile.move", [self.tile_of(a, span, MemorySpace.Mat)],
                            {"target_memory": MemorySpace.Left}, span, "left")
            right = self.new(base, "tile.move", [self.tile_of(b, span, MemorySpace.Mat)],
                             {"target_memory": MemorySpace.Right}, span, "right")
            self.tiles[id(s.var)] = self.new(base, "tile.matmul", [left, right], {}, span)
            return []
        args = [self.tile_of(a, span) for a in call.args]
        kwargs = dict(call.kwargs)
        if op in ops.ROW_REDUCE and len(args) == 1:
            t = args[0].type
            scratch = self.new(base, "tile.create", [_shape(t.shape, span)],
                               {"dtype": t.dtype, "target_memory": MemorySpace.Vec}, span, "scratch")
            args.append(scratch)
        tile_op = "tile." + op
        if tile_op not in ops.OPS:
            raise CodegenError(f"{call.op} has no tile form", span)
        self.tiles[id(s.var)] = self.new(base, tile_op, args, kwargs, span)
        return []

