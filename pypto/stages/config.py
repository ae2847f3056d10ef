"""config: kernel_config.py and compiled_meta.json, what the runtime and from_dir read,
from what the layout steps said of the kernels and the orchestration (options) and
the kernels' .so digests (inputs), and debug/run.py, the folder's re-runner. Nothing
to parse: it runs after every kernel edit."""
from __future__ import annotations

from pypto_cache import digest_bytes
from pypto.codegen.config import format_kernel_config, meta_doc, meta_json
from pypto.codegen.debug_runner import run_script


def config_stage(inputs: dict, options: dict) -> dict:
    orch = options["orch"]
    meta = meta_doc(orch["params"] if orch else [], orch["num_return_types"] if orch else 0,
                    options["platform"], options["backend_type"], options["runtime"])
    out = {"meta": meta_json(meta).encode("utf-8")}
    if options["kernels"] is not None:
        kernels = [dict(k, digest=digest_bytes(inputs[f"so:{k['name']}"]))
                   for k in options["kernels"]]
        out["config"] = format_kernel_config(options["program"], options["orchestration"],
                                             orch["signature"], kernels, options["runtime"],
                                             options["platform"]).encode("utf-8")
        out["run"] = run_script(options["program"], meta["params"], options["platform"]).encode()
    return out
