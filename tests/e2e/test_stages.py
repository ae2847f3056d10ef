"""Each stage of the graph as a pure function: bytes in, bytes out, deterministic."""
import json

import pytest

from pypto_pipeline import stages
from pypto_pipeline.stages import STAGE_FNS
from pypto.ir.printer import print_program

from test_quickstart import TileAdd

BASE = {"verify": "basic", "explicit": False, "backend_type": "Ascend910B", "memory_planner": "PYPTO"}


def _through_passes():
    text = STAGE_FNS["frontend"]({"program": print_program(TileAdd).encode()}, {})["program"]
    from pypto.passes import ALL_PASSES
    done = []
    for p in ALL_PASSES:
        out = STAGE_FNS["pass"]({"program": text}, dict(BASE, **{"pass": p.name, "done": list(done)}))
        again = STAGE_FNS["pass"]({"program": text}, dict(BASE, **{"pass": p.name, "done": list(done)}))
        assert out == again, p.name
        text = out["program"]
        done.append(p.name)
    return text


def test_frontend_is_canonical():
    src = print_program(TileAdd).encode()
    out = STAGE_FNS["frontend"]({"program": src}, {})["program"]
    assert STAGE_FNS["frontend"]({"program": out}, {})["program"] == out


def test_passes_pto_ptoas_kernel_are_pure():
    final = _through_passes()
    from pypto.language import parse
    from pypto.ir.nodes import Program
    prog = parse(final.decode())
    k = next(f for f in prog.functions if f.is_kernel)
    kernel_text = print_program(Program(prog.name, [k], prog.source)).encode()
    opts = {"kernel": k.name, "arch": "a2a3", "emit_loc": True, "memory_planner": "PYPTO"}
    pto = STAGE_FNS["pto"]({"kernel": kernel_text}, opts)["pto"]
    assert STAGE_FNS["pto"]({"kernel": kernel_text}, opts)["pto"] == pto
    assert b"pto.tadd" in pto
    no_loc = STAGE_FNS["pto"]({"kernel": kernel_text}, dict(opts, emit_loc=False))["pto"]
    assert b"loc(" not in no_loc and b"loc(" in pto
    cpp = STAGE_FNS["ptoas"]({"pto": pto}, {"arch": "a2a3", "level": "level3", "dump": False})["cpp"]
    assert b"pypto_kernel_entry" in cpp
    so1 = STAGE_FNS["kernel"]({"cpp": cpp}, {"arch": "a2a3", "core_type": "aiv", "platform": "a2a3sim"})["so"]
    so2 = STAGE_FNS["kernel"]({"cpp": cpp}, {"arch": "a2a3", "core_type": "aiv", "platform": "a2a3sim"})["so"]
    assert so1 == so2 and so1[:4] == b"\x7fELF"


def test_hardware_platform_needs_vendor_toolchain():
    from pypto.errors import CodegenError
    with pytest.raises(CodegenError, match="ccec"):
        STAGE_FNS["kernel"]({"cpp": b"int x;"}, {"arch": "a2a3", "core_type": "aiv", "platform": "a2a3"})


def test_pass_stage_names_a_broken_invariant():
    from pypto.errors import VerificationError
    text = STAGE_FNS["frontend"]({"program": print_program(TileAdd).encode()}, {})["program"]
    # claiming SSA already holds, before ConvertToSSA ran, on a program that reassigns `c`
    with pytest.raises(VerificationError, match="FlattenCallExpr"):
        STAGE_FNS["pass"]({"program": text}, dict(BASE, **{"pass": "FlattenCallExpr",
                                                         "done": ["ConvertToSSA"]}))


def test_roundtrip_verification_level():
    text = STAGE_FNS["frontend"]({"program": print_program(TileAdd).encode()}, {})["program"]
    out = STAGE_FNS["pass"]({"program": text}, dict(BASE, **{"pass": "ConvertToSSA", "done": [],
                                                           "verify": "roundtrip"}))
    assert b"pl.program" in out["program"]


def test_stage_impl_digests_differ_per_pass():
    a = stages.stage_impl("pass", "convert_to_ssa")
    b = stages.stage_impl("pass", "flatten_call_expr")
    assert a != b and len(a) == 32


def test_layout_then_config_from_its_facts():
    final = _through_passes()
    infos = {}
    from pypto.language import parse
    for f in parse(final.decode()).functions:
        out = STAGE_FNS["layout"]({"program": final}, {"function": f.name})
        infos[f.name] = json.loads(out["layout"])
    main = infos["main"]
    kern = [i for i in infos.values() if i["kernel"]]
    kernels = [{"func_id": n, "name": k["name"], "core_type": k["core"], "signature": k["signature"]}
               for n, k in enumerate(kern)]
    opts = {"program": "TileAdd", "orchestration": "main", "platform": "a2a3sim",
            "backend_type": "Ascend910B", "runtime": "tensormap_and_ringbuffer",
            "orch": {k: main[k] for k in ("signature", "params", "num_return_types")},
            "kernels": kernels}
    so = {f"so:{k['name']}": f"binary of {k['name']}".encode() for k in kern}
    out = STAGE_FNS["config"](so, opts)
    assert out == STAGE_FNS["config"](so, opts)
    meta = json.loads(out["meta"])
    assert [p["name"] for p in meta["params"]] == ["a", "b", "c"]
    assert meta["platform"] == "a2a3sim"
    from pypto_cache import digest_bytes
    config = out["config"].decode()
    assert all(digest_bytes(b) in config for b in so.values())
    assert '"name": "main"' in config and main["signature"] == ["in", "in", "out"]
