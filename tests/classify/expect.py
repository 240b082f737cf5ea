"""What the case tables of this folder expect, and how one case is checked.

A case is an input with the ``Failure`` it must classify as. ``assert_classified`` checks a
failure against every expectation it is given; the ``assert_*_case`` helpers run one case
through the classifier and hand all of its expectations to it. The mock-transport handlers at
the end make the real SDKs raise their own exceptions without a network.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Callable, Mapping
from typing import Final

import httpx2
import pytest

from backstay import (
    Failure,
    FailureKind,
    check_output,
    classify,
    classify_output,
    classify_response,
)

# The kinds whose failures may be retried; an agent case's retryable follows from its kind.
RETRYABLE_KINDS: Final = frozenset(
    {"network", "timeout", "rate_limit", "server_error", "output_invalid", "unknown"}
)


class Unchecked:
    """The type of ``UNCHECKED``: an expectation left out, where ``None`` is a value."""

    def __repr__(self) -> str:
        return "UNCHECKED"


UNCHECKED: Final = Unchecked()


def assert_classified(
    failure: Failure,
    *,
    kind: FailureKind | str,
    retryable: bool,
    code: str | None = None,
    status: int | Unchecked | None = UNCHECKED,
    provider: str | Unchecked | None = UNCHECKED,
    retry_after_s: float | None = None,
    resets_at: dt.datetime | None = None,
    agent: str | None = None,
) -> None:
    """``failure`` meets every expectation given.

    ``kind`` and ``retryable`` are always checked; ``code``, ``retry_after_s`` (approximately),
    ``resets_at`` and ``agent`` (``details["agent"]``) when they are not None; ``status`` and
    ``provider`` when they are not ``UNCHECKED``, so that None can be expected of them.
    """
    expected: dict[str, object] = {"kind": FailureKind(kind), "retryable": retryable}
    if code is not None:
        expected["code"] = code
    if not isinstance(status, Unchecked):
        expected["status"] = status
    if not isinstance(provider, Unchecked):
        expected["provider"] = provider
    if retry_after_s is not None:
        expected["retry_after_s"] = pytest.approx(retry_after_s)
    if resets_at is not None:
        expected["resets_at"] = resets_at
    if agent is not None:
        expected["agent"] = agent
    got = {
        name: failure.details.get("agent") if name == "agent" else getattr(failure, name)
        for name in expected
    }
    assert got == expected
    assert failure.retryable is retryable  # a bool, not merely equal to one


# --------------------------------------------------------------------------- agent CLI output


@dataclasses.dataclass(frozen=True)
class AgentCase:
    """What an agent CLI printed, the exit code it ended with, and the failure in it."""

    id: str
    text: str
    kind: str
    code: str | None = None
    exit_code: int | None = 1
    retry_after_s: float | None = None
    resets_at: dt.datetime | None = None


def assert_output_case(case: AgentCase, *, agent: str, now: dt.datetime) -> None:
    """The output classifies as expected, and ``check_output`` finds a failure in it."""
    failure = classify_output(case.text, agent=agent, exit_code=case.exit_code, now=now)
    assert_classified(
        failure,
        kind=case.kind,
        retryable=case.kind in RETRYABLE_KINDS,
        code=case.code,
        retry_after_s=case.retry_after_s,
        resets_at=case.resets_at,
        agent=agent,
    )
    assert check_output(case.text, agent=agent, exit_code=case.exit_code, now=now) is not None


# --------------------------------------------------------------------------- provider responses


@dataclasses.dataclass(frozen=True)
class ResponseCase:
    """An HTTP error response of a provider and the failure it classifies as."""

    id: str
    status: int
    body: object
    kind: FailureKind
    retryable: bool
    code: str | None = None
    headers: Mapping[str, str] = dataclasses.field(default_factory=dict)


def assert_response_case(case: ResponseCase, *, provider: str, now: dt.datetime) -> None:
    """The response classifies as expected, with its own status and ``provider``."""
    failure = classify_response(case.status, case.headers, case.body, provider=provider, now=now)
    assert_classified(
        failure,
        kind=case.kind,
        retryable=case.retryable,
        code=case.code,
        status=case.status,
        provider=provider,
    )


@dataclasses.dataclass(frozen=True)
class WaitCase:
    """A response and the wait, in seconds, it asks for before a retry."""

    id: str
    headers: Mapping[str, str]
    body: object
    expected_s: float
    status: int = 429


def assert_wait_case(case: WaitCase, *, provider: str, now: dt.datetime) -> None:
    """The response's ``retry_after_s`` is the expected wait, to within 10 ms."""
    failure = classify_response(case.status, case.headers, case.body, provider=provider, now=now)
    assert failure.retry_after_s == pytest.approx(case.expected_s, abs=0.01)


@dataclasses.dataclass(frozen=True)
class SdkCase:
    """An exception a real SDK raised (``make`` raises it anew) and the failure it is."""

    id: str
    make: Callable[[], BaseException]
    kind: FailureKind
    retryable: bool
    status: int | None
    code: str | None = None


def assert_sdk_case(
    case: SdkCase,
    *,
    status: int | Unchecked | None,
    provider: str | Unchecked | None,
    now: dt.datetime,
) -> None:
    """The SDK's exception classifies as expected, with the ``status`` and ``provider`` given."""
    assert_classified(
        classify(case.make(), now=now),
        kind=case.kind,
        retryable=case.retryable,
        code=case.code,
        status=status,
        provider=provider,
    )


# --------------------------------------------------------------------------- mock transport

Handler = Callable[[httpx2.Request], httpx2.Response]


def respond(
    status: int, body: object, headers: Mapping[str, str] | None = None, ctype: str = ""
) -> Handler:
    """A handler that answers every request with ``status`` and ``body`` (JSON unless a str)."""
    content = body if isinstance(body, str) else json.dumps(body)
    content_type = ctype or ("application/json" if not isinstance(body, str) else "text/plain")

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(
            status, headers={"content-type": content_type, **(headers or {})}, content=content
        )

    return handler


def raising(exc_type: type[Exception], text: str) -> Handler:
    """A handler that fails every request with the transport exception ``exc_type``."""

    def handler(request: httpx2.Request) -> httpx2.Response:
        raise exc_type(text, request=request)

    return handler
