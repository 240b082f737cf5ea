"""A LangGraph agent for backstay: ``build(kit)`` returns the graph (uncompiled).

The model and the tools come from the kit, so every model call goes through backstay's
model gate and every tool call through its tool gate. A suite task names it as
``agent: graph_agent:build`` (with this folder on ``PYTHONPATH``).
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import SystemMessage
from langgraph.graph import END, START, MessagesState, StateGraph

SYSTEM = "You keep short notes in the workspace. Use write_file to save them."


def build(kit: Any) -> StateGraph:
    model = kit.model.bind_tools(kit.tools)

    async def think(state: MessagesState) -> dict[str, Any]:
        reply = await model.ainvoke([SystemMessage(SYSTEM), *state["messages"]])
        return {"messages": [reply]}

    def route(state: MessagesState) -> str:
        return "act" if state["messages"][-1].tool_calls else END

    graph = StateGraph(MessagesState)
    graph.add_node("think", think)
    graph.add_node("act", kit.tool_node())
    graph.add_edge(START, "think")
    graph.add_conditional_edges("think", route, ["act", END])
    graph.add_edge("act", "think")
    return graph
