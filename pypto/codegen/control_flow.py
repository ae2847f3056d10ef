"""Kernel codegen of control flow: scf.for (carried scalars as iter_args; tiles, tensors
and arrays as buffers updated in place), scf.while, and scf.if (scalar results as the if's,
tile results as a buffer each branch makes hold its value)."""
from __future__ import annotations

from pypto.codegen.common import fail
from pypto.codegen.values import _Array, _Scalar, _Tensor, _Tile, _const_int, _mlir_name, _same_storage
from pypto.ir.nodes import ArrayType, For, If, ScalarType, TensorType, TileType, Var, While, Yield


class ControlFlow:
    """Mixed into the kernel generator (pypto.codegen.pto._Kernel)."""

    def for_(self, s: For):
        span = s.span
        step = _const_int(s.step)
        if step is not None and step <= 0:
            fail(f"loop step must be positive, got {step}", span)
        lb, ub, st = self.index(s.start, span), self.index(s.stop, span), self.index(s.step, span)
        carried = []
        # carried scalars are the scf.for's iter_args (and results); tiles and tensors are
        # buffers the body updates in place
        sc = [i for i, a in enumerate(s.iter_args) if isinstance(a.var.type, ScalarType)]
        sc_ty = {i: s.iter_args[i].var.type.dtype.mlir for i in sc}
        sc_init = {i: self.scalar(s.iter_args[i].init, sc_ty[i], span).ssa for i in sc}
        sc_arg = {i: "%" + self.names.fresh(_mlir_name(s.iter_args[i].var.name)) for i in sc}
        sc_res = {i: "%" + self.names.fresh(_mlir_name(s.iter_args[i].var.name) + "_out") for i in sc}
        for i, a in enumerate(s.iter_args):
            if i in sc:
                self.env[id(a.var)] = _Scalar(sc_arg[i], sc_ty[i])
                carried.append(None)
                continue
            init = self.value_of(a.init, span) if isinstance(a.init, Var) else None
            if not isinstance(init, (_Tile, _Tensor, _Array)):
                fail(f"loop-carried value {a.var.name!r} must start from a tile or tensor variable", span)
            self.env[id(a.var)] = init
            carried.append(init)
        iv = "%" + self.names.fresh(_mlir_name(s.loop_var.name))
        self.env[id(s.loop_var)] = _Scalar(iv, "index")
        if sc:
            results = ", ".join(sc_res[i] for i in sc)
            inits = ", ".join(f"{sc_arg[i]} = {sc_init[i]}" for i in sc)
            self.emit(f"{results} = scf.for {iv} = {lb} to {ub} step {st} iter_args({inits}) -> "
                      f"({', '.join(sc_ty[i] for i in sc)}) {{", span, loc=False)
        else:
            self.emit(f"scf.for {iv} = {lb} to {ub} step {st} {{", span, loc=False)
        self.depth += 1
        self.span_stack.append(span)
        self.buffers.append({})
        body = list(s.body)
        yld = body.pop() if body and isinstance(body[-1], Yield) else None
        if any(isinstance(x, Yield) for x in body):
            fail("a yield must be the last statement of a loop body", span)
        self.block(body)
        if s.iter_args:
            if yld is None or len(yld.values) != len(s.iter_args):
                fail("a loop with iter_args must end with a yield of one value per iter_arg", span)
            for a, init, val in zip(s.iter_args, carried, yld.values):
                if init is not None:
                    self.carry(a.var, init, val, yld.span or span)
            if sc:
                vals = [self.scalar(yld.values[i], sc_ty[i], span).ssa for i in sc]
                self.emit(f"scf.yield {', '.join(vals)} : {', '.join(sc_ty[i] for i in sc)}", span,
                          loc=False)
        elif yld is not None and yld.values:
            fail("yield in a loop without iter_args", yld.span or span)
        self.buffers.pop()
        self.span_stack.pop()
        self.depth -= 1
        self.emit("}", loc=False)
        if len(s.return_vars) not in (0, len(s.iter_args)):
            fail("loop return vars do not match its iter_args", span)
        for k, (rv, init) in enumerate(zip(s.return_vars, carried)):
            self.env[id(rv)] = init if k not in sc else _Scalar(sc_res[k], sc_ty[k])

    def while_(self, s: While):
        """scf.while: the carried scalars are its arguments (before: the condition, after:
        the body, which yields their next values); tiles and tensors are buffers the body
        updates in place, as in a for loop."""
        span = s.span
        sc = [i for i, a in enumerate(s.iter_args) if isinstance(a.var.type, ScalarType)]
        tys = [s.iter_args[i].var.type.dtype.mlir for i in sc]
        inits = [self.scalar(s.iter_args[i].init, ty, span).ssa for i, ty in zip(sc, tys)]
        before = {i: "%" + self.names.fresh(_mlir_name(s.iter_args[i].var.name)) for i in sc}
        after = {i: "%" + self.names.fresh(_mlir_name(s.iter_args[i].var.name) + "_body") for i in sc}
        res = {i: "%" + self.names.fresh(_mlir_name(s.iter_args[i].var.name) + "_out") for i in sc}
        bufs = {}
        for i, a in enumerate(s.iter_args):
            if i in sc:
                continue
            init = self.value_of(a.init, span) if isinstance(a.init, Var) else None
            if not isinstance(init, (_Tile, _Tensor, _Array)):
                fail(f"loop-carried value {a.var.name!r} must start from a tile or tensor variable", span)
            self.env[id(a.var)] = bufs[i] = init
        types = f"({', '.join(tys)})"
        if sc:
            pairs = ", ".join(f"{before[i]} = {v}" for i, v in zip(sc, inits))
            self.emit(f"{', '.join(res[i] for i in sc)} = scf.while ({pairs}) : {types} -> {types} {{",
                      span, loc=False)
        else:
            self.emit("scf.while : () -> () {", span, loc=False)
        self.depth += 1
        self.span_stack.append(span)
        self.buffers.append({})
        for i, t in zip(sc, tys):              # the condition reads the before-arguments
            self.env[id(s.iter_args[i].var)] = _Scalar(before[i], t)
        cond = self.scalar(s.cond, "i1", span).ssa
        carried = f" {', '.join(before[i] for i in sc)} : {', '.join(tys)}" if sc else ""
        self.emit(f"scf.condition({cond}){carried}", span, loc=False)
        self.buffers.pop()
        self.depth -= 1
        self.emit("} do {", loc=False)
        if sc:
            self.emit("^bb0(" + ", ".join(f"{after[i]} : {t}" for i, t in zip(sc, tys)) + "):", loc=False)
        self.depth += 1
        self.buffers.append({})
        for i, t in zip(sc, tys):
            self.env[id(s.iter_args[i].var)] = _Scalar(after[i], t)
        body = list(s.body)
        yld = body.pop() if body and isinstance(body[-1], Yield) else None
        self.block(body)
        if s.iter_args and (yld is None or len(yld.values) != len(s.iter_args)):
            fail("a while loop's body ends with a yield of one value per carried value", span)
        for i, buf in bufs.items():
            self.carry(s.iter_args[i].var, buf, yld.values[i], yld.span or span)
        vals = [self.scalar(yld.values[i], t, span).ssa for i, t in zip(sc, tys)] if sc else []
        self.emit(f"scf.yield {', '.join(vals)} : {', '.join(tys)}" if vals else "scf.yield", span, loc=False)
        self.buffers.pop()
        self.span_stack.pop()
        self.depth -= 1
        self.emit("}", loc=False)
        for k, rv in enumerate(s.return_vars):
            self.env[id(rv)] = _Scalar(res[k], tys[sc.index(k)]) if k in sc else bufs[k]

    def carry(self, var, buf, value, span):
        """At a loop's yield: make the carried buffer hold `value`."""
        got = self.value_of(value, span) if isinstance(value, Var) else None
        if isinstance(buf, _Array):             # updated in place: the same array throughout
            if got is not buf:
                fail(f"loop-carried array {var.name!r} must stay the same array", span)
            return
        if isinstance(buf, _Tensor):
            if got is not buf:
                fail(f"loop-carried tensor {var.name!r} must stay the same kernel parameter", span)
            return
        if not isinstance(got, _Tile):
            fail(f"loop-carried tile {var.name!r} must be yielded a tile", span)
        if got.ssa == buf.ssa or (self.level == "level3" and _same_storage(got.tile, buf.tile)):
            return
        if got.ty != buf.ty:
            fail(f"loop-carried tile {var.name!r} changes type inside the loop", span)
        self.op("tmov", [got], buf, span)

    def if_(self, s: If):
        span = s.span
        tensors = [i for i, r in enumerate(s.return_vars) if isinstance(r.type, TensorType)]
        if tensors:                      # tensors are written in place: no scf results
            return self.tensor_results(s, tensors)
        if s.return_vars:
            return self.results_if(s)
        cond = self.scalar(s.cond, "i1", span).ssa
        self.emit(f"scf.if {cond} {{", span, loc=False)
        self.span_stack.append(span)
        self.branch(s.then_body)
        if s.else_body:
            self.emit("} else {", loc=False)
            self.branch(s.else_body)
        self.span_stack.pop()
        self.emit("}", loc=False)

    def tensor_results(self, s: If, which: list[int]):
        """An if whose results include tensors: each is the kernel parameter both branches
        wrote in place (what they yield), bound after the if; the rest as usual."""
        def strip(body):
            if body and isinstance(body[-1], Yield):
                y = body[-1]
                return body[:-1] + [Yield([v for i, v in enumerate(y.values) if i not in which], y.span)]
            return body
        rest = [r for i, r in enumerate(s.return_vars) if i not in which]
        self.if_(If(s.cond, strip(s.then_body), strip(s.else_body) if s.else_body else None, rest,
                    s.span))
        for i in which:
            got = set()
            for body in (s.then_body, s.else_body or []):
                y = body[-1] if body and isinstance(body[-1], Yield) else None
                v = y.values[i] if y is not None and i < len(y.values) else None
                got.add(id(self.value_of(v, s.span)) if isinstance(v, Var) else None)
                val = self.value_of(v, s.span) if isinstance(v, Var) else None
            if len(got) != 1 or not isinstance(val, _Tensor):
                fail(f"the branches of this if give {s.return_vars[i].name!r} different tensors", s.span,
                     "write the same tensor parameter in both branches")
            self.env[id(s.return_vars[i])] = val

    def results_if(self, s: If):
        """An if with results. Scalars are the scf.if's results, each branch ending in
        scf.yield; a tile result is a buffer allocated before the if that each branch
        makes hold its value (the planner usually gives them one buffer; else a tmov)."""
        span = s.span
        cond = self.scalar(s.cond, "i1", span).ssa
        for r in s.return_vars:
            if not isinstance(r.type, (ScalarType, TileType, ArrayType)):
                fail(f"an if in a kernel cannot yield {type(r.type).__name__} {r.name!r}", span)
        arrays = {}                     # written in place: the one array both branches hold
        bufs = {i: self.alloc(r, span) for i, r in enumerate(s.return_vars) if isinstance(r.type, TileType)}
        scalars = [i for i, r in enumerate(s.return_vars) if isinstance(r.type, ScalarType)]
        tys = [s.return_vars[i].type.dtype.mlir for i in scalars]
        names = ["%" + self.names.fresh(_mlir_name(s.return_vars[i].name)) for i in scalars]
        head = f"{', '.join(names)} = scf.if {cond} -> ({', '.join(tys)}) {{" if scalars else \
            f"scf.if {cond} {{"
        self.emit(head, span, loc=False)
        self.span_stack.append(span)
        for k, body in enumerate((s.then_body, s.else_body or [])):
            if k:
                self.emit("} else {", loc=False)
            yld = body[-1] if body and isinstance(body[-1], Yield) else None
            if yld is None or len(yld.values) != len(s.return_vars):
                fail("each branch of an if with results ends in pl.yield_ of them", span)
            self.depth += 1
            self.buffers.append({})
            self.block(body[:-1])
            for i, buf in bufs.items():
                self.carry(s.return_vars[i], buf, yld.values[i], yld.span or span)
            for i, r in enumerate(s.return_vars):
                if isinstance(r.type, ArrayType):
                    got = self.value_of(yld.values[i], span)
                    if arrays.setdefault(i, got) is not got:
                        fail(f"the branches of this if give {r.name!r} different arrays", span,
                             "write the same array in both branches")
            if scalars:
                vals = [self.scalar(yld.values[i], ty, span).ssa for i, ty in zip(scalars, tys)]
                self.emit(f"scf.yield {', '.join(vals)} : {', '.join(tys)}", span, loc=False)
            self.buffers.pop()
            self.depth -= 1
        self.span_stack.pop()
        self.emit("}", loc=False)
        for i, n, ty in zip(scalars, names, tys):
            self.env[id(s.return_vars[i])] = _Scalar(n, ty)
        for i, buf in bufs.items():
            self.env[id(s.return_vars[i])] = buf
        for i, arr in arrays.items():
            self.env[id(s.return_vars[i])] = arr

    def branch(self, stmts):
        self.depth += 1
        self.buffers.append({})
        self.block([x for x in stmts if not (isinstance(x, Yield) and not x.values)])
        self.buffers.pop()
        self.depth -= 1
