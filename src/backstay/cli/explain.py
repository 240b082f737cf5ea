"""``backstay explain``: how backstay classifies a response, an exception or an agent's output."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Annotated, Any, Final

import typer
from rich.console import Console
from rich.table import Table

from backstay.classify import AGENT_NAMES, classify, classify_output, classify_response
from backstay.classify.agents import agent_name
from backstay.cli._examples import EXAMPLES, Example
from backstay.cli._input import build_exception, parse_headers, read_value
from backstay.errors import ConfigError
from backstay.failure import Failure

USAGE_ERROR = 2


# The kind of evidence that decided (``details.source``), in a reader's words.
_DECIDED_BY: Final[dict[str, str]] = {
    "provider_signal": "provider signal",
    "structured_code": "structured field",
    "structured_type": "structured field (a generic type)",
    "message": "message pattern",
    "message_wait": "message pattern, and the wait it gives",
    "status": "status",
    "error_shape": "error shape",
    "agent_field": "agent output",
    "exit_code": "exit code",
    "success_body": "successful body",
    "no_failure_found": "nothing failed",
    "nothing": "nothing",
    "classifier_error": "unreadable input",
}
# Shown in their own rows, not again among the details.
_SHOWN: Final = frozenset({"evidence", "wait_from"})


def decided_by(failure: Failure) -> str:
    """Which evidence decided the classification: its kind, then which one."""
    details = failure.details
    source = str(details.get("source") or "")
    if not source and details.get("exception"):
        return f"exception type: {details['exception']}"
    kind = _DECIDED_BY.get(source, source or "-")
    evidence = details.get("evidence")
    return f"{kind}: {evidence}" if evidence else kind


def _failure_table(failure: Failure, title: str) -> Table:
    table = Table(title=title, show_header=False, title_justify="left")
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    rows: list[tuple[str, str]] = [
        ("kind", str(failure.kind)),
        ("code", failure.code),
        ("retryable", "yes" if failure.retryable else "no"),
        ("default action", str(failure.action)),
        ("decided by", decided_by(failure)),
        ("retry after", "-" if failure.retry_after_s is None else f"{failure.retry_after_s:.3f} s"),
        ("resets at", failure.resets_at.isoformat() if failure.resets_at else "-"),
        ("wait from", str(failure.details.get("wait_from") or "-")),
        ("provider", failure.provider or "-"),
        ("status", "-" if failure.status is None else str(failure.status)),
        ("message", failure.message or "-"),
    ]
    rows.extend(
        (f"details.{k}", json.dumps(v, default=str))
        for k, v in failure.details.items()
        if k not in _SHOWN
    )
    for name, value in rows:
        table.add_row(name, value)
    return table


def _examples_table(results: list[tuple[Example, Failure]]) -> Table:
    table = Table(title="backstay explain: built-in examples", title_justify="left")
    for column in ("example", "input", "kind", "code", "retryable", "action", "wait", "why"):
        table.add_column(column, overflow="fold")
    for example, failure in results:
        if failure.resets_at is not None:
            wait = f"until {failure.resets_at:%Y-%m-%d %H:%M} UTC"
        elif failure.retry_after_s is not None:
            wait = f"{failure.retry_after_s:.1f} s"
        else:
            wait = "-"
        table.add_row(
            example.name,
            example.summary,
            str(failure.kind),
            failure.code,
            "yes" if failure.retryable else "no",
            str(failure.action),
            wait,
            decided_by(failure),
        )
    return table


def _fail(message: str) -> typer.Exit:
    Console(stderr=True).print(f"[bold red]error:[/] {message}", highlight=False)
    return typer.Exit(USAGE_ERROR)


def _classify_from_flags(
    *,
    provider: str | None,
    status: int | None,
    header: list[str],
    body: str | None,
    exception: str | None,
    agent: str | None,
    output: str | None,
    exit_code: int | None,
) -> Failure:
    response = bool(header) or body is not None or (status is not None and exception is None)
    modes = [
        name
        for name, used in (
            ("--exception", exception is not None),
            ("--agent/--output", agent is not None or output is not None),
            ("--status/--header/--body", response),
        )
        if used
    ]
    if not modes:
        raise ConfigError(
            "give a response (--status, --header, --body), an --exception, "
            "an --agent with its --output, or --examples"
        )
    if len(modes) > 1:
        raise ConfigError(f"choose one of {' or '.join(modes)}, not several")
    if exception is not None:
        return classify(build_exception(exception, status=status), provider=provider)
    if agent is not None or output is not None:
        if agent is None or output is None:
            raise ConfigError("--agent and --output go together", where="--agent")
        if agent_name(agent) is None:
            raise ConfigError(
                f"unknown agent {agent!r}; one of {', '.join(AGENT_NAMES)}", where="--agent"
            )
        return classify_output(
            read_value(output, flag="--output"), agent=agent, exit_code=exit_code
        )
    text = None if body is None else read_value(body, flag="--body")
    return classify_response(status, parse_headers(header), text, provider=provider)


def explain(
    provider: Annotated[
        str | None, typer.Option("--provider", help="anthropic, openai, gemini …")
    ] = None,
    status: Annotated[int | None, typer.Option("--status", help="HTTP status.")] = None,
    header: Annotated[
        list[str] | None, typer.Option("--header", "-H", help="'Name: value'; repeatable.")
    ] = None,
    body: Annotated[
        str | None, typer.Option("--body", help="Response body, or @file (@- for stdin).")
    ] = None,
    exception: Annotated[
        str | None,
        typer.Option("--exception", help="An exception class: 'httpx.ReadTimeout' or 'X: msg'."),
    ] = None,
    agent: Annotated[
        str | None, typer.Option("--agent", help=f"One of: {', '.join(AGENT_NAMES)}.")
    ] = None,
    output: Annotated[str | None, typer.Option("--output", help="Agent output, or @file.")] = None,
    exit_code: Annotated[
        int | None, typer.Option("--exit-code", help="The agent's exit code.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the Failure as JSON.")] = False,
    examples: Annotated[
        bool, typer.Option("--examples", help="Classify the built-in examples.")
    ] = False,
) -> None:
    """Classify a failure and show the default action backstay takes."""
    # Piped output (make demo, CI logs) gets a readable width instead of 80 columns.
    console = Console() if sys.stdout.isatty() else Console(width=200)
    emit: Callable[[Any], None] = console.print
    try:
        if examples:
            results = [(example, example.run()) for example in EXAMPLES]
            if as_json:
                payload = [{"example": e.name, "failure": f.to_dict()} for e, f in results]
                sys.stdout.write(json.dumps(payload, indent=2, default=str) + "\n")
            else:
                emit(_examples_table(results))
            return
        failure = _classify_from_flags(
            provider=provider,
            status=status,
            header=header or [],
            body=body,
            exception=exception,
            agent=agent,
            output=output,
            exit_code=exit_code,
        )
    except ConfigError as err:
        raise _fail(str(err)) from None
    if as_json:
        sys.stdout.write(
            json.dumps(failure.to_dict(), indent=2, sort_keys=True, default=str) + "\n"
        )
    else:
        emit(_failure_table(failure, "backstay explain"))
