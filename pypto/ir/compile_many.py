"""Several programs compiled as one build graph (pipeline/together.py): the device programs
of a HOST-level compile, each into its own output directory, with steps laid out from
their results (the host plan) run last in the same build.

A request is what ir.compile would build -- (source, options, from_spec) -- made by
`program_request` (a @pl.program) or `jit_request` (a @pl.jit specialization). Each is
first served whole from the store when it can be, like any compile; the rest build
together."""
from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple


class Request(NamedTuple):
    source: bytes
    opts: object                 # BuildOptions
    from_spec: bool


def program_request(program, **options) -> Request:
    """ir.compile(program, **options) as a request (its checks run here, at once)."""
    from pypto.ir.compiling import _program_input
    _, source, opts, from_spec = _program_input(program, **options)
    return Request(source, opts, from_spec)


def jit_request(spec: dict, config) -> Request:
    """A @pl.jit function's compile for this specialization (spec) and RunConfig."""
    from pypto.ir.compiling import _config_kwargs, build_options
    return Request(json.dumps(spec, sort_keys=True).encode("utf-8"), build_options(**_config_kwargs(config)),
                   True)


def build_together(requests: list[tuple[str, Path, Request]], then=None):
    """Build each (label, output dir, request); `then(store) -> [Step]` lays out the steps
    run last, after every program is built (its compiled_meta.json in place). Returns
    pypto_pipeline.together.Many: a Build per request (served or built), the last steps'
    digests and the records of every task that was laid out."""
    from pypto_cache import open_store
    from pypto_pipeline.served import serve
    from pypto_pipeline.together import Item, build_many
    store = open_store()
    served, items, damaged = {}, [], False
    for k, (label, out, r) in enumerate(requests):
        out.mkdir(parents=True, exist_ok=True)
        hit, bad = serve(r.source, r.opts, out, from_spec=r.from_spec, store=store)
        damaged = damaged or bool(bad)
        if hit is not None:
            served[k] = hit
        else:
            items.append(Item(label, r.source, r.opts, out, r.from_spec))
    got = build_many(items, store=store, damaged=damaged, then=(lambda: then(store)) if then else None)
    built = iter(got.builds)
    return got._replace(builds=[served[k] if k in served else next(built) for k in range(len(requests))])
