"""ConvertTensorToTileOps: inside kernels, tensor ops become tile ops.

A tensor operand is loaded into a tile before its first use; `tensor.X` becomes
`tile.X` on those tiles; writing a result into a tensor (`out[:] = v`, i.e.
`tensor.assemble`) becomes a `tile.store`; a filled tensor (`pl.full`) is a filled tile
(`tile.full`), never read from DDR. A tensor-level matmul loads its operands
into Mat and moves them to Left/Right, accumulating in Acc. A tensor value a loop
carries (or an if merges) that tensor ops compute is carried as a tile. A `pl.full`
a group reads is filled chunk by chunk inside the group's loop.

Tiling. A chain of elementwise tensor ops (binary, scalar, unary, cast, row/col
broadcasts, and row reductions), from the tensors it reads to the tensors it writes,
is one *group*. When the group on whole tensors would not fit the vector buffer (UB)
even with every result written over a dying operand, it becomes a loop over chunks
instead: each iteration loads one chunk of each input once, runs the ops on chunk
tiles and stores one chunk of each output. A chunk takes whole trailing dimensions
and a divisor of one leading dimension (rows of a 2-D tensor; several rows, or column
blocks of one row when a row alone is too large), as large as possible while the
tiles live at once in one iteration (counted without any buffer sharing) fit
`BUDGET` of UB (all of it, when no chunk fits that share), and every chunk tile keeps the 32-byte rows (or [R, 1] columns) a
Vec tile needs. A row reduction keeps whole rows; a [M, 1] / [1, N] operand is
chunked along the dimension it has. A group whose values are also used elsewhere (a
matmul, a loop carry, a return) stays whole.
"""
from __future__ import annotations

import itertools

from pypto import dtype as dt
from pypto.errors import CodegenError
from pypto.ir import ops
from pypto.ir.ops.lanes import split_point
from pypto.ir.nodes import (While, Assign, Call, Const, Eval, For, If, IterArg, MemorySpace,
                            Program, TensorType, TileType, TupleExpr, Var, Yield)
from pypto.ir.visit import Rewriter, bodies, stmt_uses, walk
from pypto.passes import comm_transfer, paged_gather
from pypto.passes.base import function_namer
from pypto.passes.tensor_chunks import (BUDGET, _add, _call_of, _computed, _emit_tiled, _numel,  # noqa: F401
                                        _plan, _shape, _zeros)

NAME = "ConvertTensorToTileOps"
READS = ("backend_type",)



def run(prog: Program, opts) -> Program:
    out = []
    for f in prog.functions:
        if f.is_kernel:
            f = _Convert(function_namer(f), opts.chip).function(f)
            _drop_unused_creates(f.body, {id(v) for x in walk(f.body) for v in stmt_uses(x)})
        out.append(f)
    return Program(prog.name, out, prog.source)


def _drop_unused_creates(body: list, used: set) -> None:
    """A pl.create_tensor the kernel never reads (one replaced by an Acc accumulator) makes
    no tile: left in, it would hold a buffer and make a cube kernel look mixed."""
    body[:] = [x for x in body if not (isinstance(x, Assign) and isinstance(x.value, Call)
                                       and x.value.op == "tile.create" and id(x.var) not in used)]
    for x in body:
        for b in bodies(x):
            _drop_unused_creates(b, used)


class _Convert(Rewriter):
    def __init__(self, namer, chip):
        self.namer = namer
        self.chip = chip
        # tile holding a tensor's value: id(var) for a computed value, (id(var), space) for a
        # load (a tensor read by both cube and vector ops is loaded into each space)
        self.tiles: dict = {}
        self.emit: list = []
        self.subst: dict[int, Var] = {}       # results of tiled groups -> the loop's results
        self.carry: list = []                 # per enclosing loop/if: which yields carry tiles
        self.views: dict[int, tuple] = {}     # a tensor.slice result -> (tensor, offsets)
        self.fresh: set[int] = set()          # tiles of pl.create_tensor nothing has written yet

    def new(self, base, op, args, kwargs, span, tag="tile"):
        if op == "tile.load":
            args = _on_fractals(args, kwargs, span)
        t = ops.infer_type(op, args, kwargs, span)
        v = Var(self.namer.fresh(base, tag), t, span)
        self.emit.append(Assign(v, Call(op, args, kwargs, t, {}, span), span))
        return v

    def expr(self, e):
        if isinstance(e, Var):
            return self.subst.get(id(e), e)
        return super().expr(e)

    def cube(self, base, acc, a, b, kwargs, span):
        """lhs @ rhs (+ acc) on the cube: 2-D operands go Mat -> Left / Right (read
        transposed when asked); with a 3-D operand, pl.batch_matmul of the Mat tiles (a
        transposed one as a 3-D transpose_view)."""
        ta, tb = bool(kwargs.get("a_trans")), bool(kwargs.get("b_trans"))
        if 3 in (len(a.type.shape), len(b.type.shape)):
            def mat(x, trans):
                t = self.tile_of(x, span, MemorySpace.Mat, trans and len(x.type.shape) == 2)
                if trans and len(x.type.shape) == 3:
                    t = self.new(base, "tile.transpose_view", [t], {}, span, "t")
                return t
            left, right = mat(a, ta), mat(b, tb)
            if acc is None:
                return self.new(base, "tile.batch_matmul", [left, right], {}, span)
            return self.new(base, "tile.batch_matmul_acc", [acc, left, right], {}, span)
        def operand(x, trans, space, tag):
            on_chip = self.tiles.get(id(x)) if trans else None
            if on_chip is not None and on_chip.type.memory_space is MemorySpace.Mat:
                # a Mat tile of this kernel (a pl.aic_gather): the cube reads it transposed
                return self.new(base, "tile.move", [on_chip], {"target_memory": space, "transpose": True},
                                span, tag)
            return self.new(base, "tile.move", [self.tile_of(x, span, MemorySpace.Mat, trans)],
                            {"target_memory": space}, span, tag)
        left = operand(a, ta, MemorySpace.Left, "left")
        right = operand(b, tb, MemorySpace.Right, "right")
        if acc is None:
            return self.new(base, "tile.matmul", [left, right], {}, span)
        return self.new(base, "tile.matmul_acc", [acc, left, right], {}, span)

    def tile_of(self, v, span, space=MemorySpace.Vec, transpose=False):
        if not isinstance(getattr(v, "type", None), TensorType):
            return v
        have = None if transpose else self.tiles.get(id(v))
        if have is not None and space is MemorySpace.Vec and _on_a_larger_box(have, v):
            # a cube result on fractals larger than the tensor (_on_fractals): the vector
            # ops work on the tensor's shape, a window of it
            if (id(v), "box") not in self.tiles:
                vec = self.new(v.name, "tile.move", [have], {"target_memory": MemorySpace.Vec}, span)
                self.tiles[(id(v), "box")] = self.new(v.name, "tile.slice", [vec, _shape(v.type.shape, span),
                                                                             _zeros(2, span)], {}, span)
            have = self.tiles[(id(v), "box")]
        have = have or self.tiles.get((id(v), space, transpose))
        if have is not None:
            return have
        if transpose and id(v) in self.tiles:
            # computed here (on the vector side): transposed there, then moved to the cube
            src = self.tiles[id(v)]
            if len(src.type.shape) != 2 or src.type.valid is not None:
                raise CodegenError(f"{v.name!r} is computed in this kernel as a "
                                   f"{len(src.type.shape)}-D or partly valid tile; a transposed "
                                   f"matmul operand computed in the kernel must be a whole 2-D tile",
                                   span, "write it to a tensor in an earlier pl.at region")
            flipped = self.new(v.name, "tile.transpose", [src], {"axis1": 0, "axis2": 1}, span, "t")
            self.tiles[(id(v), space, True)] = flipped
            return flipped
        v = self.expr(v)
        t = v.type
        if id(v) in self.views:                 # a slice: its window of the sliced tensor
            parent, offs, valid = self.views[id(v)]
            if transpose:       # the window of the tensor's transpose: offsets and shape swapped
                if id(parent) in self.tiles or len(t.shape) != 2 or valid is not None and not all(
                        isinstance(x, Const) for x in valid.items):
                    from pypto.errors import NotBuiltError
                    raise NotBuiltError(f"a transposed matmul operand that is an on-chip slice, or one "
                                        f"narrowed to a run-time extent ({v.name!r}), is not supported "
                                        f"by this pypto yet", span,
                                        "slice a tensor the kernel reads (a constant valid_shape)")
                flipped = [] if valid is None else [TupleExpr(list(reversed(valid.items)), span)]
                tile = self.new(v.name, "tile.load", [parent, TupleExpr(list(reversed(offs.items)), span),
                                                      _shape(tuple(reversed(t.shape)), span)] + flipped,
                                {"target_memory": space, "transpose": True}, span)
                self.tiles[(id(v), space, transpose)] = tile
                return tile
            if id(parent) in self.tiles and valid is None:      # a window of a kernel-local tensor
                tile = self.new(v.name, "tile.slice", [self.tiles[id(parent)], _shape(t.shape, span), offs],
                                {}, span)
                self.tiles[(id(v), space, transpose)] = tile
                return tile
            kw = {"target_memory": space}
            args = [parent, offs, _shape(t.shape, span)] + ([valid] if valid is not None else [])
            tile = self.new(v.name, "tile.load", args, kw, span)
            self.tiles[(id(v), space, transpose)] = tile
            return tile
        if t.valid is not None:                 # only its valid part is read
            if None in t.valid:
                from pypto.errors import NotBuiltError
                raise NotBuiltError(f"tensor {v.name!r} has a valid extent known only at run time; "
                                    f"reading it is not supported by this pypto yet", span,
                                    "narrow it with pl.set_validshape in the kernel that reads it")
            valid = TupleExpr([Const(x, dt.INDEX, span) for x in t.valid], span)
            tile = self.new(v.name, "tile.load", [v, _zeros(len(t.shape), span), _shape(t.shape, span),
                                                  valid], {"target_memory": space}, span)
            self.tiles[(id(v), space, transpose)] = tile
            return tile
        if any(not isinstance(d, int) for d in t.shape):
            raise CodegenError(f"tensor {v.name!r} has a dynamic shape; tensor ops on it need "
                               f"explicit tiling", span, "load fixed-size windows with pl.load in a pl.range loop")
        shape = tuple(reversed(t.shape)) if transpose else t.shape
        kw = {"target_memory": space, **({"transpose": True} if transpose else {})}
        tile = self.new(v.name, "tile.load", [v, _zeros(len(shape), span), _shape(shape, span)], kw, span)
        self.tiles[(id(v), space, transpose)] = tile
        return tile

    def tile_dtype(self, v):
        """The dtype a value has as a tile (a matmul result is its accumulator's)."""
        t = self.tiles.get(id(v))
        return t.type.dtype if t is not None else v.type.dtype

    def body(self, stmts):
        saved = dict(self.tiles)       # tiles made inside a body don't outlive it
        groups = _plan(stmts, self)
        skip = {id(s) for g in groups for s in g.stmts}
        last = {id(g.stmts[-1]): g for g in groups}
        out = []
        for s in stmts:
            self.emit = []
            if id(s) in last:
                new = _emit_tiled(self, last[id(s)])
            elif id(s) in skip:
                continue
            else:
                new = self.stmt(s)
            out.extend(self.emit)
            out.extend(new)
        self.tiles = saved
        return out

    def stmt(self, s):
        if isinstance(s, (For, While)):
            return [self.for_(s)]
        if isinstance(s, If):
            return [self.if_(s)]
        if isinstance(s, Yield) and self.carry and self.carry[-1] is not None:
            which = self.carry[-1]
            return [Yield([self.tile_of(v, s.span) if i in which else self.expr(v)
                           for i, v in enumerate(s.values)], s.span)]
        call = _call_of(s)
        if isinstance(call, Call) and call.op in ("comm.put", "comm.get"):
            comm_transfer.lower(self, s, call)         # staged through Vec tiles
            if isinstance(s, Assign):
                self.subst[id(s.var)] = self.expr(call.args[0])
            return []
        if isinstance(call, Call) and call.op == "tensor.full" and isinstance(s, Assign):
            # a filled tensor inside a kernel is a filled tile (pl.full -> tile.full)
            self.tiles[id(s.var)] = self.new(s.var.name, "tile.full", [self.expr(call.args[0])],
                                             dict(call.kwargs), s.span)
            return []
        if isinstance(call, Call) and call.op == "tensor.random" and isinstance(s, Assign):
            self.tiles[id(s.var)] = self.new(s.var.name, "tile.random", [self.expr(a) for a in call.args],
                                             dict(call.kwargs), s.span)
            return []
        if isinstance(call, Call) and call.op == "tensor.ci" and isinstance(s, Assign):
            # an index ramp inside a kernel is a ramp tile (pl.arange -> tile.ci)
            self.tiles[id(s.var)] = self.new(s.var.name, "tile.ci", [self.expr(a) for a in call.args],
                                             dict(call.kwargs), s.span)
            return []
        if isinstance(call, Call) and call.op in ("tile.scatter_update", "tensor.scatter_update") \
                and isinstance(s, Assign):
            rows = self.scatter_update(s.var.name, call, s.span)
            if call.op == "tile.scatter_update":
                return [Assign(s.var, self.expr(rows), s.span)]
            self.tiles[id(s.var)] = rows
            return []
        if isinstance(call, Call) and call.op == "tensor.create" and isinstance(s, Assign):
            # a tensor a kernel creates for itself lives on chip: a Vec tile
            t = s.var.type
            self.tiles[id(s.var)] = self.new(s.var.name, "tile.create", [_shape(t.shape, s.span)],
                                             {"dtype": t.dtype, "target_memory": MemorySpace.Vec}, s.span,
                                             "local")
            self.fresh.add(id(self.tiles[id(s.var)]))
            return []
        if isinstance(call, Call) and call.op == "tuple.get" and isinstance(s, Assign) \
                and id(call.args[0]) in self.tiles:      # one result of a tile op with several
            item = ops.tuple_get(self.tiles[id(call.args[0])], call.args[1].value, s.span)
            self.tiles[id(s.var)] = v = Var(self.namer.fresh(s.var.name, "tile"), item.type, s.span)
            return [Assign(v, item, s.span)]
        if not (isinstance(call, Call) and ops.is_tensor_op(call.op)):
            return [self.default_stmt(s)]
        span = s.span
        op = call.op.split(".", 1)[1]
        if op == "slice":                       # a view: loads and stores read its window
            if not isinstance(s, Assign):
                return []
            base, _shape_arg, offs = call.args[:3]
            base = self.expr(base)
            offs = [self.expr(o) for o in offs.items]
            if id(base) in self.views:          # a slice of a slice: offsets add up
                parent, outer, _valid = self.views[id(base)]
                offs = [_add(a, b, span) for a, b in zip(outer.items, offs)]
                base = parent
            self.views[id(s.var)] = (base, TupleExpr(offs, span), None)
            return []
        if op == "set_validshape":             # the same data, only a part of it valid
            if not isinstance(s, Assign):
                return []
            base = self.expr(call.args[0])
            valid = TupleExpr([self.expr(x) for x in call.args[1:3]], span)
            if id(base) in self.views:
                parent, offs, _old = self.views[id(base)]
            else:
                parent, offs = base, _zeros(len(base.type.shape), span)
            self.views[id(s.var)] = (parent, offs, valid)
            return []
        if op == "gather" and isinstance(s, Assign):
            self.tiles[id(s.var)] = self.gather(s.var.name, call, span)
            return []
        if op == "create_l1" and isinstance(s, Assign):        # an on-chip (Mat) accumulator
            t = s.var.type
            self.tiles[id(s.var)] = self.new(s.var.name, "tile.create", [_shape(t.shape, span)],
                                             {"dtype": t.dtype, "target_memory": MemorySpace.Mat}, span, "l1")
            return []
        if op == "gather_row" and isinstance(s, Assign):       # a GM window into it, in place
            acc = self.tiles.get(id(self.expr(call.args[0])))
            if acc is None:
                raise CodegenError(f"pl.gather_row writes into {call.args[0].name!r}, which is not an "
                                   f"on-chip accumulator of this kernel", span,
                                   "make it with pl.create_l1 (or pl.paged_gather) in the same kernel")
            args = [acc] + [self.expr(a) for a in call.args[1:]]
            self.tiles[id(s.var)] = self.new(s.var.name, "tile.gather_row", args, dict(call.kwargs), span)
            return []
        if op == "paged_gather" and isinstance(s, Assign):
            self.tiles[id(s.var)] = paged_gather.lower(self, s, call)
            return []
        if op == "gather_compare" and isinstance(s, Assign):   # both results of one tgather
            src = self.tile_of(call.args[0], span)
            rows, cols = src.type.shape           # a byte per element, rows padded to 32 bytes
            tmp = self.new(s.var.name, "tile.create", [_shape((rows, -(-cols // 32) * 32), span)],
                           {"dtype": dt.UINT8, "target_memory": MemorySpace.Vec}, span, "scratch")
            self.tiles[id(s.var)] = self.new(s.var.name, "tile.gather_compare",
                                             [src, self.expr(call.args[1]), tmp], dict(call.kwargs), span)
            return []
        if op in ("cmp", "cmps") and isinstance(s, Assign):   # a mask, then 1 / 0 by it
            a = self.tile_of(call.args[0], span)
            b = self.tile_of(call.args[1], span) if op == "cmp" else self.expr(call.args[1])
            mask = self.new(s.var.name, f"tile.{op}", [a, b], dict(call.kwargs), span, "mask")
            shape, d = _shape(a.type.shape, span), a.type.dtype
            one = self.new(s.var.name, "tile.full", [shape], {"dtype": d, "value": 1 if not d.is_float else 1.0},
                           span, "one")
            zero = self.new(s.var.name, "tile.full", [shape], {"dtype": d, "value": 0 if not d.is_float else 0.0},
                            span, "zero")
            self.tiles[id(s.var)] = self.new(s.var.name, "tile.sel", [mask, one, zero], {}, span)
            return []
        if op.startswith("mrgsort_") and op.endswith("way") and isinstance(s, Assign):
            srcs = [self.tile_of(a, span) for a in call.args]     # the merge's scratch: its shape
            shape = _shape(s.var.type.shape, span)
            tmp = self.new(s.var.name, "tile.create", [shape],
                           {"dtype": s.var.type.dtype, "target_memory": MemorySpace.Vec}, span, "scratch")
            self.tiles[id(s.var)] = self.new(s.var.name, "tile." + op, srcs + [tmp], dict(call.kwargs), span)
            return []
        if op in ("scatter", "scatter_mask") and isinstance(s, Assign):
            self.tiles[id(s.var)] = self.scatter(s.var.name, op, call, span)
            return []
        if op == "expand_clone":           # the source stored at each place it repeats
            src, dst = call.args
            tile, dst = self.tile_of(src, span), self.expr(dst)
            reps = [range(d) if s == 1 and d > 1 else range(1) for s, d in zip(src.type.shape, dst.type.shape)]
            out = []
            spots = list(itertools.product(*reps))
            for k, at in enumerate(spots):
                offs = TupleExpr([Const(x, dt.INDEX, span) for x in at], span)
                st = Call("tile.store", [tile, offs, dst], {}, TensorType(dst.type.shape, dst.type.dtype, window=dst.type.window), {}, span)
                last = k == len(spots) - 1
                v = s.var if last and isinstance(s, Assign) else Var(self.namer.fresh(dst.name, "fill"), st.type, span)
                out.append(Assign(v, st, span))
                dst = v
            return out
        if op == "assemble":
            dst, src, offs = call.args
            dst = self.expr(dst)
            local = id(dst) in self.tiles and isinstance(s, Assign) and "atomic" not in call.kwargs
            raw = self.tiles.get(id(self.expr(src)))
            # a cube result on a larger box is stored from Acc as it is (its valid part)
            tile = raw if raw is not None and not local and _on_a_larger_box(raw, self.expr(src)) \
                else self.tile_of(src, span)
            if local:
                # into a kernel-local tensor (a tile): the window written on chip
                self.tiles[id(s.var)] = self.new(s.var.name, "tile.assemble", [self.tiles[id(dst)], tile,
                                                                               self.expr(offs)], {}, span)
                return []
            if id(dst) in self.views:
                from pypto.errors import NotBuiltError
                raise NotBuiltError(f"writing into a slice ({dst.name!r}) is not supported by this "
                                    f"pypto yet", span, "write into the sliced tensor at the window's "
                                                        "offsets: t[i:i+m, j:j+n] = value")
            if tile.type.dtype != dst.type.dtype and tile.type.memory_space is not MemorySpace.Acc:
                raise CodegenError(f"assembling {tile.type.dtype} {src.name!r} into {dst.type.dtype} "
                                   f"{dst.name!r}: only a matmul result is converted on its way to "
                                   f"GM", span, f"pl.cast it to {dst.type.dtype!r} first")
            kw = {"atomic": call.kwargs["atomic"]} if "atomic" in call.kwargs else {}
            st = Call("tile.store", [tile, self.expr(offs), dst], kw,
                      TensorType(dst.type.shape, dst.type.dtype, window=dst.type.window), {}, span)
            return [Assign(s.var, st, span)] if isinstance(s, Assign) else [Eval(st, span)]
        if not isinstance(s, Assign):
            raise CodegenError(f"the result of {call.op} is not used", span,
                               "assign it, or write it into a tensor with out[...] = ...")
        base = s.var.name
        if op == "matmul":
            a, b = call.args
            da, db = self.tile_dtype(a), self.tile_dtype(b)
            if da != db:
                acc, other = (a, b) if da != a.type.dtype else (b, a)
                what = "the inner matmul's result" if "__" in acc.name else f"matmul result {acc.name!r}"
                raise CodegenError(
                    f"{what} is accumulated in {da if acc is a else db} and cannot feed a "
                    f"matmul with {other.type.dtype} {other.name!r} in the same kernel",
                    span, "use fp32 operands for the chain, or write the first result to a tensor "
                          "(pl.create_tensor) and pl.cast it in its own pl.at region")
            self.tiles[id(s.var)] = self.cube(base, None, a, b, call.kwargs, span)
            return []
        if op == "matmul_acc" and isinstance(getattr(call.args[0], "type", None), TensorType):
            acc, a, b = call.args[:3]
            have = self.tiles.get(id(self.expr(acc)))
            if have is None or have.type.memory_space is not MemorySpace.Acc:
                raise CodegenError(f"pl.matmul_acc accumulates into {acc.name!r}, which is not a "
                                   f"pl.matmul result of this kernel", span,
                                   "start the accumulation with pl.matmul in the same kernel")
            self.tiles[id(s.var)] = self.cube(base, have, a, b, call.kwargs, span)
            return []
        # (pl.aiv_shard of a cube result crosses as its Acc tile itself, not a re-boxed Vec copy)
        src = self.expr(call.args[0]) if op == "aiv_shard" else None
        shard = src is not None and id(src) in self.tiles
        args = [self.tile_of(a, span, MemorySpace.Acc if shard else MemorySpace.Vec) for a in call.args]
        if op in ops.BINARY and len(args) == 2 and args[0].type.dtype != args[1].type.dtype:
            # tensor ops promote float dtypes; tile ops compute in one: cast the narrower
            want = s.var.type.dtype
            args = [a if a.type.dtype == want else
                    self.new(base, "tile.cast", [a], {"dtype": want}, span, "promoted") for a in args]
        kwargs = dict(call.kwargs)
        if op == "rsqrt" and kwargs.get("high_precision") and len(args) == 1:   # the precise form's scratch
            t = args[0].type
            args.append(self.new(base, "tile.create", [_shape(t.shape, span)],
                                 {"dtype": t.dtype, "target_memory": MemorySpace.Vec}, span, "scratch"))
        if op in ops.ROW_REDUCE and len(args) == 1:
            t = args[0].type
            scratch = self.new(base, "tile.create", [_shape(t.shape, span)],
                               {"dtype": t.dtype, "target_memory": MemorySpace.Vec}, span, "scratch")
            args.append(scratch)
        if shard and kwargs.get("split") and "half" not in kwargs and _on_a_larger_box(args[0], src):
            # on a larger fractal box than its tensor: the lanes divide the tensor's extent
            kwargs["half"] = split_point(src.type, kwargs["split"], kwargs)
        tile_op = "tile." + op
        if tile_op not in ops.OPS:
            raise CodegenError(f"{call.op} has no tile form", span)
        self.tiles[id(s.var)] = self.new(base, tile_op, args, kwargs, span)
        return []

    def gather(self, base, call, span):
        """A mask gather is tile.gather_mask; torch.gather along a dim is tile.gather at
        the flat positions the index names: row * C + index along dim 1, index * C + col
        along dim 0 (rows and cols from a ramp over the index's shape)."""
        src = self.tile_of(call.args[0], span)
        if "mask_pattern" in call.kwargs:
            return self.new(base, "tile.gather_mask", [src], dict(call.kwargs), span)
        idx = self.tile_of(call.args[1], span)
        if len(src.type.shape) > 2:
            return self.gather_nd(base, src, idx, call.kwargs["dim"] % len(src.type.shape), span)
        (r, k), c = idx.type.shape, src.type.shape[1]
        if call.kwargs["dim"] % 2 == 1:
            flat = self.row_major(base, idx, c, span)
        else:
            i32 = lambda n: Const(n, dt.INT32, span)      # noqa: E731
            ramp = self.new(base, "tile.ci", [i32(0), _shape((r, k), span)], {"dtype": dt.INT32}, span,
                            "pos")
            cols = self.new(base, "tile.rems", [ramp, i32(k)], {}, span, "col")
            at = self.new(base, "tile.muls", [idx, i32(c)], {}, span, "rowbase")
            flat = self.new(base, "tile.add", [at, cols], {}, span, "flat")
        tmp = self.new(base, "tile.create", [_shape((r, k), span)],
                       {"dtype": dt.INT32, "target_memory": MemorySpace.Vec}, span, "scratch")
        return self.new(base, "tile.gather", [src, flat, tmp], {}, span)

    def gather_nd(self, base, src, idx, d, span):
        """torch.gather along dim d of a rank-3+ tensor: tile.gather at the flat positions
        idx * stride(d) + the other coordinates of each index element times their strides
        (the coordinates from a ramp over the index's shape), on both tiles seen 2-D."""
        shape_i, shape_s = idx.type.shape, src.type.shape
        two_d = lambda t: _shape((_numel(t[:-1]), t[-1]), span)       # noqa: E731
        src2 = self.new(base, "tile.reshape", [src, two_d(shape_s)], {}, span, "rows")
        idx2 = self.new(base, "tile.reshape", [idx, two_d(shape_i)], {}, span, "rows")
        i32 = lambda n: Const(n, dt.INT32, span)                      # noqa: E731
        rk = (_numel(shape_i[:-1]), shape_i[-1])
        pos = self.new(base, "tile.ci", [i32(0), _shape(rk, span)], {"dtype": dt.INT32}, span, "pos")
        flat = None
        for a in range(len(shape_i)):
            s_stride, i_stride = _numel(shape_s[a + 1:]), _numel(shape_i[a + 1:])
            if a == d:
                term = idx2
            else:
                coord = self.new(base, "tile.divs", [pos, i32(i_stride)], {}, span, "at") if i_stride > 1 else pos
                if a > 0:
                    coord = self.new(base, "tile.rems", [coord, i32(shape_i[a])], {}, span, "at")
                term = coord
            if s_stride > 1:
                term = self.new(base, "tile.muls", [term, i32(s_stride)], {}, span, "off")
            flat = term if flat is None else self.new(base, "tile.add", [flat, term], {}, span, "flat")
        tmp = self.new(base, "tile.create", [_shape(rk, span)],
                       {"dtype": dt.INT32, "target_memory": MemorySpace.Vec}, span, "scratch")
        picked = self.new(base, "tile.gather", [src2, flat, tmp], {}, span)
        return self.new(base, "tile.reshape", [picked, _shape(shape_i, span)], {}, span)

    def row_major(self, base, idx, c, span):
        """row * c + idx[row, j]: positions in a tile of c columns of each row's indices
        (computed in the indices' integer dtype)."""
        (r, k), d = idx.type.shape, idx.type.dtype
        num = lambda n: Const(n, d, span)                 # noqa: E731
        ramp = self.new(base, "tile.ci", [num(0), _shape((r, k), span)], {"dtype": d}, span, "pos")
        rows = self.new(base, "tile.divs", [ramp, num(k)], {}, span, "row")
        at = self.new(base, "tile.muls", [rows, num(c)], {}, span, "rowbase")
        return self.new(base, "tile.add", [at, idx], {}, span, "flat")

    def scatter_update(self, base, call, span):
        """Rows of x replaced: tile.scatter at flat positions index.flat[k] * d + c of each
        src element (k, c), computed in the index width the element width takes."""
        x, _dim, idx, src = call.args
        x, idx, src = (self.tile_of(self.expr(a), span) for a in (x, idx, src))
        (n, d), w = src.type.shape, x.type.dtype.nbytes
        it = dt.INT32 if w == 4 else dt.INT16
        num = lambda v: Const(v, it, span)                # noqa: E731
        col = self.new(base, "tile.reshape", [idx, _shape((n, 1), span)], {}, span, "rows")
        if idx.type.dtype != it:                           # (a column: any width is a legal tile)
            col = self.new(base, "tile.cast", [col], {"dtype": it}, span, "rows")
        rowbase = self.new(base, "tile.muls", [col, num(d)], {}, span, "rowbase")
        ramp = self.new(base, "tile.ci", [num(0), _shape((n, d), span)], {"dtype": it}, span, "pos")
        cols = self.new(base, "tile.rems", [ramp, num(d)], {}, span, "col")
        flat = self.new(base, "tile.row_expand_add", [cols, rowbase], {}, span, "flat")
        return self.new(base, "tile.scatter", [x, src, flat], {}, span)

    def scatter(self, base, op, call, span):
        """torch.scatter along the last dim: tile.scatter at row-major positions. The
        mask form: tile.scatter_mask (zeros elsewhere, as the hardware writes) blended
        with dst where the pattern does not mark a column (tile.sel on a column mask)."""
        if op == "scatter":
            dst = self.tile_of(call.args[0], span)
            idx = self.tile_of(call.args[1], span)
            vals = self.tile_of(call.args[2], span)
            flat = self.row_major(base, idx, dst.type.shape[1], span)
            return self.new(base, "tile.scatter", [dst, vals, flat], {}, span)
        vals = self.tile_of(call.args[0], span)
        dst = self.tile_of(call.args[1], span)
        pattern = call.kwargs["mask_pattern"]
        spread = self.new(base, "tile.scatter_mask", [dst, vals], {"mask_pattern": pattern}, span, "spread")
        stride, first = pattern.stride_offset
        if stride == 1:
            return spread
        r, c = dst.type.shape
        i32 = lambda n: Const(n, dt.INT32, span)          # noqa: E731
        ramp = self.new(base, "tile.ci", [i32(0), _shape((r, c), span)], {"dtype": dt.INT32}, span, "pos")
        col = self.new(base, "tile.rems", [ramp, i32(stride)], {}, span, "col")
        marked = self.new(base, "tile.cmps", [col, i32(first)], {"cmp_type": 0}, span, "marked")
        return self.new(base, "tile.sel", [marked, spread, dst], {}, span)

    # ------------------------------------------------------------ carried tensor values
    def for_(self, s: For) -> For:
        y = s.body[-1] if s.body and isinstance(s.body[-1], Yield) else None
        computed = _computed(s.body)
        which = set()
        iter_args = []
        for i, a in enumerate(s.iter_args):
            yv = y.values[i] if y is not None and i < len(y.values) else None
            if isinstance(a.var.type, TensorType) and (
                    id(a.init) in self.tiles or (yv is not None and id(yv) in computed)):
                init = self.tile_of(a.init, s.span)
                # a matmul result carried as the loop's accumulator stays in Acc
                space = MemorySpace.Acc if getattr(init.type, "memory_space", None) is MemorySpace.Acc \
                    else None
                if id(init) in self.fresh and _accumulates(s.body, a.var):
                    # a fresh pl.create_tensor carried as the loop's matmul accumulator (the
                    # first iteration sets it with pl.matmul): it lives in Acc from the start
                    t = a.var.type
                    space = MemorySpace.Acc
                    init = self.new(a.var.name, "tile.create", [_shape(t.shape, s.span)],
                                    {"dtype": t.dtype, "target_memory": space}, s.span, "acc")
                tv = Var(self.namer.fresh(a.var.name, "tile"),
                         TileType(tuple(a.var.type.shape), a.var.type.dtype, space), a.var.span)
                self.tiles[id(a.var)] = tv
                iter_args.append(IterArg(tv, init))
                which.add(i)
            else:
                iter_args.append(IterArg(a.var, self.expr(a.init)))
        emit = self.emit
        self.carry.append(which or None)
        body = self.body(s.body)
        self.carry.pop()
        self.emit = emit
        rets = []
        for i, r in enumerate(s.return_vars):
            if i in which:
                rv = Var(self.namer.fresh(r.name, "tile"), iter_args[i].var.type, r.span)
                self.tiles[id(r)] = rv
                rets.append(rv)
            else:
                rets.append(r)
        if isinstance(s, While):
            return While(self.expr(s.cond), body, iter_args, rets, s.span)
        return For(s.loop_var, self.expr(s.start), self.expr(s.stop), self.expr(s.step), body,
                   iter_args, rets, s.kind, s.span, s.stage, dict(s.attrs))

    def if_(self, s: If) -> If:
        which = set()
        for b in (s.then_body, s.else_body or []):
            computed = _computed(b)
            if b and isinstance(b[-1], Yield):
                for i, v in enumerate(b[-1].values):
                    if isinstance(getattr(v, "type", None), TensorType) and \
                            (id(v) in computed or id(v) in self.tiles):
                        which.add(i)
        cond = self.expr(s.cond)
        emit = self.emit
        self.carry.append(which or None)
        then = self.body(s.then_body)
        other = self.body(s.else_body) if s.else_body else None
        self.carry.pop()
        self.emit = emit
        rets = []
        for i, r in enumerate(s.return_vars):
            if i in which:
                rv = Var(self.namer.fresh(r.name, "tile"), _tile_type(r.type), r.span)
                self.tiles[id(r)] = rv
                rets.append(rv)
            else:
                rets.append(r)
        return If(cond, then, other, rets, s.span)


def _accumulates(body, v) -> bool:
    """Whether the loop body accumulates a matmul into carried value v."""
    return any(isinstance(x, Assign) and isinstance(x.value, Call) and x.value.op == "tensor.matmul_acc"
               and x.value.args and x.value.args[0] is v for x in walk(body))


def _tile_type(t: TensorType) -> TileType:
    return TileType(tuple(t.shape), t.dtype, None)


# ============================================================================ tiling


def _on_fractals(args: list, kwargs: dict, span) -> list:
    """A Mat tile is whole 16 x 16 fractals: a 2-D window whose extents are not (the one
    row of a decode step, 17 rows) is loaded into the next box that is, with only the
    window valid -- the cube multiplies the valid parts."""
    if kwargs.get("target_memory") is not MemorySpace.Mat or len(args[2].items) != 2:
        return args
    shape = [getattr(c, "value", None) for c in args[2].items]
    if not all(isinstance(d, int) for d in shape):
        return args
    box = [-(-d // 16) * 16 for d in shape]
    if box == shape:
        return args
    valid = args[3] if len(args) > 3 else _shape(tuple(shape), span)
    return [args[0], args[1], _shape(tuple(box), span), valid]


def _on_a_larger_box(tile, v) -> bool:
    t = getattr(v, "type", None)
    return (isinstance(t, TensorType) and len(t.shape) == 2 and tile.type.memory_space is MemorySpace.Acc
            and tuple(tile.type.shape) != tuple(t.shape) and all(isinstance(d, int) for d in t.shape))
