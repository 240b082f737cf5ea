"""One step's graph run: the stream, the checkpoint, and ``interrupt()`` as an approval.

The graph is compiled with an in-memory checkpointer, thread id ``<run_id>:<step_id>``.
After each super-step the thread's values (messages as LangChain's JSON) and the node
that wrote them are kept in the run's ``state`` (``Checkpoint``); a resumed run rebuilds
the thread from them (``update_state(as_node=…)``, ``__start__`` before the first node).

A node calling LangGraph's ``interrupt(request)`` asks a human. The stream stops with
the interrupt; the request becomes a durable approval of the run (tool ``interrupt``,
arguments the request, or ``{"value": request}`` when it is not a mapping) through
``ToolGate.ask`` and the run pauses (no process waits). Once a decision is recorded
(``backstay escalations resolve ID --approve | --reject | --edit JSON``), ``resume``
rebuilds the thread, the node runs again, and its ``interrupt()`` returns the decision
through ``Command(resume=…)``: ``{"type": "approve"}``, ``{"type": "edit", "args": {…}}``
or ``{"type": "reject", "reason": "…"}`` (``HumanDecision.to_dict``). Several
``interrupt()`` calls in one node are answered in order: the checkpoint lists the
node's interrupts until the node completes.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any, Final

from backstay.frameworks._common import Checkpoint, require
from backstay.runtime.context import ExecutionContext
from backstay.runtime.errors import LimitExceeded
from backstay.runtime.limits import LimitBreach, LimitName
from backstay.runtime.plan import Step
from backstay.runtime.toolgate import ToolGate, call_key

require("langgraph", "langgraph")

from langchain_core.load import dumpd, load  # noqa: E402
from langgraph.types import Command  # noqa: E402

__all__ = ["INTERRUPT_TOOL", "run_graph"]

INTERRUPT_TOOL: Final = "interrupt"
START_NODE: Final = "__start__"
# Interrupts answered in one step before the graph must have finished (a graph asking
# without end is stopped by this, as a cycling graph is by its recursion limit).
_MAX_INTERRUPTS: Final = 64


def _revive(data: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load(data, allowed_objects="messages")


def _values(chunk: Mapping[str, Any]) -> dict[str, Any]:
    """The state's channels, without LangGraph's own (``__interrupt__``)."""
    return {k: v for k, v in chunk.items() if not k.startswith("__")}


def _request(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {"value": value}


async def run_graph(
    graph: Any,
    run_config: Any,
    step: Step,
    *,
    tools: ToolGate,
    context: ExecutionContext,
    start: Any,
    framework: str,
) -> None:
    """Run ``graph`` (compiled) for ``step`` to its end: from its checkpoint if the run
    has one, else from ``start``; every ``interrupt()`` answered by a human decision."""
    checkpoint = Checkpoint(context, framework, step)
    saved = checkpoint.load()
    command: Any = start
    if saved:
        await graph.aupdate_state(run_config, _revive(saved["values"]), as_node=saved["node"])
        command = None
    answered = 0  # the interrupts of the current node answered in this process
    for _ in range(_MAX_INTERRUPTS):
        request, advanced = await _stream(graph, command, run_config, checkpoint)
        if request is None:
            return
        if advanced:
            answered = 0
        current = checkpoint.load() or {}
        asked = list(current.get("interrupts", ()))
        if answered < len(asked):
            key = asked[answered]["key"]
        else:
            key = call_key(
                INTERRUPT_TOOL,
                {"step": step.id, "at": current.get("values"), "n": len(asked), "ask": request},
            )
            asked.append({"key": key})
            checkpoint.save({**current, "interrupts": asked})
        answered += 1
        decision = tools.ask(INTERRUPT_TOOL, request, key=key)
        command = Command(resume=decision.to_dict())
    breach = LimitBreach(limit=LimitName.LOOP, allowed=_MAX_INTERRUPTS, reached=_MAX_INTERRUPTS + 1)
    raise context.halt(LimitExceeded(breach))


async def _stream(
    graph: Any, command: Any, run_config: Any, checkpoint: Checkpoint
) -> tuple[dict[str, Any] | None, bool]:
    """Stream until the graph ends or a node interrupts: the interrupt's request (or
    ``None``), and whether a super-step completed (a new checkpoint, no interrupts of
    its node yet)."""
    node: str | None = None
    request: dict[str, Any] | None = None
    advanced = False
    stream: Any = graph.astream(command, run_config, stream_mode=["updates", "values"])
    async for mode, chunk in stream:
        if mode == "updates":
            if "__interrupt__" in chunk:
                request = _request(chunk["__interrupt__"][0].value)
            node = next((n for n in chunk if not n.startswith("__")), node)
        elif request is not None:  # the state the interrupted node started from: kept
            continue
        elif node is not None:  # the state after a super-step: the checkpoint
            checkpoint.save({"values": dumpd(_values(chunk)), "node": node})
            advanced = True
        elif checkpoint.load() is None:  # the input, before the first node
            checkpoint.save({"values": dumpd(_values(chunk)), "node": START_NODE})
    return request, advanced
