"""BreakerRecord: the stored value and its plain-data form."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from backstay.breaker.record import CLOSED_RECORD, BreakerRecord, CircuitState

_records = st.builds(
    BreakerRecord,
    state=st.sampled_from(CircuitState),
    epoch=st.integers(0, 10**9),
    consecutive=st.integers(0, 1000),
    window_bits=st.integers(0, (1 << 1000) - 1),
    window_calls=st.integers(0, 1000),
    bucket_at=st.integers(0, 10**12),
    buckets=st.lists(st.integers(0, 10**6), min_size=20, max_size=20).map(tuple),
    opened_at=st.none() | st.floats(0, 2e9),
    half_opened_at=st.none() | st.floats(0, 2e9),
    probes=st.integers(0, 100),
    probe_successes=st.integers(0, 100),
    probe_holders=st.lists(st.text(max_size=40), max_size=4).map(tuple),
)


def test_a_fresh_record_is_closed_with_nothing_counted() -> None:
    assert CLOSED_RECORD.state is CircuitState.CLOSED
    assert (CLOSED_RECORD.epoch, CLOSED_RECORD.consecutive, CLOSED_RECORD.window_calls) == (0, 0, 0)


@given(_records)
def test_plain_data_round_trips_through_json(record: BreakerRecord) -> None:
    assert BreakerRecord.from_dict(json.loads(json.dumps(record.to_dict()))) == record


def test_an_unknown_format_is_refused() -> None:
    data = CLOSED_RECORD.to_dict() | {"format": 99}
    with pytest.raises(ValueError, match="format"):
        BreakerRecord.from_dict(data)


def test_a_record_kept_before_probe_holders_existed_reads_as_holding_none() -> None:
    data = CLOSED_RECORD._replace(state=CircuitState.HALF_OPEN, probes=1).to_dict()
    del data["probe_holders"]
    assert BreakerRecord.from_dict(data).probe_holders == ()
