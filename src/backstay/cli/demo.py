"""``backstay demo``: the demo suite (``backstay.demo``) run through the API adapters
against the embedded fake provider on a stormy day, with its progress, its summary and
where everything was written. Exit 0 when the batch came out as designed, 1 when it did
not (each difference said on stderr), 2 for bad usage or a missing extra."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import secrets
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final

import typer
from rich.markup import escape

from backstay.cli import _state
from backstay.cli._errors import usage_error
from backstay.cli._progress import showing_progress
from backstay.cli._report import console, status_data, summary_table, tasks_table
from backstay.config import BackstayConfig, Suite, load_config, load_suite
from backstay.demo import (
    CONFIG_FILE,
    EXPECTED_ENDS,
    SCENARIO_FILE,
    SUITE_FILE,
    check_outcome,
    demo_environ,
    demo_file,
    export,
)
from backstay.engine import Engine, SuiteBatch, Summary, TaskRecord, TaskState, suite_adapters
from backstay.errors import ConfigError
from backstay.events import EVENTS_FILE
from backstay.observe.report import REPORT_FILE as HTML_REPORT
from backstay.observe.report import write_report
from backstay.redact import register_secret

if TYPE_CHECKING:
    from backstay.fakeprovider import Scenario, Stats

DEMO_CONCURRENCY: Final = 6
# The API key the adapters send to the fake provider: this variable's value when set (a
# test's canary), else a random one. Never a provider's own key variable.
KEY_VARIABLE: Final = "BACKSTAY_DEMO_API_KEY"
REPORT_FILE: Final = "report.json"
REQUESTS_FILE: Final = "fake-provider.jsonl"
UNEXPECTED: Final = 1
# What the demo imports, and the extra that installs it.
_NEEDS: Final = ("aiohttp", "anthropic", "openai", "google.genai", "genai_prices")
_INTRO: Final = (
    "backstay demo: {tasks} tasks over anthropic-api, openai-api and gemini-api, "
    "{concurrency} at a time, against a fake provider on {url} having a stormy day: rate "
    "limits that ask for a wait, 529 overloads, a 20 s outage of claude-haiku-4-5, a stream "
    "that dies mid-way, a context overflow, a content-policy block and a spent quota."
)

StateDir = Annotated[
    Path | None,
    typer.Option(
        "--state-dir",
        help="Where the batch's state, logs and report go: a new or empty directory "
        "(default: a new temporary directory, printed at the end).",
    ),
]
ExportDir = Annotated[
    Path | None,
    typer.Option(
        "--export",
        help="Write the demo's suite, configuration and scenario into this folder and "
        "exit, to run the same suite against the real providers with backstay batch.",
    ),
]


def _missing_extras() -> list[str]:
    missing = []
    for module in _NEEDS:
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:  # a parent package (google) is missing
            found = False
        if not found:
            missing.append(module.partition(".")[0] if module != "google.genai" else "google-genai")
    return missing


def _fresh(state_dir: Path | None) -> Path:
    if state_dir is None:
        return Path(tempfile.mkdtemp(prefix="backstay-demo-"))
    if state_dir.exists() and (not state_dir.is_dir() or any(state_dir.iterdir())):
        raise ConfigError(
            f"{state_dir} is not an empty directory: the demo runs in a fresh one "
            "(leave --state-dir out for a new temporary directory)",
            where="--state-dir",
        )
    state_dir.mkdir(parents=True, exist_ok=True)
    return state_dir.resolve()


def _exported(folder: Path) -> None:
    try:
        written = export(folder)
    except ConfigError as err:
        raise usage_error(err) from None
    for path in written:
        typer.echo(f"wrote {path}")
    suite, config = folder / SUITE_FILE, folder / CONFIG_FILE
    typer.echo(
        "to run the suite against the real providers: export ANTHROPIC_API_KEY, "
        "OPENAI_API_KEY and GEMINI_API_KEY, then\n"
        f"  backstay batch {suite} --config {config} --state-dir demo-run"
    )


def _write_report(state_dir: Path, data: dict[str, Any]) -> Path:
    path = state_dir / REPORT_FILE
    path.write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
    return path


def _as_designed(summary: Summary) -> list[str]:
    lines = [
        f"  {summary.count(TaskState.SUCCEEDED)} tasks succeeded, however often they were "
        "retried or made to wait"
    ]
    for task_id, end in EXPECTED_ENDS.items():
        lines.append(f"  {task_id}: {end.state} ({end.kind}): {end.why}")
    for name, trips in summary.trips_by_breaker.items():
        lines.append(f"  circuit {name} opened {trips} time{'' if trips == 1 else 's'}")
    lines.append(
        f"  tasks waited {summary.circuit_waits} times for open circuits "
        f"({summary.circuit_waited_s:.1f} s), without spending attempts"
    )
    return lines


def _where(state_dir: Path) -> list[str]:
    return [
        f"where it is ({state_dir}):",
        f"  {REPORT_FILE:<22} the summary, every task, the circuits, the provider's counts",
        f"  {EVENTS_FILE:<22} every event of the run, one JSON object a line",
        f"  {REQUESTS_FILE:<22} every request the fake provider served (no keys)",
        f"  {HTML_REPORT:<22} the HTML report: open it in a browser",
        "  runs/<task>/T0/run_NN/attempt_N/  each attempt's agent.log, stdout.log, "
        "stderr.log and metrics.json",
        "  state.sqlite           the durable state: backstay status --state-dir "
        f"{state_dir}; backstay escalations list --state-dir {state_dir}",
    ]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class _Ran:
    """What the run came to."""

    folder: Path
    workflow_id: str
    summary: Summary
    tasks: tuple[TaskRecord, ...]
    problems: list[str]
    served: Stats
    took_s: float


def _run(
    folder: Path, suite: Suite, scenario: Scenario, config: BackstayConfig, concurrency: int
) -> _Ran:
    """Serve ``scenario``, run ``suite`` in ``folder`` with its progress, check and report."""
    from backstay.fakeprovider import FakeProvider  # noqa: PLC0415 - needs aiohttp

    key = os.environ.get(KEY_VARIABLE) or f"sk-demo-{secrets.token_hex(16)}"
    register_secret(key)
    started = time.monotonic()
    out = console()
    with FakeProvider(scenario, log_path=folder / REQUESTS_FILE) as fake:
        environ = demo_environ(fake.url, key)
        batch = SuiteBatch.open(suite, folder, environ=environ)
        batch.prepare()
        intro = _INTRO.format(tasks=len(batch.specs), concurrency=concurrency, url=fake.url)
        out.print(escape(intro), highlight=False)
        out.print(escape(f"state directory: {folder}"), highlight=False)
        engine = Engine(
            folder,
            adapters=suite_adapters(suite),
            concurrency=concurrency,
            env=environ,
            breaker=config.engine_breaker(),
        )
        with engine:  # it writes every event of the batch to EVENTS_FILE
            states = {spec.operation_id: TaskState.PENDING for spec in batch.specs}
            with showing_progress(states):
                engine.run_sync(batch.specs)
            summary = engine.summary(states)
            tasks = engine.store.tasks()
            attempts = engine.store.attempts()
            circuits = engine.circuit_log.entries()
        served = fake.stats()
    took = time.monotonic() - started
    problems = check_outcome(summary, tasks, attempts)
    data = status_data(summary, tasks, state_dir=folder, identity=batch.identity)
    data.update(
        circuits=[entry.to_dict() for entry in circuits],
        fake_provider=served.to_dict(),
        as_designed=not problems,
        unexpected=problems,
        duration_s=round(took, 1),
    )
    _write_report(folder, data)
    write_report(folder, folder / HTML_REPORT)
    return _Ran(
        folder=folder,
        workflow_id=batch.workflow_id,
        summary=summary,
        tasks=tasks,
        problems=problems,
        served=served,
        took_s=took,
    )


def _show(ran: _Ran) -> None:
    out = console()
    summary = ran.summary
    out.print(summary_table(summary, title=f"backstay demo {ran.workflow_id}"))
    unsettled = [t for t in ran.tasks if t.state is not TaskState.SUCCEEDED]
    if unsettled:
        out.print(tasks_table(unsettled, title="tasks that did not succeed", summary=summary))
    served = ran.served
    statuses = ", ".join(f"{status} x{n}" for status, n in sorted(served.by_status.items()))
    out.print(escape(f"fake provider: {served.requests} requests ({statuses})"), highlight=False)
    if not ran.problems:
        out.print("[bold green]as designed:[/]", highlight=False)
        for line in _as_designed(summary):
            out.print(escape(line), highlight=False)
    for line in _where(ran.folder):
        out.print(escape(line), highlight=False)
    out.print(escape(f"report: {ran.folder / HTML_REPORT}"), highlight=False)
    out.print(f"the demo took {ran.took_s:.0f} s", highlight=False)


def demo(
    state_dir: StateDir = None,
    concurrency: _state.ConcurrencyOption = DEMO_CONCURRENCY,
    export_dir: ExportDir = None,
) -> None:
    """Run the demo: a fake provider having a stormy day, 30 tasks sitting it out.

    Starts the embedded fake provider with the demo's scenario (rate limits, 529
    overloads, an outage that trips a circuit breaker, a stream that dies mid-way, a
    context overflow, a content-policy block, a spent quota), runs the demo suite through
    the anthropic-api, openai-api and gemini-api adapters, then shows the summary and
    where the report and every attempt's logs are. About a minute. Exit codes: 0 the
    batch came out as designed (including its three tasks that do not succeed), 1 it did
    not (each difference on stderr), 2 bad usage or a missing extra.
    """
    if export_dir is not None:
        _exported(export_dir)
        raise typer.Exit(0)
    missing = _missing_extras()
    if missing:
        raise usage_error(
            ConfigError(
                f"the demo needs {', '.join(missing)}, not installed: pip install 'backstay[demo]'",
                where="backstay demo",
            )
        )
    from backstay.fakeprovider import load_scenario  # noqa: PLC0415 - needs aiohttp

    try:
        folder = _fresh(state_dir)
        config = load_config(demo_file(CONFIG_FILE))
        suite = load_suite(demo_file(SUITE_FILE), registry=config.registry)
        scenario = load_scenario(demo_file(SCENARIO_FILE))
    except OSError as exc:
        raise usage_error(
            ConfigError(f"{exc.strerror or exc}: {exc.filename}", where="--state-dir")
        ) from None
    except ConfigError as err:
        raise usage_error(err) from None
    try:
        ran = _run(folder, suite, scenario, config, concurrency)
    except KeyboardInterrupt:
        typer.echo(f"interrupted: what ran so far is in {folder}", err=True)
        raise typer.Exit(_state.INTERRUPTED) from None
    _show(ran)
    if ran.problems:
        typer.echo("the demo did not behave as designed:", err=True)
        for problem in ran.problems:
            typer.echo(f"  {problem}", err=True)
        raise typer.Exit(UNEXPECTED)
