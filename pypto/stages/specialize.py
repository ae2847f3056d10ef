"""specialize: @pl.jit source + argument metadata -> @pl.program source text."""
from __future__ import annotations

import json

from pypto.jit.specialize import specialize


def specialize_stage(inputs: dict, options: dict) -> dict:
    return {"program": specialize(json.loads(inputs["spec"])).encode("utf-8")}
