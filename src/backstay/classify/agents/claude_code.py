"""Claude Code (``claude -p --output-format json|stream-json``).

Evidence, strongest first: the final ``result`` object's ``subtype`` (``error_max_turns``,
``error_max_budget_usd``), ``terminal_reason`` (``prompt_too_long``), ``api_error_status``,
then the ``result`` text, which carries provider messages and Claude's own phrases
("Credit balance is too low", "usage limit reached|<epoch>", "resets 4:50am (Europe/Rome)").
A result may say ``subtype: success`` and ``is_error: true`` at once: ``is_error`` wins.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

from backstay.classify._http import as_int
from backstay.classify.agents._common import (
    coded,
    from_text,
    json_objects,
    no_error_event,
)
from backstay.failure import Failure

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
            return None
        message = _result_text(result) or str(result.get("api_refusal_explanation") or subtype)
        code = _SUBTYPES.get(subtype) or _TERMINAL.get(str(result.get("terminal_reason") or ""))
        if code is None and refused:
            code = "ERR_LLM_REFUSAL"  # model_refusal_no_fallback and its kin
        if code:
            return coded(code, message, agent=AGENT, family=_FAMILY, exit_code=exit_code)
        status = as_int(result.get("api_error_status"))
        if status is None and retries:
            status = as_int(retries[-1].get("error_status"))
        return from_text(
            message, agent=AGENT, family=_FAMILY, status=status, now=now, exit_code=exit_code
        )
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
