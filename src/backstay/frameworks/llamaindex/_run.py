"""One step's workflow run: its events, and ``InputRequiredEvent`` as a durable approval.

A workflow step asks a human by returning (or writing to the stream, or waiting with
``ctx.wait_for_event(HumanResponseEvent, waiter_event=…)``) an ``InputRequiredEvent``.
The adapter reads the run's event stream; at such an event it saves the workflow's
``Context`` (``to_dict``) and records the request (the event's fields) as a durable
approval of the run (tool ``input``) through ``ToolGate.ask``. Undecided, the workflow
is cancelled and the run pauses (no process waits). Once a decision is recorded
(``backstay escalations resolve ID --approve | --reject | --edit JSON``), ``resume``
restores the context and sends the step its ``HumanResponseEvent``:

* ``response``: the human's ``answer`` when the decision is an edit carrying one
  (``{"answer": "blue"}``), the edited arguments as JSON for another edit, else
  ``"approved"`` or ``"rejected"``;
* ``decision`` (``approve`` / ``edit`` / ``reject``), ``args`` (an edit's arguments) and
  ``reason`` (the note given with the decision), as the event's fields.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Mapping
from typing import Any, Final

from backstay.frameworks._common import Checkpoint, require
from backstay.runtime.records import HumanDecision
from backstay.runtime.toolgate import ToolGate, call_key

require("workflows", "llamaindex")

from workflows import Context, Workflow  # noqa: E402
from workflows.errors import WorkflowCancelledByUser  # noqa: E402
from workflows.events import HumanResponseEvent, InputRequiredEvent  # noqa: E402

__all__ = ["INPUT_TOOL", "human_response", "run_workflow"]

INPUT_TOOL: Final = "input"


def _request(event: InputRequiredEvent) -> dict[str, Any]:
    dumped = event.model_dump(mode="json")
    data = dumped.pop("_data", None) or {}
    return {**dumped, **data}


def human_response(decision: HumanDecision) -> HumanResponseEvent:
    """The event a workflow step waiting for a human receives (see the module)."""
    fields = decision.to_dict()
    args = fields.get("args")
    if isinstance(args, Mapping) and "answer" in args:
        response = args["answer"] if isinstance(args["answer"], str) else json.dumps(args["answer"])
    elif args is not None:
        response = json.dumps(args, sort_keys=True)
    else:
        response = str(decision.status)
    make: Any = HumanResponseEvent  # an event takes extra fields; its stub does not say so
    event: HumanResponseEvent = make(
        response=response,
        decision=fields["type"],
        args=args,
        reason=fields.get("reason", ""),
    )
    return event


class _Inputs:
    """The step's requests for a human, kept beside the workflow's checkpoint: how many
    were answered, and the one waiting (its approval key)."""

    def __init__(self, checkpoint: Checkpoint) -> None:
        self._checkpoint = checkpoint
        saved = checkpoint.load() or {}
        self.answered: int = saved.get("answered", 0)
        self.pending: str | None = saved.get("pending")

    def ask(self, request: Mapping[str, Any], step_id: str) -> str:
        key = call_key(INPUT_TOOL, {"step": step_id, "n": self.answered, "request": request})
        self.pending = key
        self._save()
        return key

    def done(self) -> None:
        self.answered += 1
        self.pending = None
        self._save()

    def _save(self) -> None:
        self._checkpoint.save({"answered": self.answered, "pending": self.pending})


async def run_workflow(
    workflow: Workflow,
    *,
    step_id: str,
    tools: ToolGate,
    checkpoint: Checkpoint,
    inputs: Checkpoint,
    start: Mapping[str, Any],
    set_saver: Callable[[Callable[[], None]], None],
) -> Any:
    """Run ``workflow`` from its checkpoint (else with ``start``) to its result, every
    ``InputRequiredEvent`` answered by a human decision."""
    asked = _Inputs(inputs)
    saved = checkpoint.load()
    if saved:
        handler = workflow.run(ctx=Context.from_dict(workflow, saved))
    else:
        handler = workflow.run(**start)
    running = handler.ctx
    if running is None:  # pragma: no cover - workflows always give the handler one
        raise RuntimeError("the workflow handler has no context")

    def save() -> None:
        checkpoint.save(json.loads(json.dumps(running.to_dict())))

    set_saver(save)
    try:
        if asked.pending is not None:  # a request made before the pause
            running.send_event(human_response(tools.ask(INPUT_TOOL, {}, key=asked.pending)))
            asked.done()
        async for event in handler.stream_events():
            if isinstance(event, InputRequiredEvent):
                save()
                request = _request(event)
                key = asked.ask(request, step_id)
                running.send_event(human_response(tools.ask(INPUT_TOOL, request, key=key)))
                asked.done()
        return await handler
    except Exception:  # a halt (the approval pending): the workflow stops here
        if not handler.done():
            await handler.cancel_run()
            with contextlib.suppress(WorkflowCancelledByUser, Exception):  # cancelled: done
                await handler
        raise
