"""Print a Program as `@pl.program` DSL source that `pl.parse` reads back.

The printed text is the canonical form of the IR: equal programs print equal text, so
its digest keys every downstream build step. Statements carry their user source
location as a trailing `# @file:line:col` comment (the parser reads it back), so
locations survive every pass and reach the `.pto`.
"""
from __future__ import annotations

import math

from pypto import dtype as dt
from pypto.ir.nodes import (ArgDir, ArrayType, HandleType, Assign, BinOp, Call, Const, DynDim, Eval, For, ForKind, While,
                            Function, FunctionType, If, InCoreScope, MemorySpace, Param, SplitMode,
                            AtomicType, MaskPattern, PadValue, ParamDirection, PipeType, Program, PtrType, Return, Role, RuntimeScope,
                            ScalarType, TensorType, TileType, TupleExpr, TupleType, Var, Yield)

_INDENT = "    "
_BINOPS = {"+", "-", "*", "/", "//", "%", "==", "!=", "<", "<=", ">", ">=", "<<", ">>", "&", "|", "^"}


def print_program(prog: Program, *, locs: bool = True, explicit: bool = False) -> str:
    return _Printer(locs, explicit).program(prog)


def print_function(f, *, locs: bool = True) -> str:
    """A function as a lone `@pl.function` def (what pl.parse reads back)."""
    p = _Printer(locs, False)
    lines: list[str] = []
    p.function(f, lines)
    lines = [ln[len(_INDENT):] if ln.startswith(_INDENT) else ln for ln in lines]
    for i, ln in enumerate(lines):             # a lone function has no `self`
        if ln.startswith(f"def {f.name}(self"):
            lines[i] = ln.replace(f"def {f.name}(self, ", f"def {f.name}(", 1).replace(
                f"def {f.name}(self)", f"def {f.name}()", 1)
            break
    head = ["import pypto.language as pl"] + ([PLD_IMPORT] if any("pld." in ln for ln in lines) else []) + [""]
    head += [f'{d} = pl.dynamic("{d}")' for d in sorted(p.dyns)]
    if p.dyns:
        head.append("")
    return "\n".join(head + lines) + "\n"


def print_type(t) -> str:
    return _Printer(False, False).type(t)


class _Printer:
    def __init__(self, locs: bool, explicit: bool):
        self.locs = locs
        self.device = False        # printing a kernel, or inside a pl.at region
        self.explicit = explicit
        self.names: dict[int, str] = {}
        self.used: dict[str, object] = {}      # printed name -> type of the Var it last named
        self.dyns: set[str] = set()            # dynamic dims the printed types name

    # ------------------------------------------------------------------ naming
    def bind(self, v: Var) -> str:
        key = id(v)
        if key in self.names:
            return self.names[key]
        base = v.name if v.name.isidentifier() else "v"
        name, k = base, 0
        # A name rebound with another type is one variable before ConvertToSSA (the parser
        # makes a new Var only because the type changed): it keeps its name, so the text
        # parses back to the same program. Another Var of the same type gets a suffix.
        while (name in self.used and (name != base or self.used[name] == v.type)) \
                or name in ("pl", "self"):
            k += 1
            name = f"{base}_{k}"
        self.used[name] = v.type
        self.names[key] = name
        return name

    def ref(self, v: Var) -> str:
        return self.names.get(id(v)) or self.bind(v)

    # ------------------------------------------------------------------ types
    def type(self, t) -> str:
        if isinstance(t, TensorType):
            parts = [self.shape(t.shape), repr(t.dtype)]
            if t.layout is not None:
                parts.append(f"pl.{t.layout.upper()}")
            if t.memref is not None:
                parts.append(self.memref(t.memref))
            if t.valid is not None:
                parts.append(f"pl.TensorView(valid_shape={_valid_text(t.valid)})")
            return f"{'pld.DistributedTensor' if t.window else 'pl.Tensor'}[{', '.join(parts)}]"
        if isinstance(t, TileType):
            parts = [self.shape(t.shape), repr(t.dtype)]
            if t.memref is not None:
                parts.append(self.memref(t.memref))
            if t.slot is not None:
                parts.append(f'pl.MemRef("{t.slot.region}", slots={t.slot.count})[{self.expr(t.slot.index)}]')
            if t.memory_space is not None:
                parts.append(f"pl.Mem.{t.memory_space.name}")
            if self.explicit and t.memory_space is not None:
                parts.append(self.tile_view(t))
            elif t.valid is not None:
                parts.append(f"pl.TileView(valid_shape={_valid_text(t.valid)})")
            return f"pl.Tile[{', '.join(parts)}]"
        if isinstance(t, ScalarType):
            return f"pl.Scalar[{t.dtype!r}]"
        if isinstance(t, PtrType):
            return "pl.Ptr"
        if isinstance(t, HandleType):
            return f"pl.{t.kind}"
        if isinstance(t, ArrayType):
            return f"pl.Array[{t.extent}, {t.dtype!r}]"
        if isinstance(t, TupleType):
            return f"tuple[{', '.join(self.type(x) for x in t.types)}]"
        raise TypeError(f"cannot print type {t!r}")

    def tile_view(self, t: TileType) -> str:
        from pypto.ir.layout import tile_layout
        bl, sl, fr = tile_layout(t)
        valid = f"valid_shape={_valid_text(t.valid)}, " if t.valid is not None else ""
        return f'pl.TileView({valid}blayout="{bl}", slayout="{sl}", fractal={fr})'

    def shape(self, shape) -> str:
        for d in shape:
            if isinstance(d, DynDim):
                self.dyns.update(d.declared)
        return "[" + ", ".join(str(d) for d in shape) + "]"

    def memref(self, m) -> str:
        base = f'"{m.base}"' if isinstance(m.base, str) else self.ref(m.base)
        return f"pl.MemRef({base}, {m.offset}, {m.size})"

    # ------------------------------------------------------------------ exprs
    def expr(self, e, nested=False) -> str:
        if isinstance(e, Var):
            return self.ref(e)
        if isinstance(e, Const):
            return self.const(e)
        if isinstance(e, TupleExpr):
            return "[" + ", ".join(self.expr(i) for i in e.items) + "]"
        if isinstance(e, BinOp):
            if e.op in ("min", "max"):
                return f"pl.{e.op}({self.expr(e.lhs)}, {self.expr(e.rhs)})"
            s = f"{self.operand(e.lhs, e.rhs)} {e.op} {self.operand(e.rhs, e.lhs)}"
            return f"({s})" if nested else s
        if isinstance(e, Call):
            return self.call(e)
        raise TypeError(f"cannot print expression {e!r}")

    def operand(self, x, other) -> str:
        """One side of a binary operator. A bare index literal would take the other
        side's dtype when parsed back (`n - 64` with an int32 n is int32): an index
        constant next to a scalar of another dtype spells its dtype."""
        if isinstance(x, Const) and x.dtype == dt.INDEX and not isinstance(x.value, bool):
            ot = getattr(other, "type", None)
            if getattr(ot, "dtype", dt.INDEX) != dt.INDEX and not isinstance(other, Const):
                return f"pl.const({x.value}, {x.dtype!r})"
        return self.expr(x, True)

    def const(self, c: Const) -> str:
        v = c.value
        if isinstance(v, bool):
            return "True" if v else "False"
        if isinstance(v, float):
            if math.isinf(v) or math.isnan(v):
                return f'pl.const("{v}", {c.dtype!r})'
            text = repr(v)
            return text if c.dtype == dt.FP32 else f"pl.const({text}, {c.dtype!r})"
        return str(v) if c.dtype == dt.INDEX else f"pl.const({v}, {c.dtype!r})"

    def value(self, v) -> str:
        """A keyword/attribute constant."""
        if isinstance(v, MemorySpace):
            return f"pl.Mem.{v.name}"
        if isinstance(v, (PadValue, AtomicType, SplitMode, PipeType)):
            return f"pl.{type(v).__name__}.{v.name}"
        if type(v).__name__ in ("NotifyOp", "WaitCmp") and type(v).__module__ == "pypto.language.distributed":
            return f"pld.{type(v).__name__}.{v.name}"
        if isinstance(v, MaskPattern):
            return f"pl.tile.MaskPattern.{v.name}"
        if isinstance(v, dt.DataType):
            return repr(v)
        if isinstance(v, ArgDir):
            return f"pl.adir.{v.name}"
        if isinstance(v, (list, tuple)):
            return "[" + ", ".join(self.value(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{" + ", ".join(f'"{k}": {self.value(x)}' for k, x in v.items()) + "}"
        if isinstance(v, str):
            return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
        return repr(v)

    def call(self, c: Call) -> str:
        if c.op == "tuple.get":               # a, b = self.f(...) reads t[0], t[1]
            return f"{self.expr(c.args[0])}[{self.expr(c.args[1])}]"
        args = [self.expr(a) for a in c.args]
        args += [f"{k}={self.value(v)}" for k, v in c.kwargs.items()]
        if c.attrs:
            args.append(f"attrs={self.value(c.attrs)}")
        head = f"self.{c.callee}" if c.callee else ("pl.cast" if c.op == "scalar.cast" else f"pl.{c.op}")
        return f"{head}({', '.join(args)})"

    # ------------------------------------------------------------------ stmts
    def loc(self, node) -> str:
        # Only device code (and each function's def line, for messages about a
        # function) carries locations: they end up in the .pto. Host-side statements
        # print none, so moving them (or adding lines around them) leaves the
        # canonical text, and every build step keyed on it, unchanged.
        s = getattr(node, "span", None)
        if not (self.locs and (self.device or isinstance(node, Function)) and s is not None):
            return ""
        return f"  # @{s.file}:{s.line}:{s.col}"

    def block(self, stmts, depth, out, yield_targets=None):
        if not stmts:
            out.append(_INDENT * depth + "pass")
        for s in stmts:
            self.stmt(s, depth, out, yield_targets)

    def stmt(self, s, depth, out, yield_targets=None):
        pad = _INDENT * depth
        if isinstance(s, Assign):
            rhs = self.expr(s.value)
            name = self.bind(s.var)
            out.append(f"{pad}{name}: {self.type(s.var.type)} = {rhs}{self.loc(s)}")
        elif isinstance(s, Eval):
            out.append(f"{pad}{self.expr(s.expr)}{self.loc(s)}")
        elif isinstance(s, Return):
            vals = ", ".join(self.expr(v) for v in s.values)
            out.append(f"{pad}return{' ' + vals if vals else ''}{self.loc(s)}")
        elif isinstance(s, Yield):
            vals = ", ".join(self.expr(v) for v in s.values)
            if yield_targets:
                lhs = ", ".join(self.bind(v) for v in yield_targets)
                out.append(f"{pad}{lhs} = pl.yield_({vals}){self.loc(s)}")
            else:
                out.append(f"{pad}pl.yield_({vals}){self.loc(s)}")
        elif isinstance(s, For):
            self.for_(s, depth, out)
        elif isinstance(s, While) and not s.iter_args:        # (as written, before ConvertToSSA)
            out.append(f"{pad}while {self.expr(s.cond)}:{self.loc(s)}")
            self.block(s.body, depth + 1, out)
        elif isinstance(s, While):
            # for (x,) in pl.while_(init_values=(x0,)): with pl.cond(...) first
            inits = ", ".join(self.expr(a.init) for a in s.iter_args)
            carried = ", ".join(self.bind(a.var) for a in s.iter_args)
            out.append(f"{pad}for ({carried},) in pl.while_(init_values=({inits},)):{self.loc(s)}")
            out.append(f"{pad}{_INDENT}pl.cond({self.expr(s.cond)})")
            self.block(s.body, depth + 1, out, s.return_vars)
        elif isinstance(s, If):
            cond = self.expr(s.cond)
            out.append(f"{pad}if {cond}:{self.loc(s)}")
            self.block(s.then_body, depth + 1, out, s.return_vars)
            if s.else_body:
                out.append(f"{pad}else:")
                self.block(s.else_body, depth + 1, out, s.return_vars)
        elif isinstance(s, InCoreScope):
            hint = f', name_hint="{s.name_hint}"' if s.name_hint else ""
            opt = ([f"pl.split(pl.SplitMode.{SplitMode(s.split).name})"] if s.split else []) + \
                ([f"pl.cross_core_slot(slot_num={s.slot_num})"] if s.slot_num else [])
            if opt:
                hint += f", optimizations=[{', '.join(opt)}]"
            outer, self.device = self.device, True
            out.append(f"{pad}with pl.at(level=pl.Level.CORE_GROUP{hint}):{self.loc(s)}")
            self.block(s.body, depth + 1, out)
            self.device = outer
        elif isinstance(s, RuntimeScope):
            mode = "mode=pl.ScopeMode.MANUAL" if s.manual else ""
            out.append(f"{pad}with pl.scope({mode}):{self.loc(s)}")
            self.block(s.body, depth + 1, out)
        else:
            raise TypeError(f"cannot print statement {s!r}")

    def for_(self, s: For, depth, out):
        pad = _INDENT * depth
        inits = [self.expr(a.init) for a in s.iter_args]
        start, stop, step = (self.expr(x) for x in (s.start, s.stop, s.step))
        if s.kind is ForKind.Unroll or not (_is_const(s.step, 1)):
            bounds = [start, stop, step]
        elif _is_const(s.start, 0):
            bounds = [stop]
        else:
            bounds = [start, stop]
        kind = s.kind.value
        if s.stage is not None:          # (before init_values, as the reference prints it)
            kind = "pipeline"
            bounds.append(f"stage={s.stage}")
        if inits:
            bounds.append(f"init_values=({', '.join(inits)},)")
        if s.attrs:
            bounds.append("attrs={" + ", ".join(f'"{k}": {v!r}' for k, v in sorted(s.attrs.items())) + "}")
        lv = self.bind(s.loop_var)
        carried = ", ".join(self.bind(a.var) for a in s.iter_args)
        target = f"{lv}, ({carried},)" if s.iter_args else lv
        out.append(f"{pad}for {target} in pl.{kind}({', '.join(bounds)}):{self.loc(s)}")
        # the yield at the end of the body binds the loop's results
        self.block(s.body, depth + 1, out, s.return_vars)

    # ------------------------------------------------------------------ functions
    def function(self, f: Function, out):
        self.names, self.used = {}, {}
        # an Inline body is spliced into its callers (device code too): it keeps its locations
        self.device = f.is_kernel or f.func_type is FunctionType.Inline
        deco = []
        if f.func_type is not FunctionType.Opaque:
            deco.append(f"type=pl.FunctionType.{f.func_type.value}")
        if f.level is not None:
            deco.append(f"level=pl.Level.{f.level.name}")
        if f.role is not None:
            deco.append(f"role=pl.Role.{f.role.value}")
        attrs = dict(f.attrs)
        host = attrs.pop("python_body", None)         # a HOST function: its host Python, as written
        attrs.pop("host", None), attrs.pop("abstract", None)
        if attrs.get("auto_scope", True) is False:    # the reference spells it as a keyword
            del attrs["auto_scope"]
            deco.append("auto_scope=False")
        if attrs:
            deco.append(f"attrs={self.value(attrs)}")
        out.append(f"{_INDENT}@pl.function({', '.join(deco)})" if deco else f"{_INDENT}@pl.function")
        params = [] if f.role is Role.SubWorker else ["self"]
        for p in f.params:
            t = self.type(p.var.type)
            if p.direction is not ParamDirection.In:
                t = f"pl.{p.direction.value}[{t}]"
            params.append(f"{self.bind(p.var)}: {t}")
        ret = ""
        if len(f.return_types) == 1:
            ret = f" -> {self.type(f.return_types[0])}"
        elif f.return_types:
            ret = f" -> tuple[{', '.join(self.type(t) for t in f.return_types)}]"
        out.append(f"{_INDENT}def {f.name}({', '.join(params)}){ret}:{self.loc(f)}")
        if "external_source" in f.attrs:     # a hand-written kernel: the C++ file is its body
            out.append(_INDENT * 2 + "...")
        elif host is not None:
            out += [(_INDENT * 2 + ln) if ln.strip() else "" for ln in host.splitlines()]
        else:
            self.block(f.body, 2, out)

    def program(self, p: Program) -> str:
        body = ["@pl.program", f"class {p.name}:"]
        for i, f in enumerate(p.functions):
            if i:
                body.append("")
            self.function(f, body)
        # the module-level declarations of the dynamic dims the text names
        out = [f"# pypto.program: {p.name}", "import pypto.language as pl"]
        out += [PLD_IMPORT] if any("pld." in ln for ln in body) else []
        out.append("")
        out += [f'{d} = pl.dynamic("{d}")' for d in sorted(self.dyns)]
        if self.dyns:
            out.append("")
        return "\n".join(out + body) + "\n"


PLD_IMPORT = "import pypto.language.distributed as pld"     # (only a program with windows names it)


def _valid_text(valid) -> str:
    """A valid shape in a type: -1 for a dim known only when the kernel runs."""
    return "[" + ", ".join("-1" if v is None else str(v) for v in valid) + "]"


def _is_const(e, v) -> bool:
    return isinstance(e, Const) and e.value == v and not isinstance(e.value, bool)


__all__ = ["print_program", "print_type", "Param"]
