"""The operator reference page, generated from the table so it cannot drift:

    python -m pypto.ir.ops.doc            # rewrites pypto/ir/ops/OPERATORS.md
"""
from __future__ import annotations

import sys
from pathlib import Path

PAGE = Path(__file__).with_name("OPERATORS.md")
FAMILIES = ("memory", "elementwise", "reduction", "matmul", "shape", "indexing", "sort", "array",
            "system", "prefetch", "lanes", "cross_core", "comm")


def render() -> str:
    from pypto.ir import ops
    by_family: dict[str, dict[str, list]] = {f: {} for f in FAMILIES}
    for name, d in ops.OPS.items():
        family = d.infer.__module__.rsplit(".", 1)[-1]
        call = d.sig.split("(", 1)[0]          # pl.create_tile and pl.create_tensor apart
        by_family[family].setdefault(call, []).append(d)
    out = ["# Operators", "",
           "Every operator the language accepts, by family (generated from the operator table,",
           "`pypto/ir/ops/`, by `python -m pypto.ir.ops.doc`; a test keeps it current).",
           "Operands may be passed by position or by name; options are keywords with",
           "compile-time values. `pl.<op>` picks the tensor or tile form from its first operand.",
           "The dtypes are the element dtypes each op's type rule accepts, found by asking it",
           "(pypto/ir/ops/probe.py; 'not probed' where its sample operands cannot express the op);",
           "'computes in' is where InferTileMemorySpace places a tile op (operands elsewhere are",
           "moved there when the chip has the path).",
           ""]
    for family in FAMILIES:
        out += [f"## {family}", "", "| call | IR ops | operands | options | dtypes | computes in |",
                "| --- | --- | --- | --- | --- | --- |"]
        for short, defs in sorted(by_family[family].items()):
            d = defs[0]
            irs = ", ".join(f"`{x.name}`" for x in sorted(defs, key=lambda x: x.name))
            opts = [f"`{k}`" for k in d.kwargs]
            opts += [f"`{a}` (= `{c}`)" for a, c in d.aliases.items()]
            opts += [f"`{k}`: not built yet" for k in d.unbuilt]
            sig = d.sig.replace("|", "\\|")
            out.append(f"| `{sig.split('  ', 1)[0]}`{'<br>' + sig.split('  ', 1)[1] if '  ' in sig else ''} "
                       f"| {irs} | {', '.join(d.params) or '-'} | {', '.join(opts) or '-'} "
                       f"| {_dtypes(defs)} | {_where(defs)} |")
        out.append("")
    return "\n".join(out)


def _dtypes(defs) -> str:
    """The element dtypes the op's type rules accept (probed), per IR op when they differ."""
    from pypto.ir.ops.probe import accepts
    found = {x.name: accepts(x.name) for x in defs}
    texts = {k: ("not probed" if v is None else ", ".join(str(d) for d in v)) for k, v in found.items()}
    if len(set(texts.values())) == 1:
        return next(iter(texts.values()))
    return "<br>".join(f"{k}: {v}" for k, v in sorted(texts.items()))


def _where(defs) -> str:
    from pypto.ir.ops.probe import placement
    tiles = [x.name for x in defs if x.name.startswith("tile.")]
    if all(x.name.startswith("prefetch.") for x in defs):
        return "a kernel's vector core (the SDMA scratch is in its UB)"
    from pypto.ir.ops.cross_core import CROSS_CORE_OPS, POP
    if all(x.name in CROSS_CORE_OPS for x in defs):
        pops = [POP[x.name][1].name for x in defs if x.name in POP]
        return ("the AIC / AIV member of a hand-written core group" + (f" (the tile: {pops[0]})" if pops else ""))
    return placement(tiles[0]) if tiles else "tensors (in a kernel: converted to tile ops)"


def main() -> int:
    PAGE.write_text(render())
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
