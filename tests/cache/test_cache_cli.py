import os
import subprocess
import sys
from pathlib import Path

import pytest

from pypto_cache import Store
from pypto_cache.__main__ import parse_size

REPO = Path(__file__).resolve().parents[2]
KEY = "ab" * 16


def run_cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "pypto_cache", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=60)


def filled(root: Path) -> Store:
    store = Store(root)
    for i in range(3):
        d = store.put_bytes(bytes([i]) * 1000)
        store.put_action(f"{i:02x}" * 16, {"outputs": {"o": d}})
    store.get_action("00" * 16)
    store.get_action(KEY)
    return store


def field(out: str, name: str) -> str:
    return next(line.split()[1] for line in out.splitlines() if line.split()[0] == name)


def test_stats(tmp_path):
    store = filled(tmp_path / "s")
    r = run_cli("stats", "--root", str(tmp_path / "s"))
    assert r.returncode == 0, r.stderr
    assert field(r.stdout, "root") == str(store.root)
    assert int(field(r.stdout, "objects")) == 3
    assert int(field(r.stdout, "actions")) == 3
    assert int(field(r.stdout, "bytes")) == store.stats()["bytes"]
    assert (int(field(r.stdout, "hits")), int(field(r.stdout, "misses"))) == (1, 1)


def test_root_from_env(tmp_path):
    filled(tmp_path / "envroot")
    env = dict(os.environ, PYPTO_CACHE_DIR=str(tmp_path / "envroot"))
    r = run_cli("--root", str(tmp_path / "envroot"), "stats", env=env)  # --root before too
    r2 = run_cli("stats", env=env)
    assert r.returncode == r2.returncode == 0
    assert int(field(r2.stdout, "objects")) == 3 and r.stdout == r2.stdout


def test_gc_max_size(tmp_path):
    store = filled(tmp_path / "s")
    r = run_cli("gc", "--max-size", "1K", "--grace", "0", "--root", str(tmp_path / "s"))
    assert r.returncode == 0, r.stderr
    assert "removed" in r.stdout
    assert store.stats()["bytes"] <= 1024
    assert store.stats()["actions"] <= 1


def test_gc_default_grace_keeps_fresh_entries(tmp_path):
    store = filled(tmp_path / "s")
    r = run_cli("gc", "--max-size", "0", "--root", str(tmp_path / "s"))
    assert r.returncode == 0, r.stderr
    assert store.stats()["actions"] == 3


def test_clear(tmp_path):
    store = filled(tmp_path / "s")
    r = run_cli("clear", "--root", str(tmp_path / "s"))
    assert r.returncode == 0, r.stderr
    s = store.stats()
    assert (s["objects"], s["actions"], s["hits"]) == (0, 0, 0)


def test_bad_size_is_a_usage_error(tmp_path):
    r = run_cli("gc", "--max-size", "lots", "--root", str(tmp_path))
    assert r.returncode == 2 and "not a size" in r.stderr


@pytest.mark.parametrize("text,expected", [
    ("4096", 4096), ("1024K", 1 << 20), ("500M", 500 << 20), ("2G", 2 << 30),
    ("2g", 2 << 30), ("1.5G", 3 << 29), ("10MB", 10 << 20), ("3KiB", 3072), ("0", 0),
])
def test_parse_size(text, expected):
    assert parse_size(text) == expected
