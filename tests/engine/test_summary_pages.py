"""``summarize_pages``: a batch's summary added up a page of tasks at a time is the one
``summarize`` gives from every record at once (and ``Engine.summary`` uses it on a store
with an index)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.store.summary_support import fill

from backstay.engine.summary import summarize, summarize_pages
from backstay.engine.task_index import TaskFilter
from backstay.store.sqlite.tasks import SQLiteTaskStore


@pytest.mark.parametrize("size", [1, 3, 1000])
def test_pages_add_up_to_the_whole_summary(tmp_path: Path, size: int) -> None:
    with SQLiteTaskStore(tmp_path / "state") as store:
        fill(store, tmp_path)
        whole = summarize(store.tasks(), store.attempts(), store.escalations())
        paged = summarize_pages(
            store.pages(TaskFilter(), size=size), store.attempts_of, store.escalations()
        )
    assert paged == whole
    assert paged.open_escalations == 2
    assert [r.task_id for r in paged.tasks] == [r.task_id for r in whole.tasks]
