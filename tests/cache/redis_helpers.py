"""A real redis-server for the remote tier's tests (and bench/bench_remote.py): started
on a free localhost port with its own folder, stopped by its pid. Never a mock."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

INSTALL_HINT = ("install it: `apt-get install redis-server` (Debian; .ci/run does this), or "
                "point $PYPTO_REDIS_SERVER at a redis-server binary")


def redis_server_binary() -> str | None:
    """$PYPTO_REDIS_SERVER, else redis-server on PATH (or Debian's /usr/bin, /usr/sbin),
    else the one the PyPI package redis-server ships (wheels for CPython <= 3.9 only:
    redis_server.REDIS_SERVER_PATH)."""
    explicit = os.environ.get("PYPTO_REDIS_SERVER")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    found = shutil.which("redis-server") or shutil.which("redis-server", path="/usr/bin:/usr/sbin")
    if found:
        return found
    try:
        import redis_server
    except ImportError:
        return None
    path = getattr(redis_server, "REDIS_SERVER_PATH", None)
    return path if path and os.access(path, os.X_OK) else None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def dead_port() -> int:
    """A localhost port with nothing listening (connects are refused at once)."""
    return free_port()


class RedisServer:
    def __init__(self, folder: Path, binary: str | None = None):
        self.binary = binary or redis_server_binary()
        if self.binary is None:
            raise RuntimeError(f"no redis-server found: {INSTALL_HINT}")
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.proc: subprocess.Popen | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, *extra: str) -> "RedisServer":
        for _ in range(5):            # a port taken between free_port() and the bind: again
            self.port = free_port()
            log = open(self.folder / "redis.log", "ab")
            self.proc = subprocess.Popen(
                [self.binary, "--port", str(self.port), "--bind", "127.0.0.1",
                 "--save", "", "--appendonly", "no", "--dir", str(self.folder),
                 "--protected-mode", "no", "--daemonize", "no", "--loglevel", "warning", *extra],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            log.close()
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and self.proc.poll() is None:
                if self._pong():
                    return self
                time.sleep(0.02)
            self.stop()
        raise RuntimeError(f"redis-server would not start; its log: "
                           f"{(self.folder / 'redis.log').read_text(errors='replace')[-2000:]}")

    def _pong(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def client(self):
        import redis
        return redis.Redis(host="127.0.0.1", port=self.port, db=0, socket_timeout=5)

    def stop(self) -> None:
        """Kill it (SIGKILL: a server that dies under a build, no goodbye)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.proc = None

    def pause(self) -> None:
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self.proc.pid, signal.SIGCONT)
