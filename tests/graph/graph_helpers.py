"""Shared pieces of the build-graph tests (tests/graph) and the benchmark (bench/).

The 8-kernel program is generated from a template into a .py file, so a test can
"edit one kernel" by rewriting that file with a one-token change on the same line and
compile it again in a fresh process. Nothing here asserts on exact task names: tasks
are selected by their "stage" and by kernel-name tokens.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent

SHAPE = 64
PROG_NAME = "EightKernels"
# one elementwise op per kernel, over the two loaded tiles ta and tb
OPS = ["pl.add(ta, tb)", "pl.sub(ta, tb)", "pl.mul(ta, tb)", "pl.maximum(ta, tb)",
       "pl.exp(ta)", "pl.minimum(ta, tb)", "pl.neg(ta)", "pl.abs(tb)"]
# torch reference for each expression a kernel may hold (by its text)
REFS = {
    "pl.add(ta, tb)": lambda a, b: a + b,
    "pl.sub(ta, tb)": lambda a, b: a - b,
    "pl.mul(ta, tb)": lambda a, b: a * b,
    "pl.maximum(ta, tb)": lambda a, b: a.maximum(b),
    "pl.minimum(ta, tb)": lambda a, b: a.minimum(b),
    "pl.exp(ta)": lambda a, b: a.exp(),
    "pl.neg(ta)": lambda a, b: -a,
    "pl.abs(tb)": lambda a, b: b.abs(),
}


def kernel_names(n: int = 8) -> list[str]:
    return [f"k{i}" for i in range(n)]


KERNELS = kernel_names(8)


def program_ops(n: int = 8, ops: dict[str, str] | None = None) -> dict[str, str]:
    """{kernel name: expression} of the program with `n` kernels and these overrides."""
    out = {f"k{i}": OPS[i % len(OPS)] for i in range(n)}
    out.update(ops or {})
    return out


def program_source(n: int = 8, ops: dict[str, str] | None = None, dead_in_last: str | None = None,
                   name: str | None = None) -> str:
    """Source of a module defining PROGRAM: a @pl.program with one Orchestration method
    holding `n` pl.at regions (kernels k0..k{n-1}), each loading two 64x64 fp32 tiles,
    applying one elementwise op and storing into its own output tensor.

    `ops` overrides a kernel's expression (same line, so no other line moves);
    `dead_in_last` ("ta" or "tb") appends `unused = pl.exp(<it>)` as the last statement
    of the last region (only the `return` line after it moves)."""
    exprs = program_ops(n, ops)
    name = name or (PROG_NAME if n == 8 else f"Kernels{n}")
    t = f"pl.Tensor[[{SHAPE}, {SHAPE}], pl.FP32]"
    lines = [
        "import pypto.language as pl",
        "",
        "",
        "@pl.program",
        f"class {name}:",
        "    @pl.function(type=pl.FunctionType.Orchestration)",
        f"    def main(self, a: {t}, b: {t},",
    ]
    lines += [f"             o{i}: pl.Out[{t}]," for i in range(n - 1)]
    lines += [f"             o{n - 1}: pl.Out[{t}]) -> {t}:"]
    for i, k in enumerate(exprs):
        lines += [
            f'        with pl.at(level=pl.Level.CORE_GROUP, name_hint="{k}"):',
            f"            ta = pl.load(a, [0, 0], [{SHAPE}, {SHAPE}])",
            f"            tb = pl.load(b, [0, 0], [{SHAPE}, {SHAPE}])",
            f"            o{i} = pl.store({exprs[k]}, [0, 0], o{i})",
        ]
        if dead_in_last and i == n - 1:
            lines.append(f"            unused = pl.exp({dead_in_last})")
    lines += [f"        return o{n - 1}", "", "", f"PROGRAM = {name}", ""]
    return "\n".join(lines)


def write_program(path: Path, n: int = 8, **kw) -> Path:
    """Write (or rewrite, atomically) the program module at `path`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(program_source(n, **kw))
    os.replace(tmp, path)
    return path


_imported = 0


def import_file(path: Path):
    """Import a .py file as a new module object (never a cached one)."""
    global _imported
    import importlib.util
    path = Path(path)
    _imported += 1
    spec = importlib.util.spec_from_file_location(f"_graphprog_{path.stem}_{_imported}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def inputs(seed: int = 0):
    import torch
    g = torch.Generator().manual_seed(seed)
    return torch.randn(SHAPE, SHAPE, generator=g), torch.randn(SHAPE, SHAPE, generator=g)


def run_and_check(compiled, n: int = 8, ops: dict | None = None, seed: int = 0):
    """Run a compiled n-kernel program on the simulator and compare every output
    with torch."""
    import torch
    a, b = inputs(seed)
    outs = [torch.zeros(SHAPE, SHAPE) for _ in range(n)]
    compiled(a, b, *outs)
    for (k, expr), got in zip(program_ops(n, ops).items(), outs):
        want = REFS[expr](a, b)
        assert torch.allclose(got, want, rtol=1e-5, atol=1e-6), \
            f"kernel {k} ({expr}): max error {(got - want).abs().max().item()}"


# ----------------------------------------------------------------------------- processes
COMPILE_SCRIPT = textwrap.dedent('''
    import json, sys, time
    sys.path.insert(0, {here!r})
    from graph_helpers import import_file
    from pypto import ir
    mod = import_file(sys.argv[1])
    t = time.perf_counter()
    c = ir.compile(mod.PROGRAM, output_dir=sys.argv[2], platform="a2a3sim")
    dt = time.perf_counter() - t
    print(json.dumps({{"compile_seconds": dt}}))
''').format(here=str(HERE))


def child_env(store: Path | None, **extra) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(HERE)])
    env.pop("PYPTO_CACHE_DISABLE", None)
    if store is not None:
        env["PYPTO_CACHE_DIR"] = str(store)
    env.update({k: str(v) for k, v in extra.items()})
    return env


def compile_in_subprocess(prog: Path, out: Path, store: Path | None, *, timeout: float = 300,
                          **env) -> float:
    """Compile the program file in a fresh interpreter; returns the seconds the
    compile call took inside that process."""
    args = [sys.executable, "-c", COMPILE_SCRIPT, str(prog), str(out)]
    proc = subprocess.run(args, env=child_env(store, **env), capture_output=True, text=True,
                          timeout=timeout, cwd=str(Path(out).parent))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])["compile_seconds"]


def start_compile(prog: Path, out: Path, store: Path | None, **env) -> subprocess.Popen:
    """The same compile, started and not waited for (its own session, so the caller can
    kill it together with the compilers it started)."""
    args = [sys.executable, "-c", COMPILE_SCRIPT, str(prog), str(out)]
    return subprocess.Popen(args, env=child_env(store, **env), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=str(Path(out).parent),
                            start_new_session=True)


def finish(proc: subprocess.Popen, timeout: float = 300) -> float:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, out + err
    return json.loads(out.strip().splitlines()[-1])["compile_seconds"]


# ----------------------------------------------------------------------------- reports
def tasks(out_dir) -> list[dict]:
    return json.loads((Path(out_dir) / "report" / "tasks.json").read_text())


def artifacts(out_dir) -> dict[str, bytes]:
    """Every file of a compile except the report (which is about the run)."""
    out = Path(out_dir)
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and p.relative_to(out).parts[0] != "report"}


def mentions(name: str, token: str) -> bool:
    """True if `token` appears in a task name as a whole word (k3 but not k30)."""
    return re.search(rf"(?<![A-Za-z0-9]){re.escape(token)}(?![A-Za-z0-9])", name) is not None


def by_stage(records, *stages) -> list[dict]:
    return [r for r in records if r["stage"] in stages]


def kernel_of(rec: dict, n: int = 8) -> str | None:
    """Which kernel a task is about, if any (by name token)."""
    hits = [k for k in kernel_names(n) if mentions(rec["name"], k)]
    return hits[0] if len(hits) == 1 else None


def ran(records) -> list[dict]:
    return [r for r in records if r["status"] == "ran"]


def pass_index(rec: dict, order: list[str]) -> int | None:
    """Position in the pass pipeline of a "pass" task, from the pass name in its task
    name (the longest pass name that appears, so task naming may change freely)."""
    hits = [p for p in order if p in rec["name"]]
    if not hits:
        return None
    return order.index(max(hits, key=len))


def pass_order() -> list[str]:
    from pypto.passes import pipeline
    from pypto.passes.base import PassOptions
    return [p.name for p in pipeline(PassOptions())]


# ----------------------------------------------------------------------------- the store
def objects_dir(store: Path) -> Path:
    return Path(store) / "v2" / "objects"


def object_files(store: Path) -> list[Path]:
    return sorted(p for p in objects_dir(store).rglob("*") if p.is_file())


def bad_objects(store: Path) -> list[str]:
    """Objects whose bytes do not hash to their name, and actions that do not parse
    or name a missing object: what a build must never trust."""
    from pypto_cache import digest_bytes
    bad = [str(p) for p in object_files(store) if digest_bytes(p.read_bytes()) != p.name]
    for a in sorted((Path(store) / "v2" / "actions").rglob("*")):
        if not a.is_file():
            continue
        try:
            outs = json.loads(a.read_bytes())["outputs"]
        except (ValueError, KeyError, TypeError):
            bad.append(f"{a} (unreadable manifest)")
            continue
        for d in outs.values():
            if not (objects_dir(store) / d[:1] / d).is_file():
                bad.append(f"{a} names missing object {d}")
    return bad


def damage(store: Path, how: str, fraction: float, seed: int) -> int:
    """Damage `fraction` of the store's objects; returns how many were touched."""
    import random
    objs = object_files(store)
    rng = random.Random(seed)
    picked = rng.sample(objs, max(1, round(len(objs) * fraction)))
    for i, p in enumerate(picked):
        kind = how if how != "mixed" else ("truncate", "flip", "delete", "swap")[i % 4]
        data = p.read_bytes()
        if kind == "truncate":
            p.write_bytes(data[:len(data) // 2])
        elif kind == "flip":
            j = rng.randrange(len(data)) if data else 0
            p.write_bytes(data[:j] + bytes([data[j] ^ (1 << rng.randrange(8))]) + data[j + 1:]
                          if data else b"\0")
        elif kind == "delete":
            p.unlink()
        elif kind == "swap":            # two objects exchange their bytes
            other = next(q for q in objs if q != p and q.exists() and q.read_bytes() != data)
            theirs = other.read_bytes()
            other.write_bytes(data)
            p.write_bytes(theirs)
    return len(picked)


def copy_store(src: Path, dst: Path) -> Path:
    import shutil
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("locks", "tmp"))
    return dst


def cache_cli(store: Path, *args) -> str:
    proc = subprocess.run([sys.executable, "-m", "pypto_cache", *args], env=child_env(store),
                          capture_output=True, text=True, timeout=120, cwd=str(ROOT))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def parse_stats(text: str) -> dict[str, int]:
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[1].isdigit():
            out[parts[0]] = int(parts[1])
    return out
