"""``usage_data``: a success's recorded usage equals ``dataclasses.asdict`` of it."""

from __future__ import annotations

import dataclasses
import itertools
import json

from backstay.adapters.usage import Usage
from backstay.engine._attempt_done import usage_data


class _Usage(Usage):
    """A subclass (any object other than a ``Usage`` itself takes ``asdict``)."""


def test_the_usage_recorded_equals_asdict_of_it() -> None:
    counts = [0, 1, 7, 123_456_789]
    costs = [None, 0.0, 0.001234, 12.5, 3]
    for tokens, cost, calls in itertools.product(
        itertools.product(counts, repeat=4), costs, [0, 1, 5]
    ):
        usage = Usage(
            input_tokens=tokens[0],
            output_tokens=tokens[1],
            cache_read_tokens=tokens[2],
            cache_write_tokens=tokens[3],
            cost_usd=cost,
            api_calls=calls,
        )
        fast, slow = usage_data(usage), dataclasses.asdict(usage)
        assert fast == slow
        assert list(fast) == list(slow)
        assert json.dumps(fast) == json.dumps(slow)
        assert [type(v) for v in fast.values()] == [type(v) for v in slow.values()]


def test_another_usage_class_goes_through_asdict() -> None:
    usage = _Usage(input_tokens=2, cost_usd=0.5)
    assert usage_data(usage) == dataclasses.asdict(usage)
