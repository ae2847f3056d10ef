"""ExpandMixedKernel: an InCore kernel becomes AIC (cube) or AIV (vector) from the
memory spaces its tiles use; one that needs both becomes a Group -- a mixed kernel,
launched as one AIC and its AIV(s) together.

A Group keeps one body. `halves` projects it on each core: tiles stay with the core of
their memory space (Mat/Left/Right/Acc/Bias: cube; Vec: vector), scalar work and control
flow go to both, and a `tile.move` from one core's space to the other's (Acc -> Vec,
Vec -> Mat) becomes a push into the group's pipe on one side and a pop on the other.
Both halves run the same control flow, so pushes and pops meet in program order. A
tensor one core stores and the other then loads is fenced the same way (mixed_fence).
"""
from __future__ import annotations

from pypto import dtype as dt
from pypto.errors import CodegenError, NotBuiltError
from pypto.ir.nodes import (CUBE, CUBE_SPACES, VECTOR, Assign, Call, Const, Eval, For, Function, FunctionType,
                            HandleType, If, IterArg, Program, PtrType, Return, TensorType, TileType, Var, While,
                            Yield, derived_level_role, side_of_space)
from pypto.ir.ops.lanes import CROSSINGS, REGION_ATTR, split_point
from pypto.ir.visit import Substitute, defs, stmt_exprs, vars_used, walk, walk_expr
from pypto.passes.mixed_fence import fence
from pypto.passes.vector_split import Halver, axis

NAME = "ExpandMixedKernel"
READS = ()



_CORE_OF = {"aic": CUBE, "aiv": VECTOR}


def run(prog: Program, opts) -> Program:
    return Program(prog.name, [_classify(f) if f.func_type is FunctionType.InCore else f
                               for f in prog.functions], prog.source)


def _classify(f: Function) -> Function:
    cube, vec = None, None
    for s in walk(f.body):
        for v in defs(s):
            t = v.type
            if isinstance(t, TileType) and t.memory_space is not None:
                if t.memory_space in CUBE_SPACES:
                    cube = cube or s
                else:
                    vec = vec or s
    if cube and vec:
        ftype = FunctionType.Group
    else:
        ftype = FunctionType.AIC if cube else FunctionType.AIV
    level, role = derived_level_role(ftype)
    body = fence(f.body) if ftype is FunctionType.Group else f.body
    attrs = dict(f.attrs)
    if ftype is not FunctionType.AIC and any(
            isinstance(c, Call) and REGION_ATTR in c.attrs for s in walk(f.body) for c in _calls(s)):
        attrs["aiv_lanes"] = 2           # a pl.split_aiv region: both AIVs run, each its lane
        if attrs.get("split"):
            raise CodegenError(f"kernel {f.name!r} has pl.split_aiv regions and pl.split: a region "
                               f"divides its work between the lanes itself", f.span,
                               "drop optimizations=[pl.split(...)] from the kernel")
    out = Function(f.name, f.params, f.return_types, body, ftype, level, role, attrs, f.span)
    if ftype is FunctionType.Group:
        halves(out)          # refuse here, at the user's line, what cannot be split
    elif f.attrs.get("split") and cube:
        raise NotBuiltError(f"pl.split on kernel {f.name!r}, which has only cube work: it splits "
                            f"vector work over the AIVs of a core group", f.span,
                            "drop optimizations=[pl.split(...)]")
    elif f.attrs.get("split"):
        split_vector(out)
    return out


def _lane_extents(sent: TileType, got: TileType, mode: int, span, half: int | None = None) -> list:
    """The valid extents a lane pops of a partial tile the cube sends split (its part of
    the sent valid extent on the split axis, from the split point `half` -- the box's
    middle by default -- known with the lane index): [] when static."""
    if got.valid is None or None not in got.valid:
        return []
    ax = axis(mode)
    ext = [Const(v, dt.INDEX, span) for v in sent.valid_shape]
    ext[ax] = Halver(mode, span).localize(ext[ax], sent.shape[ax], span, half)
    return ext


def crossing(s) -> tuple | None:
    """(from side, to side) of a statement that moves a tile between the cube and the
    vector cores of a Group -- a tile.move or a lane crossing, which become a push and a
    pop; None for anything else."""
    if not (isinstance(s, Assign) and isinstance(s.var.type, TileType) and isinstance(s.value, Call)
            and s.value.op in ("tile.move",) + CROSSINGS):
        return None
    src, dst = _side(s.value.args[0]), side_of_space(s.var.type.memory_space)
    return (src, dst) if src is not None and src != dst else None


def _calls(s):
    for e in stmt_exprs(s):
        yield from (x for x in walk_expr(e) if isinstance(x, Call))


# ----------------------------------------------------------------------------- the halves

def _side(v) -> str | None:
    """The core a tile belongs to (a prefetch handle: the vector core's, whose UB holds the
    SDMA engine's scratch); None for anything else."""
    t = getattr(v, "type", None)
    if isinstance(t, HandleType):
        return VECTOR
    return side_of_space(t.memory_space) if isinstance(t, TileType) else None


def halves(f: Function) -> tuple[Function, Function]:
    """The cube (AIC) and vector (AIV) functions of a Group, named <f>_aic and <f>_aiv;
    the pipe ops are `tile.tpush` (kwargs to=the other side) and `tile.tpop` (from=)."""
    return _Half(f, CUBE).function(f.name + "_aic"), _Half(f, VECTOR).function(f.name + "_aiv")


def split_vector(f: Function) -> Function:
    """An AIV kernel under pl.split, as each of the two AIVs of its core group runs it:
    on half of every tile."""
    return _Half(f, VECTOR).function(f.name)


class _Half:
    def __init__(self, f: Function, side: str):
        self.f = f
        self.side = side
        self.subst: dict[int, object] = {}
        self.sub = Substitute(self.subst)      # (reads subst as it grows)
        self.owner: dict[int, str] = {}        # id(scalar var) -> the side it was read from
        self.split = int(f.attrs.get("split", 0))
        # the vector half of a split Group: each of two AIVs holds half of every tile
        self.halver = Halver(self.split, f.span) if self.split and side == VECTOR else None

    def new(self, v: Var) -> Var:
        """A tile this half defines: itself, or (split vector half) its half."""
        return self.halver.var(v, self.subst) if self.halver else v

    def function(self, name: str) -> Function:
        f = self.f
        ftype = FunctionType.AIC if self.side == CUBE else FunctionType.AIV
        level, role = derived_level_role(ftype)
        return Function(name, f.params, f.return_types, self.body(f.body), ftype,
                        level, role, dict(f.attrs), f.span)

    # expressions with the stores of the other side replaced by their target tensors
    def e(self, x):
        return self.sub.expr(x) if self.subst else x

    def check_uses(self, exprs, s):
        for x in exprs:
            for v in vars_used(x):
                other = self.owner.get(id(v))
                if other is not None and other != self.side:
                    raise CodegenError(
                        f"{v.name!r} is read from a {other} tile and used by {self.side} work: a "
                        f"mixed kernel passes tiles between its cores, not scalars", s.span,
                        "compute the value on the core that uses it, or pass it in as a scalar")

    def body(self, stmts):
        out = []
        for s in stmts:
            out.extend(self.stmt(s))
        return out

    def stmt(self, s):
        if isinstance(s, Assign):
            return self.assign(s)
        if isinstance(s, Eval):
            side = self.eval_side(s.expr)
            if side not in (None, self.side):
                return []
            self.check_uses([s.expr], s)
            return [Eval(self.store_window(s.expr), s.span)]
        if isinstance(s, Return):
            return [Return([self.e(v) for v in s.values], s.span)]
        if isinstance(s, Yield):
            return [Yield([self.e(v) for v in s.values], s.span)]
        if isinstance(s, (For, While)):
            return [self.loop(s)]
        if isinstance(s, If):
            return [self.branch(s)]
        raise CodegenError(f"{type(s).__name__} in a mixed kernel", s.span)

    def keep(self, v: Var) -> bool:
        side = _side(v)
        return side is None or side == self.side

    def assign(self, s: Assign):
        v, val = s.var, s.value
        t = v.type
        if isinstance(t, TileType):
            sides = crossing(s)
            if sides is not None:
                src, dst = sides
                # (a region's crossing: its own mode; a split kernel's move: the kernel's)
                mode = int(val.kwargs.get("split", self.split))
                pipe = {"split": mode} if mode else {}
                h = split_point(val.args[0].type, mode, val.kwargs) if val.op == "tile.aiv_shard" else None
                if h is not None and 2 * h != val.args[0].type.shape[axis(mode)]:
                    pipe["half"] = h         # the lanes' split point is not the box's middle
                if self.side == src:
                    sent = self.e(val.args[0])
                    if self.halver and sent.type == val.args[0].type:
                        raise NotBuiltError(f"{val.args[0].name!r} crosses to the cube whole, but "
                                            f"under pl.split each AIV holds half of it", s.span,
                                            "drop pl.split")
                    return [Eval(Call("tile.tpush", [sent], {"to": dst, **pipe}, None, {},
                                      val.span), s.span)]
                nv = self.new(v)
                extents = _lane_extents(val.args[0].type, nv.type, mode, val.span, pipe.get("half"))
                return [Assign(nv, Call("tile.tpop", extents, {"from": src, **pipe}, nv.type, {},
                                        val.span), s.span)]
            if side_of_space(t.memory_space) != self.side:
                return []
            self.check_uses([val], s)
            if self.halver and isinstance(val, Call):
                ax = self.halver.reshape(val.args[0], t, s.span) if val.op == "tile.reshape" \
                    else self.halver.check(val, s.span)
                nv = self.halver.var(v, self.subst, ax)
                c = self.e(val)
                if c.op == "tile.reshape" and nv is not v:
                    c = self.halver.shape_arg(c, nv.type, 1)
                elif c.op == "tile.load":
                    c = self.halver.window(c, t, 1, 2)
                elif c.op in ("tile.tpop_from_aic", "tile.set_validshape"):
                    c = self.halver.local_valid(c, t, 0 if c.op == "tile.tpop_from_aic" else 1)
                elif c.op in ("tile.create", "tile.full") and nv is not v:
                    c = self.halver.shape_arg(c, nv.type)
                return [Assign(nv, Call(c.op, c.args, c.kwargs, nv.type, c.attrs, c.span), s.span)]
            return [Assign(v, self.e(val), s.span)]
        if isinstance(t, HandleType):
            return [Assign(v, self.e(val), s.span)] if self.side == VECTOR else []
        if isinstance(t, PtrType):
            space = val.kwargs.get("target_memory") if isinstance(val, Call) else None
            if side_of_space(space) not in (None, self.side):
                return []
            return [Assign(v, self.e(val), s.span)]
        if isinstance(t, TensorType) and isinstance(val, Call) and val.op.startswith("tile."):
            side = self.eval_side(val)
            if side not in (None, self.side):
                # the other core writes the tensor: here it is the tensor written into
                target = next((a for a in reversed(val.args) if isinstance(getattr(a, "type", None),
                                                                            TensorType)), None)
                if target is None:
                    raise CodegenError(f"{val.op} in a mixed kernel: no tensor it writes into",
                                       s.span)
                self.subst[id(v)] = self.e(target)
                return []
            return [Assign(v, self.store_window(val), s.span)]
        reads = {_side(x) for x in vars_used(val)} - {None} if isinstance(val, Call) else set()
        if len(reads) == 1:                  # a scalar read out of one core's tile
            side = reads.pop()
            self.owner[id(v)] = side
            if side != self.side:
                return []
            if self.halver:
                raise NotBuiltError(f"{v.name!r} is read from a vector tile that pl.split halves: "
                                    f"each AIV would read another value", s.span, "drop pl.split")
        self.check_uses([val], s)
        return [Assign(v, self.e(val), s.span)]

    def store_window(self, c):
        """A store (or other tile effect) of this half, its window moved to this AIV's half."""
        full = c.args[0].type if isinstance(c, Call) and c.args else None
        c = self.e(c)
        if self.halver and isinstance(c, Call):
            self.halver.check(c, c.span)
            if c.op == "tile.store":
                c = self.halver.window(c, full, 1, None)
        return c

    def eval_side(self, x) -> str | None:
        """The core an effect (a store, a scatter) runs on: that of the tile it reads, or
        the one a cross-core event names (core_type="aic" / "aiv")."""
        if isinstance(x, Call) and x.kwargs.get("core_type") in _CORE_OF:
            return _CORE_OF[x.kwargs["core_type"]]
        if isinstance(x, Call):
            for a in x.args:
                side = _side(a)
                if side is not None:
                    return side
        return None

    def loop(self, s):
        keep = [self.keep(a.var) for a in s.iter_args]
        self.check_uses(stmt_exprs(s), s)
        args = [IterArg(self.new(a.var), self.e(a.init)) for a, k in zip(s.iter_args, keep) if k]
        body = self.filter_yield(self.body(s.body), keep)
        rets = [self.new(r) for r, k in zip(s.return_vars, keep) if k]
        if isinstance(s, For):
            return For(s.loop_var, self.e(s.start), self.e(s.stop), self.e(s.step), body, args, rets,
                       s.kind, s.span, s.stage, dict(s.attrs))
        return While(self.e(s.cond), body, args, rets, s.span)

    def branch(self, s):
        keep = [self.keep(r) for r in s.return_vars]
        self.check_uses([s.cond], s)
        then = self.filter_yield(self.body(s.then_body), keep)
        other = self.filter_yield(self.body(s.else_body), keep) if s.else_body else None
        return If(self.e(s.cond), then, other, [self.new(r) for r, k in zip(s.return_vars, keep) if k],
                  s.span)

    @staticmethod
    def filter_yield(body, keep):
        if body and isinstance(body[-1], Yield):
            y = body[-1]
            body = body[:-1] + [Yield([x for x, k in zip(y.values, keep) if k], y.span)]
        return body
