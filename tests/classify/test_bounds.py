"""Classification reads a bounded part of any text (``backstay.classify._bounds``).

A message or body of any size is classified as its first ``SCAN_HEAD_CHARS`` and last
``SCAN_TAIL_CHARS`` characters are: the patterns never run over more than
``MAX_SCANNED_CHARS``, so a proxy's 4 MB HTML page costs what a short message costs.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import anthropic
import httpx
import openai
import pytest

from backstay import AGENT_NAMES, Failure, classify, classify_output, classify_response
from backstay.classify import _fast, _patterns
from backstay.classify._bounds import (
    MAX_SCANNED_CHARS,
    SCAN_HEAD_CHARS,
    SCAN_TAIL_CHARS,
    bounded,
)

_NOW = dt.datetime(2025, 6, 1, 12, 0, tzinfo=dt.UTC)
_HUGE = 10_000_000


def _same_decision(big: Failure, small: Failure) -> None:
    assert (big.code, big.retry_after_s, big.resets_at, big.provider, big.status) == (
        small.code,
        small.retry_after_s,
        small.resets_at,
        small.provider,
        small.status,
    )
    assert big.details.get("source") == small.details.get("source")
    assert big.details.get("evidence") == small.details.get("evidence")


@pytest.fixture
def scanned(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The length of every text longer than their cache takes that the message and
    transport patterns run over."""
    lengths: list[int] = []
    match, transport = _patterns._match, _patterns._transport

    def counting_match(texts: tuple[str, ...], status: Any, family: Any) -> Any:
        lengths.extend(map(len, texts))
        return match(texts, status, family)

    def counting_transport(text: str) -> Any:
        lengths.append(len(text))
        return transport(text)

    monkeypatch.setattr(_patterns, "_match", counting_match)
    monkeypatch.setattr(_patterns, "_transport", counting_transport)
    return lengths


def test_a_short_text_is_read_whole() -> None:
    text = "y" * MAX_SCANNED_CHARS
    assert bounded(text) is text


def test_a_long_text_is_read_as_its_head_and_tail_and_reading_it_again_changes_nothing() -> None:
    text = "h" * SCAN_HEAD_CHARS + "m" * 50_000 + "t" * SCAN_TAIL_CHARS
    kept = bounded(text)
    assert len(kept) <= MAX_SCANNED_CHARS
    assert kept.startswith("h" * SCAN_HEAD_CHARS)
    assert kept.endswith("t" * SCAN_TAIL_CHARS)
    assert "m" not in kept
    assert bounded(kept) == kept


def test_a_cut_falls_between_words_when_one_is_near() -> None:
    word = "sk-ant-api03-" + "k" * 40  # straddles the end of the head
    text = "a " * ((SCAN_HEAD_CHARS - 20) // 2) + word + " " + "z" * 100_000
    kept = bounded(text)
    assert "sk-ant" not in kept  # left out whole, never cut in two
    assert kept.split("\n")[0].endswith("a ")


@pytest.mark.parametrize(
    "prefix",
    [
        "Overloaded",
        "Rate limit reached for gpt-4o. Please try again in 7s.",
        "Error code: 429 - {'error': {'message': 'slow down', 'type': 'rate_limit_error'}}",
        "prompt is too long: 210000 tokens > 200000 maximum",
        "Your credit balance is too low to access the Anthropic API.",
        "nothing recognisable here",
    ],
)
@pytest.mark.parametrize("cls", [Exception, ConnectionError, RuntimeError])
def test_a_huge_message_classifies_as_its_beginning_does(
    prefix: str, cls: type[Exception], scanned: list[int]
) -> None:
    big = classify(cls(prefix + " " + "x" * _HUGE), now=_NOW)
    small = classify(cls(prefix), now=_NOW)
    _same_decision(big, small)
    assert scanned
    assert max(scanned, default=0) <= MAX_SCANNED_CHARS


def test_a_wait_at_the_end_of_a_huge_transcript_is_still_read() -> None:
    class APIStatusError(Exception):
        status_code = 429

    text = "attempt failed\n" * 700_000 + "Rate limit reached. Please try again in 7s."
    failure = classify(APIStatusError(text), now=_NOW)
    assert failure.code == "ERR_HTTP_429_RATE_LIMITED"
    assert failure.retry_after_s == 7.0


def _html_page(size: int) -> str:
    row = "<tr><td class='cell'>upstream {unavailable}</td><td>retry later</td></tr>\n"
    page = "<html><head><style>td { color: red }</style></head><body><table>\n"
    return page + row * (size // len(row)) + "</table></body></html>"


def _sdk_error(client: Any, status: int, text: str) -> Exception:
    request = httpx.Request("POST", "http://127.0.0.1:9/v1/messages")
    response = httpx.Response(
        status, headers={"content-type": "text/html"}, text=text, request=request
    )
    error: Exception = client._make_status_error_from_response(response)
    return error


@pytest.mark.parametrize(
    "client",
    [
        anthropic.Anthropic(api_key="sk-ant-test-0000000000000000", base_url="http://127.0.0.1:9"),
        openai.OpenAI(api_key="sk-test-0000000000000000", base_url="http://127.0.0.1:9/v1"),
    ],
    ids=["anthropic", "openai"],
)
def test_an_sdk_error_carrying_a_4_mb_html_page_is_classified_from_a_bounded_read(
    client: Any, scanned: list[int]
) -> None:
    page = _html_page(4_000_000)
    big = classify(_sdk_error(client, 502, page), now=_NOW)
    small = classify(_sdk_error(client, 502, page[:2000]), now=_NOW)
    assert big.code == small.code == "ERR_HTTP_502_BAD_GATEWAY"
    assert max(scanned, default=0) <= MAX_SCANNED_CHARS
    assert len(big.message) <= 4001


def test_a_huge_response_body_is_classified_from_a_bounded_read(scanned: list[int]) -> None:
    failure = classify_response(503, {"retry-after": "12"}, _html_page(4_000_000), now=_NOW)
    assert failure.code == "ERR_HTTP_503_UNAVAILABLE"
    assert failure.retry_after_s == 12.0
    assert max(scanned, default=0) <= MAX_SCANNED_CHARS


@pytest.mark.parametrize("agent", [*AGENT_NAMES, "not-a-known-agent"])
def test_huge_agent_output_is_classified_from_a_bounded_read(
    agent: str, scanned: list[int]
) -> None:
    text = "log line\n" * 1_000_000 + "Error: connect ECONNREFUSED 127.0.0.1:443\n"
    failure = classify_output(text, agent=agent, exit_code=1, now=_NOW)
    assert failure.code == "ERR_CONNECTION_REFUSED"
    assert max(scanned, default=0) <= MAX_SCANNED_CHARS


def test_the_fast_path_keeps_no_key_holding_a_huge_text() -> None:
    text = "[Errno 104] Connection reset by peer " + "y" * _HUGE
    first = classify(ConnectionError(text))
    again = classify(ConnectionError(text))
    assert first.code == again.code == "ERR_CONNECTION_RESET"
    for key in _fast._remembered:
        assert not _fast._holds_long_text(key)
    assert all(text not in table[2] for table in _fast._lone.values())
