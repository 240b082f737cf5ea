"""``_task_rows.usage_json`` reads a ``Usage`` field by field instead of through
``dataclasses.asdict``: the text kept must be exactly the one ``asdict`` gives, for any
usage (and a subclass with fields of its own goes through ``asdict`` still)."""

from __future__ import annotations

import dataclasses
import random

from backstay.adapters.usage import Usage
from backstay.store import _task_rows as rows


def test_the_text_is_the_one_asdict_gives() -> None:
    draw = random.Random(3)
    for _ in range(2000):
        usage = Usage(
            input_tokens=draw.randrange(10**7),
            output_tokens=draw.randrange(10**5),
            cache_read_tokens=draw.choice([0, draw.randrange(10**6)]),
            cache_write_tokens=draw.choice([0, draw.randrange(10**6)]),
            cost_usd=draw.choice([None, 0.0, draw.random(), draw.randrange(5)]),
            api_calls=draw.randrange(4),
        )
        assert rows.usage_json(usage) == rows.dumps(dataclasses.asdict(usage))
    assert rows.usage_json(Usage()) == rows.dumps(dataclasses.asdict(Usage()))


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class _MoreUsage(Usage):
    region: str = "eu"


def test_a_subclass_keeps_its_own_fields() -> None:
    usage = _MoreUsage(input_tokens=3)
    assert rows.usage_json(usage) == rows.dumps(dataclasses.asdict(usage))
    assert '"region": "eu"' in rows.usage_json(usage)
