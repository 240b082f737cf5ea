"""Where the engine finds again a prompt the state keeps only redacted.

A spec read back from the state whose prompt held personal data or a secret has the
redacted prompt and ``prompt_sha256``, the digest of the clear one (``_spec_codec``).
Before such a task runs, ``PromptSource.restore`` reads the suite file ``batch.json``
names, takes the task's prompt from it and checks it against the digest. A suite file
that is gone, unreadable, no longer has the task, or gives another prompt is a
``ConfigError`` naming the task, what changed and how to go on: the engine never runs a
redacted prompt, nor one other than the task was recorded with.
"""

from __future__ import annotations

import dataclasses
import hmac
from pathlib import Path
from typing import NoReturn

from backstay.config import Suite, load_suite
from backstay.engine._spec_codec import prompt_digest
from backstay.engine.suite_batch import read_identity
from backstay.engine.task import TaskSpec
from backstay.errors import ConfigError

__all__ = ["PromptSource"]


class PromptSource:
    """The clear prompts of the batch in ``state_dir`` (its suite file read once)."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self._suite: Suite | ConfigError | None = None
        self._file: str | None = None

    def restore(self, spec: TaskSpec) -> TaskSpec:
        """``spec`` with its clear prompt (unchanged when its prompt is not redacted);
        ``ConfigError`` when the clear prompt cannot be had (see the module)."""
        digest = spec.prompt_sha256
        if digest is None:
            return spec
        prompt = self._prompt(spec)
        if not hmac.compare_digest(prompt_digest(prompt), digest):
            self._refuse(spec, f"its prompt in {self._file} changed since the task was recorded")
        return dataclasses.replace(spec, prompt=prompt, prompt_sha256=None)

    def _prompt(self, spec: TaskSpec) -> str:
        suite = self._load(spec)
        try:
            task = suite.task(spec.task_id)
        except ConfigError:
            self._refuse(spec, f"the suite file {self._file} has no task {spec.task_id!r} any more")
        if task.prompt is None:
            self._refuse(spec, f"its prompt in {self._file} changed since the task was recorded")
        return task.prompt

    def _load(self, spec: TaskSpec) -> Suite:
        if self._suite is None:
            self._suite = self._read()
        if isinstance(self._suite, ConfigError):
            self._refuse(spec, self._suite.reason)
        return self._suite

    def _read(self) -> Suite | ConfigError:
        try:
            identity = read_identity(self.state_dir)
        except ConfigError as err:
            return ConfigError(f"{err.where} {err.reason}")
        if identity is None or identity.suite_file is None:
            return ConfigError(f"no suite file is recorded in {self.state_dir}/batch.json")
        self._file = identity.suite_file
        try:
            return load_suite(identity.suite_file)
        except ConfigError as err:
            first = str(err).splitlines()[0] if str(err) else err.reason
            return ConfigError(f"the suite file {identity.suite_file} cannot be read: {first}")

    def _refuse(self, spec: TaskSpec, why: str) -> NoReturn:
        suite = self._file or "<suite.yaml>"
        raise ConfigError(
            f"task {spec.task_id!r} ({spec.operation_id}) cannot run: the state keeps its "
            f"prompt only redacted and {why}. Put the suite file back as it was, or run "
            f"`backstay batch {suite} --state-dir {self.state_dir}` to record the prompt it "
            "gives now (finished tasks do not run again); a suite with `storage: {prompts: "
            "clear}` keeps its prompts in the state as given",
            where=f"task {spec.task_id!r}: prompt",
        )
