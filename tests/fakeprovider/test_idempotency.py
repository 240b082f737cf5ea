"""``Idempotency-Key``: a repeated key gets the remembered answer without any work."""

from __future__ import annotations

import httpx
import openai
import pytest
from tests.fakeprovider import sdk
from tests.fakeprovider.sdk import PROMPT

from backstay.fakeprovider import FakeProvider, Fault, FaultKind, Scenario


def _create(client: openai.OpenAI, key: str | None) -> str:
    headers = {"Idempotency-Key": key} if key else {}
    done = client.chat.completions.create(
        model=sdk.OPENAI_MODEL,
        messages=[{"role": "user", "content": PROMPT}],
        extra_headers=headers,
    )
    return done.id


def test_a_repeated_key_replays_the_same_answer_without_counting_usage() -> None:
    with FakeProvider() as fake, sdk.openai_client(fake.url) as client:
        first = _create(client, "op-1")
        once = fake.stats()
        second = _create(client, "op-1")
        stats = fake.stats()
    assert first == second
    assert stats.replays == 1
    assert stats.requests == 2
    assert (stats.input_tokens, stats.output_tokens) == (once.input_tokens, once.output_tokens)


def test_a_replay_rolls_no_fault() -> None:
    """The fault's second request is the third one: the replay in between is not counted."""
    fault = Fault(kind=FaultKind.SERVER_ERROR, requests=(2,))
    with FakeProvider(Scenario(faults=(fault,))) as fake, sdk.openai_client(fake.url) as client:
        _create(client, "op-1")
        _create(client, "op-1")
        with pytest.raises(openai.InternalServerError):
            _create(client, None)
        stats = fake.stats()
    assert (stats.replays, stats.by_fault) == (1, {"server_error": 1})


def test_a_key_whose_answer_failed_is_worked_on_again() -> None:
    fault = Fault(kind=FaultKind.RATE_LIMIT, first=1)
    with FakeProvider(Scenario(faults=(fault,))) as fake, sdk.openai_client(fake.url) as client:
        with pytest.raises(openai.RateLimitError):
            _create(client, "op-1")
        _create(client, "op-1")
        stats = fake.stats()
    assert stats.replays == 0
    assert stats.by_status == {429: 1, 200: 1}


def test_a_client_that_timed_out_on_a_slow_answer_gets_it_on_retry() -> None:
    """The slow answer was worked out before the wait: the retry with the same key is a
    replay, so the work (and its tokens) happened once."""
    fault = Fault(kind=FaultKind.SLOW, first=1, delay_s=5.0)
    with FakeProvider(Scenario(faults=(fault,))) as fake:
        with (
            sdk.openai_client(fake.url, timeout_s=0.3) as impatient,
            pytest.raises(openai.APITimeoutError),
        ):
            _create(impatient, "op-1")
        with sdk.openai_client(fake.url) as client:
            _create(client, "op-1")
        stats = fake.stats()
    assert stats.replays == 1
    assert stats.by_fault == {"slow": 1}


def test_keys_are_per_endpoint() -> None:
    with FakeProvider() as fake, sdk.openai_client(fake.url) as client:
        _create(client, "op-1")
        client.responses.create(
            model=sdk.OPENAI_MODEL, input=PROMPT, extra_headers={"Idempotency-Key": "op-1"}
        )
        assert fake.stats().replays == 0


def test_a_replayed_stream_is_the_same_stream() -> None:
    body = {
        "model": sdk.ANTHROPIC_MODEL,
        "max_tokens": 64,
        "stream": True,
        "messages": [{"role": "user", "content": PROMPT}],
    }
    with FakeProvider() as fake, httpx.Client(base_url=fake.url, timeout=10) as client:
        headers = {"Idempotency-Key": "stream-1", "anthropic-version": "2023-06-01"}
        first = client.post("/v1/messages", json=body, headers=headers)
        second = client.post("/v1/messages", json=body, headers=headers)
        assert fake.stats().replays == 1
    assert first.status_code == second.status_code == 200
    assert first.text == second.text
    assert "event: message_stop" in first.text


def test_a_key_reused_with_another_body_is_refused_and_does_no_work() -> None:
    with FakeProvider() as fake, sdk.openai_client(fake.url) as client:
        _create(client, "op-1")
        once = fake.stats()
        with pytest.raises(openai.BadRequestError, match="different request body"):
            client.chat.completions.create(
                model=sdk.OPENAI_MODEL,
                messages=[{"role": "user", "content": "another question"}],
                extra_headers={"Idempotency-Key": "op-1"},
            )
        again = _create(client, "op-1")  # the first body still gets its answer
        stats = fake.stats()
    assert again
    assert stats.by_status == {200: 2, 400: 1}
    assert stats.replays == 1
    assert (stats.input_tokens, stats.output_tokens) == (once.input_tokens, once.output_tokens)


def test_the_same_key_on_another_path_is_another_request() -> None:
    with FakeProvider() as fake, sdk.openai_client(fake.url) as client:
        _create(client, "op-1")
        client.responses.create(
            model=sdk.OPENAI_MODEL,
            input="another question",
            extra_headers={"Idempotency-Key": "op-1"},
        )
        stats = fake.stats()
    assert stats.by_status == {200: 2}
    assert stats.replays == 0
