"""What an AutoGen agent does on its own, through backstay's gates: the user's own tools
and the human in the loop.

* **Own tools.** Every ``AssistantAgent`` of the agent (the agent itself, or each
  participant of a team) has the tools it was given (``tools=[fn]``, ``FunctionTool``s,
  a static workbench) wrapped for the run: each call goes through ``ToolGate.invoke``
  under the tool's name (allowlist, approvals, limits, cache) before the function runs.
  A tool not on the allowlist is never invoked; the run ends escalated.
* **A user proxy.** Every ``UserProxyAgent`` gets ``HumanInput`` as its ``input_func``:
  the prompt becomes a durable approval of the run (tool ``user``) through
  ``ToolGate.ask`` and the run pauses; on ``resume`` the same request finds the human's
  decision and the proxy says ``decision_text(decision)``.
* **A hand-off to the user.** A run that stops on a ``HandoffMessage`` to a target that
  is none of its agents (``handoffs=["user"]``) asks the same way (tool ``user``,
  arguments ``{"handoff_to", "from", "content"}``); once decided, the agent runs on with
  the human's ``HandoffMessage`` back to it.

``decision_text``: an edit's ``answer`` (or its arguments as JSON), else ``approved`` or
``rejected``, with the reason after a colon when one was given.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any, Final

from backstay.frameworks._common import Checkpoint, require
from backstay.runtime.errors import SecurityViolation
from backstay.runtime.records import ApprovalStatus, HumanDecision
from backstay.runtime.toolgate import ToolGate, call_key

require("autogen_agentchat", "autogen")

from autogen_agentchat.agents import AssistantAgent, UserProxyAgent  # noqa: E402
from autogen_agentchat.messages import HandoffMessage  # noqa: E402
from autogen_core import CancellationToken  # noqa: E402
from autogen_core.tools import BaseTool, StaticWorkbench, ToolSchema  # noqa: E402
from pydantic import BaseModel  # noqa: E402

__all__ = ["USER_TOOL", "GatedOwnTool", "HumanInput", "decision_text", "gate_agent"]

USER_TOOL: Final = "user"


def decision_text(decision: HumanDecision) -> str:
    """What the human says to the agent (see the module)."""
    edited = decision.edited
    if decision.status is ApprovalStatus.EDITED and edited is not None:
        answer = edited.get("answer", edited) if isinstance(edited, Mapping) else edited
        text = answer if isinstance(answer, str) else json.dumps(answer, sort_keys=True)
    else:
        text = str(decision.status)
    return f"{text}: {decision.note}" if decision.note else text


def agents_of(agent: Any) -> Iterator[Any]:
    """``agent`` and, for a team, its participants (nested teams included)."""
    yield agent
    for participant in getattr(agent, "_participants", None) or ():
        yield from agents_of(participant)


class _Arguments(BaseModel):
    model_config = {"extra": "allow"}


class GatedOwnTool(BaseTool[_Arguments, Any]):
    """A tool the user gave an ``AssistantAgent``, its calls through the ``ToolGate``."""

    def __init__(self, inner: BaseTool[Any, Any], gate: ToolGate, counter: Any) -> None:
        super().__init__(_Arguments, str, inner.name, inner.description)
        self.inner = inner
        self._gate = gate
        self._counter = counter

    @property
    def schema(self) -> ToolSchema:
        return self.inner.schema

    def return_value_as_string(self, value: Any) -> str:
        return self.inner.return_value_as_string(value)

    async def run(self, args: _Arguments, cancellation_token: CancellationToken) -> Any:
        return await self.run_json(args.model_dump(), cancellation_token)

    async def run_json(
        self,
        args: Mapping[str, Any],
        cancellation_token: CancellationToken,
        call_id: str | None = None,
    ) -> Any:
        async def own(arguments: dict[str, Any]) -> Any:
            return await self.inner.run_json(arguments, cancellation_token, call_id=call_id)

        self._counter.tool_calls += 1
        return await self._gate.invoke(self.name, dict(args), run=own)


class HumanInput:
    """The run's human, asked through the gate; how many requests of the step were
    answered is kept beside the agent's checkpoint, so a resumed run asks the same
    request (the same approval) again."""

    def __init__(self, gate: ToolGate, checkpoint: Checkpoint, step_id: str) -> None:
        self._gate = gate
        self._checkpoint = checkpoint
        self._step_id = step_id
        saved = checkpoint.load() or {}
        self.answered: int = saved.get("answered", 0)
        self.handoff: dict[str, Any] | None = saved.get("handoff")

    def ask(self, request: Mapping[str, Any]) -> HumanDecision:
        key = call_key(USER_TOOL, {"step": self._step_id, "n": self.answered, "ask": request})
        decision = self._gate.ask(USER_TOOL, request, key=key)
        self.answered += 1
        self.save()
        return decision

    def save(self) -> None:
        self._checkpoint.save({"answered": self.answered, "handoff": self.handoff})

    def clear(self) -> None:
        self._checkpoint.clear()

    async def __call__(self, prompt: str, cancellation_token: CancellationToken | None) -> str:
        return decision_text(self.ask({"prompt": prompt}))

    def answer_handoff(self, message: HandoffMessage | None) -> HandoffMessage | None:
        """The human's answer to a hand-off to the user (``message``, or the one pending
        from before a pause): ``None`` when there is nothing to answer."""
        if message is not None:
            self.handoff = {"handoff_to": message.target, "from": message.source}
            self.handoff["content"] = message.content
            self.save()
        if self.handoff is None:
            return None
        decision = self.ask(self.handoff)
        back = HandoffMessage(
            source=self.handoff["handoff_to"],
            target=self.handoff["from"],
            content=decision_text(decision),
        )
        self.handoff = None
        self.save()
        return back


def gate_agent(agent: Any, *, gate: ToolGate, kit: Any, human: HumanInput) -> set[str]:
    """Wrap the own tools and set the input of every agent of ``agent`` (see the module);
    the names of its agents."""
    kit_tools = {id(tool) for tool in kit.tools}
    names: set[str] = set()
    for each in agents_of(agent):
        names.add(str(getattr(each, "name", "")))
        if isinstance(each, UserProxyAgent):
            each.input_func = human
            each._is_async = True
        if isinstance(each, AssistantAgent):
            for bench in getattr(each, "_workbench", None) or ():
                if not isinstance(bench, StaticWorkbench):
                    # Its tools (an MCP server's, say) would run without the allowlist.
                    raise SecurityViolation(
                        f"agent {getattr(each, 'name', '?')!r} has a {type(bench).__name__}, "
                        "whose tools backstay cannot gate: give the agent its tools as a "
                        "list (tools=[...]) or a StaticWorkbench",
                        code="ERR_TOOL_NOT_ALLOWED",
                    )
                if isinstance(bench, StaticWorkbench):
                    bench._tools = [
                        t
                        if id(t) in kit_tools or isinstance(t, GatedOwnTool)
                        else GatedOwnTool(t, gate, kit)
                        for t in bench._tools
                    ]
    return names
