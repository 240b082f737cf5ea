"""Where a batch's state lives (``backstay.store.open`` opens the stores there).

A *store location* is given as text: a filesystem path (the state directory, whose
``state.sqlite`` holds everything: the default) or a Redis URL (``redis://host:port/db``,
``rediss://`` for TLS), shared by every process and machine that names it. It is chosen,
first given wins, by:

1. the ``--store URL`` flag of the commands that open state;
2. the ``BACKSTAY_STORE`` environment variable;
3. ``store:`` in ``backstay.yaml``;
4. the state directory (SQLite).

A Redis URL may carry ``?namespace=NAME`` (default ``backstay``): every key of the batch
starts with it, so several batches can share one Redis; and ``cluster=yes`` when it names
a node of a Redis Cluster (database 0 only). The state directory still holds
each machine's own run artefacts (``runs/``, ``events.jsonl``) when the store is Redis.

``open_stores(location, state_dir=…)`` opens a ``StoreBundle``: the task store, the
operation store (leases, result cache), the breaker store, the fallback store, the spend
ledger and the circuit log; and it makes the engine's rate limiters and retry budget
(``rate_limiter_registry``, ``retry_budget``): in this process for SQLite, in Redis, shared
by every process and machine, for Redis. SQLite needs nothing beyond the standard library;
Redis needs the ``redis`` extra (``pip install 'backstay[redis]'``), imported only when a Redis
location is opened, and a ``ConfigError`` naming the extra when it is missing.

``store_unavailable`` says what a batch does when a shared store stops answering:
``stop`` (the default: record nothing more, say so, exit) or ``wait`` (retry the store
until it answers again, saying so while it waits). Neither ever switches to local state.
"""

from __future__ import annotations

import dataclasses
import enum
import os
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from backstay.errors import ConfigError, StoreUnreachable

__all__ = [
    "DEFAULT_NAMESPACE",
    "REDIS_EXTRA_HINT",
    "STORE_ENV_VAR",
    "StoreKind",
    "StoreLocation",
    "StoreUnavailable",
    "StoreUnreachable",
    "parse_store",
    "resolve_store",
]

STORE_ENV_VAR: Final = "BACKSTAY_STORE"
DEFAULT_NAMESPACE: Final = "backstay"
REDIS_EXTRA_HINT: Final = "pip install 'backstay[redis]'"
_REDIS_SCHEMES: Final = frozenset({"redis", "rediss"})
_CLUSTER_VALUES: Final = {"yes": True, "no": False}


class StoreKind(enum.StrEnum):
    """The two kinds of store."""

    SQLITE = "sqlite"
    REDIS = "redis"


class StoreUnavailable(enum.StrEnum):
    """What a batch does when its shared store stops answering."""

    STOP = "stop"
    WAIT = "wait"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class StoreLocation:
    """A parsed store location. ``url`` is the Redis URL as given (it may hold a
    password: show ``display`` instead); ``path`` the state directory of a SQLite one."""

    kind: StoreKind
    url: str | None = None
    path: Path | None = None
    namespace: str = DEFAULT_NAMESPACE
    unavailable: StoreUnavailable = StoreUnavailable.STOP
    # ``?cluster=yes``: the URL names one node of a Redis Cluster (any node will do).
    cluster: bool = False

    @property
    def shared(self) -> bool:
        """True when other machines can open the same state."""
        return self.kind is StoreKind.REDIS

    @property
    def text(self) -> str:
        """The location as text that ``parse_store`` reads back (to hand to a worker)."""
        return self.url if self.kind is StoreKind.REDIS and self.url else str(self.path)

    @property
    def display(self) -> str:
        """The location with any password replaced by ``***`` (for messages and reports)."""
        if self.kind is StoreKind.SQLITE:
            return str(self.path)
        parts = urllib.parse.urlsplit(self.url or "")
        netloc = parts.hostname or ""
        if parts.port is not None:
            netloc = f"{netloc}:{parts.port}"
        if parts.password is not None or parts.username:
            user = parts.username or ""
            netloc = f"{user}:***@{netloc}" if parts.password is not None else f"{user}@{netloc}"
        return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))

    @classmethod
    def sqlite(cls, state_dir: str | os.PathLike[str]) -> StoreLocation:
        return cls(kind=StoreKind.SQLITE, path=Path(state_dir))


def _cluster(query: str, where: str) -> bool:
    values = urllib.parse.parse_qs(query, keep_blank_values=True)
    found = values.get("cluster", ["no"])[-1]
    if found not in _CLUSTER_VALUES:
        raise ConfigError(f"cluster must be yes or no, got {found!r}", where=where)
    return _CLUSTER_VALUES[found]


def _namespace(query: str, where: str) -> str:
    values = urllib.parse.parse_qs(query, keep_blank_values=True)
    unknown = sorted(set(values) - {"namespace", "cluster"})
    if unknown:
        raise ConfigError(
            f"unknown store URL parameter {unknown[0]!r}; known: namespace, cluster", where=where
        )
    found = values.get("namespace", [DEFAULT_NAMESPACE])
    name = found[-1]
    if not name or any(c in name for c in "{}: \t\n"):
        raise ConfigError(
            f"namespace must be a non-empty name without braces, colons or spaces, got {name!r}",
            where=where,
        )
    return name


def parse_store(
    text: str | os.PathLike[str],
    *,
    where: str = "--store",
    unavailable: StoreUnavailable | str = StoreUnavailable.STOP,
) -> StoreLocation:
    """``text`` as a location: a ``redis://``/``rediss://`` URL, or a state directory path.
    Any other ``scheme://`` is a ``ConfigError`` naming ``where``."""
    try:
        mode = StoreUnavailable(unavailable)
    except ValueError:
        raise ConfigError(
            f"must be stop or wait, got {unavailable!r}", where="store_unavailable"
        ) from None
    if isinstance(text, os.PathLike):
        return dataclasses.replace(StoreLocation.sqlite(text), unavailable=mode)
    if not isinstance(text, str) or not text.strip():
        raise ConfigError(f"must be a Redis URL or a directory, got {text!r}", where=where)
    if "://" not in text:
        return dataclasses.replace(StoreLocation.sqlite(text), unavailable=mode)
    parts = urllib.parse.urlsplit(text)
    if parts.scheme not in _REDIS_SCHEMES:
        raise ConfigError(
            f"unknown store scheme {parts.scheme!r}: use redis://host:port/db, rediss://… "
            "or a state directory path",
            where=where,
        )
    try:
        port = parts.port
    except ValueError:
        raise ConfigError("the port of the Redis URL is not a number", where=where) from None
    if not parts.hostname:
        raise ConfigError("the Redis URL names no host (redis://host:port/db)", where=where)
    db = parts.path.strip("/")
    if db and not db.isdigit():
        raise ConfigError(f"the database must be a number, got {db!r}", where=where)
    del port
    cluster = _cluster(parts.query, where)
    if cluster and db not in {"", "0"}:
        raise ConfigError(f"a Redis Cluster has database 0 only, got {db!r}", where=where)
    return StoreLocation(
        kind=StoreKind.REDIS,
        url=text,
        namespace=_namespace(parts.query, where),
        unavailable=mode,
        cluster=cluster,
    )


def resolve_store(
    flag: str | None,
    *,
    state_dir: str | os.PathLike[str],
    config: str | None = None,
    environ: Mapping[str, str] | None = None,
    unavailable: StoreUnavailable | str = StoreUnavailable.STOP,
) -> StoreLocation:
    """The location in force: ``flag``, else ``$BACKSTAY_STORE``, else ``config`` (the
    ``store:`` of ``backstay.yaml``), else SQLite in ``state_dir``."""
    env = os.environ if environ is None else environ
    if flag:
        return parse_store(flag, where="--store", unavailable=unavailable)
    if env.get(STORE_ENV_VAR):
        return parse_store(env[STORE_ENV_VAR], where=STORE_ENV_VAR, unavailable=unavailable)
    if config:
        return parse_store(config, where="backstay.yaml: store", unavailable=unavailable)
    return parse_store(os.fspath(state_dir), unavailable=unavailable)
