"""`DistributedConfig` and `DistributedCompiledProgram`: a HOST-level program compiled for
a set of ranks (one simulated device each).

The output directory holds `distributed_meta.json` -- the host plan the @pl.jit.host
function traced (its parameters, window buffers and, per rank, the device programs it
launches with which slices of the host tensors and which scalars) -- and, under
`next_levels/<name>/`, each distinct device program compiled once through the build
graph (ranks whose programs are identical share it). Calling the program runs every
rank in its own OS process (pypto.runtime.ranks).
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

META = "distributed_meta.json"
SCHEMA = 1


@dataclass
class DistributedConfig:
    """device_ids: the simulated devices, rank r on device_ids[r]; num_sub_workers: the
    host threads SubWorker calls run on (at least one per SubWorker the program declares;
    calls at one point of the plan whose tensors do not overlap run side by side); runtime
    and aicpu_thread_num: the device runtime's (as in RunConfig)."""
    device_ids: list = field(default_factory=lambda: [0])
    num_sub_workers: int = 0
    runtime: str = "tensormap_and_ringbuffer"
    aicpu_thread_num: int = 0

    def __post_init__(self) -> None:
        ids = list(self.device_ids)
        if not ids:
            raise ValueError("DistributedConfig.device_ids must not be empty")
        if any(not isinstance(d, int) or isinstance(d, bool) or d < 0 for d in ids):
            raise ValueError(f"DistributedConfig.device_ids must be non-negative device indices, got {ids}")
        if len(set(ids)) != len(ids):
            raise ValueError(f"DistributedConfig.device_ids must be distinct, got {ids}")
        if not isinstance(self.num_sub_workers, int) or self.num_sub_workers < 0:
            raise ValueError(f"DistributedConfig.num_sub_workers must be >= 0, got {self.num_sub_workers!r}")
        if not isinstance(self.aicpu_thread_num, int) or self.aicpu_thread_num < 0 or self.aicpu_thread_num == 1:
            raise ValueError(f"DistributedConfig.aicpu_thread_num must be 0 (the default) or >= 2, got "
                             f"{self.aicpu_thread_num!r}")
        self.device_ids = ids

    @property
    def world_size(self) -> int:
        return len(self.device_ids)


class DistributedCompiledProgram:
    """A compiled HOST-level program. `compiled(*tensors, config=RunConfig(...))` runs it
    once on every rank (host tensors in, outputs written in place; blocks until every
    rank finished or one failed)."""

    def __init__(self, output_dir, plan: dict | None = None, program=None):
        self.output_dir = Path(output_dir)
        if plan is None:
            path = self.output_dir / META
            if not path.is_file():
                raise FileNotFoundError(f"{path}: not a distributed program's output directory (no {META})")
            try:
                plan = json.loads(path.read_text())
            except ValueError as e:
                raise ValueError(f"{path}: malformed {META} ({e})") from None
            if plan.get("schema") != SCHEMA:
                raise ValueError(f"{path}: {META} schema {plan.get('schema')!r} is not {SCHEMA}")
        self.plan = plan
        self.program = program
        self.sub_worker_fns: dict = {}     # concrete SubWorkers: name -> the host function
        self.platform = plan["platform"]
        self.distributed_config = DistributedConfig(**plan["distributed_config"])

    @classmethod
    def from_dir(cls, output_dir) -> "DistributedCompiledProgram":
        return cls(output_dir)

    @property
    def params(self) -> list:
        return self.plan["params"]

    def __fspath__(self) -> str:
        return str(self.output_dir)

    def __str__(self) -> str:
        return str(self.output_dir)

    def __repr__(self) -> str:
        return (f"DistributedCompiledProgram({self.plan['name']!r}, ranks={self.distributed_config.world_size}, "
                f"platform={self.platform!r}, output_dir={str(self.output_dir)!r})")

    def __call__(self, *args, config=None):
        """One dispatch on rank processes of its own (host tensors only)."""
        from pypto.runtime.distributed_worker import DistributedDeviceTensor
        from pypto.runtime.ranks import run_ranks
        if any(isinstance(a, DistributedDeviceTensor) for a in args):
            raise TypeError("one-shot DistributedCompiledProgram calls cannot accept resident tensors; "
                            "dispatch on the worker that holds them: with compiled.prepare() as rt: rt(...)")
        if self.abstract_sub_workers:
            raise ValueError(f"SubWorkers {self.abstract_sub_workers} are runtime-bound callbacks (declared "
                             f"with a `...` body): bind them with compiled.prepare(callbacks={{...}})")
        platform = self.platform if config is None else config.platform
        return run_ranks(self, args, platform, self.sub_worker_callables())

    @property
    def sub_worker_names(self) -> list:
        return [w["name"] for w in self.plan.get("sub_workers", [])]

    @property
    def abstract_sub_workers(self) -> list:
        return [w["name"] for w in self.plan.get("sub_workers", []) if w["abstract"]]

    def sub_worker_callables(self) -> dict:
        """The concrete SubWorkers as callbacks (given the list of tensors, as a bound one is):
        the live functions, else made from their recorded source."""
        out = {}
        for w in self.plan.get("sub_workers", []):
            if not w["abstract"]:
                fn = self.sub_worker_fns.get(w["name"]) or host_function(w["name"], w["params"], w["python_body"])
                out[w["name"]] = lambda tensors, _fn=fn: _fn(*tensors)
        return out

    def prepare(self, config=None, *, extra_compiled=(), **options):
        """A DistributedWorker for this program (and `extra_compiled`), kept until closed."""
        from pypto.runtime.distributed_worker import DistributedWorker
        return DistributedWorker([self, *extra_compiled], config, **options)


def host_function(name: str, params: list, python_body: str):
    """A HOST function made from its recorded source (pl / pld in scope): a program whose
    Python functions are not at hand (parsed from text, or reloaded from its directory)."""
    import textwrap
    import pypto.language as pl
    import pypto.language.distributed as pld
    src = f"def {name}({', '.join(params)}):\n" + textwrap.indent(python_body, "    ")
    scope = {"pl": pl, "pld": pld}
    exec(compile(src, f"<host function {name}>", "exec"), scope)
    return scope[name]


def meta_text(plan: dict) -> str:
    """The text of distributed_meta.json."""
    return json.dumps(plan, indent=1, sort_keys=True) + "\n"


def config_dict(cfg: DistributedConfig) -> dict:
    return asdict(cfg)


__all__ = ["DistributedConfig", "DistributedCompiledProgram"]
