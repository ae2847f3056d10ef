"""orchestration: the Orchestration function -> host C++ that submits kernels (against
pypto/include/pypto_abi.h), and its build."""
from __future__ import annotations

from pypto.codegen.host import build_host
from pypto.codegen.orchestration import generate_orchestration
from pypto.stages.text import parse_bytes


def orchestration_stage(inputs: dict, options: dict) -> dict:
    prog = parse_bytes(inputs["program"])
    cpp = generate_orchestration(prog, options["name"], dict(options["kernel_ids"]))
    return {"cpp": cpp.encode("utf-8"), "so": build_host(cpp)}
