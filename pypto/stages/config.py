"""config: kernel_config.py and compiled_meta.json, what the runtime and from_dir read,
from the kernels' signatures and the orchestration (the `sig` program) and the
kernels' .so digests."""
from __future__ import annotations

from pypto_cache import digest_bytes
from pypto.codegen.config import compiled_meta_text, kernel_config_text
from pypto.stages.text import parse_bytes


def config_stage(inputs: dict, options: dict) -> dict:
    prog = parse_bytes(inputs["program"])
    out = {}
    out["meta"] = compiled_meta_text(prog, options["orchestration"], options["platform"],
                                     options["backend_type"], options["runtime"]).encode("utf-8")
    if options["kernels"] is not None:
        kernels = [dict(k, digest=digest_bytes(inputs[f"so:{k['name']}"]))
                   for k in options["kernels"]]
        out["config"] = kernel_config_text(prog, options["orchestration"], kernels,
                                           options["runtime"], options["platform"]).encode("utf-8")
    return out
