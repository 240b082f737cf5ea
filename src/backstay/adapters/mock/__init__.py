"""``MockAdapter``: a scripted agent CLI, run as a real subprocess.

It drives ``_agent.py`` (the Python running backstay, ``-I``, nothing but the
request's environment) through the same plumbing as a real CLI adapter: own process
group, closed stdin, streamed and redacted capture, deadline and stall kills. What the
program prints is Claude Code's ``--output-format json`` result, so failures are
classified by ``backstay.classify_output(..., agent="claude-code")`` into exactly the
``Failure`` a real Claude Code run with that error gets.

Settings (``AgentRequest.config``):

* ``scenario`` (required): a mapping, or a YAML / JSON file (see ``_scenario``).
* ``scenarios`` (optional): task id → a scenario for that task, so that the tasks of one
  suite can act out different stories; a task not listed (or an operation id that names
  no task) acts out ``scenario``.
* ``state_dir`` (optional): a directory that counts attempts per ``operation_id`` in
  files, so that a resumed run in a new process continues the script; without it the
  count lives in the adapter instance.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any, ClassVar, Final

from backstay.adapters.base import BaseAdapter
from backstay.adapters.capture import Capture
from backstay.adapters.cli.claude_code._json import ResultReader, answer_of, usage_of
from backstay.adapters.cli.process import run_process
from backstay.adapters.contract import AgentRequest, AgentResult, AgentStatus
from backstay.adapters.mock._scenario import Scenario
from backstay.adapters.usage import Usage
from backstay.errors import ConfigError
from backstay.idempotency.ids import parse_operation_id

__all__ = ["MockAdapter"]

AGENT_PROGRAM: Final = Path(__file__).with_name("_agent.py")


def _scenario_of(config: Mapping[str, Any], operation_id: str) -> Scenario:
    """The scenario of the task ``operation_id`` names (``scenarios``), else ``scenario``."""
    by_task = config.get("scenarios") or {}
    try:
        task_id = parse_operation_id(operation_id).task_id
    except ConfigError:  # a harness run's operation id names no task
        task_id = None
    if task_id is not None and task_id in by_task:
        return Scenario.load(by_task[task_id], where=f"config.scenarios.{task_id}")
    return Scenario.load(config["scenario"], where="config.scenario")


class MockAdapter(BaseAdapter):
    """Acts out a scenario in a real subprocess; see the module docstring."""

    name: ClassVar[str] = "mock"
    agent: ClassVar[str | None] = "claude-code"
    config_keys: ClassVar[frozenset[str]] = frozenset({"scenario", "scenarios", "state_dir"})

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._attempts: dict[str, int] = {}

    def validate_config(self, config: Mapping[str, Any]) -> bool:
        super().validate_config(config)
        if "scenario" not in config:
            raise ConfigError("is required", where="config.scenario")
        Scenario.load(config["scenario"], where="config.scenario")
        by_task = config.get("scenarios")
        if by_task is not None:
            if not isinstance(by_task, Mapping):
                raise ConfigError(
                    f"must map task ids to scenarios, got {by_task!r}", where="config.scenarios"
                )
            for task_id, scenario in by_task.items():
                Scenario.load(scenario, where=f"config.scenarios.{task_id}")
        state_dir = config.get("state_dir")
        if state_dir is not None and (not isinstance(state_dir, str | Path) or not state_dir):
            raise ConfigError(
                f"must be a directory path, got {state_dir!r}", where="config.state_dir"
            )
        return True

    def _next_attempt(self, operation_id: str, state_dir: object) -> int:
        if state_dir is None:
            with self._lock:
                number = self._attempts.get(operation_id, 0) + 1
                self._attempts[operation_id] = number
                return number
        directory = Path(str(state_dir))
        directory.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256(operation_id.encode("utf-8")).hexdigest()[:32]
        # One byte appended per attempt: the file's size is the attempt number.
        fd = os.open(directory / f"{digest}.attempts", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        try:
            os.write(fd, b".")
            return os.fstat(fd).st_size
        finally:
            os.close(fd)

    def command(self, request: AgentRequest, steps: Sequence[Mapping[str, Any]]) -> list[str]:
        """The agent program's command line for one attempt's ``steps``."""
        if request.prompt_file is not None:
            if not request.prompt_file.is_file():
                raise ConfigError("is not a file", where="prompt_file")
            prompt = ["--prompt-file", str(request.prompt_file.resolve())]
        else:
            prompt = ["--prompt", request.read_prompt()]
        return [
            sys.executable,
            "-I",
            str(AGENT_PROGRAM),
            "--steps",
            json.dumps(list(steps)),
            "--model",
            request.model,
            *prompt,
        ]

    async def execute(
        self, request: AgentRequest, *, operation_id: str, attempt_id: str, capture: Capture
    ) -> AgentResult:
        scenario = _scenario_of(request.config, operation_id)
        number = self._next_attempt(operation_id, request.config.get("state_dir"))
        steps = scenario.steps_for(number)
        await capture.alog(f"mock: attempt {number} acts out {len(steps)} step(s)")
        reader = ResultReader()
        outcome = await run_process(
            self.command(request, steps),
            cwd=request.workspace,
            env=request.env,
            timeout_s=request.timeout_s,
            stall_timeout_s=request.stall_timeout_s,
            capture=capture,
            on_stdout_line=reader.line,
            launcher=request.launcher,
        )
        final = reader.result
        evidence = (
            json.dumps(final)
            if final is not None
            else f"{outcome.stdout_tail}\n{outcome.stderr_tail}".strip()
        )
        failure = self.process_failure(outcome, request, evidence=evidence)
        written = tuple(
            request.workspace / PurePosixPath(str(step["write_file"]))
            for step in steps
            if "write_file" in step
        )
        artefacts = tuple(path for path in written if path.exists())
        usage = usage_of(final) if final is not None else None
        if failure is not None:
            return AgentResult.failed(
                failure,
                output=outcome.stdout_tail,
                usage=usage,
                exit_code=outcome.exit_code,
                duration_s=outcome.duration_s,
                artefacts=artefacts,
            )
        return AgentResult(
            status=AgentStatus.SUCCEEDED,
            output=answer_of(final) if final is not None else outcome.stdout_tail,
            usage=usage or Usage(),
            exit_code=outcome.exit_code,
            duration_s=outcome.duration_s,
            artefacts=artefacts,
        )
