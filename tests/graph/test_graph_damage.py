"""Issue 3: the store survives damage and crashes. A truncated or bit-flipped object is
rebuilt, never trusted; a compile killed at any moment leaves nothing the next build
trusts half-written."""
import os
import shutil
import signal
import time

from pypto_cache import digest_bytes

from graph_helpers import (artifacts, bad_objects, by_stage, compile_in_subprocess,
                           kernel_of, object_files, ran, start_compile, tasks)


def test_damaged_objects_are_rebuilt(seed2, tmp_path):
    store = seed2.store_copy(tmp_path / "store")
    prog = tmp_path / "prog.py"
    shutil.copy(seed2.prog, prog)
    ref = artifacts(seed2.out)
    # walk the objects; damage the one holding k0's kernel and the one holding k1's C++
    want = {digest_bytes(ref["kernels/aiv/k0.so"]): "truncate",
            digest_bytes(ref["ptoas/k1.cpp"]): "flip"}
    damaged = {}
    for path in object_files(store):
        how = want.get(path.name)
        if how is None:
            continue
        data = path.read_bytes()
        os.chmod(path, 0o644)
        if how == "truncate":
            path.write_bytes(data[:len(data) // 2])
        else:
            i = len(data) // 2
            path.write_bytes(data[:i] + bytes([data[i] ^ 0x01]) + data[i + 1:])
        damaged[path] = data
    assert len(damaged) == 2, "the objects to damage are not in the store"

    compile_in_subprocess(prog, tmp_path / "out", store)
    assert artifacts(tmp_path / "out") == ref
    for path, data in damaged.items():
        assert path.read_bytes() == data, f"{path} was not rebuilt"
    assert bad_objects(store) == []
    rebuilt = {(r["stage"], kernel_of(r, 2)) for r in ran(tasks(tmp_path / "out"))}
    assert ("kernel", "k0") in rebuilt and ("ptoas", "k1") in rebuilt, rebuilt


def test_sigkill_mid_build_leaves_nothing_half_written(seed2, tmp_path):
    prog = tmp_path / "prog.py"
    shutil.copy(seed2.prog, prog)
    out = tmp_path / "out"
    # kill points as fractions of how long a cold compile takes on this machine now,
    # each in a store of its own (a store a killed build half filled finishes sooner)
    cold = compile_in_subprocess(prog, tmp_path / "timed", tmp_path / "timed_store")
    killed = 0
    for k, frac in enumerate((0.1, 0.4, 0.7)):
        store = tmp_path / f"store{k}"
        proc = start_compile(prog, out, store)
        deadline = time.monotonic() + 120
        while not (out / "report").exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(frac * cold)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)      # the compile and the compilers it started
            killed += 1
        proc.communicate()
        assert bad_objects(store) == [], f"after a kill at {frac:.0%} of a cold compile"
    assert killed >= 2, "no compile was killed mid-build: the test proved nothing"

    # the next build, into the very directory the killed ones wrote to, is correct
    compile_in_subprocess(prog, out, store)
    ref = artifacts(seed2.out)
    assert artifacts(out) == ref
    assert bad_objects(store) == []
    compile_in_subprocess(prog, tmp_path / "fresh", store)
    assert artifacts(tmp_path / "fresh") == ref
    assert not ran(by_stage(tasks(tmp_path / "fresh"), "pass", "pto", "ptoas", "kernel"))


def test_a_hit_damaged_while_its_targets_are_written_next_to_a_build(seed2, tmp_path):
    """One kernel edited, and the object of the other's .pto bit-flipped: the lookups
    find both of k0's back steps cached (the object is there), its targets are written
    while k1 builds, the copy finds the damage, and k0's pto step is built again in
    the same compile; every artifact is right and the program runs."""
    from pypto.runtime import CompiledProgram
    from graph_helpers import import_file, run_and_check, write_program
    store = seed2.store_copy(tmp_path / "store")
    ref = artifacts(seed2.out)
    want = digest_bytes(ref["ptoas/k0.pto"])
    path = next(p for p in object_files(store) if p.name == want)
    data = path.read_bytes()
    os.chmod(path, 0o644)
    i = len(data) // 2
    path.write_bytes(data[:i] + bytes([data[i] ^ 0x01]) + data[i + 1:])

    ops = {"k1": "pl.exp(ta)"}           # a kernel the store has never seen
    prog = write_program(tmp_path / "prog.py", 2, ops=ops)
    compile_in_subprocess(prog, tmp_path / "out", store)
    got = artifacts(tmp_path / "out")
    assert got["ptoas/k0.pto"] == ref["ptoas/k0.pto"] and path.read_bytes() == data
    assert bad_objects(store) == []
    rebuilt = {(r["stage"], kernel_of(r, 2)) for r in ran(tasks(tmp_path / "out"))}
    assert ("pto", "k0") in rebuilt and ("kernel", "k1") in rebuilt, rebuilt
    assert ("kernel", "k0") not in rebuilt          # its .pto came out the same: cut off
    run_and_check(CompiledProgram.from_dir(tmp_path / "out"), 2, ops)
