"""The adapter contract: what an adapter is given, what it returns, what it may raise.

An adapter runs one *attempt* of agent work: an agent CLI run or an LLM API call.
``dispatch`` returns a succeeded ``AgentResult`` or raises ``AdapterError`` carrying the
classified ``Failure`` (and any partial output); nothing else escapes it, except
cancellation. Retrying is never the adapter's business: the caller's policy decides from
the ``Failure``. ``AgentResult`` with status ``failed`` or ``timeout`` is the record a
harness keeps of a run that did not succeed (``BaseAdapter.arun``).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, Protocol, runtime_checkable

from backstay._checks import check_launcher, check_name, check_number
from backstay.adapters.session import SessionPlan
from backstay.adapters.usage import Usage
from backstay.errors import ConfigError
from backstay.failure import Failure
from backstay.redact import redact
from backstay.taxonomy import FailureKind

if TYPE_CHECKING:
    from backstay.adapters.capture import Capture
    from backstay.store.location import StoreLocation

__all__ = [
    "TIMEOUT_EXIT_CODE",
    "Adapter",
    "AgentRequest",
    "AgentResult",
    "AgentStatus",
    "TierConfig",
    "Usage",
]

# The exit code of a run killed at its deadline or stall limit (as ``timeout(1)`` reports).
TIMEOUT_EXIT_CODE: Final = 124


def _frozen_strings(value: object, where: str) -> Mapping[str, str]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"must be a mapping of strings, got {type(value).__name__}", where=where)
    for key, item in value.items():
        if not isinstance(key, str) or not isinstance(item, str):
            raise ConfigError("names and values must be strings", where=f"{where}[{key!r}]")
    return MappingProxyType(dict(value))


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class TierConfig:
    """An evaluation tier: the system prompt and the tools an agent runs with.

    ``allowed_tools`` ``None`` means every tool the agent has (when ``tools_enabled``);
    naming tools while tools are disabled is a contradiction and is rejected.
    """

    tier_id: str
    tier_name: str = ""
    system_prompt: str | None = None
    tools_enabled: bool = True
    delegation_enabled: bool = False
    allowed_tools: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        check_name(self.tier_id, where="tier.tier_id")
        if not isinstance(self.tier_name, str):
            raise ConfigError(f"must be a string, got {self.tier_name!r}", where="tier.tier_name")
        if self.system_prompt is not None and not isinstance(self.system_prompt, str):
            raise ConfigError("must be a string or None", where="tier.system_prompt")
        for name in ("tools_enabled", "delegation_enabled"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(
                    f"must be true or false, got {getattr(self, name)!r}", where=f"tier.{name}"
                )
        allowed: object = self.allowed_tools
        if allowed is not None:
            if isinstance(allowed, str) or not isinstance(allowed, Iterable):
                raise ConfigError("must be a list of tool names", where="tier.allowed_tools")
            tools = tuple(allowed)
            for i, tool in enumerate(tools):
                check_name(tool, where=f"tier.allowed_tools[{i}]")
            if not self.tools_enabled:
                raise ConfigError(
                    "names tools while tools_enabled is false", where="tier.allowed_tools"
                )
            object.__setattr__(self, "allowed_tools", tools)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class AgentRequest:
    """One unit of agent work, as every adapter receives it.

    Exactly one of ``prompt`` (text) and ``prompt_file`` is given; ``read_prompt()``
    returns the text either way. ``env`` is the child's whole environment: nothing is
    inherited that is not in it (and it is left out of ``repr``). ``config`` holds the
    adapter's own settings, checked by its ``validate_config``. ``stall_timeout_s`` kills
    a run that prints nothing for that long (many CLIs never notice a stalled stream).
    ``launcher`` is a command prefix every process of the attempt starts under (such as
    ``("nsenter", "-t", PID, "-n", "--")`` to run it in a network namespace; see
    ``backstay.adapters.cli.process``); empty by default. ``tenant`` names whose work it is
    (the task's ``tenant``), ``None`` when nobody said. ``store`` is where the batch the
    attempt belongs to keeps its records (the engine sets it; ``None`` outside an
    engine): an adapter that records state of its own, such as the agent runtime's
    checkpoints, keeps it there and nowhere else. It may hold a Redis password, so it is
    left out of ``repr``. ``session`` (a CLI adapter's) gives the attempt a private home
    kept across the task's attempts and, with ``resume_id``, the CLI session to continue
    (``backstay.adapters.session``); ``None``: a fresh home removed afterwards.
    """

    model: str
    workspace: Path
    output_dir: Path
    timeout_s: float
    prompt: str | None = None
    prompt_file: Path | None = None
    env: Mapping[str, str] = dataclasses.field(default_factory=dict, repr=False)
    tier: TierConfig | None = None
    config: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    stall_timeout_s: float | None = None
    launcher: tuple[str, ...] = ()
    tenant: str | None = None
    store: StoreLocation | None = dataclasses.field(default=None, repr=False)
    session: SessionPlan | None = None

    def __post_init__(self) -> None:
        check_name(self.model, where="model")
        if self.session is not None and not isinstance(self.session, SessionPlan):
            raise ConfigError(
                f"must be a SessionPlan, got {type(self.session).__name__}", where="session"
            )
        if self.tenant is not None:
            check_name(self.tenant, where="tenant")
        if (self.prompt is None) == (self.prompt_file is None):
            raise ConfigError("give exactly one of prompt and prompt_file", where="prompt")
        if self.prompt is not None and not isinstance(self.prompt, str):
            raise ConfigError(f"must be a string, got {type(self.prompt).__name__}", where="prompt")
        for name in ("workspace", "output_dir", "prompt_file"):
            value = getattr(self, name)
            if value is None:
                continue
            if not isinstance(value, str | Path) or not str(value):
                raise ConfigError(f"must be a path, got {value!r}", where=name)
            object.__setattr__(self, name, Path(value))
        check_number(self.timeout_s, where="timeout_s", above=True)
        if self.stall_timeout_s is not None:
            check_number(self.stall_timeout_s, where="stall_timeout_s", above=True)
        object.__setattr__(self, "env", _frozen_strings(self.env, "env"))
        if not isinstance(self.config, Mapping):
            raise ConfigError(
                f"must be a mapping, got {type(self.config).__name__}", where="config"
            )
        object.__setattr__(self, "config", MappingProxyType(dict(self.config)))
        if self.tier is not None and not isinstance(self.tier, TierConfig):
            raise ConfigError(f"must be a TierConfig, got {type(self.tier).__name__}", where="tier")
        object.__setattr__(self, "launcher", check_launcher(self.launcher, where="launcher"))

    def read_prompt(self) -> str:
        """The prompt text; ``ConfigError`` naming ``prompt_file`` when it cannot be read."""
        if self.prompt is not None:
            return self.prompt
        assert self.prompt_file is not None  # noqa: S101 - exactly one is set
        try:
            return self.prompt_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot be read: {exc}", where="prompt_file") from exc


class AgentStatus(enum.StrEnum):
    """How an attempt or a run ended."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    TIMEOUT = "timeout"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class AgentResult:
    """What an attempt or a run produced. ``output`` (the agent's answer) is redacted on
    creation. ``failure`` is ``None`` exactly when the status is ``succeeded``; the status
    is ``timeout`` exactly when the failure is of kind ``timeout``."""

    status: AgentStatus
    output: str = ""
    usage: Usage = dataclasses.field(default_factory=Usage)
    exit_code: int | None = None
    duration_s: float = 0.0
    artefacts: tuple[Path, ...] = ()
    failure: Failure | None = None

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "status", AgentStatus(self.status))
        except ValueError:
            raise ConfigError(
                f"must be one of {[s.value for s in AgentStatus]}", where="status"
            ) from None
        if not isinstance(self.usage, Usage):
            raise ConfigError(f"must be a Usage, got {type(self.usage).__name__}", where="usage")
        check_number(self.duration_s, where="duration_s")
        if self.exit_code is not None and (
            isinstance(self.exit_code, bool) or not isinstance(self.exit_code, int)
        ):
            raise ConfigError(
                f"must be an integer or None, got {self.exit_code!r}", where="exit_code"
            )
        if self.failure is not None and not isinstance(self.failure, Failure):
            raise ConfigError(
                f"must be a Failure, got {type(self.failure).__name__}", where="failure"
            )
        succeeded = self.status is AgentStatus.SUCCEEDED
        if succeeded != (self.failure is None):
            raise ConfigError(
                f"a {self.status} result {'has no' if succeeded else 'needs a'} failure",
                where="failure",
            )
        if self.failure is not None:
            timed_out = self.failure.kind is FailureKind.TIMEOUT
            if timed_out != (self.status is AgentStatus.TIMEOUT):
                raise ConfigError(
                    f"status {self.status} does not fit a {self.failure.kind} failure",
                    where="status",
                )
        object.__setattr__(self, "output", redact(self.output))
        object.__setattr__(self, "artefacts", tuple(Path(p) for p in self.artefacts))

    @classmethod
    def failed(
        cls,
        failure: Failure,
        *,
        output: str = "",
        usage: Usage | None = None,
        exit_code: int | None = None,
        duration_s: float = 0.0,
        artefacts: tuple[Path, ...] = (),
    ) -> AgentResult:
        """A result for ``failure``: status ``timeout`` for a timeout, else ``failed``."""
        timed_out = failure.kind is FailureKind.TIMEOUT
        return cls(
            status=AgentStatus.TIMEOUT if timed_out else AgentStatus.FAILED,
            output=output,
            usage=usage or Usage(),
            exit_code=exit_code,
            duration_s=duration_s,
            artefacts=artefacts,
            failure=failure,
        )

    @property
    def exit_status(self) -> int:
        """The exit code a harness reports: 0 on success, 124 on timeout, else the agent's
        own non-zero exit code, or 1 when it had none (an API call, an agent exiting 0)."""
        if self.status is AgentStatus.SUCCEEDED:
            return 0
        if self.status is AgentStatus.TIMEOUT:
            return TIMEOUT_EXIT_CODE
        return self.exit_code if self.exit_code else 1


@runtime_checkable
class Adapter(Protocol):
    """What the engine and the harness need from an adapter.

    * ``name``: the registry name (``"mock"``, ``"claude-code"``).
    * ``dispatch``: run one attempt; return a succeeded ``AgentResult`` or raise
      ``AdapterError`` (with its ``Failure`` and any partial output). Never retries, never
      raises anything else (cancellation excepted), and leaves no process behind.
    * ``validate_config``: check the adapter's own settings (``AgentRequest.config``);
      ``True`` when they are valid, else ``ConfigError`` (a ``ValueError``) naming the
      key that is wrong.
    * ``classify_failure``: the ``Failure`` an attempt shows, from an exception raised
      while dispatching (``error``), else from the agent's output and exit code; ``None``
      when they show success.
    """

    @property
    def name(self) -> str: ...

    async def dispatch(
        self,
        request: AgentRequest,
        *,
        operation_id: str,
        attempt_id: str,
        capture: Capture,
    ) -> AgentResult: ...

    def validate_config(self, config: Mapping[str, Any]) -> bool: ...

    def classify_failure(
        self,
        *,
        output: str = "",
        exit_code: int | None = None,
        error: BaseException | None = None,
    ) -> Failure | None: ...
