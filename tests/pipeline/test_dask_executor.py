"""PYPTO_EXECUTOR (issue 14.4) on a real cluster: a `distributed.LocalCluster` of two
worker processes and a real redis-server between them and the client, never mocks.
The steps run on the workers (report/tasks.json names them), the artifacts are the
bytes a local compile makes, another machine on the same Redis runs nothing, a worker
with other code refuses, a worker killed mid-build costs nothing but time, and a
cluster that cannot be used costs one warning line."""
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
for p in (HERE.parent / "cache", HERE.parent / "graph"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from graph_helpers import artifacts, import_file, tasks, write_program  # noqa: E402
from redis_helpers import INSTALL_HINT, RedisServer, dead_port, redis_server_binary  # noqa: E402

from distributed import Client, LocalCluster  # noqa: E402

from pypto import ir  # noqa: E402
from pypto_cache import Store  # noqa: E402
from pypto_cache.remote import forget_tiers  # noqa: E402
from pypto_pipeline import executor as executor_mod  # noqa: E402
from pypto_pipeline.run import WorkerMismatch  # noqa: E402

REMOTE_STAGES = set(executor_mod.DEFAULT_STAGES)


def fresh_code(client=None) -> None:
    """Code digests taken afresh from the files, here (or on the client's workers): on
    a checkout others edit while the tests run, digests a process took minutes ago
    would rightly make a worker that looks now refuse."""
    from pypto_pipeline import stages
    for cached in (stages._index, stages.stage_impl):
        cached.cache_clear() if client is None else client.run(cached.cache_clear)


@pytest.fixture(scope="module")
def redis_srv(tmp_path_factory):
    binary = redis_server_binary()
    if binary is None:      # a failure, not a skip: CI must run these tests
        pytest.fail(f"the executor tests need redis-server: {INSTALL_HINT}", pytrace=False)
    srv = RedisServer(tmp_path_factory.mktemp("redis"), binary).start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def cluster(redis_srv, tmp_path_factory):
    """Two worker processes (one thread each) sharing a store of their own, apart from
    every store a test compiles with (another machine's disk), on the test's Redis."""
    root = tmp_path_factory.mktemp("dask")
    env = {"PYPTO_REMOTE_CACHE": redis_srv.url, "PYPTO_CACHE_DIR": str(root / "worker-store"),
           "PYTHONPATH": os.pathsep.join([str(ROOT), str(HERE)])}   # HERE: pipeline_toys
    c = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, scheduler_port=0,
                     dashboard_address=":0", local_directory=str(root / "scratch"),
                     env=env, silence_logs=40)
    yield c
    c.close(timeout=20)


@pytest.fixture
def watcher(cluster):
    """A client of the test's own, to look at the cluster (not the build's); the
    workers take their code digests afresh (see `machine`)."""
    c = Client(cluster.scheduler_address, set_as_default=False, timeout=20)
    c.wait_for_workers(2, timeout=60)
    fresh_code(c)
    yield c
    c.close()


@pytest.fixture
def machine(tmp_path, monkeypatch, redis_srv):
    """Compile as a machine with its own local store, on the shared Redis (emptied: the
    kernels of the tests' programs are alike, and a kernel's key is its text's)."""
    redis_srv.client().flushall()
    monkeypatch.setenv("PYPTO_REMOTE_CACHE", redis_srv.url)
    for k in ("PYPTO_CACHE_DISABLE", "PYPTO_REMOTE_CACHE_MODE", "PYPTO_REMOTE_CACHE_SECRET",
              "PYPTO_EXECUTOR_STAGES", "PYPTO_JOBS"):
        monkeypatch.delenv(k, raising=False)
    forget_tiers()
    executor_mod.forget()
    # each side's code digests taken afresh now: on a checkout others edit while the
    # tests run, digests a process took minutes ago would rightly make workers refuse
    fresh_code()

    def compile_on(name: str, prog: Path, *, executor: str | None):
        monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / f"store-{name}"))
        if executor:
            monkeypatch.setenv("PYPTO_EXECUTOR", executor)
        else:
            monkeypatch.delenv("PYPTO_EXECUTOR", raising=False)
        out = tmp_path / f"out-{name}"
        try:
            ir.compile(import_file(prog).PROGRAM, output_dir=out, platform="a2a3sim")
        except WorkerMismatch:
            # Someone edited the checkout between the client's look at the code and the
            # workers': look again on both sides and compile once more (a real difference
            # of code is refused again)
            if not executor:
                raise
            fresh_code()
            with Client(executor, set_as_default=False, timeout=20) as c:
                fresh_code(c)
            ir.compile(import_file(prog).PROGRAM, output_dir=out, platform="a2a3sim")
        return out
    yield compile_on
    executor_mod.forget()
    forget_tiers()


def local_build(tmp_path, prog: Path, monkeypatch) -> Path:
    """The same compile on this machine alone: no remote, no executor."""
    monkeypatch.delenv("PYPTO_REMOTE_CACHE", raising=False)
    monkeypatch.delenv("PYPTO_EXECUTOR", raising=False)
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store-alone"))
    out = tmp_path / "out-alone"
    ir.compile(import_file(prog).PROGRAM, output_dir=out, platform="a2a3sim")
    return out


def test_steps_run_on_the_workers_and_make_the_local_bytes(cluster, watcher, machine, tmp_path,
                                                           monkeypatch, capfd):
    prog = write_program(tmp_path / "prog.py", 4, name="OnWorkers")
    out = machine("a", prog, executor=cluster.scheduler_address)
    recs = tasks(out)
    workers = set(watcher.scheduler_info()["workers"])
    remote = [r for r in recs if r["stage"] in REMOTE_STAGES]
    assert remote and all(r["status"] == "ran" for r in remote)
    assert {r["worker"] for r in remote} == workers          # both worker processes built
    assert {r["worker"] for r in recs if r["stage"] not in REMOTE_STAGES} == {"local"}
    assert capfd.readouterr().err == ""
    # B: a second machine on the same Redis, empty local store: nothing runs anywhere
    b = machine("b", prog, executor=cluster.scheduler_address)
    assert {r["status"] for r in tasks(b)} == {"cached"}
    assert Store(tmp_path / "store-b").stats()["remote_hits"] >= 1
    # and the artifacts are those this machine makes alone, byte for byte
    alone = local_build(tmp_path, prog, monkeypatch)
    assert artifacts(out) == artifacts(alone) == artifacts(b)
    assert {r["worker"] for r in tasks(alone)} == {"local"}


def test_pypto_build_of_many_programs_compiles_each_on_a_worker(cluster, watcher, machine,
                                                                tmp_path):
    """`pypto build` of several programs: each is compiled whole on a worker, all at
    once, and served here from Redis; its report names the worker. One that does not
    compile says why, as without Dask."""
    write_program(tmp_path / "kernels" / "a.py", 2, name="ManyA")
    write_program(tmp_path / "kernels" / "b.py", 2, name="ManyB", ops={"k0": "pl.exp(ta)"})
    (tmp_path / "kernels" / "bad.py").write_text(TOO_BIG)

    def pypto_build(out: str, **env) -> subprocess.CompletedProcess:
        e = {k: v for k, v in os.environ.items() if not k.startswith("PYPTO_")}
        e.update(PYTHONPATH=str(ROOT), PYPTO_CACHE_DIR=str(tmp_path / f"store-{out}"), **env)
        return subprocess.run([sys.executable, "-m", "pypto", "build", "kernels/a.py",
                               "kernels/bad.py", "kernels/b.py", "-o", out, "-q"], cwd=tmp_path,
                              env=e, capture_output=True, text=True, timeout=300)
    p = pypto_build("cluster", PYPTO_REMOTE_CACHE=os.environ["PYPTO_REMOTE_CACHE"],
                    PYPTO_EXECUTOR=cluster.scheduler_address)
    alone = pypto_build("alone")
    assert p.returncode == alone.returncode == 1, p.stdout + p.stderr
    assert "warning" not in p.stderr and "bytes of Vec" in p.stderr, p.stderr
    assert p.stderr == alone.stderr                  # the same error, said the same way
    workers = set(watcher.scheduler_info()["workers"])
    for prog in ("ManyA", "ManyB"):
        recs = tasks(tmp_path / "cluster" / prog)
        assert {r["status"] for r in recs} == {"ran"}
        where = {r["worker"] for r in recs}
        assert len(where) == 1 and where <= workers, where     # the whole program, on one
        assert artifacts(tmp_path / "cluster" / prog) == artifacts(tmp_path / "alone" / prog)


TOO_BIG = """
import pypto.language as pl

@pl.jit
def too_big(a: pl.Tensor[[128, 128], pl.FP32], o: pl.Out[pl.Tensor[[128, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [128, 128])
        y = pl.load(a, [0, 0], [128, 128])
        z = pl.load(a, [0, 0], [128, 128])
        pl.store(pl.add(pl.add(x, y), z), [0, 0], o)
    return o
"""


def _switch_off_remote() -> bool:
    """On a worker: its remote tier fails (as at a Redis hiccup) and switches itself off."""
    executor_mod.worker_store().remote.disabled = True
    return True


def test_a_worker_opens_its_remote_again_after_a_failure(cluster, watcher, machine, tmp_path):
    """A remote tier is off for good after one failure; a worker, which lives longer
    than a compile, opens it again at its next task instead of failing every step."""
    assert all(watcher.run(_switch_off_remote).values())
    out = machine("a", write_program(tmp_path / "prog.py", 2, name="Reopened"),
                  executor=cluster.scheduler_address)
    assert "local" not in {r["worker"] for r in tasks(out) if r["stage"] in REMOTE_STAGES}


def test_a_worker_with_other_code_refuses(cluster, watcher, machine, tmp_path, monkeypatch):
    """The client's ptoas code 'differs' from the workers': they refuse its steps."""
    from pypto_pipeline import driver
    real = driver.stage_impl
    monkeypatch.setattr(driver, "stage_impl", lambda stage, extra="": (
        "0" * 32 if stage == "ptoas" else real(stage, extra)))
    prog = write_program(tmp_path / "prog.py", 2, name="OtherCode")
    with pytest.raises(WorkerMismatch, match=r"refuses step ptoas:OtherCode:k\d.*its pypto "
                                             r"differs from the client's .*ptoas: [0-9a-f]{32} "
                                             r"on the worker, 0{32} on the client"):
        machine("a", prog, executor=cluster.scheduler_address)


def test_a_worker_killed_mid_build_costs_only_time(cluster, watcher, machine, tmp_path,
                                                   monkeypatch):
    prog = write_program(tmp_path / "prog.py", 4, name="KilledWorker")
    pids = watcher.run(os.getpid)
    killed: list[tuple[str, str]] = []      # (worker, the step it was building)

    def kill_one_busy():          # a worker in the middle of a kernel's C++ compile
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for addr, keys in watcher.processing().items():
                busy = [str(k) for k in keys if str(k).startswith("pypto kernel:")]
                if busy and addr in pids:
                    os.kill(pids[addr], signal.SIGKILL)
                    killed.append((addr, busy[0].split()[1]))
                    return
            time.sleep(0.01)
    t = threading.Thread(target=kill_one_busy)
    t.start()
    out = machine("a", prog, executor=cluster.scheduler_address)
    t.join()
    assert killed, "no kernel step was seen running on a worker"
    addr, step = killed[0]
    recs = {r["name"]: r for r in tasks(out)}
    assert all(r["status"] == "ran" for r in recs.values())
    # Dask gave the lost step to another worker (or it was built here)
    assert recs[step]["worker"] != addr
    assert artifacts(out) == artifacts(local_build(tmp_path, prog, monkeypatch))
    watcher.wait_for_workers(2, timeout=60)       # the nanny restarts it for the next test


def test_a_stage_that_raises_out_there_raises_its_own_exception_here(cluster, watcher,
                                                                    redis_srv, tmp_path):
    """The worker reports the failure; the step is built here, so the stage's own
    exception (type, message, traceback) is what the build raises, as without Dask."""
    import pipeline_toys
    from pypto_pipeline import Ref, Step, run_steps
    from pypto_cache.remote import RemoteTier
    forget_tiers()
    store = Store(tmp_path / "store", remote=RemoteTier(redis_srv.url))
    src = Ref.blob(store.put_bytes(b"tile\n"))
    ex = executor_mod.Executor(cluster.scheduler_address, stages=("kernel", "pass"),
                               impl_check=lambda step: (str, (step.impl,)))
    try:
        ok = Step("pass:up", "pass", pipeline_toys.upper, "impl-up", {}, {"text": src}, ("text",))
        bad = Step("kernel:boom", "kernel", pipeline_toys.boom, "impl-boom", {},
                   {"text": Ref("pass:up", "text")}, ("so",))
        with pytest.raises(pipeline_toys.ToyCompileError, match="multiple of 32 bytes"):
            run_steps([ok, bad], store=store, db_path=None, executor=ex)
        r = run_steps([ok], store=Store(tmp_path / "other", remote=RemoteTier(redis_srv.url)),
                      db_path=None, executor=ex)
        assert r.records[0].status == "cached"          # pass:up was built out there
        assert not ex.disabled                          # a stage's failure is not the cluster's
    finally:
        ex._client and ex._client.close()


@contextlib.contextmanager
def dask_cli_cluster(tmp_path, redis_srv, *worker_flags):
    """`dask scheduler` and one `dask worker` as the README's try-out starts them:
    (the scheduler's process, the worker's, the scheduler's address)."""
    dask = str(Path(sys.executable).with_name("dask"))
    port = dead_port()
    env = dict(os.environ, PYPTO_REMOTE_CACHE=redis_srv.url, PYPTO_CACHE_DIR=str(tmp_path / "ws"),
               PYTHONPATH=str(ROOT))
    env.pop("PYPTO_EXECUTOR", None)
    procs = [subprocess.Popen([dask, "scheduler", "--port", str(port), "--no-dashboard"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        procs.append(subprocess.Popen(
            [dask, "worker", f"tcp://127.0.0.1:{port}", "--nthreads", "1", "--no-dashboard",
             "--local-directory", str(tmp_path / "scratch"), *worker_flags],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        yield procs[0], procs[1], f"tcp://127.0.0.1:{port}"
    finally:
        for p in procs:
            p.kill()
            p.wait(30)


def build_and_kill(machine, address: str, prog: Path, victim: subprocess.Popen) -> tuple:
    """Compile `prog` on the cluster, killing `victim` while a kernel is being built
    there; (the output directory, the Dask key seen running)."""
    watcher = Client(address, set_as_default=False, timeout=30)
    watcher.wait_for_workers(1, timeout=60)
    fresh_code(watcher)
    seen: list[str] = []
    done = threading.Event()

    def kill_mid_kernel():
        while not done.is_set():
            busy = [str(k) for ks in watcher.processing().values() for k in ks
                    if str(k).startswith("pypto kernel:")]
            if busy:
                victim.kill()
                seen.append(busy[0])
                return
            time.sleep(0.01)
    t = threading.Thread(target=kill_mid_kernel)
    t.start()
    try:
        out = machine("a", prog, executor=address)
    finally:
        done.set()
        t.join()
        watcher.close(timeout=5)
    assert seen, "no kernel step was seen running"
    return out, seen[0]


@pytest.mark.parametrize("victim", ["scheduler", "the only worker (no nanny)"])
def test_a_cluster_that_goes_away_mid_build_costs_one_warning(victim, machine, redis_srv,
                                                             tmp_path, monkeypatch, capfd):
    """The README's one-machine try-out (`dask scheduler`, `dask worker`), and its
    scheduler killed, or its only worker (no nanny to restart it), while a kernel is
    being built: one warning, the rest is built here, nothing hangs."""
    monkeypatch.setenv("PYPTO_EXECUTOR_CONNECT_TIMEOUT", "1")
    flags = ("--no-nanny",) if "worker" in victim else ()
    prog = write_program(tmp_path / "prog.py", 2, name="ClusterGoes")
    with dask_cli_cluster(tmp_path, redis_srv, *flags) as (scheduler, worker, address):
        t0 = time.monotonic()
        out, _key = build_and_kill(machine, address, prog,
                                   scheduler if victim == "scheduler" else worker)
        assert time.monotonic() - t0 < 60
    recs = tasks(out)
    assert {r["status"] for r in recs} == {"ran"}
    assert "local" in {r["worker"] for r in recs if r["stage"] == "kernel"}
    if victim == "scheduler":     # (what a step built here after a failure is, once is enough)
        assert artifacts(out) == artifacts(local_build(tmp_path, prog, monkeypatch))
    warned = [ln for ln in capfd.readouterr().err.splitlines() if "warning: executor" in ln]
    assert len(warned) == 1 and "building locally" in warned[0], warned


def test_an_unreachable_scheduler_costs_one_warning(machine, tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("PYPTO_EXECUTOR_CONNECT_TIMEOUT", "0.5")
    prog = write_program(tmp_path / "prog.py", 2, name="NoScheduler")
    out = machine("a", prog, executor=f"tcp://127.0.0.1:{dead_port()}")
    assert {r["worker"] for r in tasks(out)} == {"local"}
    assert {r["status"] for r in tasks(out)} == {"ran"}
    err = [ln for ln in capfd.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and "warning: executor tcp://127.0.0.1:" in err[0] \
        and "building locally" in err[0], err


def test_a_scheduler_without_workers_costs_one_warning(machine, tmp_path, capfd):
    empty = LocalCluster(n_workers=0, processes=True, scheduler_port=0, dashboard_address=":0",
                         local_directory=str(tmp_path / "scratch"), silence_logs=40)
    try:
        prog = write_program(tmp_path / "prog.py", 2, name="NoWorkers")
        out = machine("a", prog, executor=empty.scheduler_address)
    finally:
        empty.close(timeout=20)
    assert {r["worker"] for r in tasks(out)} == {"local"}
    err = capfd.readouterr().err
    assert "no workers" in err and err.count("warning") == 1, err


def test_importing_pypto_imports_no_dask():
    code = ("import sys, pypto, pypto.ir, pypto_pipeline.driver; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))")
    env = {k: v for k, v in os.environ.items() if k != "PYPTO_EXECUTOR"}
    got = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True, cwd=str(ROOT)).stdout.strip()
    assert got == "[]"


def test_doit_over_a_project_compiles_each_program_whole_on_a_worker(cluster, watcher, machine,
                                                                    redis_srv, tmp_path):
    """A project's dodo.py with several programs and $PYPTO_EXECUTOR: the `_cluster` task
    compiles every program whole on the workers (all at once), so every step doit runs
    here, with an empty store of its own, is served from the remote cache (even where a
    worker's disk already held a result: a whole compile out there publishes everything);
    the artifacts are those of a local build."""
    write_program(tmp_path / "proj" / "kernels" / "a.py", 2, name="DoitA")
    write_program(tmp_path / "proj" / "kernels" / "b.py", 2, name="DoitB", ops={"k0": "pl.exp(ta)"})
    (tmp_path / "proj" / "dodo.py").write_text(
        "from pypto_pipeline.project import dodo_globals\n"
        "globals().update(dodo_globals('kernels/*.py', output='build', platform='a2a3sim'))\n")

    # the workers' disks hold DoitA's steps already, Redis none of them
    machine("warm", tmp_path / "proj" / "kernels" / "a.py", executor=cluster.scheduler_address)
    redis_srv.client().flushall()

    def doit(store: str, **env):
        e = {k: v for k, v in os.environ.items() if not k.startswith("PYPTO_")}
        e.update(PYTHONPATH=str(ROOT), PYPTO_CACHE_DIR=str(tmp_path / store), **env)
        return subprocess.run([sys.executable, "-m", "doit", "-f", "proj/dodo.py"], cwd=tmp_path,
                              env=e, capture_output=True, text=True, timeout=300)
    p = doit("store-doit", PYPTO_REMOTE_CACHE=os.environ["PYPTO_REMOTE_CACHE"],
             PYPTO_EXECUTOR=cluster.scheduler_address)
    assert p.returncode == 0, p.stdout + p.stderr
    ran = [ln.split()[1] for ln in p.stdout.splitlines() if ln.split()[:1] == ["ran"]]
    assert ran == ["_cluster"], p.stdout + p.stderr              # every step: served, none built here
    built = {prog: artifacts(tmp_path / "proj" / "build" / prog) for prog in ("DoitA", "DoitB")}
    shutil.rmtree(tmp_path / "proj" / "build")
    assert doit("store-alone").returncode == 0
    for prog in ("DoitA", "DoitB"):
        assert artifacts(tmp_path / "proj" / "build" / prog) == built[prog]
