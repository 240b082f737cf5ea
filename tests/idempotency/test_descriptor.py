"""SkillDescriptor: an operation's idempotency, declared, and the guard path it takes."""

from __future__ import annotations

import asyncio

import pytest

from backstay.errors import ConfigError
from backstay.idempotency import IdempotencyGuard, MissingIdempotencyKey, SkillDescriptor
from backstay.idempotency.memory import MemoryOperationStore
from backstay.testing import FakeClock

POST = SkillDescriptor(skill_id="skill.orders_post", idempotent=False)
GET = SkillDescriptor(skill_id="skill.orders_get", idempotent=True)


def _guard() -> IdempotencyGuard:
    clock = FakeClock()
    return IdempotencyGuard(MemoryOperationStore(clock=clock), clock=clock)


class _Counted:
    def __init__(self) -> None:
        self.count = 0

    async def run(self) -> dict[str, object]:
        self.count += 1
        return {"n": self.count}

    def run_sync(self) -> dict[str, object]:
        self.count += 1
        return {"n": self.count}


def test_a_non_idempotent_skill_without_a_key_is_refused_before_it_runs() -> None:
    calls = _Counted()
    with pytest.raises(MissingIdempotencyKey):
        asyncio.run(POST.run(_guard(), None, calls.run))
    with pytest.raises(MissingIdempotencyKey):
        POST.run_sync(_guard(), "", calls.run_sync)
    assert calls.count == 0


def test_a_non_idempotent_skill_with_a_key_runs_once_per_key() -> None:
    guard, calls = _guard(), _Counted()
    first = asyncio.run(POST.run(guard, "order-1", calls.run))
    again = asyncio.run(POST.run(guard, "order-1", calls.run))
    assert (first, again, calls.count) == ({"n": 1}, {"n": 1}, 1)


def test_an_idempotent_skill_with_a_key_is_cached_by_the_guard() -> None:
    guard, calls = _guard(), _Counted()
    assert GET.run_sync(guard, "read-1", calls.run_sync) == {"n": 1}
    assert GET.run_sync(guard, "read-1", calls.run_sync) == {"n": 1}
    assert calls.count == 1


def test_an_idempotent_skill_without_a_key_simply_runs_each_time() -> None:
    guard, calls = _guard(), _Counted()
    assert asyncio.run(GET.run(guard, None, calls.run)) == {"n": 1}
    assert GET.run_sync(guard, None, calls.run_sync) == {"n": 2}


@pytest.mark.parametrize(
    ("fields", "where"),
    [
        ({"skill_id": "", "idempotent": True}, "skill.skill_id"),
        ({"skill_id": "skill.x", "idempotent": "yes"}, "skill.idempotent"),
    ],
)
def test_a_wrong_field_is_named(fields: dict[str, object], where: str) -> None:
    with pytest.raises(ConfigError) as refused:
        SkillDescriptor(**fields)  # type: ignore[arg-type]
    assert refused.value.where == where
