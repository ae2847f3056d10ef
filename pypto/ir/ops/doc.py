"""The operator reference page, generated from the table so it cannot drift:

    python -m pypto.ir.ops.doc            # rewrites pypto/ir/ops/OPERATORS.md
"""
from __future__ import annotations

import sys
from pathlib import Path

PAGE = Path(__file__).with_name("OPERATORS.md")
FAMILIES = ("memory", "elementwise", "reduction", "matmul", "shape", "indexing", "sort", "array")


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
           ""]
    for family in FAMILIES:
        out += [f"## {family}", "", "| call | IR ops | operands | options |",
                "| --- | --- | --- | --- |"]
        for short, defs in sorted(by_family[family].items()):
            d = defs[0]
            irs = ", ".join(f"`{x.name}`" for x in sorted(defs, key=lambda x: x.name))
            opts = [f"`{k}`" for k in d.kwargs]
            opts += [f"`{a}` (= `{c}`)" for a, c in d.aliases.items()]
            opts += [f"`{k}`: not built yet" for k in d.unbuilt]
            sig = d.sig.replace("|", "\\|")
            out.append(f"| `{sig.split('  ', 1)[0]}`{'<br>' + sig.split('  ', 1)[1] if '  ' in sig else ''} "
                       f"| {irs} | {', '.join(d.params) or '-'} | {', '.join(opts) or '-'} |")
        out.append("")
    return "\n".join(out)


def main() -> int:
    PAGE.write_text(render())
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
