"""Single Redis commands on connections of their own, without the client's layers.

A command through ``redis.Redis`` passes its connection pool (a lock, a readiness poll of
the socket on every checkout), its retry wrapper, its observability hooks and its
response callbacks: about 35 µs of CPU on this machine, three times the round trip's own
(pack, ``sendall``, ``recv``, parse). The hottest calls of a gateway on a Redis store —
a breaker's read, a limiter's script — take this path instead: ``LeanCommands`` keeps its
own idle connections (made from the client's pool settings, so the URL's host, database,
password, TLS and timeouts all hold) and runs one command on one of them.

An idle connection is polled before it is used again (as redis-py's pool does): one the
server closed meanwhile connects again rather than failing its command. A connection
whose command did not end in a whole reply (a timeout, a reset, a signal) is
disconnected before anyone uses it again, so no later command can read a stale reply;
an error reply (``ResponseError``) is a whole reply and leaves it usable. Thread-safe:
taking and giving back an idle connection is a ``list.pop`` / ``append``. After a fork the
parent's connections are left to the parent.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import threading
from typing import Any

import redis
from redis.exceptions import NoScriptError, ResponseError

__all__ = ["LeanCommands", "LeanScript"]


@dataclasses.dataclass(frozen=True, slots=True)
class LeanScript:
    """A Lua script run by its SHA1 (loaded again when the server has forgotten it)."""

    source: str
    sha: str = ""

    def __post_init__(self) -> None:
        if not self.sha:
            digest = hashlib.sha1(self.source.encode(), usedforsecurity=False).hexdigest()
            object.__setattr__(self, "sha", digest)


def _drop_if_stale(conn: Any) -> None:
    """Disconnect an idle connection that has anything to read (the server closed it:
    a restart, its idle ``timeout``, ``CLIENT KILL``): it connects again at its command,
    as redis-py's pool does, instead of failing it."""
    if conn._sock is None:  # not connected: it connects at its command
        return
    try:
        stale = conn.can_read()
    except redis.exceptions.ConnectionError:
        stale = True
    if stale:
        conn.disconnect()


class LeanCommands:
    """One command at a time on connections made from ``pool``'s settings."""

    __slots__ = ("_idle", "_lock", "_made", "_pid", "_pool")

    def __init__(self, pool: redis.ConnectionPool) -> None:
        self._pool = pool
        self._idle: list[Any] = []
        self._made: list[Any] = []
        self._lock = threading.Lock()
        self._pid = os.getpid()

    def execute(self, *args: str | bytes) -> Any:
        """The reply to one command ``args``, as the connection parsed it (bytes, not
        decoded). ``ResponseError`` for an error reply; redis-py's ``ConnectionError`` /
        ``TimeoutError`` when the server does not answer."""
        if self._pid != os.getpid():
            self._forked()
        idle = self._idle
        conn: Any
        try:
            conn = idle.pop()
        except IndexError:
            conn = self._make()
        else:
            _drop_if_stale(conn)
        try:
            conn.send_packed_command([b"".join(conn.pack_command(*args))], check_health=False)
            answer = conn.read_response()
        except ResponseError:
            idle.append(conn)
            raise
        except BaseException:
            conn.disconnect()  # whatever it was sent, no one reads its reply now
            idle.append(conn)  # connects again at its next command
            raise
        idle.append(conn)
        return answer

    def evalsha(self, script: LeanScript, keys: list[str], args: list[str | bytes]) -> Any:
        """``EVALSHA`` of ``script`` over ``keys`` and ``args``; ``SCRIPT LOAD`` first when
        the server answers that it does not know it (a restart, ``SCRIPT FLUSH``)."""
        try:
            return self.execute("EVALSHA", script.sha, str(len(keys)), *keys, *args)
        except NoScriptError:
            self.execute("SCRIPT", "LOAD", script.source)
            return self.execute("EVALSHA", script.sha, str(len(keys)), *keys, *args)

    def _make(self) -> Any:
        # redis-py's connections are untyped: held as ``Any``.
        pool: Any = self._pool
        conn = pool.connection_class(**pool.connection_kwargs)
        with self._lock:
            self._made.append(conn)
        return conn

    def _forked(self) -> None:
        with self._lock:
            self._idle, self._made, self._pid = [], [], os.getpid()

    def close(self) -> None:
        """Disconnect every connection made here (a later command connects again)."""
        with self._lock:
            made = list(self._made)
        for conn in made:
            conn.disconnect()
