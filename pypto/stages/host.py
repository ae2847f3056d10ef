"""host: the host plan of a HOST-level program (distributed_meta.json, pypto.ir.host_plan)
from the draft the traced host orchestrator gave (its launches, window buffers and
SubWorker calls, as data) and the compiled_meta.json of each device program it launches;
with a dump level, passes_dump/00_host_<name>.txt as well."""
from __future__ import annotations

import json

from pypto.ir.distributed_compiled_program import meta_text
from pypto.ir.host_plan import complete, host_dump


def host_stage(inputs: dict, options: dict) -> dict:
    draft = json.loads(inputs["draft"])
    metas = [json.loads(inputs[f"meta:{i}"]) for i in range(len(draft["programs"]))]
    plan = complete(draft, metas)
    out = {"plan": meta_text(plan).encode("utf-8")}
    if options["dump"]:
        out["dump"] = host_dump(plan, explicit=options["dump"] > 1).encode("utf-8")
    return out
