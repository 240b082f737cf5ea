"""``SQLiteMemory``: session memory in a SQLite file (table ``agent_memory``), keyed by
tenant and session like ``InMemoryMemory``. The file is opened like every backstay store
(``open_component``: component ``agent_memory``): one that is not a backstay store is
refused and left unchanged."""

from __future__ import annotations

import os
import threading
from typing import Final

from backstay._checks import check_name
from backstay.runtime.memory import Message, Summarizer, fit_window, plain_summary
from backstay.store.sqlite._adopt import adopt_unversioned
from backstay.store.sqlite._file import SQLiteFile
from backstay.store.sqlite._schema import open_component

__all__ = ["SCHEMA_VERSION", "SQLiteMemory"]

SCHEMA_VERSION: Final = 1
_COMPONENT: Final = "agent_memory"
_DDL: Final = (
    "CREATE TABLE agent_memory (seq INTEGER PRIMARY KEY AUTOINCREMENT, tenant TEXT NOT NULL, "
    "session TEXT NOT NULL, role TEXT NOT NULL, content TEXT NOT NULL, "
    "tokens INTEGER NOT NULL)",
    "CREATE INDEX agent_memory_session ON agent_memory (tenant, session, seq)",
)


class SQLiteMemory(SQLiteFile):
    """A ``MemoryManager`` over the SQLite file at ``path``."""

    def __init__(self, path: str | os.PathLike[str], *, timeout_s: float = 30.0) -> None:
        self.path = os.fspath(path)
        self._lock = threading.Lock()
        adopt_unversioned(
            self.path, component=_COMPONENT, tables=("agent_memory",), timeout_s=timeout_s
        )
        self._conn = open_component(
            self.path,
            component=_COMPONENT,
            version=SCHEMA_VERSION,
            tables=("agent_memory",),
            ddl=_DDL,
            timeout_s=timeout_s,
        )

    def store(self, tenant: str, session: str, message: Message) -> None:
        check_name(tenant, where="tenant")
        with self._lock:
            self._conn.execute(
                "INSERT INTO agent_memory (tenant, session, role, content, tokens) "
                "VALUES (?, ?, ?, ?, ?)",
                (tenant, session, message.role, message.content, message.tokens),
            )

    def _rows(self, tenant: str, session: str) -> list[tuple[int, str, str, int]]:
        return self._conn.execute(
            "SELECT seq, role, content, tokens FROM agent_memory "
            "WHERE tenant = ? AND session = ? ORDER BY seq",
            (tenant, session),
        ).fetchall()

    def history(self, tenant: str, session: str) -> tuple[Message, ...]:
        with self._lock:
            rows = self._rows(tenant, session)
        return tuple(Message(role=r[1], content=r[2], tokens=r[3]) for r in rows)

    def window(self, tenant: str, session: str, budget_tokens: int) -> tuple[Message, ...]:
        return fit_window(self.history(tenant, session), budget_tokens)

    def summarize(
        self,
        tenant: str,
        session: str,
        *,
        keep_last: int = 4,
        summarizer: Summarizer = plain_summary,
    ) -> Message | None:
        """Replace all but the last ``keep_last`` messages by one summary message."""
        with self._lock:
            rows = self._rows(tenant, session)
            if len(rows) <= keep_last:
                return None
            old = rows[: len(rows) - keep_last]
            summary = Message(
                role="summary",
                content=summarizer([Message(role=r[1], content=r[2], tokens=r[3]) for r in old]),
            )
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.execute(
                    "DELETE FROM agent_memory WHERE tenant = ? AND session = ? AND seq <= ?",
                    (tenant, session, old[-1][0]),
                )
                # The summary takes the place of the oldest message it replaces.
                self._conn.execute(
                    "INSERT INTO agent_memory (seq, tenant, session, role, content, tokens) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (old[0][0], tenant, session, summary.role, summary.content, summary.tokens),
                )
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
        return summary

    def clear(self, tenant: str, session: str) -> None:
        with self._lock:
            self._conn.execute(
                "DELETE FROM agent_memory WHERE tenant = ? AND session = ?", (tenant, session)
            )
