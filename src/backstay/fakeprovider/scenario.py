"""``Scenario``: everything the fake provider does besides speaking the wire formats —
what it answers (``Reply``, or a scripted multi-turn ``Session``), which failures it
injects (``Fault``) and the rate limit it enforces (``RateLimit``). Frozen and validated;
``load_scenario`` reads one from YAML; ``Scenario.shell_session`` builds the common
session of N shell steps appending to one file, with faults at chosen turns.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

from backstay._checks import check_name, check_number
from backstay.errors import ConfigError
from backstay.fakeprovider.faults import Fault, FaultKind
from backstay.fakeprovider.session import DEFAULT_FINAL, Session, Turn

__all__ = ["RateLimit", "Reply", "Scenario", "ToolCall"]

DEFAULT_SESSION_FILE: Final = "progress.txt"
# A relative path without "..": safe to write into a shell command line.
_PLAIN_FILE: Final = re.compile(r"(?!/)(?!.*\.\.)[A-Za-z0-9._/-]+")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """A call of the tool ``name`` with JSON ``arguments``, made when the request offers
    a tool of that name and holds no tool result yet."""

    name: str
    arguments: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        check_name(self.name, where="tool_call.name")
        if not isinstance(self.arguments, Mapping):
            raise ConfigError(
                f"must be a mapping, got {self.arguments!r}", where="tool_call.arguments"
            )
        try:
            json.dumps(dict(self.arguments))
        except (TypeError, ValueError) as err:
            raise ConfigError(f"must be JSON: {err}", where="tool_call.arguments") from None
        object.__setattr__(self, "arguments", MappingProxyType(dict(self.arguments)))


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    """What the model answers: ``text`` (``None``: derived from the prompt) and, first,
    an optional ``tool_call``."""

    text: str | None = None
    tool_call: ToolCall | None = None

    def __post_init__(self) -> None:
        if self.text is not None and not isinstance(self.text, str):
            raise ConfigError(f"must be a string, got {self.text!r}", where="reply.text")
        if self.tool_call is not None and not isinstance(self.tool_call, ToolCall):
            raise ConfigError(
                f"must be a ToolCall, got {self.tool_call!r}", where="reply.tool_call"
            )


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RateLimit:
    """An enforced limit: requests and/or tokens per minute (``None``: not limited)."""

    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None

    def __post_init__(self) -> None:
        for name in ("requests_per_minute", "tokens_per_minute"):
            value = getattr(self, name)
            if value is not None:
                check_number(value, where=f"rate_limit.{name}", minimum=1, integer=True)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Scenario:
    """The faults (checked in order, the first that applies wins), the reply, the
    scripted ``session`` (it answers the requests that offer a shell tool; ``reply`` the
    others), the enforced rate limit, and the ``seed`` of probability faults."""

    faults: tuple[Fault, ...] = ()
    reply: Reply = Reply()
    session: Session | None = None
    rate_limit: RateLimit | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.faults, tuple) or not all(isinstance(f, Fault) for f in self.faults):
            raise ConfigError("must be a tuple of Fault", where="faults")
        if not isinstance(self.reply, Reply):
            raise ConfigError(f"must be a Reply, got {self.reply!r}", where="reply")
        if self.session is not None and not isinstance(self.session, Session):
            raise ConfigError(f"must be a Session, got {self.session!r}", where="session")
        if self.rate_limit is not None and not isinstance(self.rate_limit, RateLimit):
            raise ConfigError(f"must be a RateLimit, got {self.rate_limit!r}", where="rate_limit")
        check_number(self.seed, where="seed", minimum=-(2**63), integer=True)

    def with_faults(self, *faults: Fault) -> Scenario:
        """This scenario with ``faults`` appended."""
        return dataclasses.replace(self, faults=(*self.faults, *faults))

    @classmethod
    def shell_session(
        cls,
        n_turns: int,
        *,
        file: str = DEFAULT_SESSION_FILE,
        faults: Mapping[int, Fault | FaultKind | str] | None = None,
        final: str = DEFAULT_FINAL,
        seed: int = 0,
    ) -> Scenario:
        """A session of ``n_turns`` shell calls, turn *i* running
        ``echo step-<i> >> <file>``, then the ``final`` text.

        ``faults`` maps a turn (1 … ``n_turns + 1``, the last one being the request
        answered with the final text) to a fault for the first request at that turn: a
        fault name, a ``FaultKind``, or a ``Fault`` without a selector (or with this
        ``turn``; its ``times`` says how many requests at the turn fail). ``file`` is a
        plain relative file name."""
        check_number(n_turns, where="shell_session.n_turns", minimum=1, integer=True)
        if not isinstance(file, str) or not _PLAIN_FILE.fullmatch(file):
            raise ConfigError(
                f"must be a relative file name of letters, digits, '.', '_', '-' and '/', "
                f"got {file!r}",
                where="shell_session.file",
            )
        turns = tuple(
            # A command line the agent is asked to run, never run here.
            Turn(shell=f"echo step-{i} >> {shlex.quote(file)}")  # noqa: S604
            for i in range(1, n_turns + 1)
        )
        if faults is not None and not isinstance(faults, Mapping):
            raise ConfigError(
                f"must be a mapping of turn to fault, got {faults!r}", where="shell_session.faults"
            )
        scripted = sorted(
            (_turn_fault(turn, spec, n_turns) for turn, spec in (faults or {}).items()),
            key=lambda fault: fault.turn or 0,
        )
        return cls(faults=tuple(scripted), session=Session(turns=turns, final=final), seed=seed)


def _turn_fault(turn: object, spec: Fault | FaultKind | str, n_turns: int) -> Fault:
    where = f"shell_session.faults[{turn!r}]"
    if isinstance(turn, bool) or not isinstance(turn, int) or not 1 <= turn <= n_turns + 1:
        raise ConfigError(f"must be a turn from 1 to {n_turns + 1}, got {turn!r}", where=where)
    if isinstance(spec, Fault):
        if (
            spec.turn not in (None, turn)
            or any(v is not None for v in (spec.first, spec.probability, spec.outage))
            or spec.requests
        ):
            raise ConfigError(
                "must be a Fault without a selector: the turn selects it", where=where
            )
        return dataclasses.replace(spec, turn=turn)
    if spec not in tuple(FaultKind):
        raise ConfigError(
            f"must be a Fault or one of {', '.join(FaultKind)}, got {spec!r}", where=where
        )
    return Fault(kind=FaultKind(spec), turn=turn)
