from __future__ import annotations

from pathlib import Path

from tests.runtime.support import ScriptedFramework

from backstay.runtime import Runtime, health_check
from backstay.runtime.builtin_tools import workspace_tools
from backstay.runtime.sandbox import sandbox_kind
from backstay.testing.events import capture_events


class _Unavailable(ScriptedFramework):
    def available(self) -> bool:
        return False


def test_a_healthy_runtime_reports_ok(tmp_path: Path) -> None:
    runtime = Runtime(ScriptedFramework({}), tools=workspace_tools(tmp_path))
    report = health_check(runtime, exporter_probe=lambda: True)
    assert report.limits_enforced
    assert report.adapters == {"scripted": True}
    assert report.sandbox == sandbox_kind()
    assert report.sandbox_holds == (report.sandbox == "bubblewrap")
    assert report.ok == report.sandbox_holds


def test_an_unavailable_fallback_and_an_unreachable_exporter_are_problems() -> None:
    runtime = Runtime(ScriptedFramework({}), fallback=_Unavailable({}))
    report = runtime.health_check(exporter_probe=lambda: False)
    assert report.problems == (
        "adapter fallback:scripted is not available",
        "no trace exporter takes the runtime's events",
    )


def test_without_a_probe_the_exporter_is_any_sink_taking_events() -> None:
    runtime = Runtime(ScriptedFramework({}))
    with capture_events():
        assert runtime.health_check().trace_exporter_reachable
