"""A batch that stops to be killed: ``python register_kill_child.py STATE_DIR TASKS PASS AT
[STORE_URL]``. ``Engine.run`` reads its specs three times (checked, registered, driven):
on pass ``PASS`` (2: while the batch is being registered; 3: while its tasks are driven),
before the spec at ``AT`` is read, the child prints ``stopped`` and sleeps until it is
killed (at most ``HOLD_S``). Its tasks run on an in-process ``ScriptedAdapter``."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Final, overload

from backstay.engine import Engine, TaskSpec
from backstay.policy.retry import RetryPolicy
from backstay.store.location import parse_store
from backstay.store.open import open_stores
from backstay.testing import ScriptedAdapter

HOLD_S: Final = 60.0
POLICY: Final = RetryPolicy(name="kill", max_attempts=1, jitter=0.0)


def task_spec(workspace: Path, i: int) -> TaskSpec:
    return TaskSpec(
        workflow_id="kill",
        task_id=f"t{i:05d}",
        adapter=ScriptedAdapter.name,
        model="m",
        workspace=workspace,
        timeout_s=60.0,
        prompt="p",
        policy=POLICY,
    )


class Stopping(Sequence[TaskSpec]):
    """``tasks`` specs, made when read; the read at (``stop_pass``, ``stop_at``) hangs."""

    def __init__(self, workspace: Path, tasks: int, stop_pass: int, stop_at: int) -> None:
        self.workspace, self.tasks = workspace, tasks
        self.stop_pass, self.stop_at = stop_pass, stop_at
        self.passes = 0

    def __len__(self) -> int:
        return self.tasks

    @overload
    def __getitem__(self, index: int) -> TaskSpec: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[TaskSpec]: ...

    def __getitem__(self, index: int | slice) -> TaskSpec | Sequence[TaskSpec]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self.tasks))]
        if not 0 <= index < self.tasks:
            raise IndexError(index)
        return task_spec(self.workspace, index)

    def __iter__(self) -> Iterator[TaskSpec]:
        self.passes += 1
        for i in range(self.tasks):
            if (self.passes, i) == (self.stop_pass, self.stop_at):
                print("stopped", flush=True)
                time.sleep(HOLD_S)
                raise SystemExit("not killed")
            yield self[i]


def stop_at_window(size: int, window: int) -> None:
    """Redis: commit ``size`` tasks a window, and stop (as above) before window number
    ``window`` (from 1) is sent: ``STOP_WINDOW=size,window``."""
    from backstay.store.redis import _register_pages  # noqa: PLC0415 - only when asked

    commit = _register_pages._commit
    sent = 0

    def stopping(*args: Any, **kwargs: Any) -> Any:
        nonlocal sent
        sent += 1
        if sent == window:
            print("stopped", flush=True)
            time.sleep(HOLD_S)
            raise SystemExit("not killed")
        return commit(*args, **kwargs)

    _register_pages.WINDOW = size  # type: ignore[misc]
    _register_pages._commit = stopping  # type: ignore[assignment]


def main(state_dir: str, tasks: str, stop_pass: str, stop_at: str, url: str = "") -> int:
    if "STOP_WINDOW" in os.environ:
        size, window = (int(n) for n in os.environ["STOP_WINDOW"].split(","))
        stop_at_window(size, window)
    state = Path(state_dir)
    workspace = state.parent / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    adapter = ScriptedAdapter()
    options: dict[str, Any] = {"adapters": {adapter.name: adapter}, "env": {}}
    if url:
        options["stores"] = open_stores(parse_store(url), state_dir=state, secrets={})
    with Engine(state, **options) as engine:
        engine.run_sync(Stopping(workspace, int(tasks), int(stop_pass), int(stop_at)))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
