"""C++17 emission against pto_sim.hpp: one static function per func.func plus the
extern "C" entry points of pypto_abi.h (pypto_kernel_entry, pypto_kernel_info).

Every op that can fail passes a "site" literal, "<loc>: <op name>", so a run-time error
names the user's source line. Output depends only on the input: same IR, same bytes.
"""
from __future__ import annotations

import json
import re
import struct

from ..dtype import BY_MLIR
from .arch import CXX_SPACE, Arch
from .analysis import defining_ops, slot_bytes
from . import comm, events, forward, group_pipes, prefetch
from .errors import op_error
from .ir import (Func, Module, Op, PartitionType, PtrType, ScalarType, TensorViewType, TileType,
                 Value, walk)
from .ops import CMP_MODES, PIPE_OPS, TILE_OPS, kind_of, round_mode
from .types import STATUS_VECTOR

SCALAR_CXX = {"index": "int64_t", "i64": "int64_t", "i32": "int32_t", "i16": "int16_t",
              "i8": "int8_t", "i1": "bool", "ui8": "uint8_t", "ui16": "uint16_t",
              "ui32": "uint32_t", "ui64": "uint64_t", "f32": "float", "f64": "double",
              "f16": "pto::half", "bf16": "pto::bfloat16"}
UNSIGNED = {"index": "uint64_t", "i64": "uint64_t", "i32": "uint32_t", "i16": "uint16_t",
            "i8": "uint8_t", "i1": "bool", "ui8": "uint8_t", "ui16": "uint16_t",
            "ui32": "uint32_t", "ui64": "uint64_t"}
INFIX = {"arith.addi": "+", "arith.subi": "-", "arith.muli": "*", "arith.andi": "&",
         "arith.ori": "|", "arith.xori": "^", "arith.shli": "<<", "arith.shrsi": ">>",
         "arith.addf": "+", "arith.subf": "-", "arith.mulf": "*", "arith.divf": "/"}
HELPER = {"arith.divsi": "divsi", "arith.remsi": "remsi", "arith.floordivsi": "floordivsi",
          "arith.ceildivsi": "ceildivsi", "arith.divui": "divsi", "arith.remui": "remsi"}
MINMAX = {"arith.maxsi": "max_", "arith.minsi": "min_", "arith.maxui": "max_",
          "arith.minui": "min_", "arith.maximumf": "max_", "arith.minimumf": "min_",
          "arith.maxnumf": "max_", "arith.minnumf": "min_"}
CMPI = {"eq": "==", "ne": "!=", "slt": "<", "sle": "<=", "sgt": ">", "sge": ">=",
        "ult": "<", "ule": "<=", "ugt": ">", "uge": ">="}
CMPF = {"oeq": "({a} == {b})", "one": "({a} < {b} || {a} > {b})", "olt": "({a} < {b})",
        "ole": "({a} <= {b})", "ogt": "({a} > {b})", "oge": "({a} >= {b})",
        "ueq": "!({a} < {b} || {a} > {b})", "une": "({a} != {b})", "ult": "!({a} >= {b})",
        "ule": "!({a} > {b})", "ugt": "!({a} <= {b})", "uge": "!({a} < {b})",
        "ord": "({a} == {a} && {b} == {b})", "uno": "({a} != {a} || {b} != {b})",
        "true": "true", "false": "false"}


def c_string(text: str) -> str:
    out = []
    for ch in text.encode("utf-8"):
        c = chr(ch)
        if c in '"\\':
            out.append("\\" + c)
        elif 32 <= ch < 127 and c != "?":  # '?' too: no trigraph surprises
            out.append(c)
        else:
            out.append(f"\\{ch:03o}")
    return '"' + "".join(out) + '"'


def _elem_cxx(mlir: str) -> str:
    return BY_MLIR[mlir].cpp


def cxx_type(t) -> str:
    if isinstance(t, ScalarType):
        return SCALAR_CXX[t.name]
    if isinstance(t, PtrType):
        return f"pto::GmArg<{_elem_cxx(t.elem)}>"
    if isinstance(t, TensorViewType):
        return f"pto::GmView<{_elem_cxx(t.elem)}>"
    if isinstance(t, PartitionType):
        return f"pto::GmPart<{_elem_cxx(t.elem)}>"
    if isinstance(t, TileType):
        return f"pto::Tile<{_elem_cxx(t.dtype)}>"
    if prefetch.cxx_type(t):
        return prefetch.cxx_type(t)
    raise ValueError(f"no C++ type for {t}")


def _float_literal(value, ty: str) -> str:
    """Exact C++ spelling of a float constant (MLIR may give the bit pattern as an int)."""
    if ty == "f64":
        bits = value if isinstance(value, int) else struct.unpack("<Q", struct.pack("<d", value))[0]
        return f"pto::f64_from_bits(0x{bits:016x}ull)"
    if ty == "f16":
        bits = value if isinstance(value, int) else struct.unpack("<H", struct.pack("<e", value))[0]
        return f"pto::half::from_bits(0x{bits:04x})"
    f32 = value if isinstance(value, int) else struct.unpack("<I", struct.pack("<f", value))[0]
    if ty == "bf16":
        if isinstance(value, int):
            return f"pto::bfloat16::from_bits(0x{value:04x})"
        return f"pto::bfloat16(pto::f32_from_bits(0x{f32:08x}u))"
    return f"pto::f32_from_bits(0x{f32:08x}u)"


def _int_literal(value: int, ty: str) -> str:
    if ty == "i1":
        return "true" if value else "false"
    if ty.startswith("ui") or value > 0x7FFFFFFF:
        return f"{SCALAR_CXX[ty]}({value & 0xFFFFFFFFFFFFFFFF}ull)"
    if value < -0x80000000:
        return f"{SCALAR_CXX[ty]}({value}ll)"
    return str(value)


class FuncEmitter:
    def __init__(self, f: Func, arch: Arch, source_name: str, module: Module | None = None):
        self.f = f
        self.module = module          # (a group's imports name its other function)
        self.held = group_pipes.held(f)
        self.arch = arch
        self.source_name = source_name
        self.defs = defining_ops(f)
        self.names: dict[Value, str] = {}
        self.taken: set[str] = set()
        self.lines: list[str] = []
        self.yield_targets: list[list[str]] = []
        self.fwd = forward.analyse(f)
        self.loaded = {op.group("outs")[0] for op in self.fwd.loads}     # tiles that may read GM
        self.hoisted = {op for ops in self.fwd.hoisted.values() for op in ops}
        self.gm_target: dict[Op, str] = {}     # a forwarded tstore -> the tile its op wrote

    # ------------------------------------------------------------ names
    def fresh(self, base: str) -> str:
        base = "v_" + re.sub(r"[^A-Za-z0-9_]", "_", base)
        name, k = base, 1
        while name in self.taken:
            k += 1
            name = f"{base}_{k}"
        self.taken.add(name)
        return name

    def n(self, v: Value) -> str:
        # C++ names are canonical (order of first use), not the .pto's SSA names: a
        # variable renamed in the user's source changes the .pto but not the C++, so the
        # kernel build -- the expensive step -- stays cached (early cutoff at ptoas).
        if v not in self.names:
            self.names[v] = self.fresh(str(len(self.names)))
        return self.names[v]

    def site(self, op: Op) -> str:
        where = str(op.loc) if op.loc else f"{self.source_name}:{op.line}:{op.col}"
        return c_string(f"{where}: {op.name}")

    def emit(self, indent: str, text: str) -> None:
        self.lines.append(indent + text)

    def error(self, op: Op, msg: str):
        return op_error(op, msg, self.source_name)

    # ------------------------------------------------------------ function
    def signature(self) -> str:
        params = []
        for a in self.f.args:
            if a.name in HIDDEN and isinstance(a.type, PtrType):     # a runtime-given address
                params.append(f"{_elem_cxx(a.type.elem)}* {self.n(a)}")
                continue
            ty = cxx_type(a.type)
            params.append(f"const {ty}& {self.n(a)}" if isinstance(a.type, PtrType) else f"{ty} {self.n(a)}")
        return f"static void k_{re.sub(r'[^A-Za-z0-9_]', '_', self.f.name)}({', '.join(params)})"

    def function(self) -> list[str]:
        self.lines = [self.signature() + " {"]
        self.region(self.f.body, "    ")
        self.lines.append("}")
        return self.lines

    def region(self, ops: list[Op], indent: str) -> None:
        for op in ops:
            if op not in self.hoisted:
                self.op(op, indent)

    # ------------------------------------------------------------ ops
    def op(self, op: Op, ind: str) -> None:
        name = op.name
        if name == "arith.constant" and str(op.results[0].type) == STATUS_VECTOR:
            self.emit(ind, f"// %{op.results[0].name}: the merge status, not modelled")
        elif name == "arith.constant":
            r = op.results[0]
            ty = r.type.name
            if ty in ("f16", "bf16", "f32", "f64"):
                lit = _float_literal(op.value, ty)
            else:
                lit = _int_literal(int(op.value), ty)
            self.emit(ind, f"const {SCALAR_CXX[ty]} {self.n(r)} = {lit};")
        elif name.startswith("arith."):
            self.arith(op, ind)
        elif name == "scf.for":
            self.scf_for(op, ind)
        elif name == "scf.while":
            self.scf_while(op, ind)
        elif name == "scf.if":
            self.scf_if(op, ind)
        elif name == "scf.yield":
            for target, v in zip(self.yield_targets[-1], op.group("args")):
                self.emit(ind, f"{target} = {self.n(v)};")
        elif name in ("return", "func.return"):
            self.emit(ind, "return;")
        elif name == "pto.make_tensor_view":
            r = op.results[0]
            shape = ", ".join(self.n(v) for v in op.group("shape"))
            strides = ", ".join(self.n(v) for v in op.group("strides"))
            mx = {"#pto.layout<mx_a_zz>": ", pto::GM_MX_A_ZZ",
                  "#pto.layout<mx_b_nn>": ", pto::GM_MX_B_NN"}.get(op.attr("layout") or "", "")
            self.emit(ind, f"const {cxx_type(r.type)} {self.n(r)} = pto::make_tensor_view("
                           f"{self.n(op.group('source')[0])}, pto::dims({shape}), pto::dims({strides}), "
                           f"{self.site(op)}{mx});")
        elif name == "pto.partition_view":
            r = op.results[0]
            offs = ", ".join(self.n(v) for v in op.group("offsets"))
            sizes = ", ".join(self.n(v) for v in op.group("sizes"))
            self.emit(ind, f"const {cxx_type(r.type)} {self.n(r)} = pto::partition_view("
                           f"{self.n(op.group('source')[0])}, pto::dims({offs}), pto::dims({sizes}), "
                           f"{self.site(op)});")
        elif name in ("pto.alloc_tile", "pto.multi_tile_get"):
            self.alloc_tile(op, ind)
        elif name == "pto.alloc_multi_tile":     # its slots' tiles are made by multi_tile_get
            if "addr" not in op.operands:
                raise self.error(op, "alloc_multi_tile has no address: run the planner (level2) first")
            self.emit(ind, f"const int64_t {self.n(op.results[0])} = {self.n(op.operands['addr'][0])};")
        elif name == "pto.load_scalar":
            r = op.results[0]
            self.emit(ind, f"const {cxx_type(r.type)} {self.n(r)} = pto::load_scalar("
                           f"{self.n(op.group('source')[0])}, {self.site(op)});")
        elif name == "pto.store_scalar":
            val, dst = op.group("args")
            self.emit(ind, f"pto::store_scalar({self.n(dst)}, {self.n(val)}, {self.site(op)});")
        elif name == "pto.declare_local_array":
            r = op.results[0]
            self.emit(ind, f"pto::LocalArray<{SCALAR_CXX[r.type.elem]}, {r.type.extent}> {self.n(r)}{{}};")
        elif name == "pto.local_array_get":
            r = op.results[0]
            self.emit(ind, f"const {cxx_type(r.type)} {self.n(r)} = {self.n(op.group('array')[0])}.get("
                           f"{self.n(op.group('index')[0])}, {self.site(op)});")
        elif name in prefetch.PREFETCH_OPS:
            prefetch.emit(self, op, ind)
        elif name in comm.COMM_OPS:
            comm.emit(self, op, ind)
        elif name in events.EVENT_OPS:
            events.emit(self, op, ind)
        elif name == "pto.syncall":
            b, count = op.group("ins")
            lanes = (op.attr("lanes") or "1").split(":")[0].strip()
            self.emit(ind, f"pto::syncall({self.n(b)}, {self.n(count)}, {self.site(op)}"
                           f"{', ' + lanes if lanes != '1' else ''});")
        elif name == "pto.local_array_set":
            self.emit(ind, f"{self.n(op.group('array')[0])}.set({self.n(op.group('index')[0])}, "
                           f"{self.n(op.group('value')[0])}, {self.site(op)});")
        elif name == "pto.tgetval":
            r = op.results[0]
            tile, off = op.group("ins")
            self.emit(ind, f"const {cxx_type(r.type)} {self.n(r)} = pto::tgetval({self.n(tile)}, "
                           f"{self.n(off)}, {self.site(op)});")
        elif name == "pto.tsetval":
            off, val = op.group("ins")
            self.emit(ind, f"pto::tsetval({self.n(op.group('outs')[0])}, {self.n(off)}, {self.n(val)}, "
                           f"{self.site(op)});")
        elif name == "pto.subview":
            r = op.results[0]
            row, col = (self.n(v) for v in op.group("offsets"))
            rows, cols = op.value
            vr, vc = (self.n(v) for v in op.group("valid")) if op.group("valid") else (rows, cols)
            self.emit(ind, f"const {cxx_type(r.type)} {self.n(r)} = pto::subview("
                           f"{self.n(op.group('source')[0])}, {row}, {col}, {rows}, {cols}, {vr}, {vc}, "
                           f"{self.site(op)});")
        elif name == "pto.treshape":
            r = op.results[0]
            t: TileType = r.type
            vr = t.v_row if t.v_row is not None else t.rows
            vc = t.v_col if t.v_col is not None else t.cols
            self.emit(ind, f"const {cxx_type(t)} {self.n(r)} = pto::treshape<{_elem_cxx(t.dtype)}>("
                           f"{self.n(op.group('source')[0])}, {t.rows}, {t.cols}, {vr}, {vc}, {self.site(op)});")
        elif name in PIPE_OPS:
            _, what, _, direction = PIPE_OPS[name]
            ins = op.group("ins")
            if what == "push":
                tile, pipe, sub = ins[0], ins[1], ins[2:]
            else:
                pipe, sub, tile = ins[0], ins[1:], op.group("outs")[0]
            split = op.attrs.get("split", "0")
            if op.attrs.get("lanes") == "2":
                split = "3"                                 # (both AIVs, each the whole tile)
            who = self.n(sub[0]) if sub else "-1"          # -1: the cube half (all AIVs)
            pid = int(op.attrs.get("id", 0))
            extra = f", {pid}" if pid else ""
            if what == "pop" and (direction, pid) in self.held:
                extra = f", {pid}, true"                  # its slot stays taken until the tfree
            if what == "push" and op.attrs.get("half"):    # the split point, when not the box's middle
                extra = f", {pid}, {int(op.attrs['half'])}"
            self.emit(ind, f"pto::t{what}({self.n(pipe)}, {direction}, {split}, {who}, {self.n(tile)}, "
                           f"{self.site(op)}{extra});")
        elif name in group_pipes.GROUP_PIPE_OPS:
            group_pipes.emit(self, op, ind)
        elif name in TILE_OPS:
            self.tile_op(op, ind)
        else:
            raise self.error(op, f"ptoas cannot emit '{name}'")

    def alloc_tile(self, op: Op, ind: str) -> None:
        """A tile at its planned address; a slot of a multi-slot buffer at the buffer's
        address plus slot * the slot size (the valid extent is the buffer's)."""
        r = op.results[0]
        t: TileType = r.type
        at = op
        if op.name == "pto.multi_tile_get":
            region = op.group("source")[0]
            at = self.defs[region]
            addr = f"({self.n(region)} + int64_t({self.n(op.group('slot')[0])}) * {slot_bytes(t)})"
        elif "addr" not in op.operands:
            raise self.error(op, "alloc_tile has no address: run the planner (level2) first")
        else:
            addr = self.n(op.operands["addr"][0])
        valid = []
        for key, static, full in (("valid_row", t.v_row, t.rows), ("valid_col", t.v_col, t.cols)):
            if key in at.operands:
                valid.append(self.n(at.operands[key][0]))
            else:
                valid.append(str(static if static is not None else full))
        const = "" if r in self.loaded else "const "      # a forwarded load may make it a window
        self.emit(ind, f"{const}{cxx_type(t)} {self.n(r)} = pto::alloc_tile<{_elem_cxx(t.dtype)}>("
                       f"{CXX_SPACE[t.loc]}, {addr}, {t.rows}, {t.cols}, "
                       f"{valid[0]}, {valid[1]}, {self.site(op)});")

    def arith(self, op: Op, ind: str) -> None:
        name = op.name
        r = op.results[0]
        ty = r.type.name
        T = SCALAR_CXX[ty]
        args = [self.n(v) for v in op.group("args")]
        src_ty = op.types["args"][0].name if op.types.get("args") else ty
        CF = "double" if "f64" in (ty, src_ty) else "float"
        if name in INFIX:
            expr = f"{T}({args[0]} {INFIX[name]} {args[1]})"
        elif name == "arith.shrui":
            expr = f"{T}({UNSIGNED[ty]}({args[0]}) >> {args[1]})"
        elif name in HELPER:
            U = UNSIGNED[ty] if name.endswith("ui") else T
            expr = f"{T}(pto::{HELPER[name]}<{U}>({U}({args[0]}), {U}({args[1]}), {self.site(op)}))"
        elif name in MINMAX:
            C = UNSIGNED[ty] if name.endswith("ui") else (CF if r.type.is_float else T)
            expr = f"{T}(pto::{MINMAX[name]}<{C}>({C}({args[0]}), {C}({args[1]})))"
        elif name == "arith.negf":
            expr = f"{T}(-{CF}({args[0]}))"
        elif name == "arith.cmpi":
            a, b = args
            if op.value.startswith("u"):
                U = UNSIGNED[src_ty]
                a, b = f"{U}({a})", f"{U}({b})"
            expr = f"({a} {CMPI[op.value]} {b})"
        elif name == "arith.cmpf":
            a, b = f"{CF}({args[0]})", f"{CF}({args[1]})"
            expr = CMPF[op.value].format(a=a, b=b)
        elif name == "arith.select":
            expr = f"({args[0]} ? {args[1]} : {args[2]})"
        elif name in ("arith.index_castui", "arith.extui", "arith.uitofp"):
            U = UNSIGNED[src_ty]
            expr = f"{T}({CF}({U}({args[0]})))" if name == "arith.uitofp" else f"{T}({U}({args[0]}))"
        elif name == "arith.sitofp":
            expr = f"{T}({CF}({args[0]}))"
        elif name in ("arith.fptosi", "arith.fptoui"):
            expr = f"pto::convert<{T}>({args[0]}, pto::RM_TRUNC)"
        elif name in ("arith.extf", "arith.truncf"):
            expr = f"{T}({CF}({args[0]}))"
        elif name in ("arith.index_cast", "arith.extsi", "arith.trunci"):
            expr = f"{T}({args[0]})"
        elif name == "arith.bitcast":
            expr = f"pto::bit_cast<{T}>({args[0]})"
        else:
            raise self.error(op, f"ptoas cannot emit '{name}'")
        self.emit(ind, f"const {T} {self.n(r)} = {expr};")

    def scf_for(self, op: Op, ind: str) -> None:
        iv, *carried = op.region_args[0]
        lb, ub, step = (self.n(v) for v in op.group("bounds"))
        targets = []
        for k, (arg, init) in enumerate(zip(carried, op.group("inits"))):
            target = self.n(op.results[k]) if k < len(op.results) else self.fresh(f"{arg.name}_carry")
            targets.append(target)
            self.emit(ind, f"{cxx_type(arg.type)} {target} = {self.n(init)};")
        ivt = cxx_type(iv.type)
        self.emit(ind, f"if (!({step} > 0)) pto::fail({self.site(op)}, \"scf.for step must be positive\");")
        self.emit(ind, f"for ({ivt} {self.n(iv)} = {lb}; {self.n(iv)} < {ub}; {self.n(iv)} += {step}) {{")
        for arg, target in zip(carried, targets):
            self.emit(ind + "    ", f"const {cxx_type(arg.type)} {self.n(arg)} = {target};")
        self.yield_targets.append(targets)
        self.region(op.regions[0], ind + "    ")
        self.yield_targets.pop()
        self.emit(ind, "}")

    def scf_while(self, op: Op, ind: str) -> None:
        """while (true): the condition region on the current arguments, out with the
        values scf.condition passes if it fails, else the body on them, its yield the
        next arguments."""
        before, after = op.regions
        cond_op = before[-1]
        carry = [self.fresh(f"{a.name}_carry") for a in op.region_args[0]]
        for c, a, init in zip(carry, op.region_args[0], op.group("inits")):
            self.emit(ind, f"{cxx_type(a.type)} {c} = {self.n(init)};")
        for r in op.results:
            self.emit(ind, f"{cxx_type(r.type)} {self.n(r)}{{}};")
        self.emit(ind, "while (true) {")
        inner = ind + "    "
        for c, a in zip(carry, op.region_args[0]):
            self.emit(inner, f"const {cxx_type(a.type)} {self.n(a)} = {c};")
        self.region(before[:-1], inner)
        passed = [self.n(v) for v in cond_op.group("args")]
        exits = "".join(f" {self.n(r)} = {v};" for r, v in zip(op.results, passed))
        self.emit(inner, f"if (!({self.n(cond_op.group('cond')[0])})) {{{exits} break; }}")
        for a, v in zip(op.region_args[1], passed):
            self.emit(inner, f"const {cxx_type(a.type)} {self.n(a)} = {v};")
        self.yield_targets.append(carry)
        self.region(after, inner)
        self.yield_targets.pop()
        self.emit(ind, "}")

    def scf_if(self, op: Op, ind: str) -> None:
        targets = []
        for r in op.results:
            targets.append(self.n(r))
            self.emit(ind, f"{cxx_type(r.type)} {self.n(r)}{{}};")
        self.emit(ind, f"if ({self.n(op.group('cond')[0])}) {{")
        self.yield_targets.append(targets)
        for k, region in enumerate(op.regions):
            if k:
                self.emit(ind, "} else {")
            self.region(region, ind + "    ")
        self.yield_targets.pop()
        self.emit(ind, "}")

    def tile_op(self, op: Op, ind: str) -> None:
        spec = TILE_OPS[op.name]
        ins = [self.n(v) for v in op.group("ins")]
        d = self.n(op.group("outs")[0])
        s = self.site(op)
        if op in self.fwd.loads:               # (forward.py: the tile reads GM in place)
            self.emit(ind, f"{d} = pto::tload_view({d}, {ins[0]}, {s});")
            return
        if op in self.fwd.stores:              # computed into the partition its tstore names
            for h in self.fwd.hoisted[op]:
                self.op(h, ind)
            store = self.fwd.stores[op]
            tiles = [self.n(v) for v in op.group("ins") if isinstance(v.type, TileType)]
            gm = self.fresh(f"{d[2:]}_gm")
            self.gm_target[store] = gm
            self.emit(ind, f"const {cxx_type(op.group('outs')[0].type)} {gm} = pto::store_target("
                           f"{self.n(store.group('outs')[0])}, {', '.join([d] + tiles)});")
            d = gm
        if op in self.gm_target:
            ind += f"if ({self.gm_target[op]}.addr != pto::kGmWindow) "
        k = kind_of(op)
        fn = "pto::tmrgsort_runs" if k == "mrgsort1" else f"pto::{spec.cxx}"
        args = _CALL_ARGS.get(k)
        if args is None:
            raise self.error(op, f"ptoas cannot emit '{op.name}'")
        if k == "fillpad":                # one library function for both forms
            fn = "pto::tfillpad"
        if k in ("mov", "extract") and op.attr("transpose") == "true":
            fn = f"pto::t{k}_transposed"
        if k == "store" and op.attr("atomicType") == "#pto<atomic_type atomic_add>":
            fn = "pto::tstore_add"
        if k in ("gather", "scatter") and len(ins) == 1:
            fn = f"pto::t{k}_mask"
        if k == "gather_cmp":             # two results: the indices, then the counts
            d = f"{d}, {self.n(op.group('outs')[1])}"
            fn = "pto::tgather_cmp"
        call = f"{fn}({', '.join([d] + args(ins, op))}, {s})"
        self.emit(ind, call + ";")


def _flag(op, name) -> list[str]:
    return ["1" if op.attr(name) == "true" else "0"]


# What each kind of tile op passes to its pto_sim function after the result (then the
# call site). Scratch operands of the hardware forms (reductions' and ttrans's tmp,
# tsel's) are not needed here; a pad value rides on the result's tile_buf type.
_CALL_ARGS = {
    **dict.fromkeys(("binary", "binary_full", "rowexpand_binary", "colexpand_binary", "scalar",
                     "concat", "matmul"), lambda ins, op: ins[:2]),
    # a column reduction given the hardware's scratch tile sums as a binary tree
    "colreduce": lambda ins, op: ins[:1] + ["1" if len(ins) > 1 else "0"],
    **dict.fromkeys(("unary", "rowexpand", "colexpand", "mov", "trans", "rowreduce",
                     "fill", "rowargreduce", "colargreduce", "load", "store"),
                    lambda ins, op: ins[:1]),
    **dict.fromkeys(("matmul_acc", "matmul_bias", "insert", "sel", "gemv_acc", "gemv_bias"),
                    lambda ins, op: ins[:3]),
    "gemv": lambda ins, op: ins[:2],       # (accPhase: a hint to the pipeline, same values)
    "matmul_mx": lambda ins, op: ins[:4],
    **dict.fromkeys(("matmul_mx_acc", "matmul_mx_bias"), lambda ins, op: ins[:5]),
    "cvt": lambda ins, op: [ins[0], round_mode(op.attr("rmode"))],
    "cmp": lambda ins, op: ins[:2] + [op.attr("cmp_type")],
    "cmps": lambda ins, op: ins[:2] + [op.attr("cmp_type")],
    "sels": lambda ins, op: [ins[0], ins[1], ins[3]],        # mask, src, (tmp), scalar
    "ci": lambda ins, op: ins[:1] + _flag(op, "descending"),
    "tri": lambda ins, op: ins[:1] + _flag(op, "upper"),
    "fillpad": lambda ins, op: ins[:1] + [str(op.group("outs")[0].type.pad)],
    # index form: src, indices (tmp is the hardware's scratch); mask form: src, pattern
    "gather": lambda ins, op: ins[:2] if len(ins) == 3 else [ins[0], _mask_pattern(op)],
    "scatter": lambda ins, op: ins[:2] if len(ins) == 2 else [ins[0], _mask_pattern(op)],
    "mscatter": lambda ins, op: ins[:2],
    "gatherb": lambda ins, op: ins[:2],
    # src, kvalue (tmp is the hardware's scratch), the compare, the offset added to each index
    "gather_cmp": lambda ins, op: ins[:2] + [
        str(CMP_MODES.index(op.attr("cmpMode").removeprefix("#pto<cmp").removesuffix(">").strip())),
        op.attr("offset").split(":")[0].strip()],
    # the partition, the indices, elem (1) or row (0), the out-of-bounds mode (0..3)
    "mgather": lambda ins, op: ins + [
        "1" if "elem" in (op.attr("coalesce") or "") else "0",
        str(["undefined", "clamp", "wrap", "zero"].index(
            (op.attr("gatherOob") or "#pto<gather_oob undefined>").rstrip(">").split()[-1]))],
    "random": lambda ins, op: ins[:6] + [(op.attr("rounds") or "10").split(":")[0].strip()],
    "part": lambda ins, op: ins[:2],
    "extract": lambda ins, op: ins[:3],
    "prelu": lambda ins, op: ins[:2],        # (the scratch tile is the hardware's)
    "sort32": lambda ins, op: ins[:2],
    "mrgsort1": lambda ins, op: ins[:2],     # the runs, their length
    # the lists (the scratch is the hardware's), their count, the exhausted flag
    "mrgsort": lambda ins, op: ins[:-1] + _pad_lists(ins) + [str(len(ins) - 1), _exhausted(op)],
}


def _pad_lists(ins) -> list:
    """pto::tmrgsort takes four lists: the unused ones repeat the first (not read)."""
    return [ins[0]] * (5 - len(ins))


def _exhausted(op) -> str:
    attrs = op.operand_attrs.get(len(op.group("ins")) - 1, {})
    return "1" if attrs.get("exhausted") == "true" else "0"


def _mask_pattern(op) -> str:
    """The pattern's number (pl.tile.MaskPattern's value) of a mask-form tgather."""
    name = (op.attr("maskPattern") or "").removeprefix("#pto.mask_pattern<").removesuffix(">")
    return str(["P0101", "P1010", "P0001", "P0010", "P0100", "P1000", "P1111"].index(name) + 1)


def dim_args(f: Func) -> dict:
    """Trailing `index` arguments that are dynamic dims: each is a shape operand of the
    make_tensor_view of a tensor argument, and is read from that tensor's descriptor
    (the caller passes no scalar for it). {dim arg: (tensor arg, dim index)}"""
    out: dict = {}
    tensors = {a for a in f.args if isinstance(a.type, PtrType)}
    dims = {a for a in f.args if isinstance(a.type, ScalarType) and a.type.name == "index"}
    for op in walk(f.body):
        if op.name != "pto.make_tensor_view" or op.group("source")[0] not in tensors:
            continue
        for i, v in enumerate(op.group("shape")):
            if v in dims and v not in out:
                out[v] = (op.group("source")[0], i)
    # only a trailing run of arguments (before the hidden ones) can be dims; a scalar
    # parameter before them stays one
    k = len(f.args)
    while k and f.args[k - 1].name in HIDDEN:
        k -= 1
    end = k
    while k and f.args[k - 1] in out:
        k -= 1
    return {a: out[a] for a in f.args[k:end]}


# hidden arguments (the reference's SPMD identity) -> their place after the tensors and
# scalars in the runtime's args: the runtime appends block index, block count and the
# vector core's index in its group to every task's arguments
HIDDEN = {"__pypto_spmd_block_idx": 0, "__pypto_spmd_block_num": 1, "__pypto_spmd_subblock_idx": 2,
          "__pypto_spmd_sync": 3,   # (the address of the launch's barrier: a hard syncall)
          "__pypto_group_pipe": 4,  # (the address of a Group's pipe: its halves' tiles pass there)
          "__pypto_sdma_workspace": 5}  # (the block's SDMA workspace: pl.prefetch)
PIPE_ARG = "__pypto_group_pipe"
SDMA_ARG = "__pypto_sdma_workspace"


def _entry(f: Func, symbol: str) -> list[str]:
    dims = dim_args(f)
    tensors = [a for a in f.args if isinstance(a.type, PtrType) and a.name not in HIDDEN]
    scalars = [a for a in f.args if not isinstance(a.type, PtrType) and a not in dims
               and a.name not in HIDDEN]
    slot = {a: k for k, a in enumerate(tensors)}
    slot.update({a: len(tensors) + k for k, a in enumerate(scalars)})
    base = len(tensors) + len(scalars)
    call_args = []
    for a in f.args:
        if a.name in HIDDEN and isinstance(a.type, PtrType):     # an address the runtime gives
            call_args.append(f"reinterpret_cast<{_elem_cxx(a.type.elem)}*>(args[{base + HIDDEN[a.name]}])")
        elif a.name in HIDDEN:
            call_args.append(f"pto::scalar_arg<{SCALAR_CXX[a.type.name]}>(args[{base + HIDDEN[a.name]}])")
        elif isinstance(a.type, PtrType):
            d = BY_MLIR[a.type.elem]
            label = c_string(f"@{f.name} tensor argument %{a.name} (args[{slot[a]}])")
            call_args.append(f"pto::gm_arg<{d.cpp}>(args[{slot[a]}], {d.code}, {label})")
        elif a in dims:
            src, i = dims[a]
            label = c_string(f"@{f.name} dynamic dim %{a.name} (dim {i} of %{src.name}, args[{slot[src]}])")
            call_args.append(f"pto::gm_dim(args[{slot[src]}], {i}, {label})")
        else:
            call_args.append(f"pto::scalar_arg<{SCALAR_CXX[a.type.name]}>(args[{slot[a]}])")
    fname = "k_" + re.sub(r"[^A-Za-z0-9_]", "_", f.name)
    joined = (",\n" + " " * 12).join(call_args)
    # a Group's half that fails stops its pipe: the other half stops waiting for it
    stop = ([f"    pto::pipe_stop(args[{base + HIDDEN[PIPE_ARG]}]);"]
            if any(a.name == PIPE_ARG for a in f.args) else [])
    return [
        f'extern "C" int {symbol}(const int64_t* args, char* err, int32_t errlen) {{',
        "    try {",
        f"        {fname}(" + (f"\n            {joined}" if call_args else "") + ");",
        "        return 0;",
        *([
            "    } catch (const pto::Stopped& e) {",        # the other half failed first
            "        pto::copy_message(err, errlen, e.what());",
            "        return pto::kStopped;",
        ] if stop else []),
        "    } catch (const pto::Error& e) {",
        "        pto::copy_message(err, errlen, e.what());",
        "    } catch (...) {",
        f"        pto::copy_message(err, errlen, {c_string(f'@{f.name}: unexpected C++ exception')});",
        "    }",
        *stop,
        "    return 1;",
        "}",
    ]


def kernel_info(module: Module, arch: Arch, usage: dict) -> dict:
    f = module.funcs[0]
    pipe_ops = [op for g in module.funcs for op in walk(g.body) if op.name in PIPE_OPS]
    inits = [op for g in module.funcs for op in walk(g.body) if op.name in group_pipes.INIT]
    return {
        "name": f.name,
        "kernel_kind": f.kernel_kind,
        "arch": arch.name,
        "tensor_params": sum(isinstance(a.type, PtrType) and a.name not in HIDDEN for a in f.args),
        "scalar_params": sum(not isinstance(a.type, PtrType) and a.name not in HIDDEN
                             for a in f.args) - len(dim_args(f)),
        "bytes_used": dict(sorted(usage.get(f.name, {}).items())),
        "functions": [g.name for g in module.funcs],
        # a Group whose vector work is split runs two AIVs with its AIC
        "vector_halves": 2 if any(g.attrs.get("pypto.split", "0") != "0" or "pypto.aiv_lanes" in g.attrs
                                  for g in module.funcs) else 1,
        "pipe_slots": max([int(op.attrs.get("slot_num", 2)) for op in pipe_ops]
                          + [int(op.attrs.get("slot_num", group_pipes.default_slots(int(op.attrs["dir_mask"]))))
                             for op in inits] or [2]),
        # a hand-written group's pipes: how many, and the largest slot they declare
        "pipe_ids": max([int(op.attrs.get("id", 0)) + 1 for op in pipe_ops + inits] or [1]),
        "pipe_slot_bytes": max([int(op.attrs["slot_size"]) for op in inits] or [0]),
        # it makes a prefetch context: the runtime gives each block an SDMA workspace
        "sdma": any(a.name == SDMA_ARG for g in module.funcs for a in g.args),
        # it raises or awaits cross-core events: the runtime gives it a pipe (their counters)
        "events": any(op.name in events.EVENT_OPS for g in module.funcs for op in walk(g.body)),
    }


def emit(module: Module, arch: Arch, usage: dict, *, level: str, source_name: str = "<pto>") -> str:
    """C++ for a verified (and, at level2, planned) module."""
    out = [
        f"// Generated by pypto.ptoas from {source_name} (arch {arch.name}, {level}). Do not edit.",
        '#include "pto_sim.hpp"',
        "",
    ]
    for f in module.funcs:
        out += FuncEmitter(f, arch, source_name, module).function()
        out.append("")
    out += _entry(module.funcs[0], "pypto_kernel_entry")
    out.append("")
    if len(module.funcs) > 1:  # a group: every function is reachable by name too
        for f in module.funcs:
            out += _entry(f, "pypto_kernel_entry__" + re.sub(r"[^A-Za-z0-9_]", "_", f.name))
            out.append("")
    if comm.uses_comm(module):
        out += comm.SET_COMM + [""]
    info = json.dumps(kernel_info(module, arch, usage), sort_keys=True, separators=(",", ":"))
    out.append(f'extern "C" const char* pypto_kernel_info(void) {{ return {c_string(info)}; }}')
    return "\n".join(out) + "\n"
