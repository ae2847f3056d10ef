import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from pypto_cache import MemoryStore, Store  # noqa: E402
from pypto_cache.remote import forget_tiers  # noqa: E402
from redis_helpers import INSTALL_HINT, RedisServer, redis_server_binary  # noqa: E402


@pytest.fixture(autouse=True)
def _no_real_cache(tmp_path, monkeypatch):
    """Whatever a test does, the user's real cache stays out of reach."""
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "env-cache"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("PYPTO_CACHE_DISABLE", raising=False)
    for name in ("PYPTO_REMOTE_CACHE", "PYPTO_REMOTE_CACHE_MODE", "PYPTO_REMOTE_CACHE_SECRET",
                 "PYPTO_REMOTE_CACHE_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(params=["disk", "memory"])
def store(request, tmp_path):
    return Store(tmp_path / "store") if request.param == "disk" else MemoryStore()


@pytest.fixture
def disk(tmp_path):
    return Store(tmp_path / "store")


# -- a real redis-server for the remote tier (never a mock) --

@pytest.fixture(scope="session")
def redis_binary():
    found = redis_server_binary()
    if found is None:      # a failure, not a skip: CI must run these tests
        pytest.fail(f"the remote cache tests need redis-server: {INSTALL_HINT}", pytrace=False)
    return found


@pytest.fixture(scope="session")
def _session_redis(redis_binary, tmp_path_factory):
    srv = RedisServer(tmp_path_factory.mktemp("redis"), redis_binary).start()
    yield srv
    srv.stop()


@pytest.fixture
def redis_srv(_session_redis):
    """This worker's server, emptied, with no tier of an earlier test remembered."""
    if _session_redis.proc is None or _session_redis.proc.poll() is not None:
        _session_redis.start()
    _session_redis.client().flushall()
    forget_tiers()
    yield _session_redis
    forget_tiers()


@pytest.fixture
def own_redis(redis_binary, tmp_path):
    """A server of this test's own, to kill, pause or fill; .start() it."""
    srv = RedisServer(tmp_path / "own-redis", redis_binary)
    forget_tiers()
    yield srv
    if srv.proc is not None and srv.proc.poll() is None:
        srv.resume()
    srv.stop()
    forget_tiers()
