"""The IR: types, expressions, statements, functions, programs.

Plain dataclasses. Vars are compared by identity (their name is a hint); everything
else is compared structurally by `pypto.ir.equal`. Passes build new nodes rather than
mutating shared ones, except where a pass owns a freshly copied tree.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Union

from pypto.dtype import DataType
from pypto.errors import Span


# ----------------------------------------------------------------------------- enums
class _DslEnum(enum.EnumMeta):
    """The enums a user spells pl.<Enum>.<member>: a misspelled member (evaluated by
    Python in a decorator or an annotation) is an AttributeError naming the enum, the
    closest member and all of them."""

    def __getattr__(cls, name):
        members = cls.__dict__.get("_member_map_", {})
        if name in members:
            return members[name]
        if name.startswith("_"):
            raise AttributeError(name)
        import difflib
        close = difflib.get_close_matches(name, list(members), n=1)
        more = f"; did you mean {cls.__name__}.{close[0]}?" if close else ""
        raise AttributeError(f"pl.{cls.__name__} has no member {name!r}{more} "
                             f"(members: {', '.join(members)})")


class MemorySpace(enum.Enum, metaclass=_DslEnum):
    DDR = "ddr"
    Vec = "vec"
    Mat = "mat"
    Left = "left"
    Right = "right"
    Acc = "acc"
    Bias = "bias"
    LeftScale = "left_scale"      # a5: the per-block scales of an MX matmul's left operand
    RightScale = "right_scale"    # ... and of its right operand


# the spaces of the cube core (AIC); Vec is the vector core's (AIV)
CUBE_SPACES = frozenset({MemorySpace.Mat, MemorySpace.Left, MemorySpace.Right, MemorySpace.Acc,
                         MemorySpace.Bias, MemorySpace.LeftScale, MemorySpace.RightScale})
# MX scales live in one buffer of the cube (PTO's `scaling`): both kinds plan there, told
# apart by their layouts (LeftScale row/row, RightScale col/col)
SCALE_SPACES = (MemorySpace.LeftScale, MemorySpace.RightScale)


def pto_loc(space: MemorySpace) -> str:
    """The tile_buf `loc=` of a memory space."""
    return "scaling" if space in SCALE_SPACES else space.value


def plan_pool(space: MemorySpace) -> MemorySpace:
    """The space whose address line a tile of `space` is planned on (the scales share one)."""
    return MemorySpace.LeftScale if space in SCALE_SPACES else space
CUBE, VECTOR = "cube", "vector"


def side_of_space(space) -> str | None:
    """The core (CUBE or VECTOR) whose buffer a memory space is; None for no space."""
    if space is None:
        return None
    return CUBE if space in CUBE_SPACES else VECTOR


class PadValue(enum.Enum, metaclass=_DslEnum):
    """What pl.fillpad writes outside a tile's valid region (max/min: +-inf for floats,
    the dtype's limits for integers). The numbers are the tile_buf `pad` attribute."""
    zero = 1
    max = 2
    min = 3


class MaskPattern(enum.Enum, metaclass=_DslEnum):
    """Which columns of each row a mask gather keeps (pl.tile.MaskPattern): P0101 the even
    ones, P1010 the odd ones, P0001..P1000 one of every four, P1111 all."""
    P0101 = 1
    P1010 = 2
    P0001 = 3
    P0010 = 4
    P0100 = 5
    P1000 = 6
    P1111 = 7

    @property
    def stride_offset(self) -> tuple[int, int]:
        """(every how many columns one is kept, the first kept column)."""
        return {1: (2, 0), 2: (2, 1), 3: (4, 0), 4: (4, 1), 5: (4, 2), 6: (4, 3), 7: (1, 0)}[self.value]


class AtomicType(enum.Enum, metaclass=_DslEnum):
    """How a store combines with what the tensor holds: overwrite, or add into it (the
    split-K accumulation of partial products from parallel kernels)."""
    None_ = 0
    Add = 1


class FunctionType(enum.Enum, metaclass=_DslEnum):
    Opaque = "Opaque"
    Orchestration = "Orchestration"
    InCore = "InCore"
    AIC = "AIC"
    AIV = "AIV"
    Group = "Group"      # a mixed kernel: its cube work on an AIC, its vector work on AIVs
    Inline = "Inline"


class SplitMode(enum.Enum, metaclass=_DslEnum):
    """How a mixed kernel's vector work is halved over the two AIVs of its core group:
    by rows (UP_DOWN) or by columns (LEFT_RIGHT)."""
    NONE = 0
    UP_DOWN = 1
    LEFT_RIGHT = 2


class PipeType(enum.Enum, metaclass=_DslEnum):
    """A core's pipelines: where a cross-core event (pl.system.sync_set / sync_wait) is
    raised and awaited -- the memory-transfer engines, the cube, the vector unit, the scalar
    unit, the fix pipe."""
    MTE1 = 0
    MTE2 = 1
    MTE3 = 2
    M = 3
    V = 4
    S = 5
    FIX = 6
    ALL = 7


class Level(enum.Enum, metaclass=_DslEnum):
    AIV = 0
    AIC = 1
    CORE_GROUP = 2
    CHIP_DIE = 3
    CHIP = 4
    HOST = 5


class Role(enum.Enum, metaclass=_DslEnum):
    Orchestrator = "Orchestrator"
    SubWorker = "SubWorker"


class ParamDirection(enum.Enum, metaclass=_DslEnum):
    In = "In"
    Out = "Out"
    InOut = "InOut"


class ArgDir(enum.Enum):
    """Per-call argument direction written by DeriveCallDirections (pl.adir.*)."""
    input = 0
    output = 1
    inout = 2
    output_existing = 3
    no_dep = 4
    scalar = 5


class ForKind(enum.Enum, metaclass=_DslEnum):
    Sequential = "range"
    Parallel = "parallel"
    Unroll = "unroll"


KERNEL_TYPES = (FunctionType.InCore, FunctionType.AIC, FunctionType.AIV, FunctionType.Group)


def derived_level_role(ftype: FunctionType) -> tuple[Level | None, Role | None]:
    return {
        FunctionType.Orchestration: (Level.CHIP, Role.Orchestrator),
        FunctionType.InCore: (Level.CHIP_DIE, Role.SubWorker),
        FunctionType.AIC: (Level.AIC, Role.SubWorker),
        FunctionType.AIV: (Level.AIV, Role.SubWorker),
        FunctionType.Group: (Level.CORE_GROUP, Role.SubWorker),
    }.get(ftype, (None, None))


# ----------------------------------------------------------------------------- types
@dataclass(frozen=True)
class DynDim:
    """A dynamic dimension, declared in source as `M = pl.dynamic("M")`; arithmetic on
    them (`M * 2`, `M + N`) is a composite one, named by its expression and read, like any
    dynamic extent, from the tensor when the program runs. `bases`: the declared dims it
    is made of (empty for a declared one)."""
    name: str
    bases: tuple = ()

    def __str__(self) -> str:
        return self.name

    @property
    def declared(self) -> tuple:
        return self.bases or (self.name,)

    def _combine(self, other, op: str, swap: bool = False):
        if isinstance(other, bool) or not isinstance(other, (int, DynDim)):
            return NotImplemented
        lhs, rhs = (other, self) if swap else (self, other)
        bases = tuple(sorted(set(self.declared) | (set(other.declared) if isinstance(other, DynDim) else set())))
        return DynDim(f"({lhs} {op} {rhs})", bases)

    def __mul__(self, other):
        return self._combine(other, "*")

    def __rmul__(self, other):
        return self._combine(other, "*", swap=True)

    def __add__(self, other):
        return self._combine(other, "+")

    def __radd__(self, other):
        return self._combine(other, "+", swap=True)

    def __sub__(self, other):
        return self._combine(other, "-")

    def __floordiv__(self, other):
        return self._combine(other, "//")


Dim = Union[int, DynDim]


@dataclass(frozen=True)
class ScalarType:
    dtype: DataType


@dataclass(frozen=True)
class MemRef:
    """Where a shaped value lives: a base (a Ptr var, or a DDR name), byte offset, size."""
    base: Any          # Var of PtrType, or str for DDR tensors
    offset: int
    size: int

    def __eq__(self, other):  # Var bases compare by identity
        return (isinstance(other, MemRef) and self.offset == other.offset
                and self.size == other.size and (self.base is other.base or
                                                  (isinstance(self.base, str) and self.base == other.base)))

    def __hash__(self):
        return hash((self.offset, self.size))


@dataclass(frozen=True, eq=False)
class Slot:
    """`pl.MemRef("name", slots=N)[index]` on a tile: one of N equal slots of a declared
    allocation, chosen by `index` (a constant or a scalar expression evaluated where the
    tile is defined). InitMemRef allocates the region (`pl.tile.alloc(N * stride, ...,
    attrs={"slots": N})`); the tile's address is the region's plus index * stride."""
    region: str
    count: int
    index: Any           # Const or a scalar Expr

    def with_index(self, index) -> "Slot":
        return Slot(self.region, self.count, index)


# a tensor layout of MX scales -> (rows, cols) its blocks are made of: mx_a_zz holds an
# [M, K/32] left scale as 16x2 blocks (row blocks outer), mx_b_nn a [K/32, N] right scale
# as 2x16 blocks stored column-block by column-block, each block transposed
MX_LAYOUTS = {"mx_a_zz": (16, 2), "mx_b_nn": (2, 16)}


@dataclass(frozen=True)
class TensorType:
    shape: tuple[Dim, ...]
    dtype: DataType
    memref: MemRef | None = None
    # the part that holds data (pl.set_validshape), a dim None when known only at run
    # time, as for tiles; None: all of it
    valid: tuple | None = None
    # None: row-major (ND); "mx_a_zz" / "mx_b_nn": an MX matmul's scales in the blocked
    # order the cube reads them (pl.MX_A_ZZ, pl.MX_B_NN; MX_LAYOUTS)
    layout: str | None = None
    # a pld.DistributedTensor: this rank's copy of a window buffer every rank holds
    window: bool = False

    @property
    def valid_shape(self) -> tuple:
        return self.valid if self.valid is not None else tuple(self.shape)

    def nbytes(self) -> int | None:
        n = self.dtype.nbytes
        for d in self.shape:
            if not isinstance(d, int):
                return None
            n *= d
        return n // self.dtype.pack


@dataclass(frozen=True)
class TileType:
    shape: tuple[int, ...]
    dtype: DataType
    memory_space: MemorySpace | None = None
    memref: MemRef | None = None
    # the region that holds data, when smaller than the tile (pl.load(..., valid_shape=));
    # the rest is padding that ops do not read until pl.fillpad fills it. None: all of it
    valid: tuple[int, ...] | None = None
    slot: Slot | None = None     # a declared multi-slot allocation (pl.MemRef(slots=N)[i])

    @property
    def valid_shape(self) -> tuple:
        return self.valid if self.valid is not None else tuple(self.shape)

    def nbytes(self) -> int:
        """Bytes the tile occupies (a Mat tile: padded to whole fractals, a Vec tile's rows
        to whole 32-byte blocks, layout.py)."""
        if (self.memory_space is MemorySpace.Mat and len(self.shape) >= 2) or \
                (self.memory_space is MemorySpace.Vec and self.dtype.pack == 1 and self.shape
                 and all(isinstance(d, int) for d in self.shape)):
            from pypto.ir.layout import allocated_rows_cols
            rows, cols = allocated_rows_cols(self)
            return rows * cols * self.dtype.nbytes
        n = self.dtype.nbytes
        for d in self.shape:
            n *= d
        return n // self.dtype.pack


@dataclass(frozen=True)
class PtrType:
    """Identity of an on-chip allocation (`mem_vec_3: pl.Ptr = pl.tile.alloc(...)`)."""


@dataclass(frozen=True)
class ArrayType:
    """An on-core array of scalars (`pl.array.create(4, pl.INT32)`): a kernel's stack-local
    array, read and written an element at a time."""
    extent: int
    dtype: DataType


@dataclass(frozen=True)
class HandleType:
    """An opaque handle a kernel holds (the async-prefetch family's context, event and
    session): passed between ops, never computed with; `kind` is the pl name."""
    kind: str          # "PrefetchAsyncContext", "AsyncEvent", "AsyncSession"


@dataclass(frozen=True)
class TupleType:
    types: tuple[Any, ...]


Type = Union[ScalarType, TensorType, TileType, PtrType, HandleType, TupleType]


def with_memref(t, memref):
    if isinstance(t, TensorType):
        return TensorType(t.shape, t.dtype, memref, t.valid, t.layout, t.window)
    if isinstance(t, TileType):
        return TileType(t.shape, t.dtype, t.memory_space, memref, t.valid, t.slot)
    return t


def map_slot(t, f):
    """`t` with its slot's index mapped by `f` (an expression rewriter), for passes that
    give a tile a new Var: the index may name Vars the pass renames."""
    if isinstance(t, TileType) and t.slot is not None:
        return TileType(t.shape, t.dtype, t.memory_space, t.memref, t.valid,
                        t.slot.with_index(f(t.slot.index)))
    return t


# ----------------------------------------------------------------------------- exprs
class Expr:
    span: Span | None


@dataclass(eq=False)
class Var(Expr):
    name: str
    type: Any
    span: Span | None = None

    def __repr__(self) -> str:
        return f"Var({self.name})"


@dataclass(eq=False)
class Const(Expr):
    value: Any           # int | float | bool
    dtype: DataType
    span: Span | None = None

    @property
    def type(self):
        return ScalarType(self.dtype)


@dataclass(eq=False)
class TupleExpr(Expr):
    """A list of values: offsets, shapes, multi-value returns."""
    items: list[Expr]
    span: Span | None = None

    @property
    def type(self):
        return TupleType(tuple(getattr(i, "type", None) for i in self.items))


@dataclass(eq=False)
class BinOp(Expr):
    """Scalar arithmetic/comparison: op in + - * // % / min max == != < <= > >=."""
    op: str
    lhs: Expr
    rhs: Expr
    dtype: DataType
    span: Span | None = None

    @property
    def type(self):
        return ScalarType(self.dtype)


@dataclass(eq=False)
class Call(Expr):
    """An operator call (`op` = "tile.add") or a call of another function of the
    program (`op` = "@<function name>")."""
    op: str
    args: list[Expr]
    kwargs: dict[str, Any] = field(default_factory=dict)   # op parameters (constants)
    type: Any = None
    attrs: dict[str, Any] = field(default_factory=dict)    # metadata (arg_directions)
    span: Span | None = None

    @property
    def callee(self) -> str | None:
        return self.op[1:] if self.op.startswith("@") else None


# ----------------------------------------------------------------------------- stmts
class Stmt:
    span: Span | None


@dataclass(eq=False)
class Assign(Stmt):
    var: Var
    value: Expr
    span: Span | None = None


@dataclass(eq=False)
class Eval(Stmt):
    expr: Expr
    span: Span | None = None


@dataclass(eq=False)
class Return(Stmt):
    values: list[Expr]
    span: Span | None = None


@dataclass(eq=False)
class Yield(Stmt):
    values: list[Expr]
    span: Span | None = None


@dataclass(eq=False)
class IterArg:
    var: Var       # the name inside the body
    init: Expr     # its value on entry


@dataclass(eq=False)
class For(Stmt):
    loop_var: Var
    start: Expr
    stop: Expr
    step: Expr
    body: list[Stmt]
    iter_args: list[IterArg] = field(default_factory=list)
    return_vars: list[Var] = field(default_factory=list)   # bound after the loop
    kind: ForKind = ForKind.Sequential
    span: Span | None = None
    # pl.pipeline(..., stage=k): the scheduler may overlap k consecutive iterations
    # (their operand buffers rotate over k slots); the iterations still run in order
    stage: int | None = None
    # loop attributes the passes read (FOR_ATTRS: their names and what they mean)
    attrs: dict = field(default_factory=dict)


# For.attrs a program may write (pl.range(..., attrs={...})) and what each says
DOUBLE_BUFFER_C = "pipeline_double_buffer_c"     # (DoubleBufferAcc acts on it)
FOR_ATTRS = {
    DOUBLE_BUFFER_C: "the loop's fresh Acc results alternate between two L0C buffers, so one "
                                "is drained while the next iteration's matmul fills the other",
}


@dataclass(eq=False)
class While(Stmt):
    """Run the body while `cond` holds; `cond` reads the carried values (iter_args), the
    body ends in a yield of their next values, return_vars are their values after."""
    cond: Expr
    body: list[Stmt]
    iter_args: list[IterArg] = field(default_factory=list)
    return_vars: list[Var] = field(default_factory=list)
    span: Span | None = None


@dataclass(eq=False)
class If(Stmt):
    cond: Expr
    then_body: list[Stmt]
    else_body: list[Stmt] | None = None
    return_vars: list[Var] = field(default_factory=list)
    span: Span | None = None


@dataclass(eq=False)
class InCoreScope(Stmt):
    """`with pl.at(level=pl.Level.CORE_GROUP[, name_hint=...][, optimizations=[...]]):`
    split: a SplitMode value (a mixed kernel's vector work halved over two AIVs);
    slot_num: the depth of its cross-core pipe (0: the default)."""
    body: list[Stmt]
    name_hint: str = ""
    span: Span | None = None
    split: int = 0
    slot_num: int = 0

    def with_body(self, body: list[Stmt]) -> "InCoreScope":
        return InCoreScope(body, self.name_hint, self.span, self.split, self.slot_num)


@dataclass(eq=False)
class RuntimeScope(Stmt):
    """`with pl.scope():` in an orchestration (a PTO2 runtime scope)."""
    body: list[Stmt]
    manual: bool = False
    span: Span | None = None


# ----------------------------------------------------------------------------- functions
@dataclass(eq=False)
class Param:
    var: Var
    direction: ParamDirection = ParamDirection.In


@dataclass(eq=False)
class Function:
    name: str
    params: list[Param]
    return_types: list[Any]
    body: list[Stmt]
    func_type: FunctionType = FunctionType.Opaque
    level: Level | None = None
    role: Role | None = None
    attrs: dict[str, Any] = field(default_factory=dict)
    span: Span | None = None

    @property
    def is_kernel(self) -> bool:
        return self.func_type in KERNEL_TYPES

    @property
    def is_launched(self) -> bool:
        """A kernel the orchestration launches: not the AIC / AIV member of a hand-written
        Group (the group is launched, its members run in it)."""
        return self.is_kernel and "group" not in self.attrs

    @property
    def is_host(self) -> bool:
        """A HOST-level function (its body host Python, run when the program runs)."""
        return self.level is Level.HOST

    @property
    def requires_runtime_binding(self) -> bool:
        """A HOST SubWorker with a `...` body: its callback is bound at prepare(callbacks=...)."""
        return bool(self.attrs.get("abstract")) and self.role is Role.SubWorker

    def as_python(self, **kw) -> str:
        """The function as DSL text: a lone `@pl.function` def."""
        from pypto.ir.printer import print_function
        return print_function(self, **kw)

    def signature_only(self) -> "Function":
        """This function with no body and no location: what its callers need, and
        nothing that changes when only its body (or its place in the file) does."""
        return Function(self.name, self.params, self.return_types, [], self.func_type,
                        self.level, self.role, dict(self.attrs), None)


class Functions(list):
    """A program's functions in order; also readable as the reference's name -> function
    mapping (`.values()`, `.keys()`, `.items()`, `functions["main"]`)."""

    def keys(self):
        return [f.name for f in self]

    def values(self):
        return list(self)

    def items(self):
        return [(f.name, f) for f in self]

    def __getitem__(self, key):
        if isinstance(key, str):
            for f in self:
                if f.name == key:
                    return f
            raise KeyError(key)
        return super().__getitem__(key)


@dataclass(eq=False)
class Program:
    name: str
    functions: list[Function]
    source: str = ""          # base name of the user's source file, for locs

    def __post_init__(self):
        if not isinstance(self.functions, Functions):
            self.functions = Functions(self.functions)

    def get(self, name: str) -> Function | None:
        for f in self.functions:
            if f.name == name:
                return f
        return None

    get_function = get        # (the reference's name)

    def as_python(self, **kw) -> str:
        from pypto.ir.printer import print_program
        return print_program(self, **kw)

    def __str__(self) -> str:
        return self.as_python()
