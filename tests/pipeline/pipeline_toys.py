"""Toy stages for the pipeline tests: module-level, pure apart from the call log.

Every call appends one line "<fn>:<tag>" to $PIPELINE_TOY_LOG (O_APPEND, so
several processes may share the file) -- that is how tests count executions.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from pypto_pipeline import Ref, Step


def _log(fn: str, options: dict, extra: str = "") -> None:
    path = os.environ.get("PIPELINE_TOY_LOG")
    if not path:
        return
    line = f"{fn}:{options.get('tag', '')}{extra}\n".encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


class ToyCompileError(Exception):
    """Stands in for a user-facing compile error naming the user's file:line."""


# -- stages ---------------------------------------------------------------------

def strip_comments(inputs, options):
    """'frontend': drops '#' lines, so a comment-only edit disappears here."""
    _log("strip_comments", options)
    lines = [ln for ln in inputs["src"].decode().splitlines() if not ln.lstrip().startswith("#")]
    return {"text": "\n".join(lines) + "\n"}


def upper(inputs, options):
    _log("upper", options)
    return {"text": inputs["text"].upper()}


def upper_v2(inputs, options):
    _log("upper_v2", options)
    return {"text": inputs["text"].upper() + b"!\n"}


def suffix(inputs, options):
    """Reads option "suffix" (and only that)."""
    _log("suffix", options)
    return {"text": inputs["text"] + options.get("suffix", "").encode()}


def join(inputs, options):
    _log("join", options)
    return {"text": b"".join(inputs[k] for k in sorted(inputs))}


def sleepy(inputs, options):
    """'kernel': waits on a subprocess like a C++ compiler would."""
    _log("sleepy", options)
    subprocess.run(["sleep", str(options.get("seconds", 0.2))], check=True)
    return {"so": b"so:" + inputs["text"]}


def boom(inputs, options):
    _log("boom", options)
    raise ToyCompileError("prog.py:3: tile row must be a multiple of 32 bytes")


def wrong_outputs(inputs, options):
    return {"nope": b""}


def greedy(inputs, options):
    """Changes the options it was given: the runner must hand it a copy."""
    options["items"].append(len(options["items"]))
    options["seen"] = True
    return {"out": repr(sorted(options.items())).encode()}


def outline(inputs, options):
    """'pass' that splits "KERNEL name: body" lines out of a program: output
    "program" is what remains (the orchestration), "kernels" a JSON object
    {name: body}. Which kernels exist is known only once this has run."""
    _log("outline", options)
    kernels, orch = {}, []
    for ln in inputs["text"].decode().splitlines():
        if ln.startswith("KERNEL "):
            name, body = ln[len("KERNEL "):].split(":", 1)
            kernels[name.strip()] = body.strip() + "\n"
            orch.append(f"call {name.strip()}")
        else:
            orch.append(ln)
    return {"program": "\n".join(orch) + "\n", "kernels": json.dumps(kernels, sort_keys=True)}


def nested_build(inputs, options):
    """A stage that itself runs a (nested) build, like a dodo action calling
    ir.compile()."""
    from pypto_cache import Store
    from pypto_pipeline import run_steps
    _log("nested_build", options)
    store = Store(options["store"])
    src = store.put_bytes(inputs["text"])
    inner = [Step("frontend:inner", "frontend", upper, "impl-u", {"tag": "inner"},
                  {"text": Ref(None, src)}, ("text",))]
    res = run_steps(inner, store=store, db_path=None, jobs=options.get("jobs", 1))
    return {"text": store.get_bytes(res.digests["frontend:inner"]["text"])}


# -- graphs -----------------------------------------------------------------------

@dataclass
class Toy:
    store: object
    log: Path
    dir: Path

    def calls(self) -> Counter:
        if not self.log.exists():
            return Counter()
        return Counter(self.log.read_text().split())

    def src(self, text: str) -> Ref:
        return Ref(None, self.store.put_bytes(text.encode()))

    def db(self, name: str = "db") -> str:
        return str(self.dir / f"{name}.sqlite")


def chain(src: Ref, *, impl_upper="impl-u", fn_upper=upper, sfx="", targets_dir=None):
    """frontend (strip comments) -> pass (upper) -> pass (suffix) -> kernel (sleepy, 0s)."""
    fe_t = {"text": str(Path(targets_dir) / "main.fe.txt")} if targets_dir else {}
    k_t = {"so": str(Path(targets_dir) / "main.so")} if targets_dir else {}
    return [
        Step("frontend:main", "frontend", strip_comments, "impl-s", {"tag": "fe"},
             {"src": src}, ("text",), targets=fe_t, doc="strip comments"),
        Step("pass:main:01_upper", "pass", fn_upper, impl_upper, {"tag": "up"},
             {"text": Ref("frontend:main", "text")}, ("text",), doc="upper-case"),
        Step("pass:main:02_suffix", "pass", suffix, "impl-x", {"tag": "sx", "suffix": sfx},
             {"text": Ref("pass:main:01_upper", "text")}, ("text",), doc="add suffix"),
        Step("kernel:main", "kernel", sleepy, "impl-k", {"tag": "k", "seconds": 0},
             {"text": Ref("pass:main:02_suffix", "text")}, ("so",),
             targets=k_t, executable=("so",) if targets_dir else (),
             doc="build the kernel"),
    ]


def two_phase(store, src: Ref, out_dir: str):
    """A toy 2-phase graph: (first steps, then) where then(digests) makes one
    pto -> kernel chain per outlined kernel plus the orchestration step.
    Targets are spelled relative to `out_dir` as given (relative for a dodo)."""
    first = [
        Step("frontend:prog", "frontend", strip_comments, "impl-s", {"tag": "fe"}, {"src": src},
             ("text",), targets={"text": f"{out_dir}/prog.fe.txt"}, doc="strip comments"),
        Step("pass:prog:outline", "pass", outline, "impl-o", {"tag": "ol"},
             {"text": Ref("frontend:prog", "text")}, ("program", "kernels"), doc="outline kernels"),
    ]

    def then(digests):
        kernels = json.loads(store.get_bytes(digests["pass:prog:outline"]["kernels"]))
        steps = []
        for name, body in sorted(kernels.items()):
            body_ref = Ref(None, store.put_bytes(body.encode()))
            steps += [
                Step(f"pto:{name}", "pto", upper, "impl-u", {"tag": f"pto.{name}"},
                     {"text": body_ref}, ("text",), doc=f"codegen of kernel {name}"),
                Step(f"kernel:{name}", "kernel", sleepy, "impl-k", {"tag": f"k.{name}", "seconds": 0},
                     {"text": Ref(f"pto:{name}", "text")}, ("so",),
                     targets={"so": f"{out_dir}/{name}.so"}, executable=("so",),
                     doc=f"build kernel {name}"),
            ]
        steps.append(Step("orchestration:prog", "orchestration", join, "impl-j", {"tag": "orch"},
                          {"0": Ref("pass:prog:outline", "program"),
                           **{f"k.{n}": Ref(f"kernel:{n}", "so") for n in kernels}},
                          ("text",), targets={"text": f"{out_dir}/prog.orch.txt"},
                          doc="host code"))
        return steps

    return first, then


PROGRAM = """# a toy program
setup
KERNEL add: a + b
KERNEL mul: a * b
teardown
"""


def statuses(result) -> dict[str, str]:
    return {r.name: r.status for r in result.records}


if __name__ == "__main__":  # used by the two-process test
    from pypto_cache import Store
    from pypto_pipeline import run_steps
    store_dir, db, out, start_at = sys.argv[1:5]
    store = Store(store_dir)
    src = Ref(None, store.put_bytes(b"# shared\nprogram text\n"))
    steps = [
        Step("frontend:p", "frontend", strip_comments, "i1", {"tag": "fe"}, {"src": src}, ("text",)),
        Step("pass:p:1", "pass", upper, "i2", {"tag": "up"}, {"text": Ref("frontend:p", "text")}, ("text",)),
    ] + [
        Step(f"kernel:k{i}", "kernel", sleepy, "i3", {"tag": f"k{i}", "seconds": 0.15},
             {"text": Ref("pass:p:1", "text")}, ("so",))
        for i in range(4)
    ] + [
        Step("orchestration:p", "orchestration", join, "i4", {"tag": "j"},
             {f"k{i}": Ref(f"kernel:k{i}", "so") for i in range(4)}, ("text",)),
    ]
    while time.time() < float(start_at):
        time.sleep(0.001)
    res = run_steps(steps, store=store, db_path=db, jobs=2)
    Path(out).write_text(json.dumps({"digests": res.digests,
                                     "status": statuses(res)}, sort_keys=True))
