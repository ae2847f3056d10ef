"""Orchestration codegen: an Orchestration function of a post-pass Program → C++17 host
code that submits its kernels through `PyptoRuntimeApi` (pypto/include/pypto_abi.h).

The generated file exports

    extern "C" int32_t pypto_orchestration_entry(const PyptoRuntimeApi* api,
                                                 const int64_t* tensors,
                                                 const uint64_t* scalars);

and talks to the runtime only through `api`. Conventions:

- The function's tensor parameters are `tensors[0..T)` (handles, in parameter order among
  the tensors), its scalar parameters `scalars[0..S)` (bit patterns in parameter order
  among the scalars: fp32 in the low 32 bits, fp16/bf16 in the low 16, integers
  sign-extended, bool 0/1), decoded by dtype.
- `tensor.create(shape, dtype=...)` → `api->alloc_tensor`; a handle <= 0 means the runtime
  refused (the entry returns 1).
- A kernel call (`Assign(v, Call("@k", args, attrs={"arg_directions": [...]}))` or `Eval`)
  → one `api->submit(ctx, func_id, n, handles, dirs, ns, scalars)`: the tensor arguments
  in order with their directions (`arg_directions`, or the callee's parameter directions
  when absent: In → input, Out → output_existing, InOut → inout), then the scalar
  arguments as bit patterns in the callee's parameter dtypes. A failed submit makes the
  entry return 2. The result of a call IS the tensor argument it writes (the callee
  parameter its `return` names, else its only written tensor argument): later uses of
  the result use that handle. No dependencies are written: the runtime derives them.
- `RuntimeScope` → `api->scope_begin(ctx, manual)` / `api->scope_end(ctx)` (an early
  return closes the open scopes first); `For` → a C++ `for` (ascending, step > 0); `If` →
  `if`/`else`; loop-carried values and if results are mutable locals assigned at the
  yield. `Return` → `return 0`.
- Every statement is preceded by a comment naming its source line.

Equal input gives byte-identical text. Anything else raises CodegenError with a span.
"""
from __future__ import annotations

from pypto import dtype as dt
from pypto.codegen.common import Names, fail, scalar_bits
from pypto.codegen.orch_host import HostValues
from pypto.codegen.orch_tasks import TaskGraph
from pypto.codegen.orch_values import (PRELUDE, _C_TYPE, _Val, _c_float, _c_int, _cast, _decode,
                                       _loc)
from pypto.ir.nodes import (While, ArgDir, ArrayType, Assign, BinOp, Call, Const, Eval, For,
                            FunctionType, If,
                            InCoreScope, ParamDirection, Program, Return, RuntimeScope,
                            ScalarType, TensorType, TupleExpr, TupleType, Var, Yield)

ENTRY = "pypto_orchestration_entry"

_DIR = {ArgDir.input: "PYPTO_DIR_INPUT", ArgDir.output: "PYPTO_DIR_OUTPUT",
        ArgDir.inout: "PYPTO_DIR_INOUT", ArgDir.output_existing: "PYPTO_DIR_OUTPUT_EXISTING",
        ArgDir.no_dep: "PYPTO_DIR_NO_DEP"}
_WRITES = (ArgDir.output, ArgDir.inout, ArgDir.output_existing)
_PARAM_DIR = {ParamDirection.In: ArgDir.input, ParamDirection.Out: ArgDir.output_existing,
              ParamDirection.InOut: ArgDir.inout}
_CMP = ("==", "!=", "<", "<=", ">", ">=")
_CPP_KEYWORDS = set("""alignas alignof and and_eq asm auto bitand bitor bool break case catch
char char8_t char16_t char32_t class compl concept const consteval constexpr constinit const_cast
continue co_await co_return co_yield decltype default delete do double dynamic_cast else enum
explicit export extern false float for friend goto if inline int long mutable namespace new
noexcept not not_eq nullptr operator or or_eq private protected public register reinterpret_cast
requires return short signed sizeof static static_assert static_cast struct switch template this
thread_local throw true try typedef typeid typename union unsigned using virtual void volatile
wchar_t while xor xor_eq main api tensors scalars int8_t int16_t int32_t int64_t uint8_t uint16_t
uint32_t uint64_t NULL""".split())


def generate_orchestration(program: Program, name: str, kernel_ids: dict[str, int]) -> str:
    """The C++ text of orchestration function `name`; `kernel_ids` maps kernel name →
    the func_id the runtime knows it by."""
    f = program.get(name)
    if f is None:
        fail(f"no function named {name!r} in program {program.name!r}", None)
    if f.func_type is not FunctionType.Orchestration:
        fail(f"function {name!r} is {f.func_type.value}, not an Orchestration", f.span)
    return _Orch(program, f, dict(kernel_ids)).generate()


class _Orch(HostValues, TaskGraph):
    def __init__(self, program: Program, func, kernel_ids):
        self.program = program
        self.f = func
        self.kernel_ids = kernel_ids
        self.names = Names(_CPP_KEYWORDS | {"args", "dirs", "scalar_args", "deps"})
        self.env: dict[int, _Val] = {}
        self.lines: list[str] = []
        self.indent = 1
        self.scopes = 0           # runtime scopes open at this point
        self.init_tasks()

    # ------------------------------------------------------------------ helpers
    def out(self, text: str = ""):
        self.lines.append(("    " * self.indent + text) if text else "")

    def cname(self, hint: str) -> str:
        s = "".join(ch if (ch.isascii() and (ch.isalnum() or ch == "_")) else "_" for ch in hint)
        if not s or s[0].isdigit():
            s = "v_" + s
        if s.startswith("pypto_") or s.startswith("PYPTO_"):
            s = "u_" + s
        return self.names.fresh(s)

    def val(self, e, span) -> _Val:
        if isinstance(e, Var):
            v = self.env.get(id(e))
            if v is None:
                fail(f"{e.name!r} is used before it is defined", span)
            return v
        fail(f"expected a variable, got {type(e).__name__}", span)

    def handle(self, e, span) -> str:
        v = self.val(e, span)
        if v.unknown:
            fail(v.unknown, span, "a kernel returns the tensors it writes (Out/InOut parameters)")
        if v.tuple_of is not None:
            fail(f"{e.name!r} holds several kernel results; use the tensors the kernel wrote", span)
        if not isinstance(v.type, TensorType):
            fail(f"{e.name!r} is not a tensor", span)
        return v.expr

    # ------------------------------------------------------------------ scalars
    def scalar(self, e, span) -> tuple[str, dt.DataType]:
        """A C expression for a scalar IR expression, and its dtype."""
        if isinstance(e, Const):
            if isinstance(e.value, bool) or e.dtype is dt.BOOL:
                return ("true" if e.value else "false"), dt.BOOL
            if e.dtype.is_float:
                return _c_float(float(e.value)), e.dtype
            return _c_int(int(e.value)), e.dtype
        if isinstance(e, Var):
            v = self.val(e, span)
            if not isinstance(v.type, ScalarType):
                fail(f"{e.name!r} is not a scalar", span)
            return v.expr, v.type.dtype
        if isinstance(e, BinOp):
            a, ta = self.scalar(e.lhs, span)
            b, tb = self.scalar(e.rhs, span)
            ct = _C_TYPE[e.dtype.name]
            if e.op in _CMP:
                return f"({a} {e.op} {b})", dt.BOOL
            if e.op in ("+", "-", "*"):
                return f"({ct})({a} {e.op} {b})", e.dtype
            if e.op == "/":
                if not e.dtype.is_float:
                    fail("true division '/' of integers in an orchestration; use //", span)
                return f"(({ct}){a} / ({ct}){b})", e.dtype
            if e.op in ("//", "%"):
                if e.dtype.is_float:
                    fail(f"floating-point {e.op} is not supported in an orchestration", span)
                fn = "pypto_floordiv" if e.op == "//" else "pypto_floormod"
                return f"({ct}){fn}({a}, {b})", e.dtype
            if e.op in ("min", "max"):
                return f"pypto_{e.op}<{ct}>({a}, {b})", e.dtype
            if e.op in ("<<", ">>", "&", "|", "^") and not e.dtype.is_float:
                return f"({ct})({a} {e.op} {b})", e.dtype
            fail(f"scalar operator {e.op!r} is not supported in an orchestration", span)
        if isinstance(e, Call) and e.op == "scalar.cast":
            a, _ = self.scalar(e.args[0], span)
            d = e.type.dtype
            if d is dt.BOOL:
                return f"(({a}) != 0)", d
            return f"({_C_TYPE[d.name]})({a})", d
        if isinstance(e, Call) and e.op == "tensor.read":
            return self.read(e, span)
        if isinstance(e, Call) and e.op == "system.task_id":
            return "pypto_last_task", dt.TASK_ID
        if isinstance(e, Call) and e.op == "array.get_element":
            arr = self.val(e.args[0], span)
            i, _ = self.scalar(e.args[1], span)
            return f"{arr.expr}[(size_t)({i})]", arr.type.dtype
        if isinstance(e, Call) and e.op == "tensor.dim":     # a dynamic extent, run time
            t = self.handle(e.args[0], span)
            axis = e.args[1].value
            d = e.args[0].type.shape[axis]
            if isinstance(d, int):
                return _c_int(d), dt.INDEX
            ext = self.cname(f"{getattr(e.args[0], 'name', 't')}_dim{axis}")
            self.out(f"const int64_t {ext} = api->tensor_dim(api->ctx, {t}, {axis});")
            self.out(f"if ({ext} < 0) {self.fail_return(1)}")
            return ext, dt.INDEX
        what = e.op if isinstance(e, Call) else type(e).__name__
        fail(f"cannot use {what} as a scalar in an orchestration", span)

    def bits(self, e, want: dt.DataType, span) -> str:
        """The uint64 bit pattern of scalar `e` as a `want` value."""
        if isinstance(e, Const):
            return f"UINT64_C(0x{scalar_bits(e.value, want):X})"
        expr, _ = self.scalar(e, span)
        if want.name == "FP32":
            return f"pypto_bits_f32((float)({expr}))"
        if want.name == "FP16":
            return f"pypto_bits_f16((float)({expr}))"
        if want.name == "BF16":
            return f"pypto_bits_bf16((float)({expr}))"
        if want.name == "BOOL":
            return f"(uint64_t)(({expr}) ? 1 : 0)"
        if want.name.startswith("UINT"):
            return f"(uint64_t)({_C_TYPE[want.name]})({expr})"
        return f"pypto_bits_int((int64_t)({_C_TYPE[want.name]})({expr}))"

    # ------------------------------------------------------------------ driver
    def generate(self) -> str:
        f = self.f
        head = [f"// Generated by pypto: host orchestration `{f.name}` of program `{self.program.name}`"
                + (f" ({self.program.source})" if self.program.source else "") + ".",
                "// It submits kernels through PyptoRuntimeApi only; the runtime derives the",
                "// dependencies between tasks from the tensors they read and write.",
                "#include <stdint.h>",
                "#include <string.h>",
                "",
                '#include "pypto_abi.h"']
        used = _used_vars(f.body)
        self.lines = []
        nt = ns = 0
        self.out(f"// parameters ({_loc(f.span)})")
        for p in f.params:
            v, t = p.var, p.var.type
            if isinstance(t, TensorType):
                name = self.cname(v.name)
                shape = ", ".join(str(d) for d in t.shape)
                self.out(f"const int64_t {name} = tensors[{nt}];  // {t.dtype}[{shape}] "
                         f"{p.direction.value}")
                nt += 1
            elif isinstance(t, ScalarType):
                name = self.cname(v.name)
                self.out(f"const {_C_TYPE[t.dtype.name]} {name} = {_decode(t.dtype, f'scalars[{ns}]')};"
                         f"  // {t.dtype}")
                ns += 1
            else:
                fail(f"orchestration parameter {v.name!r} must be a tensor or a scalar", f.span)
            self.env[id(v)] = _Val(name, t)
            if id(v) not in used:
                self.out(f"(void){name};")
        if nt == 0:
            self.out("(void)tensors;")
        if ns == 0:
            self.out("(void)scalars;")
        self.out("int64_t pypto_last_task = -1;  // the task the latest launch submitted")
        self.out("(void)pypto_last_task;")
        ended = self.block(f.body)
        if not ended:
            self.out("return 0;")
        body = self.lines
        sig = (f'extern "C" int32_t {ENTRY}(const PyptoRuntimeApi* api, const int64_t* tensors,\n'
               f"{' ' * (len(ENTRY) + 19)}const uint64_t* scalars) {{")
        # the C++ headers only when the body uses them: parsing <vector> is most of the
        # build of a small orchestration
        std = [f"#include <{h}>" for h in ("array", "vector") if any(f"std::{h}<" in ln for ln in body)]
        if std:
            at = head.index('#include "pypto_abi.h"')
            head[at:at] = [*std, ""]
        return "\n".join(head) + "\n" + PRELUDE + "\n" + sig + "\n" + "\n".join(body) + "\n}\n"

    def block(self, stmts) -> bool:
        """Emit statements; True when the block ended with a return."""
        for i, s in enumerate(stmts):
            if isinstance(s, Yield):
                if i != len(stmts) - 1:
                    fail("a yield must be the last statement of its body", s.span)
                return False
            if self.stmt(s):
                if i != len(stmts) - 1:
                    fail("statements after a return", stmts[i + 1].span)
                return True
        return False

    def stmt(self, s) -> bool:
        """Emit one statement; True when it returns from the entry."""
        span = getattr(s, "span", None)
        if isinstance(s, Assign):
            self.assign(s)
        elif isinstance(s, Eval):
            c = s.expr
            if isinstance(c, Call) and self.system_statement(c, span):
                return False
            if not (isinstance(c, Call) and c.callee):
                what = c.op if isinstance(c, Call) else type(c).__name__
                fail(f"cannot generate orchestration code for the expression statement {what}", span)
            self.out(f"// {_loc(span)}: {self.describe(c)}")
            self.submit(c, span)
        elif isinstance(s, For):
            self.for_(s)
        elif isinstance(s, While):
            self.while_(s)
        elif isinstance(s, If):
            self.if_(s)
        elif isinstance(s, RuntimeScope):
            self.out(f"// {_loc(span)}: with pl.scope({'manual' if s.manual else ''})")
            self.out(f"api->scope_begin(api->ctx, {1 if s.manual else 0});")
            self.scopes += 1
            if s.manual:
                self.open_manual(s.body)
            ended = self.block(s.body)
            if s.manual:
                self.close_manual()
            self.scopes -= 1
            if ended:
                return True
            self.out("api->scope_end(api->ctx);")
        elif isinstance(s, Return):
            self.out(f"// {_loc(span)}: return")
            self.out("return 0;" if self.scopes == 0 else f"return pypto_leave(api, {self.scopes}, 0);")
            return True
        elif isinstance(s, InCoreScope):
            fail("a pl.at region left in the orchestration", span,
                 "run OutlineIncoreScopes before codegen")
        else:
            fail(f"cannot generate orchestration code for a {type(s).__name__} statement", span)
        return False

    def fail_return(self, code: int) -> str:
        return f"return {code};" if self.scopes == 0 else f"return pypto_leave(api, {self.scopes}, {code});"

    def describe(self, c: Call) -> str:
        parts = []
        for a in c.args:
            if isinstance(a, Var):
                parts.append(a.name)
            elif isinstance(a, Const):
                parts.append(repr(a.value))
            else:
                parts.append("<expr>")
        return f"{c.callee or c.op}({', '.join(parts)})"

    # ------------------------------------------------------------------ assignments
    def assign(self, s: Assign):
        v, e, span = s.var, s.value, s.span
        if isinstance(e, Var):
            src = self.val(e, span)
            self.env[id(v)] = src
            return
        if isinstance(e, Call) and e.op == "system.task_dummy":
            self.env[id(v)] = _Val(self.dummy(e, span, v.name), v.type)
            return
        if isinstance(v.type, ArrayType):
            return self.array(v, e, span)
        if isinstance(v.type, ScalarType):
            expr, _ = self.scalar(e, span)
            name = self.cname(v.name)
            self.out(f"// {_loc(span)}: {v.name}")
            self.out(f"const {_C_TYPE[v.type.dtype.name]} {name} = {expr};")
            self.env[id(v)] = _Val(name, v.type)
            return
        if not isinstance(e, Call):
            fail(f"cannot assign {type(e).__name__} to {v.name!r} in an orchestration", span)
        if e.op == "tensor.create":
            return self.create(v, e, span)
        if e.op == "tensor.slice":
            return self.view(v, e, span)
        if e.op == "tensor.reshape":
            return self.reshape(v, e, span)
        if e.op == "tensor.transpose":
            return self.transpose(v, e, span)
        if e.op == "tensor.assemble":
            fail(f"pl.assemble into {getattr(e.args[0], 'name', 'a tensor')!r} in an orchestration: "
                 f"an orchestration copies no data, and this assemble could not be folded into "
                 f"its source (only a pl.create_tensor written by kernels and assembled once, "
                 f"into a tensor known where it is created, is)", span,
                 "create the source where the target and offsets are known, assemble it once; or "
                 "write the window from the kernel (pass pl.slice(target, shape, offsets) as its "
                 "output, or assemble inside the pl.at region)")
        if e.op == "tuple.get":              # one of the tensors a kernel call returned
            src = self.val(e.args[0], span)
            if src.tuple_of is None or not isinstance(e.args[1], Const) \
                    or not -len(src.tuple_of) <= e.args[1].value < len(src.tuple_of):
                fail(f"{e.args[0].name!r} does not hold the value {v.name!r} reads", span)
            self.env[id(v)] = _Val(src.tuple_of[e.args[1].value], v.type)
            return
        if e.callee:
            self.out(f"// {_loc(span)}: {v.name} = {self.describe(e)}")
            self.env[id(v)] = self.submit(e, span)
            return
        fail(f"{e.op} cannot run in an orchestration", span,
             "tensor computations belong in a pl.at(level=pl.Level.CORE_GROUP) region (a kernel)")

    def create(self, v: Var, e: Call, span):
        if not isinstance(v.type, TensorType):
            fail(f"tensor.create must produce a tensor, {v.name!r} is not", span)
        dtype = e.kwargs.get("dtype", v.type.dtype)
        if not isinstance(dtype, dt.DataType):
            fail("tensor.create needs dtype=pl.<DTYPE>", span)
        shape = e.args[0] if e.args else None
        if not isinstance(shape, TupleExpr) or not shape.items:
            fail("tensor.create([dims...], dtype=...) expected", span)
        if len(shape.items) > 5:
            fail(f"a tensor has at most 5 dims, got {len(shape.items)}", span)
        dims = []
        for d in shape.items:
            expr, _ = self.scalar(d, span)
            dims.append(expr if isinstance(d, Const) else f"(int64_t)({expr})")
        name = self.cname(v.name)
        shape_name = self.cname(f"{v.name}_shape")
        self.out(f"// {_loc(span)}: {v.name} = tensor.create([{', '.join(dims)}], {dtype})")
        self.out(f"const int64_t {shape_name}[{len(dims)}] = {{{', '.join(dims)}}};")
        self.out(f"const int64_t {name} = api->alloc_tensor(api->ctx, PYPTO_{dtype.name}, "
                 f"{len(dims)}, {shape_name});")
        self.out(f"if ({name} <= 0) {self.fail_return(1)}")
        self.env[id(v)] = _Val(name, v.type)

    # ------------------------------------------------------------------ kernel calls
    def submit(self, c: Call, span) -> _Val:
        callee = self.program.get(c.callee)
        if callee is None:
            fail(f"call of unknown function {c.callee!r}", span)
        if not callee.is_kernel:
            fail(f"{c.callee!r} is {callee.func_type.value}; an orchestration calls only kernels "
                 "(InCore/AIC/AIV)", span)
        if c.callee not in self.kernel_ids:
            fail(f"kernel {c.callee!r} has no func_id", span)
        if len(c.args) != len(callee.params):
            fail(f"{c.callee} takes {len(callee.params)} arguments, got {len(c.args)}", span)
        dirs = c.attrs.get("arg_directions")
        if dirs is not None and len(dirs) != len(c.args):
            fail(f"arg_directions has {len(dirs)} entries for {len(c.args)} arguments", span)
        handles, hdirs, scal, written = [], [], [], []
        dumps = set(c.attrs.get("dump_args", ()))      # pl.submit(..., dumps=[...])
        for i, (a, p) in enumerate(zip(c.args, callee.params)):
            if isinstance(p.var.type, TensorType):
                h = self.handle(a, span)
                d = dirs[i] if dirs is not None else _PARAM_DIR[p.direction]
                if d not in _DIR:
                    fail(f"argument {i} of {c.callee} is a tensor but its direction is {d}", span)
                handles.append(h)
                dump = i in dumps or id(a) in self.dump_tagged
                hdirs.append(_DIR[d] + (" | PYPTO_DIR_DUMP" if dump else ""))
                if d in _WRITES:
                    written.append((i, h))
            elif isinstance(p.var.type, ScalarType):
                if dirs is not None and dirs[i] is not ArgDir.scalar:
                    fail(f"argument {i} of {c.callee} is a scalar but its direction is {dirs[i]}", span)
                scal.append(self.bits(a, p.var.type.dtype, span))
            else:
                fail(f"parameter {p.var.name!r} of {c.callee} is neither tensor nor scalar", span)
        fid = self.kernel_ids[c.callee]
        self.out("{")
        self.indent += 1
        targ, darg, sarg = "nullptr", "nullptr", "nullptr"
        if handles:
            self.out(f"const int64_t args[{len(handles)}] = {{{', '.join(handles)}}};")
            self.out(f"const int32_t dirs[{len(hdirs)}] = {{{', '.join(hdirs)}}};")
            targ, darg = "args", "dirs"
        if scal:
            self.out(f"const uint64_t scalar_args[{len(scal)}] = {{{', '.join(scal)}}};")
            sarg = "scalar_args"
        self.launch(c, callee, fid, len(handles), targ, darg, len(scal), sarg)
        for i, _ in written:           # a value the launch writes is a new one: not tagged
            self.dump_tagged.discard(id(c.args[i]))
        self.indent -= 1
        self.out("}")
        return self.result(c, callee, written, span)

    def result(self, c: Call, callee, written, span) -> _Val:
        """What the call's value is: the tensor argument(s) the kernel writes and returns."""
        ret_params = _returned_params(callee)
        if ret_params is not None:
            handles = [self.handle(c.args[i], span) for i in ret_params]
        elif len(written) == 1 or len(callee.return_types) == len(written):
            handles = [h for _, h in written]
        else:
            handles = []
        n = len(callee.return_types)
        if n == 1 and len(handles) == 1:
            return _Val(handles[0], callee.return_types[0])
        if n == len(handles):
            return _Val("", TupleType(tuple(callee.return_types)), tuple_of=handles)
        if n == 0:
            return _Val("", None, tuple_of=[])
        return _Val("", callee.return_types[0] if n == 1 else None,
                    unknown=f"cannot tell which tensor argument the call of {c.callee} at "
                            f"{_loc(span)} returns")

    # ------------------------------------------------------------------ control flow
    def carried(self, vars_inits, span) -> list[str]:
        """Declare a mutable local per carried value; returns their names."""
        names = []
        for v, init in vars_inits:
            t = v.type
            name = self.cname(v.name)
            if isinstance(t, TensorType):
                init_expr = self.handle(init, span) if isinstance(init, Var) else None
                if init_expr is None:
                    fail(f"loop-carried tensor {v.name!r} must start from a tensor variable", span)
                self.out(f"int64_t {name} = {init_expr};")
            elif isinstance(t, ScalarType):
                ct = _C_TYPE[t.dtype.name]
                expr, _ = self.scalar(init, span)
                self.out(f"{ct} {name} = ({ct})({expr});")
            elif isinstance(t, ArrayType):
                self.out(f"std::array<{_C_TYPE[t.dtype.name]}, {t.extent}> {name} = "
                         f"{self.val(init, span).expr};")
            else:
                fail(f"cannot carry {v.name!r} of type {type(t).__name__} in an orchestration", span)
            self.env[id(v)] = _Val(name, t)
            names.append(name)
        return names

    def assign_carried(self, names, vars_, values, span):
        if len(values) != len(names):
            fail(f"yield of {len(values)} values for {len(names)} carried values", span)
        for name, v, e in zip(names, vars_, values):
            if isinstance(v.type, TensorType):
                expr = self.handle(e, span)
            elif isinstance(v.type, ArrayType):
                expr = self.val(e, span).expr
            else:
                expr, _ = self.scalar(e, span)
            if expr != name:
                self.out(f"{name} = {expr};")

    def for_(self, s: For):
        span = s.span
        step = s.step
        if isinstance(step, Const) and (not isinstance(step.value, int) or step.value <= 0):
            fail(f"loop step must be a positive integer, got {step.value!r}", span)
        lv = s.loop_var
        lt = lv.type.dtype if isinstance(lv.type, ScalarType) else dt.INDEX
        ct = _C_TYPE[lt.name]
        start, _ = self.scalar(s.start, span)
        stop, _ = self.scalar(s.stop, span)
        stp, _ = self.scalar(step, span)
        self.out(f"// {_loc(span)}: for {lv.name} in range(...)")
        names = self.carried([(a.var, a.init) for a in s.iter_args], span)
        stop_name = self.cname(f"{lv.name}_stop")
        self.out(f"const {ct} {stop_name} = {_cast(ct, stop, s.stop)};")
        i = self.cname(lv.name)
        self.env[id(lv)] = _Val(i, ScalarType(lt))
        self.out(f"for ({ct} {i} = {_cast(ct, start, s.start)}; {i} < {stop_name}; "
                 f"{i} += {_cast(ct, stp, step)}) {{")
        self.indent += 1
        self.loop_body(s, names)

    def loop_body(self, s, names):
        """A loop's body (the loop's head already written): the carried values assigned
        from its yield, the loop closed, its results bound to the carried variables."""
        span = s.span
        body = list(s.body)
        yld = body[-1] if body and isinstance(body[-1], Yield) else None
        if self.block(body):
            fail("return inside a loop of an orchestration is not supported", span)
        if s.iter_args:
            if yld is None:
                fail("a loop with carried values must end with a yield", span)
            self.assign_carried(names, [a.var for a in s.iter_args], yld.values, yld.span or span)
        self.indent -= 1
        self.out("}")
        if s.return_vars and len(s.return_vars) != len(names):
            fail("loop return vars do not match its iter_args", span)
        for rv, a in zip(s.return_vars, s.iter_args):
            self.env[id(rv)] = self.env[id(a.var)]

    def while_(self, s: While):
        """A C++ while loop; the carried values are variables the body assigns."""
        span = s.span
        self.out(f"// {_loc(span)}: while")
        names = self.carried([(a.var, a.init) for a in s.iter_args], span)
        self.out("while (true) {")
        self.indent += 1
        cond, _ = self.scalar(s.cond, span)      # (evaluated on each trip, in the loop)
        self.out(f"if (!({cond})) break;")
        self.loop_body(s, names)

    def if_(self, s: If):
        span = s.span
        cond, _ = self.scalar(s.cond, span)
        self.out(f"// {_loc(span)}: if")
        names = self.declare_results(s, span)
        self.out(f"if ({cond}) {{")
        self.branch(s.then_body, names, s.return_vars, span)
        if s.else_body:
            self.out("} else {")
            self.branch(s.else_body, names, s.return_vars, span)
        elif s.return_vars:
            fail("an if with results needs an else branch", span)
        self.out("}")

    def declare_results(self, s: If, span) -> list[str]:
        names = []
        for v in s.return_vars:
            name = self.cname(v.name)
            if isinstance(v.type, TensorType):
                self.out(f"int64_t {name} = 0;")
            elif isinstance(v.type, ScalarType):
                ct = _C_TYPE[v.type.dtype.name]
                self.out(f"{ct} {name} = {ct}();")
            elif isinstance(v.type, ArrayType):
                self.out(f"std::array<{_C_TYPE[v.type.dtype.name]}, {v.type.extent}> {name}{{}};")
            else:
                fail(f"cannot carry {v.name!r} in an orchestration", span)
            self.env[id(v)] = _Val(name, v.type)
            names.append(name)
        return names

    def branch(self, stmts, names, rvars, span):
        self.indent += 1
        body = list(stmts)
        yld = body[-1] if body and isinstance(body[-1], Yield) else None
        ended = self.block(body)
        if rvars and not ended:
            if yld is None:
                fail("each branch of an if with results must end with a yield", span)
            self.assign_carried(names, rvars, yld.values, yld.span or span)
        self.indent -= 1


# ----------------------------------------------------------------------------- helpers
def _used_vars(body) -> set[int]:
    from pypto.ir.visit import stmt_exprs, vars_used, walk
    used = set()
    for s in walk(body):
        for e in stmt_exprs(s):
            for v in vars_used(e):
                used.add(id(v))
    return used


def _returned_params(callee) -> list[int] | None:
    """Which parameter each value of the callee's return is (following tile.store
    aliases), or None when its body is not available (signature only) or unclear."""
    from pypto.ir.visit import walk
    if not callee.body:
        return None
    ret = callee.body[-1]
    if not isinstance(ret, Return):
        return None
    index = {id(p.var): i for i, p in enumerate(callee.params)}
    alias: dict[int, int] = dict(index)
    for s in walk(callee.body):
        if isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op == "tile.store":
            dst = s.value.args[2] if len(s.value.args) > 2 else None
            if isinstance(dst, Var) and id(dst) in alias:
                alias[id(s.var)] = alias[id(dst)]
        elif isinstance(s, Assign) and isinstance(s.value, Var) and id(s.value) in alias:
            alias[id(s.var)] = alias[id(s.value)]
        elif isinstance(s, (For, While)):
            for a, rv in zip(s.iter_args, s.return_vars):
                if isinstance(a.init, Var) and id(a.init) in alias:
                    alias[id(a.var)] = alias[id(a.init)]
                    alias[id(rv)] = alias[id(a.init)]
    out = []
    for v in ret.values:
        if not isinstance(v, Var) or id(v) not in alias:
            return None
        out.append(alias[id(v)])
    return out
