"""A LlamaIndex workflow for backstay: ``build(kit)`` returns the ``Workflow``.

Its steps reach the model (``kit.chat``) and the tools (``kit.call_tool``) only through
the kit, so every model call goes through backstay's model gate and every tool call
through its tool gate. A suite task names it as ``agent: notes_workflow:build`` (with
this folder on ``PYTHONPATH``).
"""

from __future__ import annotations

import json
from typing import Any

from workflows import Context, Workflow, step
from workflows.events import Event, StartEvent, StopEvent

SYSTEM = "You keep short notes in the workspace. Use write_file to save them."


class ToolCalls(Event):
    calls: list[dict[str, Any]]


class Ask(Event):
    pass


class NotesWorkflow(Workflow):
    def __init__(self, kit: Any) -> None:
        super().__init__(timeout=None)
        self.kit = kit

    @step
    async def start(self, ctx: Context, ev: StartEvent) -> Ask:
        messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": ev.task}]
        await ctx.store.set("messages", messages)
        return Ask()

    @step
    async def ask(self, ctx: Context, ev: Ask) -> ToolCalls | StopEvent:
        messages = await ctx.store.get("messages")
        reply = await self.kit.chat(messages)
        if not reply.tool_calls:
            return StopEvent(result=reply.content)
        messages.append(reply.model_dump(exclude_none=True))
        await ctx.store.set("messages", messages)
        calls = [
            {"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
            for c in reply.tool_calls
        ]
        return ToolCalls(calls=calls)

    @step
    async def use_tools(self, ctx: Context, ev: ToolCalls) -> Ask:
        messages = await ctx.store.get("messages")
        for call in ev.calls:
            result = await self.kit.call_tool(call["name"], json.loads(call["arguments"]))
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
        await ctx.store.set("messages", messages)
        return Ask()


def build(kit: Any) -> NotesWorkflow:
    return NotesWorkflow(kit)
