"""The remote tier (issue 14.1-3, 5) against a real redis-server: machine B gets what
machine A built; read-only and off; damaged, swapped and unsigned entries refused; a
remote that is down, dies, hangs or is full costs one warning line and nothing else."""
import errno
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pypto_cache import Store, digest_bytes, open_store
from pypto_cache.__main__ import main as cli
from pypto_cache.remote import ACT, DEFAULT_TIMEOUT, OBJ, RemoteTier, from_env, settings
from cache_helpers import object_path
from redis_helpers import dead_port

REPO = Path(__file__).resolve().parents[2]
KEY = "0123456789abcdef0123456789abcdef"
KEY2 = "fedcba9876543210fedcba9876543210"


def machine(tmp_path, name, url, **kw) -> Store:
    """A store of its own with a tier of its own: another machine (process) on the
    same server."""
    return Store(tmp_path / name, remote=RemoteTier(url, **kw))


def build(store, key=KEY, n=3, size=200, seed=b"") -> dict:
    """What a build does: put its outputs, then the entry naming them."""
    outputs = {f"o{i}": store.put_bytes(seed + b"%d:" % i + os.urandom(size)) for i in range(n)}
    manifest = {"outputs": outputs, "stage": "test"}
    store.put_action(key, manifest)
    return manifest


def warnings(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if "warning" in ln]


# -- A builds, B gets it --

def test_b_gets_every_object_and_the_entry_from_a(redis_srv, tmp_path, capsys):
    a = machine(tmp_path, "a", redis_srv.url)
    manifest = build(a, n=300, size=1000)
    b = machine(tmp_path, "b", redis_srv.url)
    assert b.get_action(KEY) == manifest
    for d in manifest["outputs"].values():        # copied into B's own store, checked
        assert object_path(b, d).is_file()
        assert b.get_bytes(d) == a.get_bytes(d)
    assert (b.root / "v2" / "actions" / KEY[:1] / KEY).is_file()
    sa, sb = a.stats(), b.stats()
    body = len(json.dumps(manifest, sort_keys=True, separators=(",", ":")))
    assert sa["remote_bytes_up"] == sb["remote_bytes_down"] == sa["object_bytes"] + body
    assert (sb["remote_hits"], sb["remote_misses"], sb["misses"]) == (1, 0, 1)
    assert (sa["remote_errors"], sb["remote_errors"], sb["remote_rejected"]) == (0, 0, 0)
    # B's next look-up is its own: the remote is not asked
    redis_srv.client().flushall()
    assert b.get_action(KEY) == manifest
    assert b.stats()["hits"] == 1
    assert capsys.readouterr().err == ""


def test_a_miss_everywhere_is_a_miss(redis_srv, tmp_path):
    b = machine(tmp_path, "b", redis_srv.url)
    assert b.get_action(KEY) is None
    s = b.stats()
    assert (s["misses"], s["remote_misses"], s["remote_hits"]) == (1, 1, 0)


def test_objects_named_beside_the_outputs_come_along(redis_srv, tmp_path):
    """A manifest may name objects outside "outputs" (a report kept with the entry):
    they travel with it, and a lone object can be read or placed from the remote."""
    a = machine(tmp_path, "a", redis_srv.url)
    out, report, lone = (a.put_bytes(b"artifact"), a.put_bytes(b"report"),
                         a.put_bytes(b"read later"))
    a.put_action(KEY, {"outputs": {"x": out}, "served_report": report,
                       "meta": {"frontend": lone}})
    b = machine(tmp_path, "b", redis_srv.url)
    assert b.get_action(KEY)["served_report"] == report
    assert object_path(b, report).is_file() and object_path(b, lone).is_file()

    c = machine(tmp_path, "c", redis_srv.url)      # no entry asked: objects one by one
    assert c.get_bytes(lone) == b"read later"
    assert c.materialize(out, tmp_path / "placed" / "x", executable=True)
    assert (tmp_path / "placed" / "x").read_bytes() == b"artifact"
    assert c.get_bytes(digest_bytes(b"nowhere")) is None
    s = c.stats()
    assert (s["remote_hits"], s["remote_misses"]) == (2, 1)


def test_remote_hits_work_in_an_unwritable_store(redis_srv, tmp_path, capsys):
    """A store that refuses writes keeps what the remote gives in memory."""
    a = machine(tmp_path, "a", redis_srv.url)
    manifest = build(a)
    b = machine(tmp_path, "b", redis_srv.url)
    b._unwritable(PermissionError(errno.EACCES, "Permission denied"))   # as on EACCES
    assert b.get_action(KEY) == manifest
    assert not (b.root / "v2" / "objects").exists()
    d = manifest["outputs"]["o1"]
    assert b.get_bytes(d) == a.get_bytes(d)
    assert b.materialize(d, tmp_path / "o1") and (tmp_path / "o1").read_bytes() == a.get_bytes(d)
    assert len(warnings(capsys.readouterr().err)) == 1        # the store's own, once


# -- modes --

def test_read_only_publishes_nothing_and_reads(redis_srv, tmp_path):
    ro = machine(tmp_path, "ro", redis_srv.url, mode="read-only")
    build(ro, key=KEY2)
    assert redis_srv.client().dbsize() == 0
    assert ro.get_action(KEY2) is not None                    # local, as ever
    manifest = build(machine(tmp_path, "a", redis_srv.url))
    reader = machine(tmp_path, "ro2", redis_srv.url, mode="read-only")
    keys = redis_srv.client().dbsize()
    assert reader.get_action(KEY) == manifest
    build(reader, key=KEY2, seed=b"other")
    assert redis_srv.client().dbsize() == keys
    assert reader.stats()["remote_bytes_up"] == 0


def _child(script: str, env: dict) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if not k.startswith("PYPTO_REMOTE_CACHE")}
    full.update(env)
    return subprocess.run([sys.executable, "-c", script], env=full, capture_output=True,
                          text=True, timeout=120)


CHILD_BUILD = f'''
import os, sys
from pypto_cache import open_store
s = open_store()
d = s.put_bytes(b"child object")
s.put_action({KEY!r}, {{"outputs": {{"x": d}}}})
assert s.get_action({KEY!r}) is not None          # a local hit
assert s.get_action({KEY2!r}) is None             # a miss everywhere
print(type(s._remote).__name__, "redis" in sys.modules)
'''


def test_off_never_connects_nor_imports_redis(redis_srv, tmp_path):
    client = redis_srv.client()
    before = client.info("stats")["total_connections_received"]
    p = _child(CHILD_BUILD, {"PYPTO_CACHE_DIR": str(tmp_path / "s"),
                             "PYPTO_REMOTE_CACHE": redis_srv.url,
                             "PYPTO_REMOTE_CACHE_MODE": "off"})
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["NoneType", "False"] and p.stderr == ""
    assert client.info("stats")["total_connections_received"] == before
    assert client.dbsize() == 0


def test_no_remote_configured_imports_no_redis(tmp_path):
    p = _child(CHILD_BUILD, {"PYPTO_CACHE_DIR": str(tmp_path / "s")})
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["NoneType", "False"] and p.stderr == ""


def test_local_hits_never_ask_the_remote(tmp_path, capsys):
    """A warm local build does not talk to the remote, nor import its client: a dead
    server costs it nothing, not even a warning."""
    local = Store(tmp_path / "s")
    manifest = build(local)
    s = Store(tmp_path / "s", remote=RemoteTier(f"redis://127.0.0.1:{dead_port()}/0"))
    assert s.get_action(KEY) == manifest
    assert all(s.get_bytes(d) for d in manifest["outputs"].values())
    assert s._remote._client is None and capsys.readouterr().err == ""


def test_settings_from_the_environment(redis_srv, monkeypatch, capsys):
    assert settings({}) is None
    cfg = settings({"PYPTO_REMOTE_CACHE": "redis://h:1/0"})
    assert cfg["mode"] == "read-write" and cfg["timeout"] == DEFAULT_TIMEOUT <= 0.25
    assert cfg["secret"] is None
    assert settings({"PYPTO_REMOTE_CACHE": "redis://h:1/0", "PYPTO_REMOTE_CACHE_TIMEOUT": "0.1",
                     "PYPTO_REMOTE_CACHE_MODE": "READ-ONLY"}) | {"url": ""} == \
        {"url": "", "mode": "read-only", "secret": None, "timeout": 0.1}
    assert settings({"PYPTO_REMOTE_CACHE": "redis://h:1/0", "PYPTO_REMOTE_CACHE_MODE": "off"}) is None
    monkeypatch.setenv("PYPTO_REMOTE_CACHE", redis_srv.url)
    s1, s2 = open_store(), open_store()
    assert isinstance(s1._remote, RemoteTier) and s1._remote is s2._remote   # one per process
    monkeypatch.setenv("PYPTO_REMOTE_CACHE_MODE", "sometimes")
    capsys.readouterr()
    assert from_env() is None and from_env() is None
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "'sometimes'" in err, err   # said once


# -- a remote that lies --

def _flip(data: bytes) -> bytes:
    return data[:5] + bytes([data[5] ^ 1]) + data[6:]


@pytest.mark.parametrize("how", ["flip", "truncate", "swap", "rehashed"])
def test_damaged_or_swapped_object_is_refused_rebuilt_and_republished(redis_srv, tmp_path, how):
    a = machine(tmp_path, "a", redis_srv.url)
    manifest = build(a)
    victim, other = manifest["outputs"]["o1"], manifest["outputs"]["o2"]
    r = redis_srv.client()
    good = r.hget(OBJ + victim, "data")
    if how == "flip":            # the bytes changed, the stored SHA-256 did not
        r.hset(OBJ + victim, "data", _flip(good))
    elif how == "truncate":
        r.hset(OBJ + victim, "data", good[:-1])
    elif how == "swap":          # another object, with its own valid SHA-256
        r.hset(OBJ + victim, mapping={"data": r.hget(OBJ + other, "data"),
                                      "sha256": r.hget(OBJ + other, "sha256")})
    else:                        # new bytes and their SHA-256: the name's xxh3 catches it
        bad = _flip(good)
        r.hset(OBJ + victim, mapping={"data": bad, "sha256": hashlib.sha256(bad).hexdigest()})

    b = machine(tmp_path, "b", redis_srv.url)
    assert b.get_action(KEY) is None                  # never used, never stored
    assert b.get_bytes(victim) is None
    assert not object_path(b, victim).exists()
    s = b.stats()
    assert s["remote_rejected"] == 2 and s["remote_hits"] == 0 and s["remote_misses"] == 2
    # B rebuilds it (the same bytes: a deterministic step) and publishes again
    for name in manifest["outputs"]:
        assert b.put_bytes(a.get_bytes(manifest["outputs"][name])) == manifest["outputs"][name]
    b.put_action(KEY, manifest)
    assert r.hget(OBJ + victim, "data") == good
    c = machine(tmp_path, "c", redis_srv.url)
    assert c.get_action(KEY) == manifest and c.get_bytes(victim) == good


def test_unparsable_entry_is_refused(redis_srv, tmp_path):
    redis_srv.client().hset(ACT + KEY, mapping={"body": b"{not json", "hmac": b""})
    b = machine(tmp_path, "b", redis_srv.url)
    assert b.get_action(KEY) is None
    assert b.stats()["remote_rejected"] == 1


def test_signed_entries(redis_srv, tmp_path):
    r = redis_srv.client()
    a = machine(tmp_path, "a", redis_srv.url, secret="team secret")
    manifest = build(a)
    assert r.hget(ACT + KEY, "hmac") and r.hget(OBJ + manifest["outputs"]["o0"], "hmac")
    assert machine(tmp_path, "b", redis_srv.url, secret="team secret").get_action(KEY) == manifest

    wrong = machine(tmp_path, "w", redis_srv.url, secret="guess")
    assert wrong.get_action(KEY) is None and wrong.stats()["remote_rejected"] == 1

    # an entry moved under another key keeps a signature that is not for that key
    r.hset(ACT + KEY2, mapping=r.hgetall(ACT + KEY))
    moved = machine(tmp_path, "m", redis_srv.url, secret="team secret")
    assert moved.get_action(KEY2) is None and moved.stats()["remote_rejected"] == 1

    # written by someone without the secret: ignored by those who have it
    r.flushall()
    build(machine(tmp_path, "u", redis_srv.url), key=KEY2)
    signed = machine(tmp_path, "s", redis_srv.url, secret="team secret")
    assert signed.get_action(KEY2) is None and signed.stats()["remote_rejected"] == 1
    # a signed entry whose objects were rewritten unsigned: the objects are refused
    manifest = build(machine(tmp_path, "a2", redis_srv.url, secret="team secret"))
    d = manifest["outputs"]["o0"]
    r.hset(OBJ + d, "hmac", b"")
    late = machine(tmp_path, "l", redis_srv.url, secret="team secret")
    assert late.get_action(KEY) is None and late.get_bytes(d) is None
    # without a secret, signatures are not looked at
    assert machine(tmp_path, "n", redis_srv.url).get_action(KEY2) is not None


# -- a remote that fails --

def test_redis_down_one_warning_and_a_local_build(tmp_path, capsys):
    port = dead_port()
    s = machine(tmp_path, "s", f"redis://:hunter2@127.0.0.1:{port}/0")
    t = time.perf_counter()
    manifest = build(s)                              # publishing fails: a warning
    assert s.get_action(KEY2) is None                # a miss: the remote is not asked again
    for i in range(20):
        build(s, key=f"{i:032x}")
    assert time.perf_counter() - t < 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1, err
    assert f"127.0.0.1:{port}" in err and "hunter2" not in err and "ConnectionError" in err
    assert s.get_action(KEY) == manifest
    st = s.stats()
    assert (st["remote_errors"], st["remote_hits"], st["remote_bytes_up"]) == (1, 0, 0)


def test_redis_killed_mid_build(own_redis, tmp_path, capsys):
    own_redis.start()
    s = machine(tmp_path, "s", own_redis.url)
    first = build(s, key=KEY)
    own_redis.stop()
    second = build(s, key=KEY2)
    assert s.get_action("ab" * 16) is None
    for i in range(5):
        build(s, key=f"{i:032x}")
    err = capsys.readouterr().err
    assert len(warnings(err)) == 1 and len(err.splitlines()) == 1, err
    fresh = Store(tmp_path / "s")
    assert fresh.get_action(KEY) == first and fresh.get_action(KEY2) == second
    assert fresh.stats()["remote_errors"] == 1


def test_slow_redis_times_out(own_redis, tmp_path, capsys):
    own_redis.start()
    s = machine(tmp_path, "s", own_redis.url)
    manifest = build(s)
    own_redis.pause()                  # accepts connections, answers nothing
    try:
        b = machine(tmp_path, "b", own_redis.url)
        t = time.perf_counter()
        assert b.get_action(KEY) is None
        assert b.get_action(KEY2) is None
        took = time.perf_counter() - t
    finally:
        own_redis.resume()
    assert took < 1.0, took
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "Timeout" in err, err
    build(b)
    assert b.get_action(KEY) is not None and manifest


def test_full_redis_publishes_no_entry(own_redis, tmp_path, capsys):
    own_redis.start("--maxmemory", "2mb", "--maxmemory-policy", "noeviction")
    s = machine(tmp_path, "s", own_redis.url)
    manifest = build(s, n=4, size=1 << 20)
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "maxmemory" in err, err
    r = own_redis.client()
    assert r.exists(ACT + KEY) == 0                  # never an entry without its objects
    assert s.get_action(KEY) == manifest
    assert s.stats()["remote_errors"] == 1


def test_a_bad_url_is_a_warning(tmp_path, capsys):
    s = machine(tmp_path, "s", "http://example.invalid/0")
    build(s)
    assert s.get_action(KEY2) is None
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "remote cache" in err, err


# -- stats --

def test_stats_cli_shows_the_remote(redis_srv, tmp_path, capsys, monkeypatch):
    a = machine(tmp_path, "a", redis_srv.url)
    build(a, size=1000)
    b = machine(tmp_path, "b", redis_srv.url)
    b.get_action(KEY)
    b.get_action(KEY2)
    monkeypatch.setenv("PYPTO_REMOTE_CACHE", redis_srv.url.replace("//", "//:pw@"))
    monkeypatch.setenv("PYPTO_REMOTE_CACHE_MODE", "read-only")
    capsys.readouterr()
    assert cli(["stats", "--root", str(b.root)]) == 0
    out = capsys.readouterr().out
    lines = dict(ln.rsplit("  ", 1) for ln in out.splitlines())
    lines = {k.strip(): v.strip() for k, v in lines.items()}
    assert "pw" not in out
    assert lines["remote"] == f"redis://127.0.0.1:{redis_srv.port}/0 (read-only)"
    assert (lines["hits"], lines["misses"]) == ("0", "2")     # this store's own look-ups
    assert (lines["remote hits"], lines["remote misses"], lines["remote errors"],
            lines["remote refused"]) == ("1", "1", "0", "0")
    down = b.stats()["remote_bytes_down"]
    assert down > 3000 and lines["remote bytes down"].startswith(f"{down} (")
    b.clear()
    assert b.stats()["remote_hits"] == 0


# -- end to end: two machines compile one program --

COMPILE = '''
import sys
sys.path.insert(0, {graph!r})
from graph_helpers import import_file
from pypto import ir
ir.compile(import_file(sys.argv[1]).PROGRAM, output_dir=sys.argv[2], platform="a2a3sim")
'''.format(graph=str(REPO / "tests" / "graph"))


def _compile(prog, out, store, remote, **env):
    full = {k: v for k, v in os.environ.items()
            if not k.startswith("PYPTO_REMOTE_CACHE") and k != "PYPTO_CACHE_DISABLE"}
    full.update(PYPTO_CACHE_DIR=str(store), PYPTO_REMOTE_CACHE=remote, **env)
    full["PYTHONPATH"] = os.pathsep.join([str(REPO), str(REPO / "tests" / "graph")])
    p = subprocess.run([sys.executable, "-c", COMPILE, str(prog), str(out)], env=full,
                       capture_output=True, text=True, timeout=600, cwd=str(out.parent))
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stderr, json.loads((out / "report" / "tasks.json").read_text())


def test_machine_b_runs_no_task(redis_srv, tmp_path):
    sys.path.insert(0, str(REPO / "tests" / "graph"))
    from graph_helpers import artifacts, write_program
    prog = write_program(tmp_path / "prog.py", 2)
    err_a, tasks_a = _compile(prog, tmp_path / "out_a", tmp_path / "store_a", redis_srv.url)
    assert err_a == "" and any(t["status"] == "ran" for t in tasks_a)
    err_b, tasks_b = _compile(prog, tmp_path / "out_b", tmp_path / "store_b", redis_srv.url)
    assert err_b == ""
    assert tasks_b and [t for t in tasks_b if t["status"] == "ran"] == []
    assert artifacts(tmp_path / "out_b") == artifacts(tmp_path / "out_a")
    sb = Store(tmp_path / "store_b").stats()
    assert sb["remote_hits"] >= 1 and sb["remote_bytes_down"] > 0 and sb["remote_rejected"] == 0
    # machine C, its Redis gone: one warning line, every task run, the same artifacts
    err_c, tasks_c = _compile(prog, tmp_path / "out_c", tmp_path / "store_c",
                              f"redis://127.0.0.1:{dead_port()}/0")
    assert len(err_c.splitlines()) == 1 and "remote cache" in err_c, err_c
    assert all(t["status"] == "ran" for t in tasks_c)
    assert artifacts(tmp_path / "out_c") == artifacts(tmp_path / "out_a")


def test_an_emptied_remote_is_filled_again_after_forget_seen(redis_srv, tmp_path):
    """A tier remembers what it saw in the remote and does not send it again; after the
    remote lost it (evicted, flushed), an entry published on that memory would name
    objects the remote lacks: B cannot take it. forget_seen() sends them again."""
    redis_srv.client().flushall()
    a = machine(tmp_path, "a", redis_srv.url)
    manifest = build(a, n=3)
    redis_srv.client().flushall()                    # the remote forgets everything
    entry = {"outputs": manifest["outputs"], "stage": "again"}
    a.put_action(KEY2, entry)                        # on stale memory: the objects stay away
    assert machine(tmp_path, "b", redis_srv.url).get_action(KEY2) is None
    a.remote.forget_seen()
    a.put_action(KEY2, entry)
    assert machine(tmp_path, "c", redis_srv.url).get_action(KEY2) == entry
