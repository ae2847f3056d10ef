"""config: kernel_config.py and compiled_meta.json, what the runtime and from_dir read;
perf hints (and post-pipeline warnings) on the final program."""
from __future__ import annotations

from pypto_cache import digest_bytes
from pypto.backend import BackendType
from pypto.codegen.config import compiled_meta_text, kernel_config_text
from pypto.diagnostics import perf_hints, render
from pypto.stages.text import parse_bytes, warnings_bytes


def config_stage(inputs: dict, options: dict) -> dict:
    prog = parse_bytes(inputs["program"])
    out = {}
    if "diag" in options:
        final = parse_bytes(inputs["final"])
        disabled = frozenset(options["diag"]["disabled"])
        out["perf_hints"] = render(perf_hints(final, BackendType(options["backend_type"]),
                                              disabled)).encode("utf-8")
        if options["diag"]["phase"] == "post_pipeline":
            out["diagnostics"] = warnings_bytes(final, options["diag"])
    out["meta"] = compiled_meta_text(prog, options["orchestration"], options["platform"],
                                     options["backend_type"], options["runtime"]).encode("utf-8")
    if options["kernels"] is not None:
        kernels = [dict(k, digest=digest_bytes(inputs[f"so:{k['name']}"]))
                   for k in options["kernels"]]
        out["config"] = kernel_config_text(prog, options["orchestration"], kernels,
                                           options["runtime"], options["platform"]).encode("utf-8")
    return out
