"""What a host orchestration computes itself: element reads of tensors (the runtime's
read_scalar), views (slices, reshapes) and host arrays. A mixin of the orchestration
emitter (pypto.codegen.orchestration)."""
from __future__ import annotations

from pypto import dtype as dt
from pypto.codegen.common import fail
from pypto.codegen.orch_values import _C_TYPE, _Val, _decode, _loc
from pypto.ir.nodes import Call, TupleExpr, Var


class HostValues:
    def read(self, e: Call, span) -> tuple[str, dt.DataType]:
        """pl.tensor.read(t, [i, ...]) on the host: the runtime answers once the tasks
        submitted so far that write the element are done. Emitted as statements before
        the one that uses the value."""
        t = self.handle(e.args[0], span)
        idx = e.args[1].items if isinstance(e.args[1], TupleExpr) else [e.args[1]]
        exprs = [f"(int64_t)({self.scalar(i, span)[0]})" for i in idx]
        d = e.type.dtype
        hint = getattr(e.args[0], "name", "tensor")
        self.out(f"// {_loc(span)}: read {hint}[{', '.join(exprs)}]")
        idx_name, bits = self.index_array(f"{hint}_at", exprs), self.cname(f"{hint}_bits")
        self.out(f"uint64_t {bits} = 0;")
        self.out(f"if (api->read_scalar(api->ctx, {t}, {len(exprs)}, {idx_name}, &{bits}) != 0) "
                 f"{self.fail_return(1)}")
        return f"({_C_TYPE[d.name]})({_decode(d, bits)})", d

    def index_array(self, hint: str, exprs: list[str]) -> str:
        """A `const int64_t name[n]` of C expressions (shapes, offsets, indices): its name."""
        name = self.cname(hint)
        self.out(f"const int64_t {name}[{len(exprs)}] = "
                 f"{{{', '.join(f'(int64_t)({x})' for x in exprs)}}};")
        return name

    def view(self, v: Var, e: Call, span):
        """pl.slice(t, shape, offsets) on the host: a view of the window, no copy."""
        base = self.handle(e.args[0], span)
        shape = [self.scalar(d, span)[0] for d in e.args[1].items]
        offs = [self.scalar(o, span)[0] for o in e.args[2].items]
        self.out(f"// {_loc(span)}: {v.name} = slice({getattr(e.args[0], 'name', '?')}, "
                 f"[{', '.join(shape)}], [{', '.join(offs)}])")
        shape_name = self.index_array(f"{v.name}_shape", shape)
        off_name = self.index_array(f"{v.name}_at", offs)
        self.host_view(v, f"api->view(api->ctx, {base}, {len(shape)}, {shape_name}, {off_name})")

    def reshape(self, v: Var, e: Call, span):
        """pl.reshape(t, shape) on the host: the same elements as another shape."""
        base = self.handle(e.args[0], span)
        shape = [self.scalar(d, span)[0] for d in e.args[1].items]
        self.out(f"// {_loc(span)}: {v.name} = reshape({getattr(e.args[0], 'name', '?')}, "
                 f"[{', '.join(shape)}])")
        shape_name = self.index_array(f"{v.name}_shape", shape)
        self.host_view(v, f"api->reshape(api->ctx, {base}, {len(shape)}, {shape_name})")

    def transpose(self, v: Var, e: Call, span):
        """pl.transpose(t, axis1, axis2) on the host: a strided view with two dims swapped."""
        base = self.handle(e.args[0], span)
        rank = len(e.args[0].type.shape)
        a1, a2 = (int(e.kwargs.get(k, d)) % rank for k, d in (("axis1", 0), ("axis2", 1)))
        self.out(f"// {_loc(span)}: {v.name} = transpose({getattr(e.args[0], 'name', '?')}, {a1}, {a2})")
        self.host_view(v, f"api->transpose(api->ctx, {base}, {a1}, {a2})")

    def host_view(self, v: Var, call: str) -> None:
        name = self.cname(v.name)
        self.out(f"const int64_t {name} = {call};")
        self.out(f"if ({name} <= 0) {self.fail_return(1)}")
        self.env[id(v)] = _Val(name, v.type)

    def array(self, v: Var, e, span):
        """A host array (pl.array.create in an orchestration): a std::array, copied when an
        element is set (the IR's arrays are values)."""
        t = v.type
        ct = f"std::array<{_C_TYPE[t.dtype.name]}, {t.extent}>"
        name = self.cname(v.name)
        if isinstance(e, Var):
            self.env[id(v)] = self.val(e, span)
            return
        if not isinstance(e, Call):
            fail(f"cannot assign {type(e).__name__} to the array {v.name!r}", span)
        self.out(f"// {_loc(span)}: {v.name} = {e.op}(...)")
        if e.op == "array.create":
            fill = "-1" if t.dtype == dt.TASK_ID else "0"     # unset task ids name no task
            self.out(f"{ct} {name};")
            self.out(f"{name}.fill({fill});")
        elif e.op == "array.update_element":
            src = self.val(e.args[0], span)
            i, _ = self.scalar(e.args[1], span)
            x, _ = self.scalar(e.args[2], span)
            self.out(f"{ct} {name} = {src.expr};")
            self.out(f"{name}[(size_t)({i})] = ({_C_TYPE[t.dtype.name]})({x});")
        else:
            fail(f"{e.op} cannot make an array in an orchestration", span)
        self.env[id(v)] = _Val(name, t)
