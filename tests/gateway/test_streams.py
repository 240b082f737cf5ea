"""Streams through the gateway: retried until the first event is forwarded; buffered
(``buffer_streams``), retried until they completed, then replayed as the same bytes."""

from __future__ import annotations

from pathlib import Path

import openai
import pytest
from tests.gateway.helpers import (
    chat,
    claude,
    claude_stream_bytes,
    gemini,
    responses,
    served,
)

from backstay.fakeprovider import FakeProvider, Fault, FaultKind


def test_a_stream_refused_before_its_first_byte_is_retried(tmp_path: Path) -> None:
    with served(tmp_path, Fault(kind=FaultKind.OVERLOADED, first=1)) as s:
        text = claude(s.url, stream=True)
        stats = s.fake.stats()
    assert text.startswith("Fake reply to:")
    assert stats.requests == 2


def test_a_stream_whose_first_event_is_an_error_is_retried(tmp_path: Path) -> None:
    fault = Fault(kind=FaultKind.STREAM_ERROR, first=1, after_events=0)
    with served(tmp_path, fault) as s:
        text = chat(s.url, stream=True)
        stats = s.fake.stats()
    assert text
    assert stats.requests == 2
    assert stats.by_fault == {"stream_error": 1}


def test_a_connection_reset_before_the_headers_is_retried(tmp_path: Path) -> None:
    with served(tmp_path, Fault(kind=FaultKind.RESET, first=1, after_events=0)) as s:
        text = gemini(s.url, stream=True)
        stats = s.fake.stats()
    assert text
    assert stats.requests == 2


def test_buffered_a_stream_that_dies_mid_way_is_retried(tmp_path: Path) -> None:
    fault = Fault(kind=FaultKind.RESET, first=1, after_events=3)
    with served(tmp_path, fault, buffer_streams=True) as s:
        text = claude(s.url, stream=True)
        stats = s.fake.stats()
    assert text.startswith("Fake reply to:")
    assert stats.requests == 2
    assert stats.by_fault == {"reset": 1}


@pytest.mark.parametrize("call", [claude, chat, responses, gemini])
def test_buffered_an_error_event_mid_stream_is_retried(tmp_path: Path, call: object) -> None:
    fault = Fault(kind=FaultKind.STREAM_ERROR, first=1, after_events=3)
    with served(tmp_path, fault, buffer_streams=True) as s:
        text = call(s.url, stream=True)  # type: ignore[operator]
        stats = s.fake.stats()
    assert text
    assert stats.requests == 2


@pytest.mark.parametrize("buffer_streams", [False, True], ids=["passed-through", "buffered"])
def test_a_clean_stream_reaches_the_client_as_the_same_bytes(
    tmp_path: Path, buffer_streams: bool
) -> None:
    with FakeProvider() as direct:
        expected = claude_stream_bytes(direct.url)
    with served(tmp_path, buffer_streams=buffer_streams) as s:
        got = claude_stream_bytes(s.url)
        stats = s.fake.stats()
    assert got.headers["content-type"].startswith("text/event-stream")
    assert got.content == expected.content
    assert stats.requests == 1


def test_buffered_a_stream_failing_every_time_returns_the_last_one(tmp_path: Path) -> None:
    from tests.gateway.helpers import FAST_POLICY  # noqa: PLC0415

    fault = Fault(kind=FaultKind.STREAM_ERROR, after_events=3)
    policy = FAST_POLICY.derive(max_attempts=2)
    with (
        served(tmp_path, fault, buffer_streams=True, policy=policy) as s,
        pytest.raises((openai.APIError, openai.APIStatusError)),
    ):
        chat(s.url, stream=True)
    assert s.fake.stats().requests == 2


def test_buffered_a_stream_larger_than_the_buffer_is_a_502_and_not_retried(
    tmp_path: Path,
) -> None:
    with served(tmp_path, buffer_streams=True, max_buffer_bytes=64) as s:
        answer = claude_stream_bytes(s.url)
        stats = s.fake.stats()
    assert answer.status_code == 502
    assert "larger than the buffer" in answer.json()["error"]["message"]
    assert stats.requests == 1
