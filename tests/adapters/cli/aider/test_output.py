"""Reading an Aider attempt: its retry lines as they stream, and the analytics events and LLM
history it leaves. Texts and event shapes are Aider 0.86.2's, as it printed and wrote them
against the fake provider."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from backstay.adapters.cli.aider.command import AiderFiles
from backstay.adapters.cli.aider.output import LineWatch, read_report

RATE_LIMIT = (
    "litellm.RateLimitError: RateLimitError: OpenAIException - Rate limit reached for "
    "gpt-4o-mini in organization org-fake on requests per min (RPM): Limit 50, Used 50, "
    "Requested 1. Please try again in 3s."
)
ADVICE = "The API provider has rate limited you. Try again later or check your quotas."
ANSWER = "Tokens: 914 sent, 18 received. Cost: $0.00015 message, $0.00015 session."


def watch(allowed: int = 0) -> LineWatch:
    return LineWatch(allowed_retries=allowed, stop=asyncio.Event())


def feed(w: LineWatch, text: str) -> LineWatch:
    for line in text.splitlines():
        w.line(line)
    return w


def test_the_first_retry_past_the_allowance_asks_to_stop() -> None:
    w = feed(watch(allowed=1), f"{RATE_LIMIT}\n{ADVICE}\nRetrying in 0.2 seconds...\n")
    assert (w.retries, w.stopped_at_retry) == (1, False)
    feed(w, f"{RATE_LIMIT}\n{ADVICE}\nRetrying in 0.5 seconds...\n")
    assert (w.retries, w.stopped_at_retry) == (2, True)


def test_a_retry_line_counts_only_after_an_error() -> None:
    # A model's reply may hold the words; only Aider's own line after an error counts.
    w = feed(watch(), "Retrying in 0.2 seconds...\n" + ANSWER + "\n")
    assert (w.retries, w.stopped_at_retry) == (0, False)


def test_usage_lines_note_whether_aider_priced_them() -> None:
    w = feed(watch(), ANSWER + "\nTokens: 2.3k sent, 40 received.\n")
    assert w.priced == [True, False]


def test_a_token_limit_after_the_last_usage_line_is_noted() -> None:
    w = feed(
        watch(),
        "Tokens: 678 sent, 0 received. Cost: $0.00010 message, $0.00010 session.\n"
        "Model openai/gpt-4o-mini has hit a token limit!\n",
    )
    assert w.exhausted


def test_edited_files_are_noted_once_each() -> None:
    w = feed(
        watch(), "Applied edit to hello.txt\nApplied edit to src/a.py\nApplied edit to hello.txt\n"
    )
    assert w.edited == ["hello.txt", "src/a.py"]


def _event(name: str, **properties: Any) -> str:
    return json.dumps({"event": name, "properties": properties, "user_id": "u", "time": 1})


def _send(prompt: int, completion: int, cost: float) -> str:
    return _event(
        "message_send",
        main_model="openai/gpt-4o-mini",
        edit_format="whole",
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=prompt + completion,
        cost=cost,
        total_cost=cost,
    )


def _files(tmp_path: Path, events: list[str], history: str) -> AiderFiles:
    files = AiderFiles(tmp_path)
    files.analytics.write_text("\n".join(events) + "\n")
    files.llm_history.write_text(history)
    return files


HISTORY = (
    "TO LLM 2026-11-22T02:29:49\n-------\nSYSTEM Act as an expert software developer.\n"
    "-------\nUSER TO LLM 2026-11-22T02:29:49\n"
    "TO LLM 2026-11-22T02:29:50\n-------\nUSER make hello.txt\n"
    "LLM RESPONSE 2026-11-22T02:29:51\nASSISTANT Here it is.\nASSISTANT \nASSISTANT hello.txt\n"
)


def test_the_report_has_exact_tokens_cost_calls_and_the_reply(tmp_path: Path) -> None:
    events = [
        _event("launched"),
        _event("message_send_starting"),
        _send(1200, 18, 0.0002),
        _send(1300, 20, 0.0003),
        _event("exit", reason="Completed --message-file"),
    ]
    w = feed(watch(), ANSWER + "\n" + ANSWER + "\n")
    report = read_report(_files(tmp_path, events, HISTORY), w)
    assert (report.prompt_tokens, report.completion_tokens) == (2500, 38)
    assert report.cost_usd is not None
    assert abs(report.cost_usd - 0.0005) < 1e-12
    assert (report.answers, report.api_calls) == (2, 2)
    assert report.reply == "Here it is.\n\nhello.txt"
    assert report.completed


def test_without_aider_s_price_the_report_has_no_cost(tmp_path: Path) -> None:
    events = [_send(914, 18, 0.0), _event("exit", reason="Completed --message-file")]
    w = feed(watch(), "Tokens: 914 sent, 18 received.\n")
    report = read_report(_files(tmp_path, events, HISTORY), w)
    assert report.cost_usd is None
    assert report.prompt_tokens == 914


def test_a_context_window_refusal_is_not_counted_as_an_answer(tmp_path: Path) -> None:
    events = [_send(678, 0, 0.0001), _event("exit", reason="Completed --message-file")]
    w = feed(
        watch(),
        "Tokens: 678 sent, 0 received. Cost: $0.00010 message, $0.00010 session.\n"
        "Model openai/gpt-4o-mini has hit a token limit!\n",
    )
    report = read_report(_files(tmp_path, events, "TO LLM 2026-11-22T02:29:56\n"), w)
    assert (report.answers, report.prompt_tokens, report.cost_usd) == (0, 0, None)
    assert report.api_calls == 1


def test_a_killed_run_leaves_a_report_without_an_ending(tmp_path: Path) -> None:
    report = read_report(AiderFiles(tmp_path), watch())
    assert (report.answers, report.api_calls, report.exit_reason) == (0, 0, None)
    assert not report.completed


def test_an_exception_aider_caught_is_reported(tmp_path: Path) -> None:
    events = [
        _event("message_send_exception", exception="boom"),
        _event("exit", reason="Completed --message-file"),
        "not json",
    ]
    report = read_report(_files(tmp_path, events, ""), watch())
    assert report.exception == "boom"
    assert report.completed
