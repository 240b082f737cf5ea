"""Where ``batch`` and ``resume`` drive their tasks: ``--executor local`` (the default: in
this process) or ``--executor ray`` (each run a Ray task; ``--ray-address`` joins an
existing cluster, else a local one is started for the batch)."""

from __future__ import annotations

import enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Final

import typer
from rich.console import Console
from rich.markup import escape

from backstay.cli._state import SOME_WAITING
from backstay.errors import ConfigError

if TYPE_CHECKING:
    from backstay.engine.executor import Executor


class ExecutorKind(enum.StrEnum):
    LOCAL = "local"
    RAY = "ray"


DEFAULT_EXECUTOR: Final = ExecutorKind.LOCAL

ExecutorOption = Annotated[
    ExecutorKind,
    typer.Option(
        "--executor",
        help="Where the runs are driven: local (this process) or ray (each run a task on "
        "a Ray cluster; needs the ray extra: pip install 'backstay[ray]').",
        case_sensitive=False,
    ),
]
RayAddressOption = Annotated[
    str | None,
    typer.Option(
        "--ray-address",
        envvar="RAY_ADDRESS",
        help="The Ray cluster to join (host:port of its head) with --executor ray; "
        "default: a local cluster on 127.0.0.1, started for the batch and stopped after.",
    ),
]


def executor_for(kind: ExecutorKind, ray_address: str | None) -> Executor | None:
    """The executor the flags name (``None``: the engine's own); ``ConfigError`` for a
    Ray address without ``--executor ray``."""
    if kind is ExecutorKind.LOCAL:
        if ray_address is not None:
            raise ConfigError("is only used with --executor ray", where="--ray-address")
        return None
    # Imported here: the executors package is light, ray itself is imported only to run.
    from backstay.executors import RayExecutor, RaySettings  # noqa: PLC0415
    from backstay.executors._ray_cluster import require_ray  # noqa: PLC0415

    require_ray()
    return RayExecutor(RaySettings(address=ray_address or None))


def left_for_resume(executor: Executor | None, state_dir: Path) -> None:
    """Name the tasks the executor left after losing their workers too often."""
    left: list[str] = list(getattr(executor, "left", ()))
    if not left:
        return
    Console(stderr=True, soft_wrap=True).print(
        escape(
            f"{len(left)} task(s) lost their worker too often and were left: "
            f"backstay resume --state-dir {state_dir} continues them ({', '.join(left)})"
        ),
        highlight=False,
    )


def cluster_lost(err: Exception, state_dir: Path) -> typer.Exit:
    """Say that the cluster went away and how to continue; the exit to raise (4: tasks
    wait)."""
    Console(stderr=True, soft_wrap=True).print(
        f"[bold red]error:[/] {escape(str(err))} (backstay resume --state-dir "
        f"{escape(str(state_dir))})",
        highlight=False,
    )
    return typer.Exit(SOME_WAITING)
