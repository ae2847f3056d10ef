"""A team-wide tier of the store on Redis: the local store first, then this, then build.

    PYPTO_REMOTE_CACHE          redis://[:password@]host:port/db (rediss:// for TLS)
    PYPTO_REMOTE_CACHE_MODE     read-write (default) | read-only | off
    PYPTO_REMOTE_CACHE_SECRET   sign what is written (HMAC-SHA256); take only what is signed
    PYPTO_REMOTE_CACHE_TIMEOUT  seconds for a connect and for each read (default 0.25)

What Redis holds (raw bytes and JSON; nothing is ever pickled or unpickled):

    pypto:v2:obj:<xxh3-128 digest>   a hash  data    the object's bytes
                                             sha256  hex SHA-256 of data
                                             hmac    hex HMAC-SHA256(secret, "obj" 0 digest 0 sha256),
                                                     "" when written without a secret
    pypto:v2:act:<key>               a hash  body    the action's manifest, canonical JSON
                                             hmac    hex HMAC-SHA256(secret, "act" 0 key 0 body), or ""

Trust. An object is used only when SHA-256 of its bytes equals its `sha256` field and
the xxh3-128 of its bytes equals the digest in its name (a swapped or damaged object
fails one or the other); with a secret, only when its `hmac` is valid too, which ties
the name to the SHA-256, so a writer without the secret cannot forge either. With a
secret an action entry is used only when its `hmac` over its key and body is valid (an
entry moved under another key fails). Without a secret the checks catch damage, not
a malicious writer: set one where the server is shared beyond the people you trust.

Failure. The remote is an accelerator, never a dependency: connects and reads time out
after PYPTO_REMOTE_CACHE_TIMEOUT, nothing is retried, and the first error of any kind
(refused, unreachable, slow, out of memory, a read-only replica, a bad URL) prints one
line on stderr and switches the tier off for the rest of the process. A tier is shared
by every Store of the process that names the same server, so that line is printed once.

Layering: `redis` is imported at the first remote look-up, not when this module is,
so a process whose local store answers everything never imports it.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import sys
import threading
from urllib.parse import urlsplit, urlunsplit

from .names import CacheError, check_manifest, digest_bytes

PREFIX = "pypto:v2:"
OBJ = PREFIX + "obj:"
ACT = PREFIX + "act:"
MODES = ("read-write", "read-only", "off")
DEFAULT_TIMEOUT = 0.25
BATCH = 256            # commands per pipeline round trip


def redact(url: str) -> str:
    """The URL without its password (and user): what a warning may print."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        netloc = host + (f":{parts.port}" if parts.port else "")
        return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
    except ValueError:
        return "<unparsable URL>"


def settings(environ=None) -> dict | None:
    """The remote's configuration from the environment; None when there is none or
    its mode is off. Reads no file and imports nothing."""
    env = os.environ if environ is None else environ
    url = env.get("PYPTO_REMOTE_CACHE", "").strip()
    if not url:
        return None
    mode = (env.get("PYPTO_REMOTE_CACHE_MODE") or "read-write").strip().lower()
    problem = None
    if mode not in MODES:
        problem, mode = f"PYPTO_REMOTE_CACHE_MODE={mode!r} is not one of {', '.join(MODES)}", "off"
    if mode == "off":
        if problem:
            _say_once(f"pypto: warning: {problem}; the remote cache stays off")
        return None
    timeout = DEFAULT_TIMEOUT
    raw = env.get("PYPTO_REMOTE_CACHE_TIMEOUT", "").strip()
    if raw:
        try:
            timeout = float(raw)
            if not 0 < timeout < 3600:
                raise ValueError
        except ValueError:
            _say_once(f"pypto: warning: PYPTO_REMOTE_CACHE_TIMEOUT={raw!r} is not a number "
                      f"of seconds; using {DEFAULT_TIMEOUT}")
            timeout = DEFAULT_TIMEOUT
    return {"url": url, "mode": mode, "secret": env.get("PYPTO_REMOTE_CACHE_SECRET") or None,
            "timeout": timeout}


_tiers: dict[tuple, "RemoteTier"] = {}
_tiers_guard = threading.Lock()


def from_env(environ=None) -> "RemoteTier | None":
    """This process's tier for the configured server (one per configuration, shared by
    every Store: one connection pool, one warning, one off switch)."""
    cfg = settings(environ)
    if cfg is None:
        return None
    ident = (cfg["url"], cfg["mode"], cfg["secret"], cfg["timeout"])
    with _tiers_guard:
        tier = _tiers.get(ident)
        if tier is None:
            tier = _tiers[ident] = RemoteTier(**cfg)
        return tier


def forget_tiers() -> None:
    """Drop the process's tiers (tests: a tier switched off stays off otherwise)."""
    with _tiers_guard:
        _tiers.clear()


def _describe(exc: BaseException) -> str:
    """One short printable line: the error's type and message, without the command a
    pipeline's error quotes (it holds an object's bytes) or the URL's password."""
    text = str(exc)
    if "of pipeline caused error:" in text:
        text = text.split("of pipeline caused error:", 1)[1]
    text = " ".join(text.split())
    text = "".join(c if c.isprintable() else "?" for c in text)[:160]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


_said: set[str] = set()


def _say_once(line: str) -> None:
    """A warning about the configuration: once per process, however often it is read."""
    with _tiers_guard:
        if line in _said:
            return
        _said.add(line)
    _say(line)


def _say(line: str) -> None:
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


class RemoteTier:
    def __init__(self, url: str, mode: str = "read-write", secret: str | bytes | None = None,
                 timeout: float = DEFAULT_TIMEOUT):
        if mode not in ("read-write", "read-only"):
            raise CacheError(f"remote mode must be read-write or read-only, not {mode!r}")
        self.url = url
        self.shown = redact(url)
        self.mode = mode
        self.writable = mode == "read-write"
        self.timeout = timeout
        self._secret = secret.encode() if isinstance(secret, str) else secret
        self._client = None
        self._mu = threading.Lock()
        self.disabled = False
        # objects this process saw in the remote (fetched or published): not asked again
        self._present: set[str] = set()
        # objects the remote served damaged or unsigned: overwritten when published
        self._bad: set[str] = set()

    def __repr__(self) -> str:
        return f"RemoteTier({self.shown!r}, {self.mode})"

    # -- the connection and its one failure --
    def _redis(self):
        if self._client is None:
            with self._mu:
                if self._client is None:
                    import redis
                    from redis.backoff import NoBackoff
                    from redis.retry import Retry
                    self._client = redis.Redis.from_url(
                        self.url, socket_connect_timeout=self.timeout,
                        socket_timeout=self.timeout, retry=Retry(NoBackoff(), 0),
                        retry_on_timeout=False, health_check_interval=0)
        return self._client

    def _call(self, doing: str, counters, fn):
        """fn(client)'s result, or None once the remote failed (then it is off)."""
        if self.disabled:
            return None
        try:
            return fn(self._redis())
        except Exception as exc:       # any failure of the remote, never the build's
            self._fail(doing, exc, counters)
            return None

    def _fail(self, doing: str, exc: BaseException, counters) -> None:
        with self._mu:
            first = not self.disabled
            self.disabled = True
        if first:
            counters.bump("remote_errors")
            _say(f"pypto: warning: remote cache {self.shown}: {doing} failed ({_describe(exc)}); "
                 f"building locally, and not asking it again in this process")

    # -- signatures --
    def _mac(self, kind: bytes, name: str, payload: bytes) -> str:
        if self._secret is None:
            return ""
        return hmac.new(self._secret, b"\0".join((kind, name.encode(), payload)),
                        hashlib.sha256).hexdigest()

    def _signed(self, mac, kind: bytes, name: str, payload: bytes) -> bool:
        if self._secret is None:
            return True
        if not mac:
            return False
        return hmac.compare_digest(bytes(mac), self._mac(kind, name, payload).encode())

    # -- reads --
    def fetch_action(self, key: str, counters) -> dict | None:
        """The manifest the remote holds under `key`, if it is intact (and signed when
        a secret is set); None for a miss, a refused entry or a failed remote."""
        got = self._call("reading an action entry", counters,
                         lambda r: r.hmget(ACT + key, "body", "hmac"))
        if got is None:
            return None
        body, mac = got
        if body is None:
            counters.bump("remote_misses")
            return None
        counters.bump("remote_bytes_down", len(body))
        manifest = None
        if self._signed(mac, b"act", key, body):
            try:
                manifest = check_manifest(json.loads(body))
            except (ValueError, CacheError):
                pass
        if manifest is None:
            counters.bump("remote_rejected")
            counters.bump("remote_misses")
        return manifest

    def fetch_objects(self, digests: list[str], counters) -> dict[str, bytes] | None:
        """{digest: bytes} of those objects the remote holds intact (a few round trips
        for any number); None if the remote failed."""
        def run(r):
            rows = []
            for i in range(0, len(digests), BATCH):
                p = r.pipeline(transaction=False)
                for d in digests[i:i + BATCH]:
                    p.hmget(OBJ + d, "data", "sha256", "hmac")
                rows += p.execute()
            return rows
        rows = self._call("fetching objects", counters, run) if digests else []
        if rows is None:
            return None
        found = {}
        for d, (data, sha, mac) in zip(digests, rows):
            if data is None:
                continue
            counters.bump("remote_bytes_down", len(data))
            if self._intact(d, data, sha, mac):
                found[d] = data
                self._present.add(d)
            else:
                counters.bump("remote_rejected")
                self._bad.add(d)
        return found

    def _intact(self, digest: str, data: bytes, sha, mac) -> bool:
        if not sha:
            return False
        sha = bytes(sha)
        return (hmac.compare_digest(hashlib.sha256(data).hexdigest().encode(), sha)
                and digest_bytes(data) == digest
                and self._signed(mac, b"obj", digest, sha))

    # -- writes --
    def _send_objects(self, r, unknown: list[str], read) -> int | None:
        """Put those of `unknown` the remote lacks (or served damaged); the bytes sent,
        or None if one could not be read here."""
        there = []
        for i in range(0, len(unknown), BATCH):
            p = r.pipeline(transaction=False)
            for d in unknown[i:i + BATCH]:
                p.exists(OBJ + d)
            there += p.execute()
        send = [d for d, e in zip(unknown, there) if not e or d in self._bad]
        up, p, queued = 0, r.pipeline(transaction=False), 0
        for d in send:
            data = read(d)
            if data is None:
                return None
            sha = hashlib.sha256(data).hexdigest()
            p.hset(OBJ + d, mapping={"data": data, "sha256": sha,
                                     "hmac": self._mac(b"obj", d, sha.encode())})
            up += len(data)
            queued += 1
            if queued >= BATCH or up >= 32 << 20:
                p.execute()
                p, queued = r.pipeline(transaction=False), 0
        if queued:
            p.execute()
        return up

    def publish_objects(self, digests, read, counters, recheck: bool = False) -> bool:
        """Make sure the remote holds these objects (their bytes from `read`), without
        an entry naming them: what another machine is asked to read. False if it
        could not (read-only, remote off or failed, an object unreadable here).
        `recheck`: ask the remote about those this process saw there too (it may have
        evicted them since): for objects another machine is about to be told to read."""
        if not self.writable or self.disabled:
            return False
        unknown = sorted(d for d in set(digests)
                         if recheck or d not in self._present or d in self._bad)
        up = self._call("publishing objects", counters,
                        lambda r: self._send_objects(r, unknown, read)) if unknown else 0
        if up is None:
            return False
        counters.bump("remote_bytes_up", up)
        self._present.update(unknown)
        self._bad.difference_update(unknown)
        return True

    def forget_seen(self) -> None:
        """Forget which objects this process saw in the remote: it may have evicted (or
        been emptied of) them since, and what is published next must not name them
        unchecked."""
        self._present.clear()

    def publish(self, key: str, body: bytes, digests, read, counters) -> bool:
        """Put the objects of `digests` the remote lacks (their bytes from `read`),
        then the entry `body` under `key`: the entry is never there before its objects.
        False if nothing was published (read-only, remote off or failed, or an object
        could not be read here)."""
        if not self.publish_objects(digests, read, counters):
            return False
        done = self._call("publishing an action entry", counters, lambda r: r.hset(
            ACT + key, mapping={"body": body, "hmac": self._mac(b"act", key, body)}))
        if done is None:
            return False
        counters.bump("remote_bytes_up", len(body))
        return True
