"""Watching every process's command line while an agent CLI runs (Linux ``/proc``): the
check that a prompt never reaches a command line, where ``ps`` shows it to every local
user. ``PromptNotOnArgv`` adds that check to a contract class for a real CLI."""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path
from types import TracebackType
from typing import Final

import pytest

from backstay.adapters.base import BaseAdapter
from backstay.adapters.cli.orphans import ATTEMPT_TAG
from backstay.testing.contract import AdapterContract

POLL_S: Final = 0.01
_PROC: Final = Path("/proc")


class CommandLines:
    """While open, a thread notes every ``POLL_S`` the command line of each process whose
    ``ATTEMPT_TAG`` starts with ``prefix`` (``tagged``), and of any process at all whose
    command line holds ``needle`` (``holding``)."""

    def __init__(self, prefix: str, needle: str) -> None:
        self._tag = f"{ATTEMPT_TAG}={prefix}".encode()
        self._needle = needle.encode()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self.tagged: dict[int, str] = {}
        self.holding: dict[int, str] = {}

    def __enter__(self) -> CommandLines:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=5.0)

    def _poll(self) -> None:
        while not self._stop.is_set():
            self._scan()
            time.sleep(POLL_S)

    def _scan(self) -> None:
        for entry in _PROC.iterdir():
            if not entry.name.isdigit():
                continue
            try:
                raw = (entry / "cmdline").read_bytes()
                environ = (entry / "environ").read_bytes()
            except OSError:
                continue
            command = raw.replace(b"\0", b" ").decode("utf-8", "replace")
            if self._needle in raw:
                self.holding[int(entry.name)] = command
            if any(v.startswith(self._tag) for v in environ.split(b"\0")):
                self.tagged[int(entry.name)] = command


class PromptNotOnArgv(AdapterContract):
    """Mixin for a contract class whose adapter runs a real CLI: a successful attempt
    whose prompt is on no process's command line while it runs."""

    def test_the_prompt_is_on_no_command_line_while_the_cli_runs(self, tmp_path: Path) -> None:
        if not (_PROC / "self" / "environ").exists():
            pytest.skip("needs /proc to see command lines")
        adapter = self._adapter("success")
        assert isinstance(adapter, BaseAdapter)
        marker = f"argv-canary-{uuid.uuid4().hex}"
        prompt = tmp_path / "prompt.txt"
        prompt.write_text(f"Reply with the word done. ({marker})", encoding="utf-8")
        workspace, output = tmp_path / "workspace", tmp_path / "harness"
        workspace.mkdir()
        with CommandLines(str(tmp_path), marker) as seen:
            code = adapter.run(
                self.model,
                prompt,
                workspace,
                output,
                self.adapter_config("success"),
                self.timeout_s,
                env=self.adapter_env("success"),
                policy="no_retry",
            )
        assert code == 0, (output / "agent.log").read_text()
        assert seen.tagged, "no process of the attempt was seen"
        assert seen.holding == {}, f"the prompt was on a command line: {seen.holding}"
        log = (output / "agent.log").read_text().splitlines()
        started = [line for line in log if "started pid" in line]
        assert started, "agent.log names no command line"
        assert not [line for line in started if marker in line]
