"""Provider-aware classification: any failure → one ``Failure`` of the closed taxonomy.

* ``classify(exc)`` for any exception: Python built-ins, httpx / httpcore, requests /
  urllib3, aiohttp, and the anthropic, openai and google-genai SDKs (none of them needs to
  be installed).
* ``classify_response(status, headers, body, provider=…)`` for a raw HTTP response, or an
  error event inside a 200 stream (``status=200`` and the event's data as ``body``).
* ``classify_output(text, agent=…, exit_code=…)`` for an agent CLI's output.
* ``check_response`` / ``check_output``: the same, but ``None`` when nothing failed, for
  successful responses that may hide a failure (``stop_reason: refusal``, a Gemini
  ``blockReason``, ``is_error: true`` in an agent result).

Every function is pure (``now`` may be injected for reset times) and never raises: on
anything it cannot read it returns ``unknown`` with what it saw, redacted, in ``details``
(an exception whose own code raises ``KeyboardInterrupt`` or ``SystemExit`` when read
included; a real Ctrl-C still propagates: ``_guard``). Its time is bounded whatever the
size of the input: long texts are read as their beginning and end (``_bounds``).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from typing import Any

from backstay.classify import _fast, anthropic, gemini, openai
from backstay.classify._decide import build_failure
from backstay.classify._evidence import error_shape, read_evidence
from backstay.classify._guard import UnreadableObject
from backstay.classify._http import as_int, parse_body, sse_events
from backstay.classify.agents import AGENTS, agent_name
from backstay.classify.agents._common import from_text, unanswered, with_agent
from backstay.classify.exceptions import classify_exception
from backstay.failure import Failure
from backstay.taxonomy import CODES

__all__ = [
    "AGENT_NAMES",
    "check_output",
    "check_response",
    "classify",
    "classify_output",
    "classify_response",
]

AGENT_NAMES: tuple[str, ...] = tuple(AGENTS)

_SUCCESS_CHECKS = (anthropic.success_code, openai.success_code, gemini.success_code)


# A successful stream says it failed in its first events (a prompt blocked) or its last
# (a refusal, a filtered finish): only this much of each end of a long one is read.
_STREAM_END_CHARS = 64 * 1024


def _stream_ends(text: str) -> str:
    if len(text) <= 2 * _STREAM_END_CHARS:
        return text
    # The cut lines fail to parse and are skipped; a line of its own keeps them apart.
    return text[:_STREAM_END_CHARS] + "\n" + text[-_STREAM_END_CHARS:]


def _success_parts(body: object, parsed: object) -> list[object]:
    """The pieces a successful body may hide a failure in: every SSE event or stream chunk
    (of a long SSE stream, those at its two ends)."""
    if isinstance(body, list):
        return body
    if isinstance(body, (bytes, bytearray)):
        raw = bytes(body)
        if len(raw) > 8 * _STREAM_END_CHARS:  # decoded, it is still longer than both ends
            raw = raw[: 4 * _STREAM_END_CHARS] + b"\n" + raw[-4 * _STREAM_END_CHARS :]
        body = raw.decode("utf-8", errors="replace")
    if isinstance(body, str) and body.lstrip().startswith(("event:", "data:")):
        return [data for _event, data in sse_events(_stream_ends(body))]
    if isinstance(body, str) and body.lstrip().startswith("["):
        whole, _text = parse_body(body)
        if isinstance(whole, list):
            return whole
    return [parsed]


def _now(now: _dt.datetime | None) -> _dt.datetime:
    return now if now is not None else _dt.datetime.now(_dt.UTC)


def _internal_error(where: str, exc: Exception, **details: object) -> Failure:
    error = exc.raised if isinstance(exc, UnreadableObject) else type(exc).__name__
    return Failure(
        code="ERR_UNKNOWN",
        message=f"backstay could not read this {where}",
        details={"source": "classifier_error", "error": error, **details},
    )


def classify(
    exc: BaseException, *, provider: str | None = None, now: _dt.datetime | None = None
) -> Failure:
    """Classify any exception. ``provider`` names the provider when the class cannot."""
    try:
        found = _fast.recall_lone(exc, provider)
        if found is not None:
            return found
        found, key = _fast.lookup(exc, provider)
        if found is not None:
            return found
        if key is None:
            return classify_exception(exc, provider=provider, now=_now(now))
        secrets = _fast.current_secrets()
        failure = classify_exception(exc, provider=provider, now=_now(now))
    except Exception as err:  # classification must never raise
        return _internal_error("exception", err, exception=type(exc).__name__)
    _fast.remember(key, failure, secrets)
    return failure


def check_response(
    status: int | None,
    headers: object = None,
    body: object = None,
    *,
    provider: str | None = None,
    now: _dt.datetime | None = None,
) -> Failure | None:
    """The failure a response shows, or ``None`` for a clean success."""
    try:
        if (
            type(status) is int
            and status < 400
            and isinstance(body, Mapping)
            and (provider is None or type(provider) is str)
            and _clean_success(body)
        ):
            return None
    except Exception as err:
        return _internal_error("response", err, status=status)
    return _check_whole(status, headers, body, provider=provider, now=now)


def _clean_success(body: Mapping[str, Any]) -> bool:
    """Whether a response below 400 with the parsed ``body`` shows no failure: what
    ``_check_whole`` decides from the body's error shape and the success checks alone
    (each success reply of an API attempt is checked: the rest of its reading, about
    40 us of searching the body's text, only describes a failure). ``False``: read it
    whole."""
    has_error_shape, parsed = error_shape(body)
    if has_error_shape:
        return False
    parts = _success_parts(body, parsed)
    return not any(check(part) for check in _SUCCESS_CHECKS for part in parts)


def _check_whole(
    status: int | None,
    headers: object,
    body: object,
    *,
    provider: str | None,
    now: _dt.datetime | None,
) -> Failure | None:
    """``check_response`` with the response read whole."""
    try:
        given: object = status  # untyped callers pass what they read
        if isinstance(given, str):
            status = as_int(given)  # "429" read from a log or a header; other text: none
        ev = read_evidence(status, headers, body, provider=provider)
        if not ev.has_error_shape and (status is None or status < 400):
            parts = _success_parts(body, ev.parsed)
            for check in _SUCCESS_CHECKS:
                code = next(filter(None, map(check, parts)), None)
                if code:
                    return Failure(
                        code=code,
                        message=CODES[code].description,
                        provider=provider or ev.family,
                        status=status,
                        details={
                            "source": "success_body",
                            "evidence": "a successful body that reports a failure",
                        },
                    )
            if status is not None:
                return None
        return build_failure(ev, now=_now(now))
    except Exception as err:
        return _internal_error("response", err, status=status)


def classify_response(
    status: int | None,
    headers: object = None,
    body: object = None,
    *,
    provider: str | None = None,
    now: _dt.datetime | None = None,
) -> Failure:
    """Classify a raw HTTP response (``headers`` any mapping, ``body`` str / bytes / JSON).

    A response that shows no failure at all classifies as ``ERR_UNKNOWN`` with
    ``details.source == "no_failure_found"``; use ``check_response`` to tell.
    """
    found = check_response(status, headers, body, provider=provider, now=now)
    if found is not None:
        return found
    return Failure(
        code="ERR_UNKNOWN",
        message="the response shows no failure",
        provider=provider,
        status=status,
        details={"source": "no_failure_found"},
    )


def check_output(
    text: str | bytes,
    *,
    agent: str,
    exit_code: int | None = None,
    now: _dt.datetime | None = None,
) -> Failure | None:
    """The failure an agent CLI's output shows, or ``None`` when the run succeeded."""
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8", errors="replace")
        name = agent_name(agent)
        if name is None:
            return _generic_output(text, agent, exit_code, _now(now))
        found = AGENTS[name](text, exit_code, _now(now))
        if found is None and exit_code in (0, None):
            found = unanswered(text, name, None, exit_code=exit_code, now=_now(now))
    except Exception as err:
        return _internal_error("agent output", err, agent=agent, exit_code=exit_code)
    if found is None and exit_code is not None and exit_code != 0:
        return _exit_failure(text, name, exit_code)
    return found


def _exit_failure(text: str, agent: str, exit_code: int) -> Failure:
    code = {124: "ERR_TIMEOUT", 130: "ERR_CANCELLED", -2: "ERR_CANCELLED"}.get(
        exit_code, "ERR_AGENT_FAILED"
    )
    message = text.strip()[-1000:] or f"{agent} exited with code {exit_code}"
    return with_agent(
        Failure(
            code=code,
            message=message,
            details={"source": "exit_code", "evidence": f"exit code {exit_code}"},
        ),
        agent,
        exit_code,
    )


def _generic_output(
    text: str, agent: str, exit_code: int | None, now: _dt.datetime
) -> Failure | None:
    if exit_code == 0:
        return None
    return from_text(text.strip()[-4000:], agent=agent, family=None, now=now, exit_code=exit_code)


def classify_output(
    text: str | bytes,
    *,
    agent: str,
    exit_code: int | None = None,
    now: _dt.datetime | None = None,
) -> Failure:
    """Classify an agent CLI's output: ``agent`` is one of ``AGENT_NAMES``; ``text`` its
    JSON result, JSONL stream or plain text. Output that shows no failure classifies as
    ``ERR_UNKNOWN`` with ``details.source == "no_failure_found"``; use ``check_output``."""
    found = check_output(text, agent=agent, exit_code=exit_code, now=now)
    if found is not None:
        return found
    return with_agent(
        Failure(
            code="ERR_UNKNOWN",
            message="the output shows no failure",
            details={"source": "no_failure_found"},
        ),
        agent,
        exit_code,
    )
