"""The layout stage alone: one function of a final program in, what the backend is
laid out from out; and the text join that composes programs without a parse."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from pypto.backend import BackendType
from pypto.diagnostics import perf_hints, render
from pypto.ir.nodes import Program
from pypto.ir.printer import print_program
from pypto.stages.layout import layout_stage
from pypto.stages.text import join_functions, parse_text

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "graph"))


def _final(tmp_path):
    """The 8-kernel program after every pass (from a real compile)."""
    from graph_helpers import import_file, write_program
    from pypto import ir
    mod = import_file(write_program(tmp_path / "prog.py", 8))
    ir.compile(mod.PROGRAM, output_dir=tmp_path / "out", skip_ptoas=True)
    dumps = sorted((tmp_path / "out" / "passes_dump").glob("*_after_*.py"))
    return dumps[-1].read_bytes()


def _part(final: Program, name: str) -> bytes:
    return print_program(Program(final.name, [final.get(name)], final.source)).encode()


def _with_callees(final: Program, name: str) -> bytes:
    """What the graph hands the layout of `name`: it in full, the others as stubs."""
    fs = [f if f.name == name else f.signature_only() for f in final.functions]
    return print_program(Program(final.name, fs, final.source)).encode()


def test_layout_of_a_kernel_and_of_the_orchestration(tmp_path):
    text = _final(tmp_path)
    final = parse_text(text)
    diag = {"phase": "post_pipeline", "disabled": []}
    got = {f.name: layout_stage({"program": _with_callees(final, f.name)},
                                {"function": f.name, "diag": diag, "backend_type": "Ascend910B"})
           for f in final.functions}
    k3 = got["k3"]
    assert json.loads(k3["layout"]) == {"name": "k3", "kernel": True, "orchestration": False,
                                        "core": "aiv", "signature": ["in", "in", "out"]}
    assert k3["kernel"] == _part(final, "k3")
    stub = parse_text(k3["sig"]).get("k3")
    assert stub.body == [] and [p.var.name for p in stub.params] == \
        [p.var.name for p in final.get("k3").params]
    main = got["main"]
    info = json.loads(main["layout"])
    assert info["orchestration"] and main["kernel"] == b""
    assert [p["name"] for p in info["params"]][:3] == ["a", "b", "o0"]
    assert info["num_return_types"] == 1
    assert main["sig"] == _part(final, "main")
    # per-function hints, in program order, are the whole program's hints
    whole = render(perf_hints(final, BackendType.Ascend910B)).encode()
    assert b"".join(got[f.name]["perf_hints"] for f in final.functions) == whole
    assert b"TileInnermostDimGranularity" in whole


def test_join_functions_prints_what_the_printer_prints(tmp_path):
    final = parse_text(_final(tmp_path))
    names = ["k5", "main", "k0"]
    joined = join_functions(final.name, [(n, _part(final, n)) for n in names])
    assert joined.decode() == print_program(Program(final.name, [final.get(n) for n in names],
                                                    final.source))
