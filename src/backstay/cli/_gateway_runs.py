"""The gateway of ``backstay run`` / ``batch`` / ``resume``: when any of their adapters
drives an agent CLI (it declares a ``gateway_wiring``), one gateway is started in this
process (on a thread of its own, a free port of 127.0.0.1) for their whole run, every
attempt of those adapters goes through it with a run token of its own as its key
(``backstay.adapters.gateway_wiring``), and it is stopped at the end. ``--no-gateway``
sends the agents straight to their providers."""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Iterable, Iterator
from typing import Annotated, Final

import typer

from backstay.adapters.gateway_wiring import use_gateway
from backstay.adapters.registry import adapter_class
from backstay.errors import ConfigError


def _say(text: str) -> None:
    from rich.console import Console  # noqa: PLC0415 - only to say this
    from rich.markup import escape  # noqa: PLC0415

    Console(stderr=True, soft_wrap=True).print(escape(text), highlight=False)


__all__ = ["DEFAULT_DEADLINE_S", "NoGatewayOption", "agent_gateway", "wired"]

# When the gateway's policy has no deadline, what a CLI's request timeout is raised above.
DEFAULT_DEADLINE_S: Final = 900.0

NoGatewayOption = Annotated[
    bool,
    typer.Option(
        "--no-gateway",
        help="Send agent CLIs straight to their providers instead of through a backstay "
        "gateway started for the run (each attempt with a token of its own as its key; "
        "docs/gateway.md, Agent runs).",
    ),
]


def wired(adapters: Iterable[str]) -> list[str]:
    """Those of ``adapters`` whose agent CLI can be pointed at a gateway."""
    found = []
    for name in adapters:
        try:
            cls = adapter_class(name)
        except ConfigError:
            continue
        if getattr(cls, "gateway_wiring", None) is not None:
            found.append(name)
    return found


@contextlib.contextmanager
def agent_gateway(adapters: Iterable[str], *, enabled: bool = True) -> Iterator[str | None]:
    """A gateway for the agent runs of ``adapters`` while the block runs (its URL), or
    nothing (``None``) when none of them drives an agent CLI or ``enabled`` is false."""
    if not enabled or not wired(adapters):
        yield None
        return
    if importlib.util.find_spec("aiohttp") is None:
        _say(
            "backstay: agent CLIs go straight to their providers: the gateway needs aiohttp "
            "(pip install 'backstay[gateway]'; --no-gateway says so)"
        )
        yield None
        return
    # Imported here: the gateway (and aiohttp) loads only for runs of agent CLIs.
    from backstay.gateway import Gateway, GatewaySettings  # noqa: PLC0415
    from backstay.gateway.runs import LocalRunGateway, RunTokens  # noqa: PLC0415

    runs = RunTokens()
    settings = GatewaySettings(port=0)
    deadline = settings.policy.deadline_s or DEFAULT_DEADLINE_S
    with (
        Gateway(settings, runs=runs) as gateway,
        use_gateway(LocalRunGateway(gateway.url, runs, deadline)),
    ):
        yield gateway.url
