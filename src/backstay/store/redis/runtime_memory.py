"""``RedisMemory``: the agent runtime's session memory in Redis, the twin of
``SQLiteMemory`` for a batch whose store is Redis.

A session is one list, ``{ns:runtime}:mem:<tenant>:<session>`` (tenant and session
quoted into key parts, so no two pairs share a key), of messages as JSON, oldest first.
``summarize`` is one optimistic transaction on that list: read it, replace all but the
last ``keep_last`` messages by their summary; redone if another writer got in between.
"""

from __future__ import annotations

import json
import uuid

import redis
from redis.client import Pipeline

from backstay._checks import check_name
from backstay.clock import SYSTEM_CLOCK
from backstay.runtime.memory import Message, Summarizer, fit_window, plain_summary
from backstay.store.redis._client import RedisConnection
from backstay.store.redis._tx import transact
from backstay.store.redis.runs import TAG, part

__all__ = ["RedisMemory"]


def _encode(message: Message) -> str:
    # The random tag makes each stored message's text unique (see ``store``).
    return json.dumps([message.role, message.content, message.tokens, uuid.uuid4().hex])


def _decode(raw: bytes | str) -> Message:
    role, content, tokens = json.loads(raw)[:3]
    return Message(role=role, content=content, tokens=tokens)


class RedisMemory:
    """A ``MemoryManager`` in the Redis of ``conn``, under its namespace. Thread-safe."""

    def __init__(self, conn: RedisConnection) -> None:
        self._conn = conn

    def _key(self, tenant: str, session: str) -> str:
        return self._conn.key(TAG, "mem", part(tenant), part(session))

    def store(self, tenant: str, session: str, message: Message) -> None:
        """Append ``message``; run again after a lost reply (the connection's ``wait``
        mode), it finds its own text already there and does not append it twice."""
        check_name(tenant, where="tenant")
        key, encoded, conn = self._key(tenant, session), _encode(message), self._conn

        def append(client: redis.Redis) -> None:
            if conn.replaying and client.lpos(key, encoded) is not None:
                return
            client.rpush(key, encoded)

        conn.call(append)

    def history(self, tenant: str, session: str) -> tuple[Message, ...]:
        key = self._key(tenant, session)
        found = self._conn.call(lambda client: client.lrange(key, 0, -1))
        return tuple(_decode(raw) for raw in found)

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
        key = self._key(tenant, session)

        def decide(pipe: Pipeline, now: float) -> Message | None:
            del now
            messages = [_decode(raw) for raw in pipe.lrange(key, 0, -1)]
            if len(messages) <= keep_last:
                pipe.multi()
                return None
            cut = len(messages) - keep_last
            summary = Message(role="summary", content=summarizer(messages[:cut]))
            pipe.multi()
            # The summary takes the place of the oldest message it replaces.
            pipe.ltrim(key, cut, -1)
            pipe.lpush(key, _encode(summary))
            return summary

        return transact(self._conn, [key], decide, clock=SYSTEM_CLOCK)

    def clear(self, tenant: str, session: str) -> None:
        key = self._key(tenant, session)
        self._conn.call(lambda client: client.delete(key))

    def close(self) -> None:
        """The connection belongs to whoever opened it; nothing to close here."""
