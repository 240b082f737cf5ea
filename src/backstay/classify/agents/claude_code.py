"""Claude Code (``claude -p --output-format json|stream-json``).

Evidence, strongest first: the final ``result`` object's ``subtype`` (``error_max_turns``,
``error_max_budget_usd``), ``terminal_reason`` (``prompt_too_long``), ``api_error_status``,
then the ``result`` text, which carries provider messages and Claude's own phrases
("Credit balance is too low", "usage limit reached|<epoch>", "resets 4:50am (Europe/Rome)").
A result may say ``subtype: success`` and ``is_error: true`` at once: ``is_error`` wins.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from typing import Any

from backstay.classify._http import as_int
from backstay.classify._waits import parse_datetime
from backstay.classify.agents._common import (
    coded,
    from_text,
    json_objects,
    no_error_event,
)
from backstay.failure import Failure
from backstay.taxonomy import FailureKind

AGENT = "claude-code"
_FAMILY = "anthropic"

_SUBTYPES = {
    "error_max_turns": "ERR_LIMIT_MAX_TURNS",
    "error_max_budget_usd": "ERR_LIMIT_BUDGET",
    "error_max_structured_output_retries": "ERR_OUTPUT_INVALID",
}
_TERMINAL = {
    "prompt_too_long": "ERR_LLM_CONTEXT_LENGTH",
    "max_turns": "ERR_LIMIT_MAX_TURNS",
}


def _result_text(result: dict[str, Any]) -> str:
    parts: list[str] = []
    text = result.get("result")
    if isinstance(text, str):
        parts.append(text)
    errors = result.get("errors")
    if isinstance(errors, list):
        parts.extend(str(e) for e in errors if e)
    return " · ".join(parts)


def _answered_in_stream(objects: list[dict[str, Any]]) -> bool:
    """Whether a stream-json transcript holds assistant text the caller can use."""
    for obj in objects:
        message = obj.get("message") if obj.get("type") == "assistant" else None
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else ():
            if isinstance(block, dict) and str(block.get("text") or "").strip():
                return True
    return False


def _empty_result(
    result: dict[str, Any], objects: list[dict[str, Any]], exit_code: int | None
) -> Failure | None:
    """A success whose ``result`` is empty gave the caller nothing (anthropics/claude-code
    #38706): a failure, unless the answer is in ``structured_output`` or in the assistant
    messages of a stream-json transcript."""
    text = result.get("result")
    if not isinstance(text, str) or text.strip() or result.get("structured_output") is not None:
        return None
    if _answered_in_stream(objects):
        return None
    return coded(
        "ERR_AGENT_FAILED",
        "claude-code reported success with an empty result",
        agent=AGENT,
        family=_FAMILY,
        exit_code=exit_code,
        why='result = "" with subtype success, and no answer elsewhere',
    )


# What a rejected subscription window explains: a result that names no cause of its own,
# or a throttle, overload or quota the window accounts for.
_WINDOW_EXPLAINS = frozenset(
    {FailureKind.UNKNOWN, FailureKind.RATE_LIMIT, FailureKind.SERVER_ERROR}
)


def _behind_window(found: Failure, objects: list[dict[str, Any]], now: _dt.datetime) -> Failure:
    """The failure a ``rate_limit_event`` with ``status: rejected`` earlier in the run shows,
    when the final result hides it; its structured ``resetsAt`` outranks any reset in prose."""
    window = next(
        (
            o["rate_limit_info"]
            for o in reversed(objects)
            if o.get("type") == "rate_limit_event"
            and isinstance(o.get("rate_limit_info"), dict)
            and o["rate_limit_info"].get("status") == "rejected"
        ),
        None,
    )
    if window is None:
        return found
    epoch = as_int(window.get("resetsAt"))
    resets_at = None if epoch is None else parse_datetime(str(epoch))
    if found.kind in _WINDOW_EXPLAINS:
        kind_of_window = str(window.get("rateLimitType") or "subscription")
        message = found.message if found.kind is not FailureKind.UNKNOWN else ""
        found = coded(
            "ERR_LLM_USAGE_LIMIT",
            message or f"the {kind_of_window} usage window was rejected",
            agent=AGENT,
            family=_FAMILY,
            exit_code=as_int(found.details.get("exit_code")),
            why=f"an earlier rate_limit_event: {kind_of_window} status = rejected",
        )
    if resets_at is None or found.kind is not FailureKind.QUOTA_EXHAUSTED:
        return found
    wait = max(0.0, (resets_at - now).total_seconds())
    details = {**found.details, "wait_from": "rate_limit_event resetsAt"}
    return dataclasses.replace(found, resets_at=resets_at, retry_after_s=wait, details=details)


def check(text: str, exit_code: int | None, now: _dt.datetime) -> Failure | None:
    objects = json_objects(text)
    # The final result; harness logs sometimes keep it without its "type".
    results = [
        o for o in objects if o.get("type") == "result" or ("type" not in o and "subtype" in o)
    ]
    retries = [o for o in objects if o.get("type") == "system" and o.get("subtype") == "api_retry"]
    if results:
        result = results[-1]
        subtype = str(result.get("subtype") or "")
        refused = "refusal" in subtype or bool(result.get("api_refusal_category"))
        is_error = result.get("is_error") is True or subtype.startswith("error") or refused
        if not is_error:
            return _empty_result(result, objects, exit_code)
        message = _result_text(result) or str(result.get("api_refusal_explanation") or subtype)
        code = _SUBTYPES.get(subtype) or _TERMINAL.get(str(result.get("terminal_reason") or ""))
        if code is None and refused:
            code = "ERR_LLM_REFUSAL"  # model_refusal_no_fallback and its kin
        if code:
            why = f"result subtype = {subtype}" if code == _SUBTYPES.get(subtype) else ""
            why = why or ("a refusal" if refused else "result terminal_reason")
            return coded(code, message, agent=AGENT, family=_FAMILY, exit_code=exit_code, why=why)
        status = as_int(result.get("api_error_status"))
        if status is None and retries:
            status = as_int(retries[-1].get("error_status"))
        found = from_text(
            message, agent=AGENT, family=_FAMILY, status=status, now=now, exit_code=exit_code
        )
        return _behind_window(found, objects, now)
    if exit_code == 0:
        return None  # plain-text mode exits 1 on every error: exit 0 is an answer
    if objects:
        return no_error_event(AGENT, text, _FAMILY, exit_code=exit_code, now=now)
    message = text.strip()[-4000:]
    return from_text(
        message,
        agent=AGENT,
        family=_FAMILY,
        now=now,
        exit_code=exit_code,
    )
