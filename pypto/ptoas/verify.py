"""The verifier: the rules real ptoas and pto-isa enforce, checked before any C++ exists.

Every failure is a PtoasError located at the op (its loc(...) when it has one).
"""
from __future__ import annotations

from ..dtype import BY_MLIR
from .analysis import const_int, defining_ops, same as _same, shape_str as _shape_str, static_valid, tile_bytes
from .arch import Arch
from .errors import PtoasError, op_error
from .ir import (Func, LocalArrayType, Module, Op, PartitionType, PtrType, ScalarType, TensorViewType,
                 TileType, Value)
from . import comm, events, group_pipes, prefetch
from .ops import FLOAT_DTYPES, FP4X2, FP8_DTYPES, HIF8, HIF8_CVT, kind_of, PIPE_OPS, STRUCTURAL_OPS, TILE_OPS, round_mode
from .parser import CAST_OPS
from .types import STATUS_VECTOR
from .verify_ops import OpChecks
from .verify_tiles import TileChecks

ARITH_BINARY = {"arith.addi", "arith.subi", "arith.muli", "arith.divsi", "arith.divui",
                "arith.remsi", "arith.remui", "arith.maxsi", "arith.minsi", "arith.maxui",
                "arith.minui", "arith.floordivsi", "arith.ceildivsi", "arith.andi", "arith.ori",
                "arith.xori", "arith.shli", "arith.shrsi", "arith.shrui",
                "arith.addf", "arith.subf", "arith.mulf", "arith.divf", "arith.maximumf",
                "arith.minimumf", "arith.maxnumf", "arith.minnumf"}
ARITH_UNARY = {"arith.negf"}
CMPI_PREDICATES = {"eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"}
CMPF_PREDICATES = {"oeq", "one", "olt", "ole", "ogt", "oge", "ueq", "une", "ult", "ule",
                   "ugt", "uge", "ord", "uno", "true", "false"}
INT_SCALARS = {"index", "i1", "i8", "i16", "i32", "i64", "ui8", "ui16", "ui32", "ui64"}

# operand counts per kind: (allowed ins counts, outs count)
ARITY = {
    "binary": ((2,), 1), "binary_full": ((2,), 1), "scalar": ((2,), 1), "unary": ((1, 2), 1),
    "rowreduce": ((1, 2), 1), "colreduce": ((1, 2), 1), "rowexpand_binary": ((2, 3), 1),
    "colexpand_binary": ((2,), 1), "rowexpand": ((1,), 1), "colexpand": ((1,), 1),
    "fill": ((1,), 1), "cvt": ((1,), 1), "mov": ((1,), 1), "trans": ((1, 2), 1),
    "load": ((1,), 1), "store": ((1,), 1), "matmul": ((2,), 1), "matmul_acc": ((3,), 1),
    "matmul_bias": ((3,), 1), "fillpad": ((1,), 1), "tri": ((1,), 1), "ci": ((1,), 1),
    "rowargreduce": ((1, 2), 1), "colargreduce": ((1, 2), 1), "concat": ((2,), 1),
    "insert": ((3,), 1),
    "cmp": ((2,), 1), "cmps": ((2,), 1), "sel": ((3, 4), 1), "sels": ((4,), 1),
    "gather": ((1, 3), 1), "scatter": ((1, 2), 1), "mscatter": ((2,), 1), "mgather": ((2, 3), 1), "gatherb": ((2,), 1),
    "random": ((6,), 1),
    "part": ((2,), 1), "prelu": ((3,), 1), "extract": ((3,), 1),
    "gemv": ((2,), 1), "gemv_acc": ((3,), 1), "gemv_bias": ((3,), 1),
    "matmul_mx": ((4,), 1), "matmul_mx_acc": ((5,), 1), "matmul_mx_bias": ((5,), 1),
    "sort32": ((2,), 1), "mrgsort1": ((2,), 1), "mrgsort": ((3, 4, 5), 2), "gather_cmp": ((3,), 2),
}
VECTOR_KINDS = {"binary", "binary_full", "scalar", "unary", "rowreduce", "colreduce",
                "rowexpand_binary", "colexpand_binary", "rowexpand", "colexpand", "fill", "cvt",
                "trans", "fillpad", "tri", "ci", "concat"}
MASK_KINDS = {"cmp", "cmps", "sel", "sels"}
# ops with a precise mode: precisionType's enum per op
PRECISION_KINDS = {"pto.tdiv": "div_precision", "pto.tlog": "log_precision", "pto.trecip": "recip_precision"}
ARG_KINDS = {"rowargreduce", "colargreduce"}
ACC_STORE_DTYPES = {"f32", "f16", "bf16", "i32"}
# pto.tstore's atomicType attribute: its values, and whether each adds into GM
ATOMIC_TYPES = {"#pto<atomic_type atomic_none>": False, "#pto<atomic_type atomic_add>": True}
ATOMIC_ADD_DTYPES = {"f32", "f16", "i32", "i16", "i8"}


class Verifier(OpChecks, TileChecks):
    def __init__(self, module: Module, arch: Arch, level: str, source_name: str = "<pto>"):
        self.module = module
        self.arch = arch
        self.level = level
        self.source_name = source_name
        self.usage: dict[str, dict[str, int]] = {}

    def error(self, op, msg: str):
        return op_error(op, msg, self.source_name)

    # ------------------------------------------------------------ driver
    def run(self) -> dict[str, dict[str, int]]:
        if not self.module.funcs:
            raise PtoasError("the module has no func.func", line=1, col=1, source_name=self.source_name)
        for f in self.module.funcs:
            self.func(f)
        return self.usage

    def func(self, f: Func) -> None:
        self.f = f
        self.defs = defining_ops(f)
        self.all_names = {v.name for v in f.args} | {v.name for v in self.defs}
        self.usage[f.name] = {}
        for a in f.args:
            if not isinstance(a.type, (PtrType, ScalarType)):
                raise self.error(f, f"argument %{a.name} has type {a.type}: kernel arguments are "
                                    "!pto.ptr<T> tensors or scalars")
        self.region(f.body, top=True)

    def region(self, ops: list[Op], top: bool = False) -> None:
        for k, op in enumerate(ops):
            self.ssa(op)
            if op.name in ("return", "func.return"):
                if not top or k != len(ops) - 1:
                    raise self.error(op, "return must be the last op of the function body")
                if op.group("args"):
                    raise self.error(op, "kernels return nothing: write results through tensor arguments")
                continue
            if op.name in ("scf.yield", "scf.condition"):
                if top or k != len(ops) - 1:
                    raise self.error(op, f"{op.name} must end an scf region")
                continue
            self.op(op)

    def ssa(self, op: Op) -> None:
        for group, vals in op.operands.items():
            for v in vals:
                if v.kind == "undefined":
                    if v.name in self.all_names:
                        raise self.error(op, f"%{v.name} is used before its definition (or outside its region)")
                    raise self.error(op, f"use of undefined value %{v.name}")
            declared = op.types.get(group)
            if declared and len(declared) == len(vals):
                for v, t in zip(vals, declared):
                    if v.type is not None and v.type != t:
                        raise self.error(op, f"%{v.name} is declared as {t} here but defined as {v.type}")

    # ------------------------------------------------------------ dispatch
    def op(self, op: Op) -> None:
        n = op.name
        if n == "arith.constant":
            return self.constant(op)
        if n in ARITH_BINARY or n in ARITH_UNARY or n in CAST_OPS or n in ("arith.cmpi", "arith.cmpf", "arith.select"):
            return self.arith(op)
        if n == "scf.for":
            return self.scf_for(op)
        if n == "scf.if":
            return self.scf_if(op)
        if n == "scf.while":
            return self.scf_while(op)
        if n == "pto.make_tensor_view":
            return self.make_tensor_view(op)
        if n == "pto.partition_view":
            return self.partition_view(op)
        if n in ("pto.alloc_tile", "pto.alloc_multi_tile"):
            return self.alloc_tile(op)
        if n == "pto.multi_tile_get":
            return self.multi_tile_get(op)
        if n == "pto.treshape":
            return self.treshape(op)
        if n == "pto.subview":
            return self.subview(op)
        if n == "pto.load_scalar":
            return self.load_scalar(op)
        if n == "pto.store_scalar":
            return self.store_scalar(op)
        if n in ("pto.tgetval", "pto.tsetval"):
            return self.tile_element(op)
        if n in ("pto.declare_local_array", "pto.local_array_get", "pto.local_array_set"):
            return self.local_array(op)
        if n == "pto.syncall":
            return self.syncall(op)
        if n in prefetch.PREFETCH_OPS:
            return prefetch.verify(self, op)
        if n in comm.COMM_OPS:
            return comm.verify(self, op)
        if n in events.EVENT_OPS:
            return events.verify(self, op)
        if n in group_pipes.GROUP_PIPE_OPS:
            return group_pipes.verify(self, op)
        if n in PIPE_OPS:
            return self.pipe_op(op)
        if n in TILE_OPS:
            return self.tile_op(op, kind_of(op))
        raise self.error(op, f"unsupported operation '{n}' (ptoas supports arith/scf scalar ops, "
                             f"{', '.join(sorted(STRUCTURAL_OPS))} and the tile ops in pypto.ptoas.ops)")

    # ------------------------------------------------------------ scalars and control flow
    def constant(self, op: Op) -> None:
        t = op.results[0].type if op.results else None
        if str(t) == STATUS_VECTOR and op.value == "dense<0>":
            return                                  # the status vector a merge writes
        if not isinstance(t, ScalarType):
            raise self.error(op, f"arith.constant of type {t} is not supported (scalars, and "
                                 f"dense<0> : {STATUS_VECTOR} for pto.tmrgsort's status)")
        allowed = (int, float) if t.is_float else (int, bool)  # an int for a float: its bit pattern
        if not isinstance(op.value, allowed):
            raise self.error(op, f"constant {op.value!r} does not fit type {t}")

    def arith(self, op: Op) -> None:
        args = op.group("args")
        n = op.name
        want = 1 if (n in ARITH_UNARY or n in CAST_OPS) else 3 if n == "arith.select" else 2
        if len(args) != want or len(op.results) != 1:
            raise self.error(op, f"{n} takes {want} operand(s) and has one result")
        for v in args:
            if not isinstance(v.type, ScalarType):
                raise self.error(op, f"{n} operand %{v.name} must be a scalar, not {v.type}")
        if n == "arith.cmpi" and op.value not in CMPI_PREDICATES:
            raise self.error(op, f"unknown arith.cmpi predicate '{op.value}'")
        if n == "arith.cmpf" and op.value not in CMPF_PREDICATES:
            raise self.error(op, f"unknown arith.cmpf predicate '{op.value}'")
        if n == "arith.select" and args[0].type != ScalarType("i1"):
            raise self.error(op, "arith.select needs an i1 condition")

    def index_like(self, op: Op, v: Value, what: str) -> None:
        if not (isinstance(v.type, ScalarType) and v.type.name in INT_SCALARS):
            raise self.error(op, f"{what} %{v.name} must be an integer or index, not {v.type}")

    def yields(self, op: Op, region: list[Op], types: list, what: str) -> None:
        last = region[-1] if region else None
        got = last.group("args") if last is not None and last.name == "scf.yield" else []
        if len(got) != len(types):
            raise self.error(last or op, f"{what} must yield {len(types)} value(s), yields {len(got)}")
        for v, t in zip(got, types):
            if v.type != t:
                raise self.error(last, f"{what} yields %{v.name} of type {v.type}, expected {t}")

    def scf_for(self, op: Op) -> None:
        for v, what in zip(op.group("bounds"), ("lower bound", "upper bound", "step")):
            self.index_like(op, v, f"scf.for {what}")
        for v, t in zip(op.group("inits"), op.types.get("inits", [])):
            if v.type != t:
                raise self.error(op, f"iter_args init %{v.name} has type {v.type}, expected {t}")
        for v in op.group("inits"):
            if isinstance(v.type, TileType):
                raise self.error(op, "tiles cannot be loop-carried: write the tile in place instead")
        self.yields(op, op.regions[0], [r.type for r in op.results], "scf.for body")
        self.region(op.regions[0])

    def syncall(self, op: Op) -> None:
        """A barrier over the blocks of a launch: its memory (the i64 address the runtime
        passes, or a GM tensor) and the number of blocks that meet (i32)."""
        ins = op.group("ins")
        if len(ins) != 2 or op.results:
            raise self.error(op, "pto.syncall takes ins(%barrier, %count) and gives nothing")
        b, count = ins
        if not (isinstance(b.type, PtrType) or (isinstance(b.type, ScalarType) and b.type.name == "i64")):
            raise self.error(op, f"pto.syncall: the barrier is an i64 address or a GM pointer, not {b.type}")
        if not (isinstance(count.type, ScalarType) and count.type.name == "i32"):
            raise self.error(op, f"pto.syncall: the count is i32, not {count.type}")
        lanes = (op.attr("lanes") or "1").split(":")[0].strip()
        if lanes not in ("1", "2") or (lanes == "2" and isinstance(b.type, ScalarType)):
            raise self.error(op, f"pto.syncall: lanes = {lanes}; a soft syncall (GM pointer) arrives for "
                                 f"1 or 2 AIV lanes, a hard one for 1")

    def pipe_op(self, op: Op) -> None:
        """A Group's halves pass tiles through the pipe the runtime gives the group (an
        i64 address): a push reads a tile of the sending core, a pop fills one of the
        receiving core's."""
        kind, what, locs, _ = PIPE_OPS[op.name]
        ins, outs = op.group("ins"), op.group("outs")
        split = op.attrs.get("split", "0")
        if split not in ("0", "1", "2"):
            raise self.error(op, f"{op.name}: split is 0 (none), 1 (up-down) or 2 (left-right), not {split}")
        half = op.attrs.get("half")
        if half is not None and (split == "0" or not half.isdigit() or int(half) <= 0):
            raise self.error(op, f"{op.name}: half is the positive split point of an up-down or left-right "
                                 f"split, not {half} (split = {split})")
        slots = op.attrs.get("slot_num", "2")
        if not slots.isdigit() or int(slots) <= 0:
            raise self.error(op, f"{op.name}: slot_num is the pipe's positive depth, not {slots}")
        lanes = op.attrs.get("lanes", "1")
        if lanes not in ("1", "2") or (lanes == "2" and split != "0"):
            raise self.error(op, f"{op.name}: lanes = 2 marks an unsplit crossing both AIVs take part in "
                                 f"(split = 0), got lanes = {lanes}, split = {split}")
        # in the vector half of a split group (or one both AIVs run) the op also names which
        # AIV it runs on
        sub = 1 if kind == "vector" and (split != "0" or lanes == "2") else 0
        want_ins, want_outs = (2 + sub, 0) if what == "push" else (1 + sub, 1)
        if len(ins) != want_ins or len(outs) != want_outs or op.results:
            extra = ", %subblock" if sub else ""
            form = f"ins(%tile, %pipe{extra})" if what == "push" else f"ins(%pipe{extra}) outs(%tile)"
            raise self.error(op, f"{op.name} takes {form} and defines no result")
        if sub and not (isinstance(ins[-1].type, ScalarType) and ins[-1].type.name == "i32"):
            raise self.error(op, f"{op.name}: the AIV's index in its group is i32, not {ins[-1].type}")
        if self.f.kernel_kind != kind:
            raise self.error(op, f"{op.name} runs in a {kind} kernel, not in "
                                 f"{self.f.kernel_kind or 'an unspecialised'} kernel @{self.f.name}")
        pipe = ins[1] if what == "push" else ins[0]
        if not (isinstance(pipe.type, ScalarType) and pipe.type.name == "i64"):
            raise self.error(op, f"{op.name}: the pipe is an i64 address, not {pipe.type}")
        tile = ins[0] if what == "push" else outs[0]
        t = self.tile(op, tile, "tile")
        if t.loc not in locs:
            raise self.error(op, f"{op.name} {'sends' if what == 'push' else 'fills'} a "
                                 f"{' or '.join(locs)} tile, not a {t.loc} one")

    def local_array(self, op: Op) -> None:
        """declare: one !pto.local_array result; get/set: an index into it and its element
        type (a constant index within the extent)."""
        if op.name == "pto.declare_local_array":
            if len(op.results) != 1 or not isinstance(op.results[0].type, LocalArrayType):
                raise self.error(op, "pto.declare_local_array defines one !pto.local_array value")
            return
        arr, idx = op.group("array")[0], op.group("index")[0]
        t = arr.type
        if not isinstance(t, LocalArrayType):
            raise self.error(op, f"{op.name} works on a !pto.local_array, not {t}")
        self.index_like(op, idx, f"{op.name} index")
        k = const_int(idx, self.defs)
        if k is not None and not 0 <= k < t.extent:
            raise self.error(op, f"{op.name}: index {k} is outside the array's {t.extent} elements")
        v = op.results[0] if op.name == "pto.local_array_get" else op.group("value")[0]
        if v.type != ScalarType(t.elem):
            raise self.error(op, f"{op.name}: the element is {t.elem}, not {v.type}")

    def scf_while(self, op: Op) -> None:
        """Its condition region ends in scf.condition(%i1) passing the values the body gets
        (and the loop's results); its body yields the next arguments."""
        inits, types = op.group("inits"), op.types.get("inits", [])
        for v, t in zip(inits, types):
            if v.type != t:
                raise self.error(op, f"scf.while argument init %{v.name} has type {v.type}, expected {t}")
            if isinstance(t, TileType):
                raise self.error(op, "tiles cannot be loop-carried: write the tile in place instead")
        before, after = op.regions
        last = before[-1] if before else None
        if last is None or last.name != "scf.condition":
            raise self.error(op, "scf.while's condition region ends in scf.condition(...)")
        c = last.group("cond")[0]
        if c.type != ScalarType("i1"):
            raise self.error(last, f"scf.condition takes an i1, not {c.type}")
        passed = [v.type for v in last.group("args")]
        if passed != [r.type for r in op.results] or passed != [a.type for a in op.region_args[1]]:
            raise self.error(last, "scf.condition passes the body's arguments and the loop's results, "
                                   "one value each")
        self.region(before)
        self.yields(op, after, list(types), "scf.while body")
        self.region(after)

    def scf_if(self, op: Op) -> None:
        cond = op.group("cond")[0]
        if cond.type != ScalarType("i1"):
            raise self.error(op, f"scf.if condition %{cond.name} must be i1, not {cond.type}")
        types = [r.type for r in op.results]
        if types and len(op.regions) < 2:
            raise self.error(op, "scf.if with results needs an else region")
        for k, region in enumerate(op.regions):
            self.yields(op, region, types, "scf.if " + ("then" if k == 0 else "else") + " region")
            self.region(region)

    # ------------------------------------------------------------ views
    def make_tensor_view(self, op: Op) -> None:
        src = op.group("source")[0]
        if not isinstance(src.type, PtrType) or src.kind != "arg":
            raise self.error(op, f"make_tensor_view needs a !pto.ptr function argument, got %{src.name}")
        if len(op.results) != 1 or not isinstance(op.results[0].type, TensorViewType):
            raise self.error(op, "make_tensor_view must define one !pto.tensor_view value")
        t = op.results[0].type
        if t.elem != src.type.elem:
            raise self.error(op, f"view of {t.elem} over a !pto.ptr<{src.type.elem}>")
        shape, strides = op.group("shape"), op.group("strides")
        if not (1 <= len(t.shape) <= 5) or len(shape) != len(t.shape) or len(strides) != len(t.shape):
            raise self.error(op, f"a rank-{len(t.shape)} view needs {len(t.shape)} shape and stride "
                                 f"operands (1..5 dims), got {len(shape)} and {len(strides)}")
        for v in shape + strides:
            self.index_like(op, v, "view extent/stride")

    def partition_view(self, op: Op) -> None:
        src = op.group("source")[0]
        if not isinstance(src.type, TensorViewType):
            raise self.error(op, f"partition_view needs a !pto.tensor_view, got %{src.name}: {src.type}")
        if len(op.results) != 1 or not isinstance(op.results[0].type, PartitionType):
            raise self.error(op, "partition_view must define one !pto.partition_tensor_view value")
        t = op.results[0].type
        rank = len(src.type.shape)
        offs, sizes = op.group("offsets"), op.group("sizes")
        if len(offs) != rank or len(sizes) != rank or len(t.shape) != rank:
            raise self.error(op, f"partition of a rank-{rank} view needs {rank} offsets, sizes and dims")
        if t.elem != src.type.elem:
            raise self.error(op, f"partition of {t.elem} over a view of {src.type.elem}")
        view_op = self.defs.get(src)
        view_shape = [const_int(v, self.defs) for v in view_op.group("shape")] if view_op else [None] * rank
        for d, (o, s, static) in enumerate(zip(offs, sizes, t.shape)):
            self.index_like(op, o, "partition offset")
            self.index_like(op, s, "partition size")
            co, cs = const_int(o, self.defs), const_int(s, self.defs)
            if cs is not None and static is not None and cs != static:
                raise self.error(op, f"partition size {cs} in dim {d} contradicts the type's {static}")
            if co is not None and co < 0:
                raise self.error(op, f"negative partition offset {co} in dim {d}")
            size = cs if cs is not None else static
            if co is not None and size is not None and view_shape[d] is not None \
                    and co + size > view_shape[d]:
                raise self.error(op, f"partition [{co}, {co + size}) of dim {d} is outside the view "
                                     f"extent {view_shape[d]}")

    # ------------------------------------------------------------ tiles
    def load_scalar(self, op: Op) -> None:
        src = op.group("source")[0]
        if not isinstance(src.type, PartitionType) or len(op.results) != 1 \
                or not isinstance(op.results[0].type, ScalarType):
            raise self.error(op, "load_scalar reads one scalar from a !pto.partition_tensor_view")
        if any(d != 1 for d in src.type.shape):
            raise self.error(op, f"load_scalar reads one element: the partition is {src.type}")
        if op.results[0].type.name != src.type.elem:
            raise self.error(op, f"load_scalar of {src.type.elem} data gives {src.type.elem}, "
                                 f"not {op.results[0].type.name}")

    def store_scalar(self, op: Op) -> None:
        """`pto.store_scalar %v, %pview : T, P`: one element of GM written."""
        args = op.group("args")
        types = op.types.get("args", [])
        if len(args) != 2 or len(types) != 2 or op.results or not isinstance(args[1].type, PartitionType):
            raise self.error(op, "store_scalar writes one scalar: pto.store_scalar %v, %pview : T, P")
        val, dst = args
        if any(d != 1 for d in dst.type.shape):
            raise self.error(op, f"store_scalar writes one element: the partition is {dst.type}")
        if not isinstance(val.type, ScalarType) or val.type.name != dst.type.elem:
            raise self.error(op, f"store_scalar of a {val.type} value into {dst.type.elem} data")

    def tile_element(self, op: Op) -> None:
        """pto.tgetval reads, pto.tsetval writes one element of a vec tile, at a row-major
        offset (index)."""
        getval = op.name == "pto.tgetval"
        ins = op.group("ins")
        if getval:
            ok = len(ins) == 2 and len(op.results) == 1 and not op.group("outs")
            tile, off, val = (ins[0], ins[1], op.results[0]) if ok else (None, None, None)
        else:
            ok = len(ins) == 2 and len(op.group("outs")) == 1 and not op.results
            tile, off, val = (op.group("outs")[0], ins[0], ins[1]) if ok else (None, None, None)
        if not ok:
            form = ("%v = pto.tgetval ins(%tile, %off : TB, index) outs : T" if getval
                    else "pto.tsetval ins(%off, %v : index, T) outs(%tile : TB)")
            raise self.error(op, f"expected {form}")
        t = self.tile(op, tile, "tile")
        if t.loc != "vec":
            raise self.error(op, f"{op.name} addresses elements of a 'vec' tile, not '{t.loc}'")
        if not isinstance(off.type, ScalarType) or off.type.name != "index":
            raise self.error(op, f"{op.name}: the element offset is an index, not {off.type}")
        if not isinstance(val.type, ScalarType) or val.type.name != t.dtype:
            raise self.error(op, f"{op.name}: a {t.dtype} tile's element is {t.dtype}, not {val.type}")

    def subview(self, op: Op) -> None:
        """A window of a tile: same space, dtype and layout, inside it."""
        src = op.group("source")[0]
        if not isinstance(src.type, TileType) or len(op.results) != 1 \
                or not isinstance(op.results[0].type, TileType):
            raise self.error(op, "subview maps one tile to a window of it")
        a, b = src.type, op.results[0].type
        self.tile_type(op, b)
        offs, sizes = op.group("offsets"), op.value
        if len(offs) != 2 or len(sizes) != 2:
            raise self.error(op, "subview takes a 2-D offset and 2-D sizes")
        if (a.loc, a.dtype, a.blayout, a.slayout) != (b.loc, b.dtype, b.blayout, b.slayout):
            raise self.error(op, f"a subview keeps its tile's space, dtype and layout: {a} -> {b}")
        if (b.rows, b.cols) != tuple(sizes):
            raise self.error(op, f"subview sizes {sizes} differ from the result's {b.rows}x{b.cols}")
        valid = op.group("valid")
        if valid and (len(valid) != 2 or any(not isinstance(x.type, ScalarType) or x.type.name != "index"
                                            for x in valid)):
            raise self.error(op, "subview's valid [rows, cols] are two index values")
        for i, (v, size, extent) in enumerate(zip(offs, sizes, (a.rows, a.cols))):
            k = const_int(v, self.defs)
            # with a valid part, only that part must lie in the tile (the window may run past it)
            n = const_int(valid[i], self.defs) if valid else size
            if k is not None and n is not None and (k < 0 or k + n > extent):
                raise self.error(op, f"subview window [{k}, {k + n}) lies outside the tile's "
                                     f"extent {extent}")

    def treshape(self, op: Op) -> None:
        src = op.group("source")[0]
        if not isinstance(src.type, TileType) or len(op.results) != 1 \
                or not isinstance(op.results[0].type, TileType):
            raise self.error(op, "treshape maps one tile to one tile")
        a, b = src.type, op.results[0].type
        self.tile_type(op, b)
        if a.loc != b.loc:
            raise self.error(op, f"treshape cannot move a tile from '{a.loc}' to '{b.loc}'")
        na, nb = tile_bytes(a, BY_MLIR[a.dtype].nbytes), tile_bytes(b, BY_MLIR[b.dtype].nbytes)
        if na != nb:
            raise self.error(op, f"treshape changes the byte size ({na} -> {nb})")

    def tile(self, op: Op, v: Value, what: str) -> TileType:
        if not isinstance(v.type, TileType):
            raise self.error(op, f"{what} %{v.name} of {op.name} must be a tile, not {v.type}")
        return v.type

    def tile_op(self, op: Op, kind: str) -> None:
        n = op.name
        ins, outs = op.group("ins"), op.group("outs")
        n_ins, n_outs = ARITY[kind]
        if len(ins) not in n_ins or len(outs) != n_outs or op.results:
            want = " or ".join(map(str, n_ins))
            raise self.error(op, f"{n} takes ins({want} operand(s)) outs({n_outs}) and defines no result")
        self.precision(op)
        if kind == "load":
            return self.tload(op, ins[0], outs[0])
        if kind == "store":
            return self.tstore(op, ins[0], outs[0])
        if kind == "mscatter":
            return self.mscatter(op, ins, outs[0])
        if kind == "mgather":
            return self.mgather(op, ins, outs[0])
        if kind == "gatherb":
            return self.gatherb(op, ins, outs[0])
        if kind in ("sort32", "mrgsort1", "mrgsort"):
            return self.sort(op, kind, ins, outs)
        if kind == "gather_cmp":
            return self.tgather_cmp(op, ins, outs)
        d = self.tile(op, outs[0], "result")
        if kind == "random":
            self.trandom(op, ins, d)
        elif kind in ("part", "prelu"):
            self.two_tiles(op, kind, ins, outs[0], d)
        elif kind == "extract":
            self.textract(op, ins, d)
        elif kind == "gather":
            self.tgather(op, ins, outs[0], d)
        elif kind == "scatter":
            self.tscatter(op, ins, outs[0], d)
        elif kind == "insert":
            self.tinsert(op, ins, d)
        elif kind in MASK_KINDS:
            self.mask_op(op, kind, ins, outs[0], d)
        elif kind in ARG_KINDS:
            self.arg_reduce(op, kind, ins, outs[0], d)
        elif kind in VECTOR_KINDS:
            self.vector_op(op, kind, ins, outs[0], d)
        elif kind == "mov":
            self.tmov(op, ins[0], outs[0])
        elif kind.startswith("gemv"):
            self.gemv(op, kind, ins, outs[0])
        elif kind.startswith("matmul_mx"):
            self.matmul_mx(op, kind, ins, outs[0])
        else:
            self.matmul(op, kind, ins, outs[0])

    def precision(self, op: Op) -> None:
        """{precisionType = #pto<KIND high_precision|default>} on tdiv, tlog and trecip only."""
        attr = op.attr("precisionType")
        kind = PRECISION_KINDS.get(op.name)
        if attr is None:
            return
        if kind is None:
            raise self.error(op, f"{op.name} has no precisionType (tdiv, tlog and trecip have)")
        if attr not in (f"#pto<{kind} high_precision>", f"#pto<{kind} default>"):
            raise self.error(op, f"{op.name}'s precisionType is #pto<{kind} high_precision> or "
                                 f"#pto<{kind} default>, not {attr}")

    def vector_op(self, op: Op, kind: str, ins: list[Value], out: Value, d: TileType) -> None:
        spec = TILE_OPS[op.name]
        tiles = [v for v in ins if not isinstance(v.type, ScalarType)]
        scalars = [v for v in ins if isinstance(v.type, ScalarType)]
        want_scalars = 1 if kind in ("scalar", "fill", "tri", "ci") else 0
        if len(scalars) != want_scalars or (kind == "scalar" and not isinstance(ins[1].type, ScalarType)):
            raise self.error(op, f"{op.name} takes {want_scalars} scalar operand(s)"
                             + (" after the tile" if kind == "scalar" else ""))
        # ttrans also transposes a matmul operand in L1 (the reference's zero-copy
        # transpose_view; here a copy)
        locs = ("vec", "mat") if kind == "trans" else ("vec",)
        # trowexpandadd's scratch is the hardware's workspace: any dtype, checked for its space
        scratch = tiles[2:] if op.name == "pto.trowexpandadd" else []
        for v in scratch:
            if self.tile(op, v, "scratch").loc != "vec":
                raise self.error(op, f"{op.name}'s scratch %{v.name} is not in 'vec'")
        tiles = [v for v in tiles if v not in scratch]
        for v in tiles + [out]:
            t = self.tile(op, v, "operand")
            if t.loc not in locs or t.loc != d.loc:
                raise self.error(op, f"{op.name} runs on the vector unit: %{v.name} is in '{t.loc}', not 'vec'")
            if kind != "cvt" and t.dtype != d.dtype:
                raise self.error(op, f"{op.name} mixes {t.dtype} and {d.dtype}: use pto.tcvt first")
            if kind != "cvt" and t.dtype in FP8_DTYPES:
                raise self.error(op, f"{op.name} does not compute with {t.dtype}: 8-bit floats are "
                                     f"loaded, stored, moved and converted (pto.tcvt to f16/f32 first)")
        if spec.dtypes == "float" and d.dtype not in FLOAT_DTYPES:
            raise self.error(op, f"{op.name} needs a float tile, not {d.dtype}")
        if spec.dtypes == "int" and d.dtype in FLOAT_DTYPES:
            raise self.error(op, f"{op.name} needs an integer tile, not {d.dtype}")
        ds = static_valid(out, self.defs)
        shapes = [static_valid(v, self.defs) for v in tiles]

        def need(shape, want, what):
            if not _same(shape, want):
                raise self.error(op, f"{op.name}: {what} is {_shape_str(shape)}, expected {_shape_str(want)}")

        M, N = ds
        if kind == "cvt" and HIF8 in (d.dtype, self.tile(op, tiles[0], "source").dtype):
            pair = (self.tile(op, tiles[0], "source").dtype, d.dtype)
            if pair not in HIF8_CVT and pair[0] != pair[1]:
                raise self.error(op, f"tcvt {pair[0]} -> {pair[1]}: HiFloat8 converts from f32 and f16, "
                                     f"and to f32")
        if kind == "cvt" and FP4X2 in (d.dtype, self.tile(op, tiles[0], "source").dtype):
            # FP4 pairs widen (N/2 pairs give N elements) and narrow (N elements give N/2)
            src, wide = shapes[0], d.dtype != FP4X2
            shapes[0] = (src[0], None if src[1] is None else (2 * src[1] if wide else src[1] // 2))
            if not wide and self.tile(op, tiles[0], "source").dtype not in FLOAT_DTYPES:
                raise self.error(op, "tcvt into !pto.f4E2M1x2 takes f32, f16 or bf16")
        if kind in ("binary", "binary_full", "scalar", "unary", "cvt", "rowexpand_binary", "colexpand_binary"):
            need(shapes[0], ds, "the source shape")
        if kind == "unary" and len(tiles) == 2:        # trsqrt's precise form: a scratch like the source
            if op.name != "pto.trsqrt":
                raise self.error(op, f"{op.name} takes one operand (trsqrt's precise form takes a scratch)")
            need(shapes[1], ds, "the scratch tile")
        if kind == "binary":
            b = shapes[1]
            if not (_same(b, ds) or _same(b, (M, 1)) or _same(b, (1, N))):
                need(b, ds, "the second operand")
        elif kind == "binary_full":
            need(shapes[1], ds, "the second operand")
        elif kind == "rowexpand_binary":
            lanes = 32 // BY_MLIR[d.dtype].nbytes
            packed = op.name == "pto.trowexpandadd" and _same(shapes[1], (M, lanes))
            if not packed:      # trowexpandadd also takes a 32-byte block per row, repeated
                need(shapes[1], (M, 1), "the per-row operand")
            if len(ins) == 3 and op.name != "pto.trowexpandadd":
                raise self.error(op, f"{op.name} takes two operands (trowexpandadd also a scratch)")
        elif kind == "colexpand_binary":
            need(shapes[1], (1, N), "the per-column operand")
        elif kind == "rowexpand":
            need(shapes[0], (M, 1), "the source")
        elif kind == "colexpand":
            need(shapes[0], (1, N), "the source")
        elif kind == "rowreduce":
            need(ds, (shapes[0][0], 1), "the result")
        elif kind == "colreduce":
            need(ds, (1, shapes[0][1]), "the result")
        elif kind == "trans":
            need(ds, (shapes[0][1], shapes[0][0]), "the result")
        elif kind == "concat":
            a, b = shapes
            need(ds, (a[0], None if a[1] is None or b[1] is None else a[1] + b[1]), "the result")
            need(b, (a[0], b[1]), "the second operand's rows")
        elif kind == "ci":
            if op.attr("descending") not in (None, "true", "false"):
                raise self.error(op, f"{op.name}: descending is true or false")
        elif kind == "tri":
            if not scalars[0].type.name.startswith(("i", "ui")) and scalars[0].type.name != "index":
                raise self.error(op, f"{op.name}: the diagonal is an integer, not {scalars[0].type.name}")
            if op.attr("upper") not in (None, "true", "false"):
                raise self.error(op, f"{op.name}: upper is true or false, got {op.attr('upper')}")
        elif kind == "fillpad":
            s = self.tile(op, tiles[0], "source")
            grow = op.name == "pto.tfillpad_expand"
            if (s.rows, s.cols) != (d.rows, d.cols) if not grow else (s.rows > d.rows or s.cols > d.cols):
                raise self.error(op, f"{op.name} {'cannot shrink' if grow else 'keeps'} the tile's shape: "
                                     f"{s.rows}x{s.cols} -> {d.rows}x{d.cols}")
            if d.pad not in (1, 2, 3):
                raise self.error(op, f"{op.name} needs a pad value on its result's type "
                                     f"(pad=1 zero, 2 max, 3 min), got pad={d.pad}")
            need(ds, (d.rows, d.cols), "the result's valid shape")
        elif kind == "cvt":
            try:
                round_mode(op.attr("rmode"))
            except ValueError as e:
                raise self.error(op, str(e)) from None

    def tinsert(self, op: Op, ins: list, d: TileType) -> None:
        """tinsert: a vec tile into a region of another."""
        s = self.tile(op, ins[0], "source")
        if any(not isinstance(v.type, ScalarType) for v in ins[1:]):
            raise self.error(op, f"{op.name} takes the row and column offsets as scalars")
        if (s.loc, d.loc) != ("vec", "vec"):
            raise self.error(op, f"{op.name} inserts a vec tile into a vec tile, not {s.loc} into {d.loc}")
        if s.dtype != d.dtype:
            raise self.error(op, f"{op.name} mixes {s.dtype} and {d.dtype}")

    def arg_reduce(self, op: Op, kind: str, ins: list, out: Value, d: TileType) -> None:
        """trowargmax & co: a float source, an i32 index result of the reduced shape."""
        s = self.tile(op, ins[0], "source")
        for t in (s, d):
            if t.loc != "vec":
                raise self.error(op, f"{op.name} runs on the vector unit, not in '{t.loc}'")
        if s.dtype not in FLOAT_DTYPES:
            raise self.error(op, f"{op.name} reduces a float tile, not {s.dtype}")
        if d.dtype != "i32":
            raise self.error(op, f"{op.name} writes i32 indices, not {d.dtype}")
        ss, ds = static_valid(ins[0], self.defs), static_valid(out, self.defs)
        want = (ss[0], 1) if kind == "rowargreduce" else (1, ss[1])
        if not _same(ds, want):
            raise self.error(op, f"{op.name}: the result is {_shape_str(ds)}, expected {_shape_str(want)}")

    def mask_op(self, op: Op, kind: str, ins: list, out: Value, d: TileType) -> None:
        """tcmp/tcmps write a ui8 bit mask (8 elements a byte per row); tsel/tsels read one."""
        tiles = [self.tile(op, v, "operand") for v in ins if not isinstance(v.type, ScalarType)]
        scalars = [v for v in ins if isinstance(v.type, ScalarType)]
        if len(scalars) != (1 if kind in ("cmps", "sels") else 0):
            raise self.error(op, f"{op.name} takes {1 if kind in ('cmps', 'sels') else 0} scalar operand(s)")
        for t in tiles + [d]:
            if t.loc != "vec":
                raise self.error(op, f"{op.name} runs on the vector unit, not in '{t.loc}'")
        mask, data = (d, tiles) if kind in ("cmp", "cmps") else (tiles[0], [d] + tiles[1:3])
        carriers = ("ui8",) if kind in ("cmp", "cmps") else ("ui8", "i8", "ui16", "i16", "ui32", "i32")
        if mask.dtype not in carriers:      # a select reads any integer carrier's bytes as bits
            raise self.error(op, f"{op.name}: the mask is a {' / '.join(carriers)} tile, not {mask.dtype}")
        if mask.cols * BY_MLIR[mask.dtype].nbytes * 8 < data[0].cols or mask.rows < data[0].rows:
            raise self.error(op, f"{op.name}: a {mask.rows}x{mask.cols} mask has no bit for every "
                                 f"element of {data[0].rows}x{data[0].cols}")
        for t in data[1:]:
            if kind in ("sels",) and t is tiles[-1]:
                break           # the scratch tile
            if t.dtype != data[0].dtype:
                raise self.error(op, f"{op.name} mixes {t.dtype} and {data[0].dtype}")
        if kind in ("cmp", "cmps") and op.attr("cmp_type") not in [str(i) for i in range(6)]:
            raise self.error(op, f"{op.name}: cmp_type is 0..5 (==, !=, <, <=, >, >=), got "
                                 f"{op.attr('cmp_type')}")

    def tmov(self, op: Op, src: Value, dst: Value) -> None:
        s, d = self.tile(op, src, "source"), self.tile(op, dst, "destination")
        if (s.loc, d.loc) not in self.arch.moves:
            hint = ""
            if (s.loc, d.loc) in (("acc", "vec"), ("vec", "mat")):
                hint = f" (a5 has this path; on {self.arch.name} go through GM: tstore, then tload)"
            raise self.error(op, f"tmov {s.loc} -> {d.loc} is not a data path on {self.arch.name}{hint}")
        scales = (s.loc, d.loc, s.dtype, d.dtype) == ("mat", "scaling", "ui8", "!pto.f8E8M0")   # same bits
        if s.dtype != d.dtype and s.loc != "acc" and not scales:
            raise self.error(op, f"tmov from '{s.loc}' cannot convert {s.dtype} to {d.dtype}")
        a, b = static_valid(src, self.defs), static_valid(dst, self.defs)
        if op.attr("transpose") == "true":      # mat read transposed into left / right
            if s.loc != "mat" or d.loc not in ("left", "right"):
                raise self.error(op, f"tmov {{transpose = true}} reads mat into left or right, not "
                                     f"{s.loc} -> {d.loc}")
            a = tuple(reversed(a))
        if not _same(a, b):
            raise self.error(op, f"tmov shapes differ: {_shape_str(a)} -> {_shape_str(b)}")

    def tload(self, op: Op, src: Value, dst: Value) -> None:
        if not isinstance(src.type, PartitionType):
            raise self.error(op, f"tload reads a !pto.partition_tensor_view, not {src.type}")
        d = self.tile(op, dst, "destination")
        if d.loc not in ("vec", "mat"):
            raise self.error(op, f"GM loads go into 'vec' or 'mat', not '{d.loc}' (load into mat, then tmov)")
        if src.type.elem != d.dtype:
            raise self.error(op, f"tload of {src.type.elem} data into a {d.dtype} tile")
        self.partition_matches(op, src.type, dst)

    def tstore(self, op: Op, src: Value, dst: Value) -> None:
        if not isinstance(dst.type, PartitionType):
            raise self.error(op, f"tstore writes a !pto.partition_tensor_view, not {dst.type}")
        s = self.tile(op, src, "source")
        if s.loc not in ("vec", "acc"):
            raise self.error(op, f"GM stores come from 'vec' or 'acc', not '{s.loc}'")
        if s.loc == "acc":
            if dst.type.elem not in ACC_STORE_DTYPES:
                raise self.error(op, f"an acc tile stores as {', '.join(sorted(ACC_STORE_DTYPES))}, not {dst.type.elem}")
        elif dst.type.elem != s.dtype:
            raise self.error(op, f"tstore of a {s.dtype} tile into {dst.type.elem} data: use pto.tcvt first")
        atomic = op.attr("atomicType")
        if atomic is not None:
            if atomic not in ATOMIC_TYPES:
                raise self.error(op, f"unknown atomicType {atomic}; expected one of {', '.join(ATOMIC_TYPES)}")
            adds = ATOMIC_ADD_DTYPES | ({"bf16"} if self.arch.name == "a2a3" else set())
            if ATOMIC_TYPES[atomic] and dst.type.elem not in adds:
                raise self.error(op, f"an atomic-add store into {dst.type.elem} data is not supported on "
                                     f"{self.arch.name} (it adds into {', '.join(sorted(adds))})")
        self.partition_matches(op, dst.type, src)

    def partition_matches(self, op: Op, p: PartitionType, tile: Value) -> None:
        rows = 1
        for d in p.shape[:-1]:
            rows = None if rows is None or d is None else rows * d
        shape = (rows, p.shape[-1])
        valid = static_valid(tile, self.defs)
        if not _same(shape, valid):
            raise self.error(op, f"partition {_shape_str(p.shape)} does not match the tile's valid shape "
                                 f"{_shape_str(valid)}")

def verify(module: Module, arch: Arch, level: str, source_name: str = "<pto>") -> dict[str, dict[str, int]]:
    """Check the module; return per-function bytes used per space (known addresses only)."""
    return Verifier(module, arch, level, source_name).run()
