"""``RedisRetryBudget``: a retry budget shared by every process and machine.

The same rule as ``backstay.policy.budget.RetryBudget`` — over a sliding window of
``window_s`` seconds, retries ≤ ratio · calls + min_retries_per_s · window_s — counted in
one Redis hash (``{ns:budget:<name>}``) of ``buckets`` ring slots, each decision one Lua
script timed by Redis ``TIME``: when a provider falls over, the retries of the whole fleet
together cannot multiply its load by more than ``1 + ratio``. The hash expires after two
windows without traffic.
"""

from __future__ import annotations

from typing import Any, Final

from backstay._checks import check_name
from backstay.policy.budget import BudgetSettings
from backstay.store.redis import _scripts
from backstay.store.redis._client import RedisConnection

__all__ = ["RedisRetryBudget"]

_EPSILON: Final = 1e-9


class RedisRetryBudget:
    """A ``RetryBudgetLike`` whose window lives in Redis."""

    def __init__(
        self, name: str, conn: RedisConnection, *, settings: BudgetSettings | None = None
    ) -> None:
        check_name(name, where="RedisRetryBudget.name")
        self.name = name
        self.settings = settings or BudgetSettings()
        self._conn = conn
        self.key = conn.key(f"budget:{name}")
        self._call = conn.client.register_script(_scripts.BUDGET_CALL)
        self._retry = conn.client.register_script(_scripts.BUDGET_RETRY)

    def _run(self, script: Any, *extra: str) -> Any:
        s = self.settings
        args = [repr(s.window_s), str(s.buckets), *extra]
        return self._conn.call(lambda client: script(keys=[self.key], args=args, client=client))

    def record_call(self) -> None:
        """One logical call started (its first attempt), fleet-wide."""
        self._run(self._call)

    def try_spend_retry(self) -> bool:
        """Take one retry from the shared budget; ``False`` when it is spent."""
        s = self.settings
        return bool(int(self._run(self._retry, repr(s.ratio), repr(s.floor), repr(_EPSILON))))
