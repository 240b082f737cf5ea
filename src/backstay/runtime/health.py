"""``health_check``: whether a runtime can do its job here and now.

* **adapters**: the adapter and its fallback implement the protocol, and each one's own
  ``available()`` (an optional method: its framework importable, its model reachable)
  says yes;
* **limits enforced**: a tracker built from the runtime's limits refuses a step past
  ``max_steps`` and a call past the wall time (the check the gates make, run on the spot);
* **sandbox**: what isolates the shell tool (bubblewrap, unshare) or ``None``, and
  whether it holds (``sandbox_holds``: bubblewrap only; ``unshare`` isolates the network
  only) — a registered ``shell`` tool without a sandbox that holds is a problem;
* **trace exporter**: ``exporter_probe()`` when given (an OpenTelemetry collector's health
  endpoint …), else whether any sink on the event bus takes the runtime's events.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from backstay.events import BUS
from backstay.runtime.limits import LimitTracker
from backstay.runtime.protocol import FrameworkAdapter
from backstay.runtime.sandbox import sandbox_holds, sandbox_kind

if TYPE_CHECKING:
    from backstay.runtime.runtime import Runtime

__all__ = ["HealthReport", "health_check"]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class HealthReport:
    adapters: Mapping[str, bool]
    limits_enforced: bool
    sandbox: str | None
    trace_exporter_reachable: bool
    sandbox_holds: bool = False
    problems: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        """The report; ``status``, ``sandbox_available`` and ``trace_collector`` are the
        agent adapter interface's names (``healthy`` / ``unhealthy``, whether a sandbox
        that holds is here, whether the trace exporter is reachable)."""
        return {
            "status": "healthy" if self.ok else "unhealthy",
            "ok": self.ok,
            "adapters": dict(self.adapters),
            "limits_enforced": self.limits_enforced,
            "sandbox": self.sandbox,
            "sandbox_holds": self.sandbox_holds,
            "trace_exporter_reachable": self.trace_exporter_reachable,
            "sandbox_available": self.sandbox_holds,
            "trace_collector": self.trace_exporter_reachable,
            "problems": list(self.problems),
        }

    def __getitem__(self, key: str) -> Any:
        """``report["status"]`` …: the report read as the dictionary the interface prints."""
        return self.to_dict()[key]


def _available(adapter: object) -> bool:
    if not isinstance(adapter, FrameworkAdapter):
        return False
    probe = getattr(adapter, "available", None) or getattr(adapter, "is_available", None)
    if probe is None:
        return True
    try:
        return bool(probe())
    except Exception:  # noqa: BLE001 - a failing probe means not available
        return False


def _limits_enforced(runtime: Runtime) -> bool:
    limits = runtime.settings.limits
    tracker = LimitTracker(limits, started=0.0)
    tracker.steps = limits.max_steps
    past_steps = tracker.check_before(0.0, call="step") is not None
    late = LimitTracker(limits, started=0.0).check_before(limits.wall_time_s, call="model")
    return past_steps and late is not None


def health_check(
    runtime: Runtime,
    *,
    exporter_probe: Callable[[], bool] | None = None,
    needs_sandbox: bool | None = None,
) -> HealthReport:
    """The report (see the module). ``needs_sandbox`` (default: whether a ``shell`` tool
    is registered, or a ``SecurityConfig`` asks for the sandbox) makes a missing
    sandbox, or one that does not hold, a problem."""
    adapters = {runtime.adapter.name: _available(runtime.adapter)}
    if runtime.fallback is not None:
        adapters[f"fallback:{runtime.fallback.name}"] = _available(runtime.fallback)
    enforced = _limits_enforced(runtime)
    kind = sandbox_kind()
    holds = sandbox_holds()
    if exporter_probe is not None:
        try:
            exporter = bool(exporter_probe())
        except Exception:  # noqa: BLE001 - an unreachable exporter is a finding, not a crash
            exporter = False
    else:
        exporter = BUS.wants(logging.INFO)
    problems = [f"adapter {name} is not available" for name, ok in adapters.items() if ok is False]
    if not enforced:
        problems.append("the limits are not enforced")
    security = runtime.settings.security
    if needs_sandbox is None:
        needs_sandbox = "shell" in runtime.tools or (security is not None and security.sandbox)
    if needs_sandbox and not holds:
        problems.append(
            "no sandbox for the shell tool (install bubblewrap)"
            if kind is None
            else f"the shell tool's sandbox ({kind}) isolates the network only (install bubblewrap)"
        )
    if not exporter:
        problems.append("no trace exporter takes the runtime's events")
    return HealthReport(
        adapters=adapters,
        limits_enforced=enforced,
        sandbox=kind,
        sandbox_holds=holds,
        trace_exporter_reachable=exporter,
        problems=tuple(problems),
    )
