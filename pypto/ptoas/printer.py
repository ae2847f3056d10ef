"""Print ptoas IR back as .pto text (used for pass dumps; the output parses again)."""
from __future__ import annotations

import math
import struct

from .ir import Func, Module, Op, Value
from .parser import CAST_OPS


def _v(v: Value) -> str:
    return f"%{v.name}"


def _vs(vs: list[Value]) -> str:
    return ", ".join(_v(v) for v in vs)


def _types(ts) -> str:
    return ", ".join(str(t) for t in ts)


def _attrs(d: dict[str, str]) -> str:
    return "{" + ", ".join(k if v == "unit" else f"{k} = {v}" for k, v in d.items()) + "}"


def _literal(value, ty) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isfinite(value):
            return repr(value)
        # MLIR spells inf/nan as the bit pattern of the float type
        fmt = {"f32": "<f", "f64": "<d", "f16": "<e"}.get(str(ty))
        if fmt is None:
            return repr(value)
        bits = int.from_bytes(struct.pack(fmt, value), "little")
        return f"0x{bits:X}"
    return str(value)


def _dps(op: Op) -> str:
    parts = []
    for group in ("ins", "outs"):
        if group not in op.operands:
            continue
        vals = op.operands[group]
        items = []
        for k, v in enumerate(vals):
            extra = _attrs(op.operand_attrs[k]) if group == "ins" and k in op.operand_attrs else ""
            items.append(_v(v) + extra)
        body = ", ".join(items)
        if vals:
            body += " : " + _types(op.types[group])
        parts.append(f"{group}({body})")
    if op.group("args"):
        parts.append(_vs(op.group("args")))
    if op.attrs:
        parts.append(_attrs(op.attrs))
    if op.types.get("args"):
        parts.append(": " + _types(op.types["args"]))
    if op.results:
        parts.append("-> " + _types([r.type for r in op.results]))
    return " ".join(parts)


def op_body(op: Op) -> str:
    """Everything after the op name, except regions and loc."""
    n = op.name
    res_t = [r.type for r in op.results]
    if n == "arith.constant":
        return f"{_literal(op.value, res_t[0])} : {res_t[0]}"
    if n in ("arith.cmpi", "arith.cmpf"):
        return f"{op.value}, {_vs(op.group('args'))} : {op.types['args'][0]}"
    if n == "arith.select":
        return f"{_vs(op.group('args'))} : {res_t[0]}"
    if n.startswith("arith."):
        ty = op.types["args"][0] if op.types.get("args") else res_t[0]
        return f"{_vs(op.group('args'))} : {ty}"
    if n in ("scf.yield", "return", "func.return"):
        args = op.group("args")
        return f"{_vs(args)} : {_types(op.types['args'])}" if args else ""
    if n == "pto.make_tensor_view":
        text = f"{_v(op.group('source')[0])}"
        for key in ("shape", "strides"):
            if key in op.operands:
                text += f", {key} = [{_vs(op.operands[key])}]"
        if op.attrs:
            text += " " + _attrs(op.attrs)
        return f"{text} : {res_t[0]}"
    if n == "pto.partition_view":
        text = f"{_v(op.group('source')[0])}"
        for key in ("offsets", "sizes"):
            if key in op.operands:
                text += f", {key} = [{_vs(op.operands[key])}]"
        if op.attrs:
            text += " " + _attrs(op.attrs)
        return f"{text} : {op.types['source'][0]} -> {res_t[0]}"
    if n == "pto.multi_tile_get":
        return (f"{_v(op.group('source')[0])}[{_v(op.group('slot')[0])}] : {op.types['source'][0]} "
                f"-> {res_t[0]}")
    if n in ("pto.alloc_tile", "pto.alloc_multi_tile"):
        text = "".join(f"{k} = {_v(op.operands[k][0])} " for k in ("addr", "valid_row", "valid_col")
                       if k in op.operands)
        if op.attrs:
            text += _attrs(op.attrs) + " "
        return f"{text}: {res_t[0]}"
    if n in ("pto.treshape", "pto.load_scalar"):
        return f"{_v(op.group('source')[0])} : {op.types['source'][0]} -> {res_t[0]}"
    if n == "pto.subview":
        valid = f" valid [{_vs(op.group('valid'))}]" if op.group("valid") else ""
        return (f"{_v(op.group('source')[0])}[{_vs(op.group('offsets'))}] sizes "
                f"[{', '.join(map(str, op.value))}]{valid} : {op.types['source'][0]} -> {res_t[0]}")
    if n == "pto.tgetval":
        return f"ins({_vs(op.group('ins'))} : {_types(op.types['ins'])}) outs : {res_t[0]}"
    if n == "pto.syncall":
        lanes = f" {{lanes = {op.attr('lanes')}}}" if op.attr("lanes") else ""
        return f"ins({_vs(op.group('ins'))} : {_types(op.types['ins'])}){lanes}"
    return _dps(op)


def print_op(op: Op, indent: str, out: list[str], notes: dict | None = None) -> None:
    results = ""
    if op.results:
        results = _vs(op.results) + " = "
    if op.name == "scf.for":
        iv, *carried = op.region_args[0]
        lb, ub, step = op.group("bounds")
        head = f"{indent}{results}scf.for {_v(iv)} = {_v(lb)} to {_v(ub)} step {_v(step)}"
        if carried:
            pairs = ", ".join(f"{_v(a)} = {_v(b)}" for a, b in zip(carried, op.group("inits")))
            head += f" iter_args({pairs}) -> ({_types(op.types['inits'])})"
        out.append(head + " {")
        for inner in op.regions[0]:
            print_op(inner, indent + "  ", out, notes)
        out.append(indent + "}" + (" " + op.loc.mlir() if op.loc else ""))
        return
    if op.name == "scf.if":
        head = f"{indent}{results}scf.if {_v(op.group('cond')[0])}"
        if op.results:
            head += f" -> ({_types([r.type for r in op.results])})"
        out.append(head + " {")
        for k, region in enumerate(op.regions):
            if k:
                out.append(indent + "} else {")
            for inner in region:
                print_op(inner, indent + "  ", out, notes)
        out.append(indent + "}" + (" " + op.loc.mlir() if op.loc else ""))
        return
    if op.name in CAST_OPS:
        body = f"{_vs(op.group('args'))} : {op.types['args'][0]} to {op.results[0].type}"
    else:
        body = op_body(op)
    line = f"{indent}{results}{op.name}"
    if body:
        line += " " + body
    if op.loc:
        line += " " + op.loc.mlir()
    if notes and op in notes:
        line += "  // " + notes[op]
    out.append(line)


def print_func(f: Func, out: list[str], notes: dict | None = None) -> None:
    args = ", ".join(f"{_v(a)}: {a.type}" for a in f.args)
    head = f"  func.func @{f.name}({args})"
    if f.result_types:
        head += f" -> ({_types(f.result_types)})"
    if f.attrs:
        head += " attributes " + _attrs(f.attrs)
    out.append(head + " {")
    for op in f.body:
        print_op(op, "    ", out, notes)
    out.append("  }")


def print_module(m: Module, notes: dict | None = None, header: list[str] | None = None) -> str:
    """`notes` maps ops to a trailing `// comment` (planner addresses, etc.)."""
    out: list[str] = [f"// {h}" for h in (header or [])]
    head = "module"
    if m.attrs:
        head += " attributes " + _attrs(m.attrs)
    out.append(head + " {")
    for f in m.funcs:
        print_func(f, out, notes)
    out.append("}")
    return "\n".join(out) + "\n"
