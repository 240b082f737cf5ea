"""Recording a large batch a page at a time while its first tasks already run.

``Engine.run(specs, early=EarlyStart(source=...))`` checks every spec first (a bad one is
a ``ConfigError`` before anything is recorded or run), then records the batch in pages of
``PAGE`` tasks (the first of ``FIRST_PAGE``), each page one transaction of the store
(``PagedRegistration``), and starts driving the first page's tasks as soon as it is in,
while the next pages are recorded (in a thread):

* the first page's transaction also writes the batch's ``Registration`` header: how many
  tasks the batch has (``total``), how many of them, in order, are recorded
  (``recorded``), a digest of their operation ids in order, and ``source``: the caller's
  text saying where the batch can be read again (``backstay batch``: its suite file);
* each later page's transaction advances ``recorded``; the last one removes the header;
* a process killed at any point leaves either nothing (before the first page) or the
  first pages recorded with the header saying how far it got. ``Engine.finish_registration``
  given the same specs (the same operation ids in the same order, checked against the
  digest) records the rest from there (``backstay resume`` reads the suite again from
  ``source``); registering a task again keeps its state, so a page recorded twice is
  harmless, and no task runs twice (each runs under its operation's lease and cached
  result).

A reader sees a batch whose header is present as one still being recorded
(``Registration.recorded`` of ``total``), never as a smaller finished batch.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, Protocol, runtime_checkable

from backstay.engine.records import TaskRecord
from backstay.engine.task import TaskSpec
from backstay.engine.taskstore import TaskStore
from backstay.errors import ConfigError

# asyncio is imported where a batch is driven (``PageFeed``), not by the stores, readers
# (``status``, ``health``) included, which import this module for its header.
if TYPE_CHECKING:
    import asyncio

__all__ = [
    "FIRST_PAGE",
    "PAGE",
    "EarlyStart",
    "PageFeed",
    "PagedRegistration",
    "Registration",
    "SpecFamilies",
    "StagedCommit",
    "check_same_batch",
    "checked_families",
    "ids_digest",
]

# Tasks recorded in one transaction (and, on Redis, one script); the first page is
# smaller, so that the first tasks start sooner.
PAGE: Final = 1000
FIRST_PAGE: Final = 100


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class EarlyStart:
    """How ``Engine.run`` records a batch while its first tasks run (module docstring).

    ``source``: kept in the batch's header, for whoever finishes an unfinished recording
    (``backstay batch`` writes where its suite is); ``before_page``: called with the
    positions ``(start, stop)`` of the tasks about to be recorded, before their page is
    (``backstay batch`` makes their workspaces), so that a recorded task has what it
    needs to run."""

    source: str = ""
    before_page: Callable[[int, int], None] | None = None


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Registration:
    """The header of a batch being recorded a page at a time (module docstring)."""

    total: int
    recorded: int
    ids_sha256: str
    source: str
    started_at: _dt.datetime

    def to_json(self) -> str:
        return json.dumps(
            {
                "total": self.total,
                "recorded": self.recorded,
                "ids_sha256": self.ids_sha256,
                "source": self.source,
                "started_at": self.started_at.isoformat(),
            },
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> Registration:
        data: dict[str, Any] = json.loads(text)
        return cls(
            total=int(data["total"]),
            recorded=int(data["recorded"]),
            ids_sha256=str(data["ids_sha256"]),
            source=str(data["source"]),
            started_at=_dt.datetime.fromisoformat(data["started_at"]),
        )


@runtime_checkable
class PagedRegistration(Protocol):
    """A ``TaskStore`` that records a batch a page at a time under a header."""

    def register_page(
        self, specs: Sequence[TaskSpec], *, at: _dt.datetime, header: Registration
    ) -> int:
        """``register`` each of ``specs`` (the batch's tasks ``header.recorded -
        len(specs)`` up to ``header.recorded``), all in one transaction that also keeps
        the header: the first page's (``header.recorded == len(specs)``) replaces any kept
        one, a later page's only moves the kept one's ``recorded`` on, and a page that
        makes ``recorded == total`` removes it. How many were given."""
        ...

    def registration(self) -> Registration | None:
        """The header of a batch not yet wholly recorded; ``None`` when there is none."""
        ...


@runtime_checkable
class StagedCommit(Protocol):
    """A ``TaskStore`` whose ``register_each`` commits a staged batch in windows (Redis):
    ``finish_staged`` registers what a runner killed between two windows left; how many
    tasks (``Engine.resume`` runs it first)."""

    def finish_staged(self) -> int: ...


def ids_digest(order: Sequence[str]) -> str:
    """The digest of a batch's operation ids, in order, as its header keeps it: each id
    followed by a new line (hashed in one piece)."""
    text = "\n".join(order)
    return hashlib.sha256(f"{text}\n".encode() if order else b"").hexdigest()


@runtime_checkable
class SpecFamilies(Protocol):
    """A sequence of specs made of a few families (``SuiteBatch.specs``): the specs of a
    family differ from its first (``representatives()``, one a family, in order) only in
    their ``run`` and ``workspace``, so that checking the first checks them all, and
    ``operation_ids()`` gives every spec's operation id, in order, without making the
    specs. ``Engine.run`` checks such a batch family by family (``checked_families``)."""

    def representatives(self) -> Sequence[TaskSpec]: ...

    def operation_ids(self) -> Sequence[str]: ...


def checked_families(specs: object, check: Callable[[TaskSpec], object]) -> list[str] | None:
    """The operation ids of ``specs`` in order when it is a ``SpecFamilies``, each family's
    first spec given to ``check`` (which raises what is wrong), and an id given twice a
    ``ConfigError`` naming it; ``None`` for other specs (checked one by one)."""
    if not isinstance(specs, SpecFamilies):
        return None
    for spec in specs.representatives():
        check(spec)
    order = list(specs.operation_ids())
    if len(set(order)) != len(order):
        seen: set[str] = set()
        for i, operation_id in enumerate(order):
            if operation_id in seen:
                raise ConfigError(f"{operation_id!r} is given twice", where=f"specs[{i}]")
            seen.add(operation_id)
    return order


class PageFeed:
    """Records ``specs`` (whose operation ids are ``order``) from position ``start`` a
    page at a time, and hands their tasks to workers in order, each once its page is in.

    ``record_next()`` records one page; ``produce()`` records them all while the workers
    run; ``take()`` is a worker's next task with its record, or ``None`` when there is
    none left."""

    def __init__(
        self,
        store: TaskStore,
        specs: Sequence[TaskSpec],
        order: Sequence[str],
        *,
        early: EarlyStart,
        at: _dt.datetime,
        start: int = 0,
        header: Registration | None = None,
    ) -> None:
        if not isinstance(store, PagedRegistration):
            raise TypeError(f"{type(store).__name__} cannot record a batch a page at a time")
        self._store: PagedRegistration = store
        self._tasks: TaskStore = store
        self._specs = specs
        self._order = order
        self._early = early
        self._at = at
        self._header = header or Registration(
            total=len(order),
            recorded=0,
            ids_sha256=ids_digest(order),
            source=early.source,
            started_at=at,
        )
        import asyncio  # noqa: PLC0415 - see the imports

        self.recorded = start
        self._next = start if header is not None else 0
        self._more: asyncio.Event = asyncio.Event()

    @property
    def done(self) -> bool:
        return self.recorded >= len(self._order)

    def record_next(self) -> int:
        """Record the next page (its ``before_page`` first); how many tasks."""
        start = self.recorded
        size = min(PAGE, FIRST_PAGE) if start == 0 else PAGE
        stop = min(start + size, len(self._order))
        if start >= stop:
            return 0
        if self._early.before_page is not None:
            self._early.before_page(start, stop)
        header = dataclasses.replace(self._header, recorded=stop)
        self._store.register_page(self._specs[start:stop], at=self._at, header=header)
        self.recorded = stop
        return stop - start

    def record_all(self) -> int:
        """Record every page left; how many tasks."""
        count = 0
        while not self.done:
            count += self.record_next()
        return count

    async def produce(self) -> None:
        """Record every page left, waking the workers after each. Each page is recorded
        in a thread of its own, so the workers' tasks go on meanwhile (the stores are
        used under their own locks)."""
        import asyncio  # noqa: PLC0415 - see the imports

        while not self.done:
            await asyncio.to_thread(self.record_next)
            self._wake()

    def _wake(self) -> None:
        self._more.set()
        self._more = type(self._more)()

    async def take(self) -> tuple[TaskSpec, TaskRecord] | None:
        """The next task in order and its record (once its page is recorded); ``None``
        when every task was taken."""
        index = self._next
        if index >= len(self._order):
            return None
        self._next += 1
        while index >= self.recorded:
            await self._more.wait()
        spec = self._specs[index]
        record = self._tasks.task(spec.operation_id)
        if record is None:  # pragma: no cover - recorded above, never removed
            raise LookupError(f"task {spec.operation_id!r} was never registered")
        return spec, record


def check_same_batch(header: Registration, order: Sequence[str]) -> None:
    """``ConfigError`` unless ``order`` is the batch ``header`` started to record."""
    if len(order) != header.total or ids_digest(order) != header.ids_sha256:
        raise ConfigError(
            f"gives {len(order)} tasks, not the {header.total} whose recording was cut short "
            f"after {header.recorded} (the batch's tasks changed since it started)",
            where="specs",
        )
