"""``gated``: a function of the user's own, called inside a framework's node or step,
through the run's ``ToolGate``.

A framework adapter sees the tools it is handed (the kit's, a LangGraph ``ToolNode``'s,
a Pydantic-AI agent's, an AutoGen ``AssistantAgent``'s), not a plain function a graph
node or a workflow step calls itself. Decorate such a function::

    @gated
    def send_mail(to: str, body: str) -> str: ...

    @gated(name="search")
    async def web_search(query: str) -> list[str]: ...

and ``await`` it in the node or step: each call goes through ``ToolGate.invoke`` under
the function's name (or ``name``), with its arguments as JSON (allowlist, approvals,
hard limits, loop detection, cache) before the function runs. A name not on the
allowlist is never invoked: the run ends escalated. The gate is the one of the run being
executed in the calling context (the runtime sets it around every run; tasks the
framework starts inherit it); called outside a run, a gated function raises
``SecurityViolation`` (``ERR_TOOL_NOT_ALLOWED``) and does not run. ``gate=`` binds one
explicitly (the kits' ``gated`` methods do).
"""

from __future__ import annotations

import contextvars
import functools
import inspect
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, overload

from backstay._checks import check_name
from backstay.runtime.errors import SecurityViolation

if TYPE_CHECKING:
    from backstay.runtime.toolgate import ToolGate

__all__ = ["current_tool_gate", "gated", "reset_tool_gate", "set_tool_gate"]

GatedFn = Callable[..., Awaitable[Any]]

_GATE: contextvars.ContextVar[ToolGate | None] = contextvars.ContextVar(
    "backstay_tool_gate", default=None
)


def current_tool_gate() -> ToolGate | None:
    """The tool gate of the run being executed in this context, if any."""
    return _GATE.get()


def set_tool_gate(gate: ToolGate | None) -> contextvars.Token[ToolGate | None]:
    return _GATE.set(gate)


def reset_tool_gate(token: contextvars.Token[ToolGate | None]) -> None:
    _GATE.reset(token)


def _wrap(fn: Callable[..., Any], name: str, gate: ToolGate | None) -> GatedFn:
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    async def call(*args: Any, **kwargs: Any) -> Any:
        found = gate if gate is not None else current_tool_gate()
        if found is None:
            raise SecurityViolation(
                f"tool {name!r} was called outside a backstay run", code="ERR_TOOL_NOT_ALLOWED"
            )
        arguments = dict(signature.bind(*args, **kwargs).arguments)

        async def run(given: dict[str, Any]) -> Any:
            value = fn(**given)
            return await value if inspect.isawaitable(value) else value

        return await found.invoke(name, arguments, run=run)

    return call


@overload
def gated(
    fn: Callable[..., Any], /, *, name: str | None = None, gate: ToolGate | None = None
) -> GatedFn: ...


@overload
def gated(
    *, name: str | None = None, gate: ToolGate | None = None
) -> Callable[[Callable[..., Any]], GatedFn]: ...


def gated(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    gate: ToolGate | None = None,
) -> GatedFn | Callable[[Callable[..., Any]], GatedFn]:
    """``fn`` as a coroutine function whose calls go through the run's ``ToolGate``
    under ``name`` (default: the function's name); see the module."""

    def decorate(target: Callable[..., Any]) -> GatedFn:
        tool = name or target.__name__
        check_name(tool, where="gated.name")
        return _wrap(target, tool, gate)

    return decorate if fn is None else decorate(fn)
