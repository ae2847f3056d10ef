"""The Parser's reading of type annotations (pl.Tensor, pl.Tile, pl.Scalar, ...)."""
from __future__ import annotations

import ast

from pypto.ir.ops.base import dyn_dim_of
from pypto.ir.nodes import MX_LAYOUTS
from pypto.language.parser.common import (ArrayType, HandleType, Const, DynDim, MemRef, MemorySpace, ParamDirection,
                                          ParserError, PtrType, ScalarType, Slot, TensorType, TileType,
                                          TupleType, UnknownOpError, _lang, dt)
from pypto.errors import NotBuiltError


class AnnotationsMixin:
    # ================================================================== annotations
    def tile_view_valid(self, node):
        """A TileView's valid_shape: constants, or (in a kernel body) scalar values the kernel
        holds -- a dim known at run time (-1 in the type); the values are kept for an op
        whose result the annotation types (a pipe pop: its valid part)."""
        elts = node.elts if isinstance(node, (ast.List, ast.Tuple)) else None
        self.valid_values = {}
        if elts is None or self.ctx is None:
            return self.static(node, "a TileView valid_shape")
        out = []
        for i, e in enumerate(elts):
            if isinstance(e, ast.Name) and e.id in self.ctx.env:
                self.valid_values[i] = self.expr(e)
                out.append(-1)
            else:
                out.append(self.static(e, "a TileView valid_shape"))
        return out

    def ann_type(self, node, allow_dir=False, allow_tuple=False):
        """An annotation -> (type, ParamDirection)."""
        pl = _lang()
        head = node.value if isinstance(node, ast.Subscript) else node
        if isinstance(head, ast.Name) and head.id == "tuple" and head.id not in self.statics:
            obj = tuple
        else:
            try:
                obj = self.static(head, "a type annotation")
            except ParserError as e:
                if isinstance(e, UnknownOpError):
                    raise
                self.bad_annotation(node, e.message)
        if obj in (pl.Out, pl.InOut):
            if not allow_dir:
                self.bad_annotation(node, f"pl.{obj.__name__}[...] is only allowed on parameters")
            if not isinstance(node, ast.Subscript):
                self.bad_annotation(node, f"pl.{obj.__name__} needs a type: pl.{obj.__name__}[pl.Tensor[...]]")
            inner, _ = self.ann_type(node.slice)
            if not isinstance(inner, TensorType):
                self.bad_annotation(node, f"pl.{obj.__name__}[...] marks a tensor the function writes; "
                                          f"a {type(inner).__name__.replace('Type', '').lower()} "
                                          f"cannot be an output (results are written into tensors)")
            return inner, ParamDirection(obj.__name__)
        direction = ParamDirection.In
        if obj is tuple or obj is getattr(pl, "Tuple", None):
            if not allow_tuple or not isinstance(node, ast.Subscript):
                self.bad_annotation(node, "tuple[...] is only allowed as a return annotation")
            elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            return TupleType(tuple(self.ann_type(e)[0] for e in elts)), direction
        if obj is pl.Ptr:
            return PtrType(), direction
        if obj in (pl.PrefetchAsyncContext, pl.AsyncEvent, pl.AsyncSession):
            return HandleType(obj.__name__), direction
        if obj is pl.Array:
            elts = node.slice.elts if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Tuple) else []
            n = self.static(elts[0], "an array extent") if len(elts) == 2 else None
            if not (isinstance(n, int) and not isinstance(n, bool) and n > 0):
                self.bad_annotation(node, "an array is pl.Array[4, pl.INT32]")
            return ArrayType(n, self.ann_dtype(elts[1], node)), direction
        if isinstance(obj, dt.DataType) and not isinstance(node, ast.Subscript):
            return ScalarType(obj), direction
        if getattr(obj, "_pl_kind", None) == "distributed_tensor":     # pld.DistributedTensor[...]
            if not isinstance(node, ast.Subscript):
                self.bad_annotation(node, "pld.DistributedTensor needs its shape and dtype: "
                                          "pld.DistributedTensor[[1, 64], pl.FP32]")
            elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            # (an EXPLICIT dump's "window_buffer=<name>": which buffer it views, informational)
            elts = [e for e in elts if not (isinstance(e, ast.Constant) and isinstance(e.value, str)
                                            and e.value.startswith("window_buffer="))]
            t = self.shaped_ann(False, elts, node)
            return TensorType(t.shape, t.dtype, t.memref, t.valid, t.layout, window=True), direction
        if obj in (pl.Tensor, pl.Tile, pl.Scalar):
            if not isinstance(node, ast.Subscript):
                if obj is pl.Tensor:
                    self.bad_annotation(node, "a bare pl.Tensor (shape from the call) is only allowed under @pl.jit")
                self.bad_annotation(node, f"pl.{obj.__name__} needs its parameters")
            elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if obj is pl.Scalar:
                if len(elts) != 1:
                    self.bad_annotation(node, "pl.Scalar takes one dtype: pl.Scalar[pl.FP32]")
                return ScalarType(self.ann_dtype(elts[0], node)), direction
            return self.shaped_ann(obj is pl.Tile, elts, node), direction
        if isinstance(obj, pl.Annotation):
            raise ParserError(
                f"bad type annotation `{ast.unparse(node)}`: it names {obj!r} through a Python "
                f"variable, but annotations are read as written in the source", self.span(node),
                f"spell the type out in the annotation: {obj!r}")
        self.bad_annotation(node, f"{ast.unparse(node)} is not a type of the language")

    def bad_annotation(self, node, why):
        raise ParserError(f"bad type annotation `{ast.unparse(node)}`: {why}", self.span(node),
                          "write pl.Tensor[[64, 128], pl.FP16], pl.Tile[[64, 64], pl.FP32, pl.Mem.Vec], "
                          "pl.Scalar[pl.INDEX], pl.Out[pl.Tensor[...]] or pl.Ptr")

    def ann_dtype(self, node, whole):
        try:
            d = self.static(node, "a dtype")
        except ParserError as e:
            if isinstance(e, UnknownOpError):
                raise
            self.bad_annotation(whole, e.message)
        if not isinstance(d, dt.DataType):
            self.bad_annotation(whole, f"{ast.unparse(node)} is not a dtype (pl.FP32, pl.INT32, ...)")
        if d.kind == "unbuilt":
            raise NotBuiltError(f"{d!r} ({d}) is not supported by this pypto yet", self.span(whole),
                                "use fp16, bf16, fp32 or an 8-bit float (pl.FP8E4M3FN, pl.FP8E5M2)")
        return d

    def shape_dims(self, node, whole):
        """(source node, value) of each dim of an annotation's shape: a list written out
        ([64, N]) or a Python list or tuple the function can see (`shape` defined next
        to the program, as parametrised tests do)."""
        def value(d):
            if isinstance(d, ast.Name) and self.ctx is not None and d.id in self.ctx.env \
                    and isinstance(getattr(self.ctx.env[d.id], "type", None), ScalarType):
                return dyn_dim_of(self.ctx.env[d.id])   # an extent computed at run time
            try:
                return self.static(d, "a dimension")
            except ParserError as e:
                if isinstance(e, UnknownOpError):
                    raise
                self.bad_annotation(whole, e.message)
        if isinstance(node, (ast.List, ast.Tuple)):
            return [(d, value(d)) for d in node.elts]
        dims = value(node)
        if not isinstance(dims, (list, tuple)) or not dims:
            self.bad_annotation(whole, f"the shape must be a list like [64, 128]; "
                                       f"{ast.unparse(node)} is {dims!r}")
        return [(node, d) for d in dims]

    def shaped_ann(self, is_tile: bool, elts, whole):
        kind = "Tile" if is_tile else "Tensor"
        if len(elts) < 2:
            self.bad_annotation(whole, f"pl.{kind} needs a shape and a dtype: pl.{kind}[[64, 64], pl.FP32]")
        shape = []
        for d, v in self.shape_dims(elts[0], whole):
            if isinstance(v, Const):
                v = v.value
            if isinstance(v, DynDim):
                if is_tile:
                    self.bad_annotation(whole, "tile shapes are static; a dynamic dim is only allowed on tensors")
            elif not (isinstance(v, int) and not isinstance(v, bool)) or v <= 0:
                self.bad_annotation(whole, f"dimension {ast.unparse(d)} ({v!r}) is not a positive "
                                           f"integer or a pl.dynamic dim")
            shape.append(v)
        dtype = self.ann_dtype(elts[1], whole)
        memref, space, valid, layout = None, None, None, None
        pl = _lang()
        slot = None
        for e in elts[2:]:
            if isinstance(e, ast.Subscript) and is_tile:
                if slot is not None:
                    self.bad_annotation(whole, "two slot selections (pl.MemRef(...)[i]) in one type")
                slot = self.slot_ann(e, whole)
                continue
            if isinstance(e, ast.Call):
                f = self.static(e.func, "a type parameter")
                if f is pl.MemRef:
                    if memref is not None:
                        self.bad_annotation(whole, "two pl.MemRef(...) in one type")
                    memref = self.memref_ann(e, whole)
                    continue
                if f is pl.TensorView:
                    if is_tile:
                        self.bad_annotation(whole, "pl.TensorView belongs in a pl.Tensor type")
                    for kw in e.keywords:
                        if kw.arg == "valid_shape":
                            valid = self.static(kw.value, "a TensorView valid_shape")
                        elif kw.arg == "layout" and isinstance(lay := self.static(kw.value, "a layout"),
                                                               pl.TensorLayout):
                            layout = self.tensor_layout(lay, shape, dtype, whole)
                        else:
                            raise NotBuiltError(f"pl.TensorView({kw.arg}=...) is not supported by this "
                                                f"pypto yet (valid_shape= and layout= are)", self.span(whole),
                                                "a tensor is a row-major (ND) array in DDR")
                    continue
                if f is pl.TileView:
                    if not is_tile:
                        self.bad_annotation(whole, "pl.TileView belongs in a pl.Tile type")
                    # the layout fields are derived (explicit dumps print them); the valid
                    # region is part of the type
                    for kw in e.keywords:
                        if kw.arg == "valid_shape":
                            valid = self.tile_view_valid(kw.value)
                    continue
                self.bad_annotation(whole, f"unexpected {ast.unparse(e)}")
            v = self.static(e, "a type parameter")
            if isinstance(v, MemorySpace) and is_tile:
                if space is not None:
                    self.bad_annotation(whole, "two memory spaces in one type")
                space = v
                continue
            if isinstance(v, MemorySpace):
                self.bad_annotation(whole, "a tensor always lives in DDR; memory spaces belong to tiles")
            if isinstance(v, pl.TensorLayout) and not is_tile:
                if layout is not None:
                    self.bad_annotation(whole, "two layouts in one type")
                layout = self.tensor_layout(v, shape, dtype, whole)
                continue
            self.bad_annotation(whole, f"unexpected type parameter {ast.unparse(e)}")
        if valid is not None:
            valid = tuple(getattr(v, "value", v) for v in valid)
            # -1 or a pl.dynamic dim: known at run time; the dim's own pl.dynamic: all of it
            valid = tuple(s if isinstance(v, DynDim) and v == s else
                          None if v == -1 or isinstance(v, DynDim) else v
                          for v, s in zip(valid, list(shape) + [None] * len(valid)))
            if len(valid) != len(shape) or not all(
                    v is None or v is s or isinstance(v, int) and 0 < v and (not isinstance(s, int) or v <= s)
                    for v, s in zip(valid, shape)):
                self.bad_annotation(whole, f"valid_shape {list(valid)} does not lie inside "
                                           f"the {kind.lower()} shape {shape}")
            if valid == tuple(shape):
                valid = None
        if is_tile:
            return TileType(tuple(shape), dtype, space, memref, valid, slot)
        return TensorType(tuple(shape), dtype, memref, valid, layout or None)

    def tensor_layout(self, v, shape, dtype, whole) -> str:
        """A layout type parameter: ND is the default (""); the MX scale layouts take
        2-D FP8E8M0 / UINT8 tensors made of whole blocks."""
        if v.name == "ND":
            return ""
        if v.name not in ("MX_A_ZZ", "MX_B_NN"):
            raise NotBuiltError(f"a tensor in the {v.name} layout is not supported by this pypto yet",
                                self.span(whole), "a tensor is a row-major (ND) array in DDR")
        name = v.name.lower()
        br, bc = MX_LAYOUTS[name]
        if dtype not in (dt.FP8E8M0, dt.UINT8) or len(shape) != 2 or not all(
                isinstance(d, int) and d % b == 0 for d, b in zip(shape, (br, bc))):
            self.bad_annotation(whole, f"pl.{v.name} holds an MX matmul's scales: a 2-D pl.FP8E8M0 (or "
                                       f"pl.UINT8) tensor of whole {br}x{bc} blocks, got {shape} {dtype}")
        return name

    def slot_ann(self, node: ast.Subscript, whole) -> Slot:
        """`pl.MemRef("name", slots=N)[index]`, or `R[index]` with `R = pl.MemRef(slots=N)`
        bound next to the program: slot `index` of the declared allocation. The region is
        known by its name (the string, else the Python name it is bound to)."""
        pl = _lang()
        try:
            d = node.value
            if isinstance(d, ast.Call) and self.static(d.func, "a slot declaration") is pl.MemRef:
                decl = pl.MemRef(*[self.static(a, "a pl.MemRef argument") for a in d.args],
                                 **{k.arg: self.static(k.value, f"pl.MemRef's {k.arg}") for k in d.keywords})
            else:
                decl = self.static(d, "a slot declaration")
        except TypeError as e:
            self.bad_annotation(whole, f"{ast.unparse(node.value)}: {e}")
        except ParserError as e:
            if isinstance(e, UnknownOpError):
                raise
            self.bad_annotation(whole, e.message)
        if not isinstance(decl, pl.MemRef) or decl.slots is None:
            self.bad_annotation(whole, f"{ast.unparse(node.value)} is not a pl.MemRef(..., slots=N) "
                                       f"declaration, so it has no slots to index")
        count = decl.slots
        if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= 16:
            self.bad_annotation(whole, f"slots={count!r}: a declared allocation has 1 to 16 slots")
        if decl.base is not None:
            if not isinstance(decl.base, str) or not decl.base.isidentifier():
                self.bad_annotation(whole, f"the slot declaration's name {decl.base!r} is not an identifier")
            region = decl.base
        elif isinstance(node.value, ast.Name):
            region = node.value.id
        else:
            self.bad_annotation(whole, "name the declaration: pl.MemRef(\"buf\", slots=2)[i]")
        if self.ctx is None:
            self.bad_annotation(whole, "a slot is chosen where a tile is defined, inside a function body")
        index = self.expr(node.slice)
        ty = getattr(index, "type", None) if not isinstance(index, Const) else ScalarType(index.dtype)
        if not isinstance(ty, ScalarType) or ty.dtype.is_float or ty.dtype is dt.BOOL:
            self.bad_annotation(whole, f"the slot index {ast.unparse(node.slice)} is not an integer scalar")
        if isinstance(index, Const) and not 0 <= index.value < count:
            self.bad_annotation(whole, f"slot {index.value} of a {count}-slot allocation: "
                                       f"the slots are 0..{count - 1}")
        return Slot(region, count, index)

    def memref_ann(self, call: ast.Call, whole) -> MemRef:
        names = ["base", "offset", "size"]
        vals: dict[str, ast.AST] = {}
        if len(call.args) > 3:
            self.bad_annotation(whole, "pl.MemRef(base, byte_offset, size) takes 3 arguments")
        for n, a in zip(names, call.args):
            vals[n] = a
        for kw in call.keywords:
            if kw.arg not in names or kw.arg in vals:
                self.bad_annotation(whole, f"pl.MemRef got an unexpected argument {kw.arg}")
            vals[kw.arg] = kw.value
        if len(vals) != 3:
            self.bad_annotation(whole, "pl.MemRef(base, byte_offset, size) takes 3 arguments")
        b = vals["base"]
        if isinstance(b, ast.Name) and self.ctx is not None and b.id in self.ctx.env:
            base = self.ctx.env[b.id]
            if not isinstance(base.type, PtrType):
                self.bad_annotation(whole, f"MemRef base {b.id!r} is not a pl.Ptr")
        else:
            try:
                base = self.static(b, "a MemRef base")
            except ParserError as e:
                self.bad_annotation(whole, e.message)
            if not isinstance(base, str):
                self.bad_annotation(whole, "a MemRef base is a pl.Ptr variable or a string name")
        out = []
        for n in ("offset", "size"):
            v = self.static(vals[n], f"MemRef {n}")
            if isinstance(v, Const):
                v = v.value
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                self.bad_annotation(whole, f"MemRef {n} must be a non-negative integer")
            out.append(v)
        return MemRef(base, out[0], out[1])
