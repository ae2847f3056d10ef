"""PTO codegen: one kernel function (AIV / AIC / InCore) of a post-pass Program → `.pto`
text (MLIR, pto dialect), which `pypto.ptoas` reads.

A deliberate 1:1 translation: memory planning, aliasing and in-place reuse were decided
by the passes; this module only spells them. Equal input gives byte-identical text.
Anything it cannot express raises `CodegenError` with the statement's span.

## The subset of MLIR emitted (the contract with pypto.ptoas)

```
module attributes {pto.target_arch = "a2a3"} {
  func.func @k(%arg0: !pto.ptr<f32>, ..., %argT: f32, ..., %M: index) attributes {pto.kernel_kind = #pto.kernel_kind<vector>} {
    %c0_i64 = arith.constant 0 : i64            <- all constants first, deduplicated, sorted
    %c64_index = arith.constant 64 : index
    %cst = arith.constant 1.0 : f32
    %a_view = pto.make_tensor_view %arg0, shape = [...], strides = [...] {layout = #pto.layout<nd>} : !pto.tensor_view<?x?xf32> loc(...)
    %t = pto.alloc_tile addr = %c0_i64 valid_row = %c64_index valid_col = %c64_index : !pto.tile_buf<...> loc(...)
    %a_pview = pto.partition_view %a_view, offsets = [...], sizes = [...] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<64x64xf32> loc(...)
    pto.tload ins(%a_pview : !pto.partition_tensor_view<64x64xf32>) outs(%t : !pto.tile_buf<...>) loc(...)
    pto.tadd ins(%x, %y : TB, TB) outs(%z : TB) loc(...)
    scf.for %i = %c0_index to %c4_index step %c1_index {
      %0 = arith.muli %i, %c64_index : index loc(...)
      ...
    }
    return
  }
}
```

- Signature: tensor params first (`%arg0..`, `!pto.ptr<dtype>`, in parameter order), then
  scalar params (`%argN: <mlir dtype>`, in parameter order), then one `index` arg per
  distinct `DynDim` of the tensor params (in order of first appearance), named after the
  symbol. Each such dim arg appears *directly* as a `shape` operand of the
  `make_tensor_view` of the first tensor param that has it (that view is always emitted),
  so a kernel wrapper recovers it from that tensor's descriptor shape.
  `pto.kernel_kind`: `cube` for AIC, `vector` for AIV, no attribute for InCore.
- Constants: `%c<v>_<type>` (`%cn<v>_<type>` if negative) for integers/index,
  `%true`/`%false` for i1, `%cst`, `%cst_1`, ... for floats (decimal with a dot, or the
  hex bit pattern for inf/nan and f16/bf16). Constants carry no loc.
- `make_tensor_view`: one per tensor param the body reads or writes, in parameter order,
  row-major `nd` strides (composite dynamic strides are computed with `arith.muli`
  just before the view). Views carry the function's loc.
- `alloc_tile`: emitted right before the op that first writes the tile.
  Level3 (PYPTO / DSA_RP planners): one alloc per tile-defining Assign, with
  `addr = %c<MemRef offset>_i64` (the offset is the byte address in the space; tiles
  sharing a buffer share the address). Level2 (PTOAS planner, or no MemRefs at all): no
  `addr`; tiles the passes placed in one buffer (same alloc Ptr and offset, same type)
  are one SSA value, allocated once where the first of them is written (when visible).
  `valid_row`/`valid_col` are always given (the static tile shape), and the type prints
  `v_row=?, v_col=?`. See `ptoas_level` for how the level is chosen.
- Tile type: `!pto.tile_buf<loc=L, dtype=D, rows=R, cols=C, v_row=?, v_col=?,
  blayout=B, slayout=S, fractal=F, pad=0>` with layout from `pypto.ir.layout`. A 1-D
  tile is one row; higher-rank tiles must have leading unit dims.
- Compute ops: `pto.<op> ins(%a, %b : Ta, Tb) outs(%d : Td)`; scalars in `ins` have their
  scalar type. `tcvt` carries `{rmode = #pto<round_mode MODE>}` right after its operand.
  `treshape` is the one view op: `%y = pto.treshape %x : Tx -> Ty` (no alloc; Ty prints
  static `v_row`/`v_col`).
- Index math: `arith.addi/subi/muli/divsi/remsi/minsi/maxsi` on `index` (Python `//`, `%`
  map to the truncating forms: index math is non-negative), `arith.index_cast`,
  `arith.sitofp/fptosi/extf/truncf/extsi/trunci`, float `arith.addf/subf/mulf/divf/
  minimumf/maximumf`, `arith.cmpi/cmpf` for `scf.if` conditions. Results are `%0`, `%1`, ...
- Control flow: `scf.for %i = %lb to %ub step %s { ... }` (never iter_args: tiles are
  buffers written in place), `scf.if %cond { ... } else { ... }` without results.
  Braces carry no loc.
- Every op line ends with ` loc("<file>":<line>:<col>)` from the statement's span (the
  enclosing loop's or the function's span if the statement has none) unless
  `emit_loc=False`.

## Loop-carried tiles
A tile iter_arg is bound to its init's buffer; the loop's return vars bind to the same
buffer after the loop. At the yield, a yielded tile that is a different buffer (different
MemRef, or no MemRefs at level2) is copied into the carried buffer with `pto.tmov`.
`tile.matmul_acc` is in place: its result is its acc operand's buffer (if the IR gave the
result another MemRef, the acc is first copied there with `pto.tmov`).
"""
from __future__ import annotations

from pypto import dtype as dt
from pypto.codegen.common import Names, c_string, fail, mlir_float
from pypto.codegen.control_flow import ControlFlow
from pypto.codegen.gm_access import GmAccess
from pypto.codegen.pipes import BARRIER_ARG, PIPE_ARG, PIPE_STATEMENTS, Pipes
from pypto.codegen.tileops import EMITTERS, SCALAR_EMITTERS
from pypto.codegen.tileops.comm import TENSOR_EFFECTS
from pypto.codegen.tileops.prefetch import SDMA_ARG
from pypto.codegen.values import _Array, _Scalar, _Tensor, _Tile, _mlir_name, _same_storage
from pypto.ir import layout as _layout
from pypto.ir.layout import tile_rows_cols
from pypto.ir.ops.system import BLOCK_IDENTITY
from pypto.codegen.scalars import Scalars
from pypto.errors import NotBuiltError
from pypto.ir.nodes import (ArrayType, HandleType, Assign, BinOp, Call, Const, DynDim, Eval, For, FunctionType, If,
                            MemorySpace, Program, PtrType, Return, ScalarType, TensorType,
                            TileType, TupleType, Var, While, Yield)
from pypto.ir.visit import defs as defs_of, walk
from pypto.codegen.tile_types import tile_buf_type

# ----------------------------------------------------------------------------- op tables
# each tile op's emitter lives with its family (pypto.codegen.tileops), its pto op name
# with the op (pypto.ir.ops)
# (the others: a tensor, a Ptr, a scalar read and an element write, handled where a kernel
# assigns, evaluates or reads them; scatter_update, which ConvertTensorToTileOps lowers to
# tile.scatter before any kernel reaches codegen)
SUPPORTED_OPS = tuple(sorted(set(EMITTERS) | {"tile.store", "tile.alloc", "tile.read", "tile.write",
                                              "tile.mscatter", "tile.scatter_update"}
                             | set(BLOCK_IDENTITY) | set(PIPE_STATEMENTS)   # (the SPMD arguments)
                             | set(SCALAR_EMITTERS)))                     # (and the statement-only ops)

PLANNERS = ("PYPTO", "DSA_RP", "PTOAS")

_M = MemorySpace

_KIND = {FunctionType.AIC: "cube", FunctionType.AIV: "vector"}

_TYPE_RANK = {"i64": 0, "i32": 1, "i16": 2, "i8": 3, "ui8": 4, "i1": 5, "index": 6,
              "f32": 7, "f16": 8, "bf16": 9, "ui16": 10, "ui32": 11, "ui64": 12}


def generate_kernel(program: Program, name: str, *, arch: str = "a2a3",
                    emit_loc: bool = True, memory_planner: str | None = None) -> str:
    """The `.pto` text of kernel function `name` of `program`.

    memory_planner: "PYPTO" / "DSA_RP" (addresses planned by the passes: `addr` on every
    alloc, ptoas level3) or "PTOAS" (no `addr`, ptoas level2 plans); None infers it from
    the IR (see `ptoas_level`)."""
    f = program.get(name)
    if f is None:
        fail(f"no function named {name!r} in program {program.name!r}", None)
    if not f.is_kernel:
        fail(f"function {name!r} is {f.func_type.value}; only InCore/AIC/AIV functions become .pto",
             f.span)
    if arch not in _layout.ARCHS:
        fail(f"unknown arch {arch!r}; expected one of {', '.join(_layout.ARCHS)}", f.span)
    level = ptoas_level(f, memory_planner)
    if f.attrs.get("group"):
        fail(f"{name!r} is the {f.func_type.value} member of group {f.attrs['group']!r}: it runs in the "
             f"group's kernel, not alone", f.span, f"generate the kernel of {f.attrs['group']!r}")
    if f.attrs.get("members"):               # a hand-written group: its members' bodies
        from pypto.codegen.core_groups import member_kernels
        hs = member_kernels(program, f)
        level = max(ptoas_level(h, memory_planner) for h in hs)        # ("level3" if planned)
        cube, vector = (_Kernel(program, h, arch, emit_loc, level) for h in hs)
        funcs = [cube.function_lines(), vector.function_lines()]
        return _module(arch, [ln for lines in funcs for ln in lines])
    if f.func_type is FunctionType.Group:    # one module: the cube half, then the vector half
        from pypto.passes.expand_mixed_kernel import halves
        cube, vector = (_Kernel(program, h, arch, emit_loc, level) for h in halves(f))
        # unsplit, both AIV lanes of the core group would run the vector half alike: it
        # arrives at a soft barrier for both
        vector.lanes = 1 if f.attrs.get("split") or f.attrs.get("aiv_lanes") else 2
        funcs = [cube.function_lines(), vector.function_lines()]
        return _module(arch, [ln for lines in funcs for ln in lines])
    if f.func_type is FunctionType.AIV and f.attrs.get("split"):   # what each of two AIVs runs
        from pypto.passes.expand_mixed_kernel import split_vector
        f = split_vector(f)
    return _module(arch, _Kernel(program, f, arch, emit_loc, level).function_lines())


def _module(arch: str, funcs: list[str]) -> str:
    return "\n".join([f'module attributes {{pto.target_arch = "{arch}"}} {{', *funcs, "}"]) + "\n"


def generate_kernels(program: Program, *, arch: str = "a2a3", emit_loc: bool = True) -> dict[str, str]:
    """`.pto` text of every kernel function, by name, in program order."""
    return {f.name: generate_kernel(program, f.name, arch=arch, emit_loc=emit_loc)
            for f in program.functions if f.is_launched}


def ptoas_level(func, memory_planner: str | None = None) -> str:
    """The ptoas level a kernel's `.pto` is meant for: "level3" (every alloc_tile has an
    `addr`) for the PYPTO and DSA_RP planners, "level2" (no `addr`; ptoas plans) for PTOAS.

    Without a planner it is inferred from the IR: level2 when no tile carries a MemRef, or
    when two allocations of one memory space overlap (addresses were never assigned);
    otherwise level3. The inference cannot tell an unplanned kernel with one allocation
    per space from a planned one: pass the planner when it is known."""
    if memory_planner is not None:
        planner = str(getattr(memory_planner, "name", memory_planner)).upper()
        if planner not in PLANNERS:
            fail(f"unknown memory planner {memory_planner!r}; expected one of {', '.join(PLANNERS)}",
                 func.span)
        return "level2" if planner == "PTOAS" else "level3"
    from pypto.ir.visit import walk
    has_memref = False
    ranges: dict[MemorySpace, list[tuple[int, int, int]]] = {}
    allocs: dict[int, MemorySpace] = {}
    for s in walk(func.body):
        if not isinstance(s, Assign):
            continue
        if isinstance(s.var.type, PtrType) and isinstance(s.value, Call):
            space = s.value.kwargs.get("target_memory")
            if isinstance(space, MemorySpace):
                allocs[id(s.var)] = space
        t = s.var.type
        if isinstance(t, TileType) and t.memref is not None:
            has_memref = True
            m = t.memref
            if isinstance(m.base, Var) and id(m.base) in allocs:
                ranges.setdefault(allocs[id(m.base)], []).append((id(m.base), m.offset, m.offset + m.size))
    if not has_memref:
        return "level2"
    for rs in ranges.values():
        for i, (b1, lo1, hi1) in enumerate(rs):
            for b2, lo2, hi2 in rs[i + 1:]:
                if b1 != b2 and lo1 < hi2 and lo2 < hi1:
                    return "level2"
    return "level3"


class _Kernel(Scalars, ControlFlow, GmAccess, Pipes):
    def __init__(self, program: Program, func, arch: str, emit_loc: bool, level: str):
        self.program = program
        self.f = func
        self.arch = arch
        self.emit_loc = emit_loc
        self.names = Names()
        self.consts: dict[tuple, tuple[str, str]] = {}   # key -> (name, "value : type")
        self.float_count = 0
        self.temp = 0
        self.env: dict[int, object] = {}                 # id(Var) -> _Tensor|_Tile|_Scalar
        self.ptrs: dict[int, MemorySpace] = {}           # id(Ptr var) -> space
        self.slot_stride: dict[int, int] = {}              # id(Ptr var) -> bytes per slot
        self.multi: dict[int, tuple[str, str]] = {}      # id(Ptr var) -> its multi-slot buffer, type
        self.tensors: list[_Tensor] = []
        self.dyn_args: list[tuple[DynDim, str]] = []
        self.spmd_used: set[str] = set()     # block identity ops the body reads
        self.barrier_used = False            # a hard syncall: the launch's barrier argument
        self.sdma_used = False               # a prefetch context: the runtime's SDMA workspace
        self.lanes = 1                       # the AIV lanes this function arrives for at a soft barrier
        self.pipe_used = False               # a Group's half: the pipe to the other core
        self.lines: list[str] = []
        self.depth = 2
        self.span_stack = [func.span]
        self.level = level
        self.buffers: list[dict] = [{}]     # level2: (buffer, offset, type) -> _Tile, per region

    # ------------------------------------------------------------------ output helpers
    def loc(self, span) -> str:
        span = span or next((s for s in reversed(self.span_stack) if s is not None), None)
        if not self.emit_loc or span is None:
            return ""
        return f" loc({c_string(span.file)}:{span.line}:{span.col})"

    def emit(self, text: str, span=None, loc=True):
        self.lines.append("  " * self.depth + text + (self.loc(span) if loc else ""))

    def tmp(self) -> str:
        name = f"%{self.temp}"
        self.temp += 1
        return name

    def const(self, value, ty: str) -> str:
        if ty == "i1":
            value = bool(value)
            key = (ty, value)
            if key not in self.consts:
                self.consts[key] = ("%true" if value else "%false", f"{'true' if value else 'false'}")
            return self.consts[key][0]
        if ty in ("f32", "f16", "bf16"):
            text = mlir_float(value, ty)
            key = (ty, text)
            if key not in self.consts:
                name = "%cst" if self.float_count == 0 else f"%cst_{self.float_count}"
                self.float_count += 1
                self.consts[key] = (name, text)
            return self.consts[key][0]
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            else:
                fail(f"{value!r} is not an integer constant of type {ty}", self.span_stack[-1])
        key = (ty, value)
        if key not in self.consts:
            name = f"%c{value}_{ty}" if value >= 0 else f"%cn{-value}_{ty}"
            self.consts[key] = (name, str(value))
        return self.consts[key][0]

    def tile_ty(self, t: TileType, span, static_valid=False, pad=0) -> str:
        return tile_buf_type(t, self.arch, static_valid=static_valid, span=span, pad=pad)

    # ------------------------------------------------------------------ driver
    def function_lines(self) -> list[str]:
        """The func.func of this kernel, as lines of its module."""
        f = self.f
        tensor_params = [p for p in f.params if isinstance(p.var.type, TensorType)]
        scalar_params = [p for p in f.params if isinstance(p.var.type, ScalarType)]
        for p in f.params:
            if not isinstance(p.var.type, (TensorType, ScalarType)):
                fail(f"kernel parameter {p.var.name!r} has type {type(p.var.type).__name__}; "
                     "a kernel takes tensors and scalars", f.span)
        sig = []
        for i, p in enumerate(tensor_params):
            arg = self.names.fresh(f"arg{i}")
            t = _Tensor(p.var, "%" + arg, i)
            self.env[id(p.var)] = t
            self.tensors.append(t)
            sig.append(f"%{arg}: !pto.ptr<{p.var.type.dtype.mlir}>")
        for j, p in enumerate(scalar_params):
            arg = self.names.fresh(f"arg{len(tensor_params) + j}")
            ty = p.var.type.dtype.mlir
            self.env[id(p.var)] = _Scalar("%" + arg, ty)
            sig.append(f"%{arg}: {ty}")
        seen_dims: dict[str, str] = {}
        for p in tensor_params:
            for d in p.var.type.shape:
                if isinstance(d, DynDim) and d.name not in seen_dims:
                    nm = "%" + self.names.fresh(_mlir_name(d.name))
                    seen_dims[d.name] = nm
                    self.dyn_args.append((d, nm))
                    sig.append(f"{nm}: index")
        self.dim_ssa = seen_dims

        # body first (it decides which views and constants are needed)
        body = f.body
        ret = None
        if body and isinstance(body[-1], Return):
            body, ret = body[:-1], body[-1]
        self.block(body)
        self.check_return(ret)
        body_lines = self.lines
        # hidden arguments last, in a fixed order, each only if the body reads it
        if self.sdma_used:
            sig.append(f"%{SDMA_ARG}: !pto.ptr<i8>")
        sig += [f"%{BLOCK_IDENTITY[op]}: i32" for op in BLOCK_IDENTITY if op in self.spmd_used]
        if self.barrier_used:
            sig.append(f"%{BARRIER_ARG}: i64")
        if self.pipe_used:
            sig.append(f"%{PIPE_ARG}: i64")

        # views of the used tensors (and of the first carrier of each dynamic dim)
        self.lines = []
        carriers = set()
        for d, _ in self.dyn_args:
            for t in self.tensors:
                if d in t.param.type.shape:
                    carriers.add(t.index)
                    break
        for t in self.tensors:
            if t.view is None and t.index in carriers:
                self.view_name(t)
        for t in self.tensors:
            if t.view is not None:
                self.make_view(t)
            if t.tview is not None:
                self.make_tview(t)
        view_lines = self.lines

        kind = _KIND.get(f.func_type)
        # a vector kernel split over the two AIVs of its core group (pl.split) says so
        split = f", pypto.split = {f.attrs['split']}" if kind == "vector" and f.attrs.get("split") else ""
        if kind == "vector" and f.attrs.get("aiv_lanes"):     # pl.split_aiv: both AIVs run it
            split += f", pypto.aiv_lanes = {f.attrs['aiv_lanes']}"
        attrs = f" attributes {{pto.kernel_kind = #pto.kernel_kind<{kind}>{split}}}" if kind else ""
        out = [f"  func.func @{f.name}({', '.join(sig)}){attrs} {{"]
        consts = sorted(self.consts.items(),
                        key=lambda kv: (_TYPE_RANK.get(kv[0][0], 99), kv[0][0],
                                        kv[0][1] if not isinstance(kv[0][1], str) else 0,
                                        kv[1][0]))
        for (ty, _), (name, text) in consts:
            out.append(f"    {name} = arith.constant {text} : {ty}")
        out += view_lines
        out += body_lines
        out.append("    return")
        out.append("  }")
        return out

    def check_return(self, ret):
        if ret is None:
            return
        for v in ret.values:
            if not isinstance(self.value_of(v, ret.span), _Tensor):
                fail("a kernel returns only its tensor parameters (written in place)", ret.span)

    def view_name(self, t: _Tensor, transposed: bool = False) -> str:
        if transposed:
            if t.tview is None:
                t.tview = "%" + self.names.fresh(_mlir_name(t.param.name) + "_tview")
            return t.tview
        if t.view is None:
            t.view = "%" + self.names.fresh(_mlir_name(t.param.name) + "_view")
        return t.view

    def make_tview(self, t: _Tensor):
        """A 2-D tensor read as its transpose: shape [C, R], strides [1, C], DN layout."""
        ty: TensorType = t.param.type
        if len(ty.shape) != 2 or not all(isinstance(d, int) for d in ty.shape):
            fail(f"a transposed read of {t.param.name!r} needs a static 2-D tensor", self.f.span)
        rows, cols = ty.shape
        self.emit(f"{t.tview} = pto.make_tensor_view {t.arg}, shape = [{self.const(cols, 'index')}, "
                  f"{self.const(rows, 'index')}], strides = [{self.const(1, 'index')}, "
                  f"{self.const(cols, 'index')}] {{layout = #pto.layout<dn>}} : "
                  f"!pto.tensor_view<?x?x{ty.dtype.mlir}>", self.f.span)

    def make_view(self, t: _Tensor):
        ty: TensorType = t.param.type
        if not ty.shape:
            fail(f"tensor parameter {t.param.name!r} has rank 0", self.f.span)
        if ty.dtype.pack > 1 and not isinstance(ty.shape[-1], int):
            fail(f"tensor parameter {t.param.name!r}: FP4 data needs a static last dim (stored in pairs)",
                 self.f.span)
        shape = ty.dtype.stored(ty.shape)          # (FP4: in pairs)
        dims = [self.dim_value(d) for d in shape]
        strides, acc = [], self.const(1, "index")
        acc_static = 1
        for k in range(len(dims) - 1, -1, -1):
            strides.append(acc)
            d = shape[k]
            if k == 0:
                break
            if isinstance(d, int) and acc_static is not None:
                acc_static *= d
                acc = self.const(acc_static, "index")
            else:
                r = self.tmp()
                self.emit(f"{r} = arith.muli {acc}, {dims[k]} : index", self.f.span)
                acc, acc_static = r, None
        strides.reverse()
        q = "x".join("?" for _ in dims)
        self.emit(f"{t.view} = pto.make_tensor_view {t.arg}, shape = [{', '.join(dims)}], "
                  f"strides = [{', '.join(strides)}] {{layout = #pto.layout<{ty.layout or 'nd'}>}} : "
                  f"!pto.tensor_view<{q}x{ty.dtype.mlir}>", self.f.span)

    def dim_value(self, d) -> str:
        if isinstance(d, DynDim):
            return self.dim_ssa[d.name]
        return self.const(int(d), "index")

    # ------------------------------------------------------------------ statements
    def block(self, stmts):
        for s in stmts:
            self.stmt(s)

    def stmt(self, s):
        span = getattr(s, "span", None)
        if isinstance(s, Assign):
            self.assign(s)
        elif isinstance(s, Eval):
            c = s.expr
            if isinstance(c, Call) and c.op == "tile.store":
                self.store(c, span)
            elif isinstance(c, Call) and c.op in ("tile.write", "tensor.write"):
                self.write(c, span)
            elif isinstance(c, Call) and c.op == "tile.mscatter":
                self.mscatter(c, span)
            elif isinstance(c, Call) and c.op in PIPE_STATEMENTS:
                getattr(self, PIPE_STATEMENTS[c.op])(c, span)
            elif isinstance(c, Call) and c.op == "tile.tpush":
                self.tpush(c, span)
            elif isinstance(c, Call) and c.op in SCALAR_EMITTERS:     # its value unused
                SCALAR_EMITTERS[c.op](self, c, span)
            elif isinstance(c, Call) and c.op in TENSOR_EFFECTS:      # a window written
                TENSOR_EFFECTS[c.op](self, c, span)
            else:
                what = c.op if isinstance(c, Call) else type(c).__name__
                fail(f"cannot generate PTO for the statement-level expression {what}", span)
        elif isinstance(s, For):
            self.for_(s)
        elif isinstance(s, While):
            self.while_(s)
        elif isinstance(s, If):
            self.if_(s)
        elif isinstance(s, Return):
            fail("return must be the last statement of a kernel", span)
        elif isinstance(s, Yield):
            fail("a yield outside a loop or if", span)
        else:
            fail(f"cannot generate PTO for a {type(s).__name__} statement in a kernel", span,
                 "outline scopes before codegen")

    def assign(self, s: Assign):
        v, e, span = s.var, s.value, s.span
        if isinstance(v.type, PtrType):
            if not (isinstance(e, Call) and e.op == "tile.alloc"):
                fail(f"{v.name!r}: a Ptr comes only from tile.alloc", span)
            space = e.kwargs.get("target_memory")
            if not isinstance(space, MemorySpace):
                fail("tile.alloc needs target_memory=pl.Mem.<space>", span)
            self.ptrs[id(v)] = space
            if "slots" in e.attrs:      # a declared multi-slot allocation: its slots' size
                self.slot_stride[id(v)] = int(e.args[0].value) // int(e.attrs["slots"])
                if self.level != "level3":
                    self.multi_tile(v, int(e.attrs["slots"]), span)
            return
        if isinstance(e, Var):          # plain alias
            self.env[id(v)] = self.value_of(e, span)
            return
        if isinstance(v.type, ScalarType):
            self.env[id(v)] = self.scalar(e, v.type.dtype.mlir, span)
            return
        if not isinstance(e, Call):
            fail(f"cannot assign {type(e).__name__} to {v.name!r} in a kernel", span)
        if e.op in ("tile.write", "tensor.write"):
            self.env[id(v)] = self.write(e, span, v)
            return
        if e.op == "tile.mscatter":
            self.env[id(v)] = self.mscatter(e, span)
            return
        if isinstance(v.type, ArrayType):
            self.env[id(v)] = self.array_op(v, e, span)
            return
        if isinstance(v.type, TensorType) and e.op in TENSOR_EFFECTS:
            self.env[id(v)] = TENSOR_EFFECTS[e.op](self, e, span)
            return
        if isinstance(v.type, TensorType):
            if e.op != "tile.store":
                fail(f"{e.op} producing tensor {v.name!r} inside a kernel", span,
                     "tensor ops must be converted to tile ops (ConvertTensorToTileOps) before codegen")
            self.env[id(v)] = self.store(e, span)
            return
        if isinstance(v.type, HandleType):       # an opaque handle (the prefetch family's)
            self.tile_op(v, e, span)
            return
        if e.op == "tuple.get" and id(v) in self.env:    # bound by the op that wrote it
            return
        if not isinstance(v.type, (TileType, TupleType)) or \
                (isinstance(v.type, TupleType) and not all(isinstance(t, TileType) for t in v.type.types)):
            fail(f"cannot generate PTO for {v.name!r} of type {type(v.type).__name__}", span)
        self.tile_op(v, e, span)

    def items_of(self, tup: Var) -> dict[int, Var]:
        """The values `x = tup[i]` bind from the results of a tile op with several."""
        if not hasattr(self, "_items"):
            self._items: dict[int, dict[int, Var]] = {}
            for s in walk(self.f.body):
                if isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op == "tuple.get" \
                        and isinstance(s.value.args[0], Var):
                    self._items.setdefault(id(s.value.args[0]), {})[s.value.args[1].value] = s.var
        return self._items.get(id(tup), {})

    def array_op(self, v: Var, e: Call, span) -> _Array:
        """array.create declares the array; update_element writes it in place (the new
        value is the same array)."""
        t: ArrayType = v.type
        if e.op == "array.create":
            arr = _Array("%" + self.names.fresh(_mlir_name(v.name)),
                         f"!pto.local_array<{t.extent}x{t.dtype.mlir}>", t.dtype.mlir)
            self.emit(f"{arr.ssa} = pto.declare_local_array -> {arr.ty}", span)
            return arr
        if e.op == "array.update_element":
            arr = self.value_of(e.args[0], span)
            idx = self.index(e.args[1], span)
            val = self.scalar(e.args[2], arr.elem, span).ssa
            self.emit(f"pto.local_array_set {arr.ssa}[{idx}], {val} : {arr.ty}, {arr.elem}", span)
            return arr
        fail(f"cannot generate PTO for {e.op} producing the array {v.name!r}", span)

    # ------------------------------------------------------------------ values
    def value_of(self, e, span):
        if isinstance(e, Var):
            val = self.env.get(id(e))
            if val is None:
                fail(f"{e.name!r} is used before it is defined (or is not a kernel value)", span)
            return val
        fail(f"expected a variable, got {type(e).__name__}", span)

    def tile(self, e, span) -> _Tile:
        val = self.value_of(e, span) if isinstance(e, Var) else None
        if not isinstance(val, _Tile):
            what = e.name if isinstance(e, Var) else type(e).__name__
            fail(f"{what!r} is not a tile", span,
                 "tensor values must be loaded into tiles (tile.load) before computing in a kernel")
        return val

    def tensor(self, e, span) -> _Tensor:
        val = self.value_of(e, span)
        if not isinstance(val, _Tensor):
            fail(f"{getattr(e, 'name', e)!r} is not a tensor parameter of the kernel", span)
        return val

    def check_tile_type(self, v: Var, span):
        t: TileType = v.type
        if t.dtype.kind in ("fp8", "fp4", "hf8") and self.arch != "a5":
            fail(f"tile {v.name!r} holds {t.dtype}: {8 // t.dtype.pack}-bit floats exist on a5, not "
                 f"{self.arch}", span, "compile for platform='a5sim'")
        if t.memory_space is None:
            fail(f"tile {v.name!r} has no memory space", span, "run InferTileMemorySpace before codegen")
        if self.f.func_type is FunctionType.AIV and t.memory_space is not _M.Vec:
            fail(f"tile {v.name!r} is in {t.memory_space.name}, but {self.f.name!r} is a vector (AIV) "
                 "kernel, which has only Vec", span, "cube tiles belong in an AIC kernel")
        if self.f.func_type is FunctionType.AIC and t.memory_space is _M.Vec:
            fail(f"tile {v.name!r} is in Vec, but {self.f.name!r} is a cube (AIC) kernel, which has "
                 "no Vec buffer", span, "vector tiles belong in an AIV kernel")
        if t.memref is not None or self.level == "level3":
            if t.memref is None:
                fail(f"tile {v.name!r} has no MemRef while other tiles of this kernel do", span,
                     "either every tile carries a MemRef (PYPTO planner) or none does (PTOAS planner)")
            base = t.memref.base
            if not isinstance(base, Var) or id(base) not in self.ptrs:
                fail(f"tile {v.name!r}: its MemRef base is not a tile.alloc of this kernel", span)
            if self.ptrs[id(base)] is not t.memory_space:
                fail(f"tile {v.name!r} is in {t.memory_space.name} but its buffer "
                     f"{base.name!r} was allocated in {self.ptrs[id(base)].name}", span)

    def dyn_valid(self, t: TileType, span) -> tuple[str, str]:
        """Valid rows/cols SSA values of a result whose valid shape is known only when the
        kernel runs: those of the op's first tile operand (element-wise ops keep them, a
        row reduction keeps the rows, a column one the columns)."""
        src = next((self.env.get(id(a)) for a in getattr(self, "cur_args", ())
                    if isinstance(self.env.get(id(a)), _Tile)), None)
        rows, cols = tile_rows_cols(t.shape)
        if src is None or not src.valid:
            fail("a tile whose valid shape is known only at run time must come from an operand "
                 "with one", span)
        srows, scols = tile_rows_cols(src.tile.shape)
        vr = src.valid[0] if rows == srows else self.const(rows, "index")
        vc = src.valid[1] if cols == scols else self.const(cols, "index")
        return vr, vc

    def alloc(self, v: Var, span, pad: int = 0, valid: tuple | None = None) -> _Tile:
        """Emit `pto.alloc_tile` for tile variable `v` and bind it (valid over the tile's
        valid shape, or `valid` (SSA rows, cols); `pad`: the value tfillpad writes, carried
        by the type)."""
        self.check_tile_type(v, span)
        t: TileType = v.type
        ty = self.tile_ty(t, span, pad=pad)
        key = None
        if self.level != "level3" and t.slot is not None:
            return self.multi_tile_get(v, ty, span)
        if self.level != "level3" and t.memref is not None:
            # without addresses, tiles the passes put in one buffer must be one SSA value
            key = (id(t.memref.base), t.memref.offset, ty)
            for region in reversed(self.buffers):
                if key in region:
                    self.env[id(v)] = region[key]
                    return region[key]
        if valid is None:
            if t.valid is not None and None in t.valid:
                valid = self.dyn_valid(t, span)
            else:
                rows, cols = tile_rows_cols(t.dtype.stored(t.valid_shape))
                valid = (self.const(rows, "index"), self.const(cols, "index"))
        name = "%" + self.names.fresh(_mlir_name(v.name))
        addr = f"addr = {self.tile_addr(t, span)} " if self.level == "level3" else ""
        self.emit(f"{name} = pto.alloc_tile {addr}valid_row = {valid[0]} "
                  f"valid_col = {valid[1]} : {ty}", span)
        val = _Tile(name, ty, t, tuple(valid))
        self.env[id(v)] = val
        if key is not None:
            self.buffers[-1][key] = val
        return val

    def multi_tile(self, ptr: Var, count: int, span) -> None:
        """Without addresses (ptoas plans): a declared allocation is one ptoas multi-slot
        buffer, which ptoas places whole and never shares; its tiles select their slot
        (pto.multi_tile_get). Its slots hold tiles of one type."""
        members = [s.var for s in walk(self.f.body) if isinstance(s, Assign)
                   and isinstance(s.var.type, TileType) and s.var.type.slot is not None
                   and s.var.type.memref is not None and s.var.type.memref.base is ptr]
        tys = {self.tile_ty(m.type, m.span) for m in members}
        first = members[0].type
        if len(tys) > 1 or any(m.type.valid_shape != first.valid_shape for m in members):
            fail(f"the slots of {first.slot.region!r} hold tiles of different shapes, types or valid "
                 f"shapes; with memory_planner=PTOAS its slots are one ptoas multi-slot buffer", span,
                 "give every tile of the declaration one type, or use memory_planner=PYPTO")
        for loop in (s for s in walk(self.f.body) if isinstance(s, (For, While))):
            defined = {id(x) for s in walk(loop.body) for x in defs_of(s)}
            inside = [m for m in members if id(m) in defined]
            if len(inside) > 1:
                raise NotBuiltError(
                    f"{first.slot.region!r}: {inside[0].name!r} and {inside[1].name!r} take slots in one "
                    f"iteration of a loop; with memory_planner=PTOAS ptoas guards only the first slot "
                    f"an iteration takes, so the other could be overwritten while it is read",
                    inside[1].span, "take one slot per iteration, or compile with memory_planner=PYPTO "
                                    "(the default), which places the slots itself")
        ty = self.tile_ty(first, span)
        mty = f"!pto.multi_tile_buf<{ty}, count={count}>"
        rows, cols = tile_rows_cols(first.valid_shape)
        name = "%" + self.names.fresh(_mlir_name(first.slot.region) + "_mb")
        self.emit(f"{name} = pto.alloc_multi_tile valid_row = {self.const(rows, 'index')} "
                  f"valid_col = {self.const(cols, 'index')} : {mty}", span)
        self.multi[id(ptr)] = (name, mty)

    def multi_tile_get(self, v: Var, ty: str, span) -> _Tile:
        t: TileType = v.type
        region, mty = self.multi[id(t.memref.base)]
        name = "%" + self.names.fresh(_mlir_name(v.name))
        self.emit(f"{name} = pto.multi_tile_get {region}[{self.scalar(t.slot.index, 'index', span).ssa}] "
                  f": {mty} -> {ty}", span)
        rows, cols = tile_rows_cols(t.valid_shape)
        val = _Tile(name, ty, t, (self.const(rows, "index"), self.const(cols, "index")))
        self.env[id(v)] = val
        return val

    def tile_addr(self, t: TileType, span) -> str:
        """The i64 byte address of a tile: its buffer's, plus, in a declared multi-slot
        allocation, index * stride -- computed where the tile is defined when the index
        is known only at run time (ptoas takes `addr` by value)."""
        sl = t.slot
        if sl is None:
            return self.const(t.memref.offset, "i64")
        stride = self.slot_stride.get(id(t.memref.base))
        if stride is None or stride < t.nbytes():
            fail(f"tile of {sl.region!r}: its buffer {t.memref.base.name!r} is not a declared "
                 f"allocation of {sl.count} slots of at least {t.nbytes()} bytes", span,
                 "run InitMemRef, which allocates declared slots")
        if isinstance(sl.index, Const):
            return self.const(t.memref.offset + int(sl.index.value) * stride, "i64")
        at = BinOp("*", sl.index, Const(stride, dt.INDEX, span), dt.INDEX, span)
        if t.memref.offset:
            at = BinOp("+", Const(t.memref.offset, dt.INDEX, span), at, dt.INDEX, span)
        return self.scalar(at, "i64", span).ssa

    def op(self, name: str, ins: list, outs: _Tile, span, attr_first: str = "", attrs: str = ""):
        """`pto.name ins(...) outs(...)`; `attr_first` rides on the last operand, `attrs`
        (a dict) follows outs."""
        operands = ", ".join(x.ssa for x in ins)
        if attr_first:
            operands = operands + attr_first
        tys = ", ".join(x.ty for x in ins)
        tail = f" {attrs}" if attrs else ""
        self.emit(f"pto.{name} ins({operands} : {tys}) outs({outs.ssa} : {outs.ty}){tail}", span)

    def tile_op(self, v: Var, c: Call, span):
        """The op's emitter, found from its name (pypto.codegen.tileops, by family)."""
        self.cur_args = c.args           # a run-time valid shape comes from these
        emit = EMITTERS.get(c.op)
        if emit is not None:
            return emit(self, v, c, span)
        if not c.op.startswith("tile."):
            fail(f"cannot generate PTO for {c.op}", span,
                 "only tile ops reach a kernel; tensor ops are converted by ConvertTensorToTileOps")
        if c.op == "tile.store":
            fail("tile.store produces a tensor, not a tile", span)
        if c.op == "tile.alloc":
            fail("tile.alloc produces a Ptr", span)
        fail(f"cannot generate PTO for {c.op}", span,
             f"supported tile ops: {', '.join(o for o in SUPPORTED_OPS)}")

    # helpers the emitters share
    def view(self, v: Var, pto_op: str, a: _Tile, span):
        """A metadata-only view of tile `a` (treshape): the same bytes, `v`'s type."""
        t: TileType = v.type
        ty = self.tile_ty(t, span, static_valid=True)
        name = "%" + self.names.fresh(_mlir_name(v.name))
        self.emit(f"{name} = {pto_op} {a.ssa} : {a.ty} -> {ty}", span)
        rows, cols = tile_rows_cols(t.valid_shape)
        self.env[id(v)] = _Tile(name, ty, t, (self.const(rows, "index"), self.const(cols, "index")))

    def subview(self, v: Var, a: _Tile, offsets, span, valid: tuple | None = None) -> _Tile:
        """A window of tile `a` at `offsets` (pto.subview): `v`'s shape, the same bytes;
        with `valid` (SSA rows, cols) only that part of it holds data (`v`'s valid shape
        says which of them are known statically)."""
        t: TileType = v.type
        offs = [self.index(o, span) for o in offsets]
        rows, cols = tile_rows_cols(t.shape)
        name = "%" + self.names.fresh(_mlir_name(v.name))
        if valid is None:
            ty = self.tile_ty(t, span, static_valid=True)
            valid, part = (self.const(rows, "index"), self.const(cols, "index")), ""
        else:
            vr, vc = t.valid_shape
            ty = self.tile_ty(t, span)                 # v_row=?, v_col=?: the known ones filled in
            ty = ty.replace("v_row=?", f"v_row={'?' if vr is None else vr}") \
                   .replace("v_col=?", f"v_col={'?' if vc is None else vc}")
            part = f" valid [{valid[0]}, {valid[1]}]"
        self.emit(f"{name} = pto.subview {a.ssa}[{', '.join(offs)}] sizes [{rows}, {cols}]{part} : "
                  f"{a.ty} -> {ty}", span)
        val = _Tile(name, ty, t, tuple(valid))
        self.env[id(v)] = val
        return val

    def same_storage(self, a: TileType, b: TileType) -> bool:
        return _same_storage(a, b)

    def same_buffer(self, a: _Tile, b: _Tile) -> bool:
        return a.ssa == b.ssa or (self.level == "level3" and _same_storage(a.tile, b.tile))
