"""The program ``MockAdapter`` runs: a stand-in agent CLI that acts out scripted steps.

Run as ``python -I _agent.py --steps JSON (--prompt TEXT | --prompt-file PATH)``; it
uses the standard library only, so it runs with ``-I`` and an empty environment. Its
final line on success or failure is a Claude Code ``--output-format json`` result object,
with the texts Claude Code 2.1 prints for each error, so its output classifies exactly
as a real run's would. ``ERRORS`` is also read by the parent to validate scenarios.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Final

# name → (api_error_status, terminal_reason, subtype, result text). "{resets}" is filled
# from the step's resets_at; a retry_after_s adds _WAIT to the text, as providers word it.
ERRORS: Final[dict[str, tuple[int | None, str | None, str, str | None]]] = {
    "rate_limit": (
        429,
        "api_error",
        "success",
        "API Error: Request rejected (429) · Number of request tokens has exceeded your "
        "per-minute rate limit",
    ),
    "overloaded": (
        529,
        "api_error",
        "success",
        "API Error: 529 Overloaded. This is a server-side issue, usually temporary — "
        "try again in a moment.",
    ),
    "server_error": (
        500,
        "api_error",
        "success",
        "API Error: 500 Internal server error. This is a server-side issue, usually "
        "temporary — try again in a moment.",
    ),
    "context_overflow": (
        400,
        "prompt_too_long",
        "success",
        "Prompt is too long · the request is ~250000 tokens (limit 200000)",
    ),
    "quota": (None, "api_error", "success", "Claude AI usage limit reached|{resets}"),
    "credit": (400, "api_error", "success", "Credit balance is too low"),
    "auth": (401, "api_error", "success", "Invalid API key · Fix external API key"),
    "not_logged_in": (None, "api_error", "success", "Not logged in · Please run /login"),
    "content_filter": (
        400,
        "api_error",
        "success",
        "API Error: 400 Output blocked by content filtering policy",
    ),
    "request_timeout": (None, "api_error", "success", "Request timed out"),
    "connection": (
        None,
        "api_error",
        "success",
        "API Error: Unable to connect to API (ECONNREFUSED)",
    ),
    "max_turns": (None, "max_turns", "error_max_turns", None),
    "budget": (None, "budget", "error_max_budget_usd", None),
}
_WAIT: Final = ". Please try again in {wait} seconds."
DEFAULT_RESET_S: Final = 3600


def _emit(text: str, *, to: Any = None) -> None:
    stream = to or sys.stdout
    stream.write(text + "\n")
    stream.flush()


def _result(step: dict[str, Any], *, is_error: bool, subtype: str, text: str | None) -> str:
    obj: dict[str, Any] = {
        "type": "result",
        "subtype": subtype,
        "is_error": is_error,
        "duration_ms": 0,
        "num_turns": step.get("num_turns", 1),
        "session_id": "mock-session",
        "total_cost_usd": step.get("cost_usd", 0),
        "usage": {
            "input_tokens": step.get("input_tokens", 0),
            "output_tokens": step.get("output_tokens", 0),
            "cache_creation_input_tokens": step.get("cache_write_tokens", 0),
            "cache_read_input_tokens": step.get("cache_read_tokens", 0),
        },
        "permission_denials": [],
    }
    if text is not None:
        obj["result"] = text
    return json.dumps(obj, ensure_ascii=False)


def _error(step: dict[str, Any]) -> str:
    status, terminal, subtype, template = ERRORS[step["error"]]
    resets = step.get("resets_at", int(time.time()) + DEFAULT_RESET_S)
    text = step.get("message") or (None if template is None else template.format(resets=resets))
    if text is not None and "retry_after_s" in step:
        text += _WAIT.format(wait=f"{step['retry_after_s']:g}")
    obj = json.loads(_result(step, is_error=True, subtype=subtype, text=text))
    obj.update(terminal_reason=terminal, api_error_status=status)
    return json.dumps(obj, ensure_ascii=False)


def _hang() -> None:
    while True:
        time.sleep(3600)


def _step(step: dict[str, Any], prompt: str) -> int | None:
    """Act out one step; an exit code ends the run."""
    if "print" in step:
        for _ in range(step.get("repeat", 1)):
            sys.stdout.write(step["print"] + "\n")
        sys.stdout.flush()
    elif "stderr" in step:
        for _ in range(step.get("repeat", 1)):
            sys.stderr.write(step["stderr"] + "\n")
        sys.stderr.flush()
    elif "echo_prompt" in step:
        _emit(prompt)
    elif "print_env" in step:
        name = step["print_env"]
        _emit(f"{name}={os.environ[name]}" if name in os.environ else f"{name} is unset")
    elif "write_file" in step:
        path = Path(step["write_file"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(step.get("text", ""), encoding="utf-8")
    elif "sleep" in step:
        time.sleep(step["sleep"])
    elif "spawn" in step:
        child = subprocess.Popen(  # noqa: S603 - our own interpreter, fixed code
            [sys.executable, "-c", f"import time; time.sleep({float(step['spawn'])!r})"]
        )
        _emit(f"spawned {child.pid}")
    elif "ignore_sigterm" in step:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    elif "stall" in step:
        content = [{"type": "text", "text": step["stall"]}]
        _emit(json.dumps({"type": "assistant", "message": {"content": content}}))
        _hang()
    elif "hang" in step:
        _hang()
    elif "result" in step:
        _emit(_result(step, is_error=False, subtype="success", text=step["result"]))
    elif "error" in step:
        _emit(_error(step))
        return 1
    elif "exit" in step:
        return int(step["exit"])
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", required=True)
    parser.add_argument("--model", default="mock")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--prompt")
    source.add_argument("--prompt-file")
    args = parser.parse_args(argv)
    prompt = (
        args.prompt
        if args.prompt is not None
        else Path(args.prompt_file).read_text(encoding="utf-8")
    )
    for step in json.loads(args.steps):
        code = _step(step, prompt)
        if code is not None:
            return code
    return 0


if __name__ == "__main__":
    sys.exit(main())
