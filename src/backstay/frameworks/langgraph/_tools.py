"""The tool calls a LangGraph graph makes with its own ``ToolNode``s, through the gate.

A ``langgraph.prebuilt.ToolNode`` in the user's graph runs LangChain tools that are not
the kit's. For the run, each such node gets an ``awrap_tool_call`` (around its own, if it
has one) that sends every call of a tool not from ``kit.tools`` through
``ToolGate.invoke`` under the tool's name (allowlist, approvals, limits, cache) before
the tool runs (a node's sync-only ``wrap_tool_call`` is not called during the run: the
async path prefers the async wrapper). ``gate_tool_nodes`` returns what puts the nodes
back as they were.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from backstay.frameworks._common import require, tool_text

require("langgraph", "langgraph")

from langchain_core.messages import ToolMessage  # noqa: E402
from langgraph.prebuilt import ToolNode  # noqa: E402

__all__ = ["gate_tool_nodes"]

Execute = Callable[[Any], Awaitable[Any]]


def gate_tool_nodes(nodes: Iterable[Any], kit: Any) -> Callable[[], None]:
    """Gate every ``ToolNode`` among ``nodes`` (the runnables of a graph's builder)."""
    undo: list[tuple[ToolNode, Any]] = []
    for node in nodes:
        if isinstance(node, ToolNode):
            undo.append((node, node._awrap_tool_call))
            node._awrap_tool_call = _gated(kit, node._awrap_tool_call)

    def restore() -> None:
        for node, wrapper in undo:
            node._awrap_tool_call = wrapper

    return restore


def _gated(kit: Any, inner: Callable[[Any, Execute], Awaitable[Any]] | None) -> Any:
    async def wrapper(request: Any, execute: Execute) -> Any:
        if request.tool is None or any(request.tool is own for own in kit.tools):
            return await _call(inner, request, execute)
        call = request.tool_call
        commands: list[Any] = []

        async def own(arguments: dict[str, Any]) -> Any:
            out = await _call(
                inner, request.override(tool_call={**call, "args": arguments}), execute
            )
            if isinstance(out, ToolMessage):
                return out.content
            commands.append(out)
            return None

        kit.tool_calls += 1
        value = await kit.gate.invoke(call["name"], call["args"], run=own)
        if commands:
            return commands[0]
        return ToolMessage(content=tool_text(value), tool_call_id=call["id"], name=call["name"])

    return wrapper


async def _call(inner: Any, request: Any, execute: Execute) -> Any:
    return await (execute(request) if inner is None else inner(request, execute))
