"""A client that hangs up ends its request in the gateway: no attempt or backoff wait
outlives the client."""

from __future__ import annotations

import time
from pathlib import Path

import anthropic
import pytest
from tests.gateway.helpers import FAST_POLICY, anthropic_client, claude, served

from backstay.fakeprovider import Fault, FaultKind

POLL_S = 0.02
BOUND_S = 20.0


def test_a_client_that_hangs_up_ends_the_requests_retries(tmp_path: Path) -> None:
    # Every attempt fails and every wait is long: only the hang-up can end the request soon.
    policy = FAST_POLICY.derive(initial_delay_s=600.0, max_delay_s=600.0, deadline_s=3600.0)
    with served(tmp_path, Fault(kind=FaultKind.SERVER_ERROR), policy=policy) as s:
        with pytest.raises(anthropic.APITimeoutError):
            claude_with_timeout(s.url, 1.0)
        deadline = time.monotonic() + BOUND_S
        while s.gateway.active_requests and time.monotonic() < deadline:
            time.sleep(POLL_S)
        assert s.gateway.active_requests == 0
        assert s.fake.stats().requests == 1


def claude_with_timeout(url: str, timeout_s: float) -> None:
    with anthropic_client(url, timeout=timeout_s) as client:
        client.messages.create(
            model="claude-sonnet-4-6",
            max_tokens=50,
            messages=[{"role": "user", "content": "hi"}],
        )


def test_no_request_is_active_after_an_answer(tmp_path: Path) -> None:
    with served(tmp_path) as s:
        claude(s.url)
        assert s.gateway.active_requests == 0
