"""FuseCreateAssembleToSlice: in an orchestration, a tensor made by `pl.create_tensor`,
written by kernels and then assembled once into a window of another tensor,

    chunk = pl.create_tensor([4, 16], dtype=pl.FP32)
    chunk = self.compute(x, chunk)
    out = pl.assemble(out, chunk, [b, 0, 0])

is made a view of that window instead (`tensor.slice`, and a `tensor.reshape` when the
window has more dims), so the kernels write into the target directly and the assemble
only names the target: no scratch tensor, no copy. An orchestration has no copy of its
own; an assemble this pass cannot fold stays, and codegen refuses it with the reason.

Folding needs: the source's root is a create assembled exactly once, without
`atomic=`, into a tensor of the same dtype and at least its rank; the target and every
offset are known where the create stands (a parameter, an enclosing loop's variable or
carried value, or a value assigned before it)."""
from __future__ import annotations

from pypto.ir.nodes import (Assign, AtomicType, Call, Const, For, FunctionType, If, ParamDirection, Program,
                            RuntimeScope, TensorType, TupleExpr, TupleType, Var, While)
from pypto.ir.visit import walk_expr
from pypto.passes.base import index_tuple

NAME = "FuseCreateAssembleToSlice"
READS = ()
CALLEES = True      # function-local, given the signatures of the kernels it calls

_WRITES = (ParamDirection.Out, ParamDirection.InOut)


def run(prog: Program, opts) -> Program:
    funcs = {f.name: f for f in prog.functions}
    for f in prog.functions:
        if f.func_type is FunctionType.Orchestration:
            _Fuser(funcs).fuse(f)
    return prog


class _Fuser:
    def __init__(self, funcs):
        self.funcs = funcs
        self.root: dict[int, Var] = {}           # a tensor value -> the create it is
        self.tuple_roots: dict[int, list] = {}   # a kernel call's tuple -> each value's root
        self.creates: dict[int, tuple] = {}      # create var -> (its Assign, its block, visible)
        self.assembles: list[tuple[Assign, Var]] = []

    def fuse(self, f) -> None:
        self.visit(f.body, {id(p.var) for p in f.params})
        uses: dict[int, int] = {}
        for _, src in self.assembles:
            uses[id(src)] = uses.get(id(src), 0) + 1
        for s, src in self.assembles:
            if uses[id(src)] == 1 and id(src) in self.creates:
                self.fold(s, *self.creates[id(src)])

    # -- analysis: which create each tensor value is, and what is visible where
    def visit(self, body: list, visible: set[int]) -> None:
        for s in body:
            if isinstance(s, Assign):
                self.assign(s, body, visible)
                visible.add(id(s.var))
            elif isinstance(s, (For, While)):
                inner = set(visible) | {id(a.var) for a in s.iter_args}
                if isinstance(s, For):
                    inner.add(id(s.loop_var))
                for a, rv in zip(s.iter_args, s.return_vars):
                    if isinstance(a.init, Var) and id(a.init) in self.root:
                        self.root[id(a.var)] = self.root[id(rv)] = self.root[id(a.init)]
                self.visit(s.body, inner)
                visible.update(id(rv) for rv in s.return_vars)
            elif isinstance(s, If):
                self.visit(s.then_body, set(visible))
                self.visit(s.else_body or [], set(visible))
                visible.update(id(rv) for rv in s.return_vars)
            elif isinstance(s, RuntimeScope):
                self.visit(s.body, visible)      # its values stay visible after it

    def assign(self, s: Assign, block: list, visible: set[int]) -> None:
        v, e = s.var, s.value
        if isinstance(e, Var):
            if id(e) in self.root:
                self.root[id(v)] = self.root[id(e)]
            return
        if not isinstance(e, Call):
            return
        if e.op == "tensor.create":
            self.root[id(v)] = v
            self.creates[id(v)] = (s, block, frozenset(visible))
        elif e.op == "tensor.assemble" and len(e.args) == 3 and isinstance(e.args[1], Var) \
                and id(e.args[1]) in self.root:
            self.assembles.append((s, self.root[id(e.args[1])]))
        elif e.op == "tuple.get" and id(e.args[0]) in self.tuple_roots \
                and isinstance(e.args[1], Const):
            roots = self.tuple_roots[id(e.args[0])]
            if 0 <= e.args[1].value < len(roots) and roots[e.args[1].value] is not None:
                self.root[id(v)] = roots[e.args[1].value]
        elif e.callee in self.funcs:
            # a kernel returns the tensors it writes (as orchestration codegen reads it)
            callee = self.funcs[e.callee]
            written = [a for a, p in zip(e.args, callee.params)
                       if p.direction in _WRITES and isinstance(p.var.type, TensorType)]
            roots = [self.root.get(id(a)) if isinstance(a, Var) else None for a in written]
            if isinstance(v.type, TupleType) and len(roots) == len(v.type.types):
                self.tuple_roots[id(v)] = roots
            elif isinstance(v.type, TensorType) and len(roots) == 1 and roots[0] is not None:
                self.root[id(v)] = roots[0]

    # -- the rewrite
    def fold(self, asm: Assign, create: Assign, block: list, visible: frozenset) -> None:
        call = asm.value
        target, src, offsets = call.args
        if call.kwargs.get("atomic") not in (None, AtomicType.None_):
            return                   # the add into the target must stay a kernel's store
        tt, st = getattr(target, "type", None), create.var.type
        if not (isinstance(target, Var) and isinstance(tt, TensorType) and isinstance(st, TensorType)
                and isinstance(offsets, TupleExpr) and tt.dtype == st.dtype
                and len(st.shape) <= len(tt.shape) == len(offsets.items)):
            return
        needed = [x for x in walk_expr(offsets) if isinstance(x, Var)] + [target]
        if any(id(x) not in visible for x in needed):
            return
        span = create.span
        dims = create.value.args[0]
        if not isinstance(dims, TupleExpr):
            return
        pad = len(tt.shape) - len(st.shape)
        window = TensorType((1,) * pad + tuple(st.shape), st.dtype)
        window_shape = TupleExpr(list(index_tuple((1,) * pad, span).items) + list(dims.items), span)
        at = block.index(create)
        if pad:
            view = Var(f"{create.var.name}_window", window)
            block[at:at + 1] = [
                Assign(view, Call("tensor.slice", [target, window_shape, offsets], type=window,
                                  span=span), span),
                Assign(create.var, Call("tensor.reshape", [view, dims], type=st, span=span), span)]
        else:
            create.value = Call("tensor.slice", [target, window_shape, offsets], type=st, span=span)
        asm.value = target           # the data is in the target already
