"""``RedisGatewayLedger``: the spending budgets of ``backstay gateway`` (its own, and the
``backstay run``s it holds) in Redis, so every gateway on one namespace holds one budget.

Keys under ``{ns:gateway-spend}`` (one slot), bounded however many requests pass:

* ``scope:<scope>``: a hash per live scope (``gateway``, a window's
  ``gateway@day:2026-11-28``, a run's ``run:<id>``): field ``v``, its totals ``[spent usd,
  spent tokens, reserved usd, reserved tokens]`` (exact fractions,
  ``backstay.store._gateway_sums``), and one field per request **in flight**
  (``<request id>`` → its estimate), deleted when the request settles and its charge is
  folded into ``v``. A scope that may be forgotten (a window, a run) expires ``until - now``
  after its last reservation (its window's end and a margin; a run's idle time);
* ``until``: a sorted set of those scopes by ``until``: a reservation that starts a new
  scope first deletes the scopes whose ``until`` has passed (by the gateway's clock, so
  a ledger does not depend on Redis's, and nothing waits for an expiry);
* ``ever``: what every request ever settled spent.

A reservation is one optimistic transaction over its scope's key: it reads ``v``, checks it
with ``backstay.policy.spend.check_spend`` and writes its field and ``v`` only if no other
gateway changed the scope meanwhile, so no two can together reserve past a budget.
"""

from __future__ import annotations

import json
from typing import Any, Final, cast

from redis.client import Pipeline

from backstay.clock import SYSTEM_CLOCK
from backstay.policy.spend import ScopeTotals, Spend, SpendBudget, SpendRefusal, check_spend
from backstay.store import _spend_sums as sums
from backstay.store._gateway_sums import EVER, fold, scope_totals, settled, totals_of
from backstay.store.redis._client import RedisConnection
from backstay.store.redis._tx import transact

__all__ = ["GATEWAY_TAG", "RedisGatewayLedger"]

GATEWAY_TAG: Final = "gateway-spend"
_TOTALS: Final = "v"
# How many scopes a new scope's reservation forgets at most (the rest: at the next one).
_FORGET_AT_ONCE: Final = 100


def _s(raw: bytes | str) -> str:
    return raw.decode() if isinstance(raw, bytes) else raw


class RedisGatewayLedger:
    """The gateway's spending ledger of one Redis namespace; see the module docstring.
    ``SpendRows`` (``backstay.gateway.spending``) over Redis."""

    def __init__(self, conn: RedisConnection, *, tag: str = GATEWAY_TAG) -> None:
        self._conn = conn
        self._tag = tag
        self._until = conn.key(tag, "until")
        self._ever = conn.key(tag, "ever")
        self._prefix = conn.key(tag, "scope", "")

    def scope_key(self, scope: str) -> str:
        """The key of ``scope``'s hash."""
        return self._prefix + scope

    def reserve(
        self,
        request_id: str,
        scope: str,
        budget: SpendBudget,
        estimate: Spend,
        *,
        now: float,
        until: float | None,
    ) -> SpendRefusal | None:
        """Hold ``estimate`` in ``scope`` (``None``), or refuse and hold nothing."""
        key = self.scope_key(scope)

        def decide(pipe: Pipeline, _redis_now: float) -> SpendRefusal | None:
            vector = sums.decode(pipe.hget(key, _TOTALS))
            ended: list[str] = []
            if vector is None:  # a new scope: the ended ones go first
                found = pipe.zrangebyscore(
                    self._until, "-inf", f"({now!r}", start=0, num=_FORGET_AT_ONCE
                )
                ended = [_s(each) for each in cast("list[bytes | str]", found)]
            refusal = check_spend([scope_totals(scope, vector, budget)], estimate)
            pipe.multi()
            if ended:
                pipe.delete(*(self.scope_key(each) for each in ended))
                pipe.zrem(self._until, *ended)
            if refusal is None:
                held = sums.encode(fold(vector, held=estimate))
                row = json.dumps([estimate.usd, estimate.tokens])
                mapping: dict[Any, Any] = {_TOTALS: held, request_id: row}
                pipe.hset(key, mapping=mapping)
                if until is not None:
                    pipe.zadd(self._until, {scope: until})
                    pipe.pexpire(key, max(1, round((until - now) * 1000)))
            return refusal

        return transact(self._conn, [key], decide, clock=SYSTEM_CLOCK)

    def settle(
        self,
        request_id: str,
        charged: Spend,
        *,
        scope: str,
        prompt_tokens: int,
        output_tokens: int,
    ) -> None:
        """Fold ``charged`` into ``scope`` in place of the request's estimate; its field
        goes (nothing when it is not in flight: settled already, or its scope forgotten)."""
        del prompt_tokens, output_tokens
        key = self.scope_key(scope)

        def decide(pipe: Pipeline, _redis_now: float) -> None:
            raw_vector, raw_row = pipe.hmget(key, [_TOTALS, request_id])
            if raw_row is None:
                return
            usd, tokens = json.loads(raw_row)
            vector = settled(sums.decode(raw_vector), charged, Spend(usd=usd, tokens=tokens))
            ever = fold(sums.decode(pipe.get(self._ever)), spent=charged)
            pipe.multi()
            pipe.hdel(key, request_id)
            pipe.hset(key, _TOTALS, sums.encode(vector))
            pipe.set(self._ever, sums.encode(ever))

        transact(self._conn, [key, self._ever], decide, clock=SYSTEM_CLOCK)

    def overview(self) -> tuple[ScopeTotals, ...]:
        """What every request ever settled spent and every live scope holds (``batch``),
        then each live scope by name (no budget)."""

        def read(client: Any) -> list[tuple[str, sums.Vector | None]]:
            keys = [_s(k) for k in client.scan_iter(match=self._prefix + "*", count=500)]
            values = [client.hget(k, _TOTALS) for k in keys]
            found = [
                (k[len(self._prefix) :], sums.decode(v)) for k, v in zip(keys, values, strict=True)
            ]
            return [*found, (EVER, sums.decode(client.get(self._ever)))]

        return totals_of(self._conn.call(read))

    def keys(self) -> list[str]:
        """Every key the ledger keeps."""
        pattern = self._conn.key(self._tag, "*")
        return sorted(_s(k) for k in self._conn.call(lambda c: list(c.scan_iter(match=pattern))))

    def close(self) -> None:
        """The connection belongs to the bundle; nothing to close here."""
