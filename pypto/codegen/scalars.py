"""Scalar expressions of a kernel in PTO: constants, values, arithmetic and comparisons
(arith dialect), casts between scalar types, scalar reads (GM, tiles, arrays) and the
hidden SPMD arguments. A mixin of pypto.codegen.pto's kernel emitter."""
from __future__ import annotations

from pypto import dtype as dt
from pypto.codegen.common import fail
from pypto.codegen.values import _Scalar
from pypto.ir.ops.base import const_int
from pypto.ir.nodes import BinOp, Call, Const, TupleExpr, Var
from pypto.codegen.tileops import SCALAR_EMITTERS
from pypto.ir.ops.system import BLOCK_IDENTITY

_INT_BINOPS = {"+": "addi", "-": "subi", "*": "muli", "//": "divsi", "%": "remsi",
               "min": "minsi", "max": "maxsi", "<<": "shli", ">>": "shrsi", "&": "andi", "|": "ori",
               "^": "xori"}
_FLOAT_BINOPS = {"+": "addf", "-": "subf", "*": "mulf", "/": "divf",
                 "min": "minimumf", "max": "maximumf"}
_CMPI = {"==": "eq", "!=": "ne", "<": "slt", "<=": "sle", ">": "sgt", ">=": "sge"}
_CMPF = {"==": "oeq", "!=": "one", "<": "olt", "<=": "ole", ">": "ogt", ">=": "oge"}


class Scalars:
    def scalar(self, e, want: str | None, span) -> _Scalar:
        """An SSA value for scalar expression `e`, converted to type `want` if given."""
        if isinstance(e, Const):
            ty = want or e.dtype.mlir
            if isinstance(e.value, bool) and ty != "i1":
                return _Scalar(self.const(int(e.value), ty), ty)
            if ty in ("f32", "f16", "bf16"):
                return _Scalar(self.const(float(e.value), ty), ty)
            return _Scalar(self.const(e.value, ty), ty)
        if isinstance(e, Var):
            val = self.value_of(e, span)
            if not isinstance(val, _Scalar):
                fail(f"{e.name!r} is not a scalar", span)
            return self.convert(val, want, span)
        if isinstance(e, BinOp):
            folded = const_int(e)
            if folded is not None:
                return self.scalar(Const(folded, e.dtype, e.span), want, span)
            ty = e.dtype.mlir
            if e.op in _CMPI:
                operand_ty = _common_type(e.lhs, e.rhs)
                a = self.scalar(e.lhs, operand_ty, span)
                b = self.scalar(e.rhs, operand_ty, span)
                r = self.tmp()
                if operand_ty in ("f32", "f16", "bf16"):
                    self.emit(f"{r} = arith.cmpf {_CMPF[e.op]}, {a.ssa}, {b.ssa} : {operand_ty}", span)
                else:
                    self.emit(f"{r} = arith.cmpi {_CMPI[e.op]}, {a.ssa}, {b.ssa} : {operand_ty}", span)
                return self.convert(_Scalar(r, "i1"), want, span)
            is_float = ty in ("f32", "f16", "bf16")
            table = _FLOAT_BINOPS if is_float else _INT_BINOPS
            if e.op not in table:
                fail(f"scalar operator {e.op!r} on {e.dtype} is not supported in kernels", span)
            a = self.scalar(e.lhs, ty, span)
            b = self.scalar(e.rhs, ty, span)
            r = self.tmp()
            self.emit(f"{r} = arith.{table[e.op]} {a.ssa}, {b.ssa} : {ty}", span)
            return self.convert(_Scalar(r, ty), want, span)
        if isinstance(e, Call) and e.op == "scalar.cast":
            inner = self.scalar(e.args[0], None, span)
            return self.convert(self.convert(inner, e.type.dtype.mlir, span), want, span)
        if isinstance(e, Call) and e.op == "tensor.read":
            src = self.tensor(e.args[0], span)
            items = e.args[1].items if isinstance(e.args[1], TupleExpr) else [e.args[1]]
            pview, pty = self.partition(src, items, [1] * len(items), span)
            ty = src.param.type.dtype.mlir
            r = self.tmp()
            self.emit(f"{r} = pto.load_scalar {pview} : {pty} -> {ty}", span)
            return self.convert(_Scalar(r, ty), want, span)
        if isinstance(e, Call) and e.op in SCALAR_EMITTERS:   # a family's scalar-valued op
            return self.convert(SCALAR_EMITTERS[e.op](self, e, span), want, span)
        if isinstance(e, Call) and e.op in BLOCK_IDENTITY:    # a hidden argument (SPMD)
            self.spmd_used.add(e.op)
            return self.convert(_Scalar("%" + BLOCK_IDENTITY[e.op], "i32"), want, span)
        if isinstance(e, Call) and e.op == "tensor.dim":     # a dynamic extent, run time
            src = self.tensor(e.args[0], span)
            d = src.param.type.shape[e.args[1].value]
            return self.convert(_Scalar(self.dim_value(d), "index"), want, span)
        if isinstance(e, Call) and e.op == "array.get_element":
            arr = self.value_of(e.args[0], span)
            idx = self.index(e.args[1], span)
            r = self.tmp()
            self.emit(f"{r} = pto.local_array_get {arr.ssa}[{idx}] : {arr.ty} -> {arr.elem}", span)
            return self.convert(_Scalar(r, arr.elem), want, span)
        if isinstance(e, Call) and e.op == "tile.read":
            src = self.tile(e.args[0], span)
            off = self.flat_offset(e.args[1], src.tile.shape, span)
            ty = src.tile.dtype.mlir
            r = self.tmp()
            self.emit(f"{r} = pto.tgetval ins({src.ssa}, {off} : {src.ty}, index) outs : {ty}", span)
            return self.convert(_Scalar(r, ty), want, span)
        fail(f"cannot use {type(e).__name__} as a scalar value in a kernel", span)

    def flat_offset(self, idx, shape, span) -> str:
        """The row-major element offset of indices `idx` in `shape`, as an index SSA value."""
        items = idx.items if isinstance(idx, TupleExpr) else [idx]
        flat = None
        for i, x in enumerate(items):
            stride = 1
            for d in shape[i + 1:]:
                stride *= d
            term = x if stride == 1 else BinOp("*", x, Const(stride, dt.INDEX, span), dt.INDEX, span)
            flat = term if flat is None else BinOp("+", flat, term, dt.INDEX, span)
        return self.index(flat, span)

    def convert(self, v: _Scalar, want: str | None, span) -> _Scalar:
        if want is None or want == v.ty:
            return v
        src, dst = v.ty, want
        floats = ("f32", "f16", "bf16")
        width = {"i1": 1, "i8": 8, "ui8": 8, "i16": 16, "ui16": 16, "i32": 32, "ui32": 32,
                 "i64": 64, "ui64": 64, "index": 64,
                 "f16": 16, "bf16": 16, "f32": 32}
        if src == "index" or dst == "index":
            other = dst if src == "index" else src
            if other in floats:
                mid = self.convert(v, "i64", span)
                return self.convert(mid, dst, span)
            r = self.tmp()
            self.emit(f"{r} = arith.index_cast {v.ssa} : {src} to {dst}", span)
            return _Scalar(r, dst)
        if src in floats and dst in floats:
            op = "extf" if width[dst] > width[src] else "truncf"
        elif src in floats:
            op = "fptosi"
        elif dst in floats:
            op = "sitofp"
        else:
            op = "extsi" if width[dst] > width[src] else "trunci"
        r = self.tmp()
        self.emit(f"{r} = arith.{op} {v.ssa} : {src} to {dst}", span)
        return _Scalar(r, dst)

    def index(self, e, span) -> str:
        return self.scalar(e, "index", span).ssa

    # ------------------------------------------------------------------ tiles
    def index_scalar(self, e, span) -> _Scalar:
        return _Scalar(self.index(e, span), "index")


def _common_type(a, b) -> str:
    ta = getattr(getattr(a, "type", None), "dtype", None)
    tb = getattr(getattr(b, "type", None), "dtype", None)
    for t in (ta, tb):
        if t is not None and t.is_float:
            return t.mlir
    if isinstance(a, Const) and tb is not None:
        return tb.mlir
    return (ta or tb or dt.INDEX).mlir
