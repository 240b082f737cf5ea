"""An agent CLI process gets the current attempt's trace context as TRACEPARENT and
TRACESTATE in its environment, and nothing when no attempt is traced."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from tests.adapters.support import python

from backstay.adapters.capture import Capture
from backstay.adapters.cli.process import run_process
from backstay.events.tracecontext import TraceContext, set_current

PARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
SHOW = "import os; print(os.environ.get('TRACEPARENT'), os.environ.get('TRACESTATE'))"


async def _run(capture: Capture, context: TraceContext | None) -> str:
    set_current(context)  # this asyncio task's own context: other runs never see it
    outcome = await run_process(
        python(SHOW), cwd=os.getcwd(), env={}, timeout_s=10, capture=capture
    )
    return outcome.stdout_tail.strip()


def test_the_process_environment_holds_the_trace_context(tmp_path: Path) -> None:
    with Capture(tmp_path) as capture:
        shown = asyncio.run(_run(capture, TraceContext(traceparent=PARENT, tracestate="k=v")))
    assert shown == f"{PARENT} k=v"


def test_without_a_traced_attempt_nothing_is_added(tmp_path: Path) -> None:
    with Capture(tmp_path) as capture:
        assert asyncio.run(_run(capture, None)) == "None None"
