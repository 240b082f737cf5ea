"""SQLiteBreakerStore parses a record's text once: loads of an unchanged record give the
same record, a change (by this store or another process) is read as the new record, and
a stored text that is no record is refused at every load."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from backstay.breaker.record import BreakerRecord
from backstay.breaker.state import Step
from backstay.store.sqlite.breakers import SQLiteBreakerStore

NAME = "anthropic/claude"


def _count_up(record: BreakerRecord) -> Step:
    return Step(record=record._replace(consecutive=record.consecutive + 1))


def test_an_unchanged_record_is_parsed_once(tmp_path: Path) -> None:
    with SQLiteBreakerStore(tmp_path / "b.sqlite") as store:
        store.transition(NAME, _count_up)
        first, second = store.load(NAME), store.load(NAME)
        assert first is not None
        assert first is second
        assert first.consecutive == 1


def test_a_change_elsewhere_is_read_as_the_new_record(tmp_path: Path) -> None:
    path = tmp_path / "b.sqlite"
    with SQLiteBreakerStore(path) as store, SQLiteBreakerStore(path) as elsewhere:
        store.transition(NAME, _count_up)
        before = store.load(NAME)
        elsewhere.transition(NAME, _count_up)
        after = store.load(NAME)
        assert before is not None
        assert after is not None
        assert (before.consecutive, after.consecutive) == (1, 2)
        assert store.transition(NAME, _count_up).record.consecutive == 3


def test_a_text_that_is_no_record_is_refused_at_every_load(tmp_path: Path) -> None:
    path = tmp_path / "b.sqlite"
    with SQLiteBreakerStore(path) as store:
        store.transition(NAME, _count_up)
        other = sqlite3.connect(path, isolation_level=None)
        try:
            other.execute(
                "UPDATE backstay_breakers SET record = ? WHERE name = ?", ('{"format": 99}', NAME)
            )
        finally:
            other.close()
        for _ in range(2):
            with pytest.raises(ValueError, match="unknown breaker record format"):
                store.load(NAME)
