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

import math

from pypto import dtype as dt
from pypto.codegen.common import Names, fail, scalar_bits
from pypto.ir.visit import bodies
from pypto.ir.nodes import (While, ArgDir, ArrayType, Assign, BinOp, Call, Const, Eval, For,
                            FunctionType, If,
                            InCoreScope, ParamDirection, Program, Return, RuntimeScope,
                            ScalarType, TensorType, TupleExpr, TupleType, Var, Yield)

ENTRY = "pypto_orchestration_entry"

_C_TYPE = {"FP32": "float", "FP16": "float", "BF16": "float", "INT8": "int8_t",
           "INT16": "int16_t", "INT32": "int32_t", "INT64": "int64_t", "UINT8": "uint8_t",
           "UINT16": "uint16_t", "UINT32": "uint32_t", "UINT64": "uint64_t",
           "BOOL": "bool", "INDEX": "int64_t", "TASK_ID": "int64_t"}
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

_PRELUDE = r"""
namespace {

// Scalar bit patterns (the runtime's convention): fp32 in the low 32 bits, fp16/bf16 in
// the low 16, integers sign-extended to 64 bits, bool 0/1.
inline uint64_t pypto_bits_f32(float v) {
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    return u;
}

inline float pypto_f32_from_bits(uint64_t b) {
    uint32_t u = (uint32_t)b;
    float v;
    memcpy(&v, &u, sizeof v);
    return v;
}

inline uint64_t pypto_bits_bf16(float v) {
    uint32_t u = (uint32_t)pypto_bits_f32(v);
    if ((u & 0x7F800000u) == 0x7F800000u && (u & 0x007FFFFFu)) return 0x7FC0u;
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (u >> 16) & 0xFFFFu;
}

inline float pypto_f32_from_bf16(uint64_t b) {
    return pypto_f32_from_bits(((uint32_t)b & 0xFFFFu) << 16);
}

inline uint64_t pypto_bits_f16(float v) {
    uint32_t u = (uint32_t)pypto_bits_f32(v);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t mag = u & 0x7FFFFFFFu;
    if (mag >= 0x7F800000u) return sign | (mag > 0x7F800000u ? 0x7E00u : 0x7C00u);
    if (mag >= 0x477FF000u) return sign | 0x7C00u;            // rounds past 65504: inf
    if (mag < 0x38800000u) {                                   // subnormal or zero in fp16
        if (mag < 0x33000000u) return sign;                    // below half the smallest
        uint32_t exp = mag >> 23;
        uint32_t man = (mag & 0x7FFFFFu) | 0x800000u;
        uint32_t shift = 126u - exp;                           // 14..24
        uint32_t h = man >> shift;
        uint32_t rem = man & ((1u << shift) - 1u);
        uint32_t half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (h & 1u))) ++h;
        return sign | h;
    }
    uint32_t h = ((mag - 0x38000000u) >> 13);
    uint32_t rem = mag & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
    return sign | h;
}

inline float pypto_f32_from_f16(uint64_t b) {
    uint32_t h = (uint32_t)b & 0xFFFFu;
    uint32_t sign = (h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1Fu;
    uint32_t man = h & 0x3FFu;
    uint32_t u;
    if (exp == 0x1Fu) {
        u = sign | 0x7F800000u | (man << 13);
    } else if (exp != 0) {
        u = sign | ((exp + 112u) << 23) | (man << 13);
    } else if (man == 0) {
        u = sign;
    } else {                                                   // subnormal: normalise
        exp = 113u;
        while (!(man & 0x400u)) { man <<= 1; --exp; }
        u = sign | (exp << 23) | ((man & 0x3FFu) << 13);
    }
    return pypto_f32_from_bits(u);
}

inline uint64_t pypto_bits_int(int64_t v) { return (uint64_t)v; }

template <typename T> inline T pypto_min(T a, T b) { return b < a ? b : a; }
template <typename T> inline T pypto_max(T a, T b) { return a < b ? b : a; }

// Python's // and % on integers (floor division).
inline int64_t pypto_floordiv(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

inline int64_t pypto_floormod(int64_t a, int64_t b) {
    int64_t r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

// Close `open_scopes` runtime scopes, then return `code`.
inline int32_t pypto_leave(const PyptoRuntimeApi* api, int open_scopes, int32_t code) {
    for (int i = 0; i < open_scopes; ++i) api->scope_end(api->ctx);
    return code;
}

}  // namespace
"""


def generate_orchestration(program: Program, name: str, kernel_ids: dict[str, int]) -> str:
    """The C++ text of orchestration function `name`; `kernel_ids` maps kernel name →
    the func_id the runtime knows it by."""
    f = program.get(name)
    if f is None:
        fail(f"no function named {name!r} in program {program.name!r}", None)
    if f.func_type is not FunctionType.Orchestration:
        fail(f"function {name!r} is {f.func_type.value}, not an Orchestration", f.span)
    return _Orch(program, f, dict(kernel_ids)).generate()


# ----------------------------------------------------------------------------- values
class _Val:
    """A value in the generated C++: an expression and its IR type."""

    def __init__(self, expr: str, type_, *, tuple_of=None, unknown: str | None = None):
        self.expr = expr
        self.type = type_
        self.tuple_of = tuple_of   # for multi-result calls: list of handles
        self.unknown = unknown     # why the value cannot be used (reported at a use)


def _loc(span) -> str:
    return f"{span.file}:{span.line}" if span is not None else "<unknown>"


def _c_float(v: float) -> str:
    if math.isnan(v):
        return "__builtin_nanf(\"\")"
    if math.isinf(v):
        return "__builtin_inff()" if v > 0 else "(-__builtin_inff())"
    text = repr(float(v))
    return f"{text}f"


def _c_int(v: int) -> str:
    if -(1 << 31) < v < (1 << 31):
        return str(v)
    if v == -(1 << 63):
        return "INT64_MIN"
    return f"INT64_C({v})"


class _Orch:
    def __init__(self, program: Program, func, kernel_ids):
        self.program = program
        self.f = func
        self.kernel_ids = kernel_ids
        self.names = Names(_CPP_KEYWORDS | {"args", "dirs", "scalar_args", "deps"})
        self.env: dict[int, _Val] = {}
        self.lines: list[str] = []
        self.indent = 1
        self.scopes = 0           # runtime scopes open at this point
        self.pending_deps: list[str] | None = None   # pl.system.after: for the next launch
        self.pending_blocks: tuple | None = None     # pl.system.blocks: (count, sync_start)
        self.sites: list[list[str]] = []   # per open manual scope: its calls' latest task ids
        self.site_at: list[int] = []       # per open manual scope: calls met so far

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
                "#include <array>",
                "#include <vector>",
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
        return "\n".join(head) + "\n" + _PRELUDE + "\n" + sig + "\n" + "\n".join(body) + "\n}\n"

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
            if isinstance(c, Call) and c.op == "system.after":
                self.out(f"// {_loc(span)}: the next launch waits for its deps")
                self.pending_deps = self.dep_items(c.args[0], span)
                return False
            if isinstance(c, Call) and c.op == "system.blocks":
                n, _ = self.scalar(c.args[0], span)
                self.out(f"// {_loc(span)}: the next launch runs as {n} blocks")
                self.pending_blocks = (f"(int32_t)({n})", "1" if c.kwargs.get("sync_start") else "0")
                return False
            if isinstance(c, Call) and c.op == "system.task_dummy":
                self.dummy(c, span)
                return False
            if isinstance(c, Call) and c.op == "system.predicate":
                self.predicate(c, span)
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
            if s.manual:     # the tasks of each call of the scope (compiler-derived deps)
                loops = _scope_calls(s.body)
                names = [self.cname(f"site_{k}") for k in range(len(loops))]
                for name in names:   # latest task, and every task (for deps from after a loop)
                    self.out(f"int64_t {name} = -1;")
                    self.out(f"std::vector<int64_t> {name}_all;")
                    self.out(f"(void){name}; (void){name}_all;")
                self.sites.append((names, loops))
                self.site_at.append(0)
            ended = self.block(s.body)
            if s.manual:
                self.sites.pop()
                self.site_at.pop()
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

    def host_view(self, v: Var, call: str) -> None:
        name = self.cname(v.name)
        self.out(f"const int64_t {name} = {call};")
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
        for i, (a, p) in enumerate(zip(c.args, callee.params)):
            if isinstance(p.var.type, TensorType):
                h = self.handle(a, span)
                d = dirs[i] if dirs is not None else _PARAM_DIR[p.direction]
                if d not in _DIR:
                    fail(f"argument {i} of {c.callee} is a tensor but its direction is {d}", span)
                handles.append(h)
                hdirs.append(_DIR[d])
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
        deps = list(self.pending_deps or [])
        self.pending_deps = None
        site, every = None, []
        if self.sites:                 # in a manual scope: the compiler-derived edges too
            k = self.site_at[-1]
            self.site_at[-1] += 1
            names, loops = self.sites[-1]
            if k < len(names):
                site = names[k]
                for d in c.attrs.get("deps", ()):
                    if d >= len(names):
                        continue
                    # a call in a loop that has ended (not one around this call too): all of
                    # its tasks; one in the same iteration: its latest
                    if set(loops[d]) <= set(loops[k]):
                        deps.append(names[d])
                    else:
                        every.append(f"{names[d]}_all")
        dargs = "0, nullptr"
        if every:
            self.out(f"std::vector<int64_t> deps = {{{', '.join(deps)}}};")
            for v in every:
                self.out(f"deps.insert(deps.end(), {v}.begin(), {v}.end());")
            dargs = "(int32_t)deps.size(), deps.data()"
        elif deps:
            self.out(f"const int64_t deps[{len(deps)}] = {{{', '.join(deps)}}};")
            dargs = f"{len(deps)}, deps"
        blocks, sync = self.pending_blocks or ("1", "0")
        self.pending_blocks = None
        if _synchronizes(callee):      # its blocks wait for each other: they must run at once
            sync = "1"
        self.out(f"pypto_last_task = api->submit_task(api->ctx, {fid}, {len(handles)}, {targ}, "
                 f"{darg}, {len(scal)}, {sarg}, {dargs}, {blocks}, {sync});  // {c.callee}")
        self.out(f"if (pypto_last_task < 0) {self.fail_return(2)}")
        if site is not None:
            self.out(f"{site} = pypto_last_task;")
            self.out(f"{site}_all.push_back(pypto_last_task);")
        self.indent -= 1
        self.out("}")
        return self.result(c, callee, written, span)

    def predicate(self, c: Call, span) -> None:
        """pl.system.predicate: the next launch runs only if the element compares true."""
        from pypto.ir.ops.system import CMP_CODES
        t = self.handle(c.args[0], span)
        idx = c.args[1].items if isinstance(c.args[1], TupleExpr) else [c.args[1]]
        exprs = [f"(int64_t)({self.scalar(i, span)[0]})" for i in idx]
        value, _ = self.scalar(c.args[2], span)
        self.out(f"// {_loc(span)}: the next launch runs only if "
                 f"{getattr(c.args[0], 'name', 't')}[...] {c.kwargs['cmp']} {value} when dispatched")
        name = self.index_array("pred_at", exprs)
        self.out(f"api->predicate_next(api->ctx, {t}, {len(exprs)}, {name}, "
                 f"{CMP_CODES[c.kwargs['cmp']]}, (double)({value}));")

    def dep_items(self, e, span) -> list[str]:
        """The C expressions of the task ids a deps list names (arrays element by element)."""
        out = []
        for item in (e.items if isinstance(e, TupleExpr) else [e]):
            if isinstance(getattr(item, "type", None), ArrayType):
                arr = self.val(item, span)
                out += [f"{arr.expr}[{k}]" for k in range(item.type.extent)]
            else:
                out.append(self.scalar(item, span)[0])
        return out

    def dummy(self, c: Call, span, name_hint: str = "dummy") -> str:
        """pl.system.task_dummy(deps=[...]): a task that runs nothing; its id."""
        deps = self.dep_items(c.args[0], span)
        name = self.cname(name_hint)
        self.out(f"// {_loc(span)}: {name_hint} = pl.system.task_dummy(...)")
        self.out(f"int64_t {name} = -1;")
        self.out("{")
        self.indent += 1
        dargs = "0, nullptr"
        if deps:
            self.out(f"const int64_t deps[{len(deps)}] = {{{', '.join(deps)}}};")
            dargs = f"{len(deps)}, deps"
        self.out(f"{name} = api->submit_task(api->ctx, -1, 0, nullptr, nullptr, 0, nullptr, {dargs}, "
                 f"1, 0);")
        self.out(f"if ({name} < 0) {self.fail_return(2)}")
        self.out("pypto_last_task = " + name + ";")
        self.indent -= 1
        self.out("}")
        return name

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
def _cast(ct: str, expr: str, e) -> str:
    return expr if isinstance(e, Const) and not e.dtype.is_float else f"({ct})({expr})"


def _decode(d: dt.DataType, src: str) -> str:
    if d.name == "FP32":
        return f"pypto_f32_from_bits({src})"
    if d.name == "FP16":
        return f"pypto_f32_from_f16({src})"
    if d.name == "BF16":
        return f"pypto_f32_from_bf16({src})"
    if d.name == "BOOL":
        return f"{src} != 0"
    if d.name.startswith("UINT"):
        return f"({_C_TYPE[d.name]}){src}"
    if d.name in ("INT64", "INDEX"):
        return f"(int64_t){src}"
    return f"({_C_TYPE[d.name]})(int64_t){src}"


def _synchronizes(f) -> bool:
    """The kernel's blocks meet at a pl.system.syncall (the parser or OutlineIncoreScopes
    marks it: the orchestration sees only the kernels' signatures)."""
    return bool(f.attrs.get("sync_blocks"))


def _scope_calls(body, loops: tuple = ()) -> list[tuple]:
    """The kernel calls lexically in a runtime scope (through loops and ifs, not into a
    nested scope), in the order AutoDeriveTaskDependencies numbers them for its `deps`:
    for each, the ids of the loops around it inside the scope."""
    out = []
    for s in body:
        if isinstance(s, RuntimeScope):
            continue
        for e in ([s.value] if isinstance(s, Assign) else [s.expr] if isinstance(s, Eval) else []):
            if isinstance(e, Call) and e.callee:
                out.append(loops)
        inner = loops + (id(s),) if isinstance(s, (For, While)) else loops
        for b in bodies(s):
            out += _scope_calls(b, inner)
    return out


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
