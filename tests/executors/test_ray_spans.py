"""The request spans of a Ray worker's gateway join the run's trace in the driver's
exporter: ``backstay batch --executor ray`` inside a private network namespace (a local Ray
cluster started for the batch) with ``OTEL_EXPORTER_OTLP_ENDPOINT`` set to an OTLP
receiver in the same namespace (``otlp_wrap.py``), running the real Claude Code through a
scripted four-turn session whose turn 2 is refused with a 529.

Each ``gateway.request`` span the driver exports is in the trace of the task, a child of
the attempt's ``invoke_agent claude-code`` span, and names the run's task and attempt; the
retried request's span says it took two upstream attempts. Slow: a Ray cluster and a CLI
session. Skipped, with the reason, when Claude Code is not installed (``make agents``) or
no namespace can be made here."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest
import yaml
from tests.adapters.cli_provider import BACKSTAY, BASE_ENV, Providers, installed
from tests.adapters.cli_provider import namespace_providers as _namespace_providers
from tests.adapters.support import CANARY_KEY

from backstay.gateway.spans import SPAN_NAME

TURNS: Final = 4
MODEL: Final = "claude-sonnet-4-5"
TIMEOUT_S: Final = 240.0
BATCH_TIMEOUT_S: Final = 660.0
WRAP: Final = Path(__file__).with_name("otlp_wrap.py")


@pytest.fixture(scope="module")
def providers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Providers]:
    yield from _namespace_providers(tmp_path_factory)


def _scenario() -> dict[str, Any]:
    return {
        "session": {
            "turns": [{"shell": f"echo step-{i} >> progress.txt"} for i in range(1, TURNS + 1)],
            "final": "All four steps are done.",
        },
        "faults": [{"fault": "overloaded", "turn": 2, "retry_after_s": 1}],
    }


@pytest.mark.slow
def test_a_ray_workers_request_spans_are_children_of_the_runs_attempt(
    providers: Providers, tmp_path: Path
) -> None:
    installed("claude-code")
    served = providers.serve(_scenario())
    suite, state = tmp_path / "suite.yaml", tmp_path / "state"
    suite.write_text(
        yaml.safe_dump(
            {
                "suite": "ray-spans",
                "defaults": {"adapter": "claude-code", "model": MODEL, "timeout_s": TIMEOUT_S},
                "tasks": [{"id": "session", "prompt": "Run the four steps, one at a time."}],
            },
            sort_keys=False,
        ),
        encoding="utf-8",
    )
    spans_file = tmp_path / "spans.json"
    ray_tmp = Path(tempfile.mkdtemp(prefix="bsrs", dir="/tmp"))  # short: socket paths
    env = {
        **BASE_ENV,
        "HOME": os.environ.get("HOME", "/root"),
        "RAY_TMPDIR": str(ray_tmp),
        "ANTHROPIC_API_KEY": CANARY_KEY,
        "ANTHROPIC_BASE_URL": served.url,
    }
    argv = [
        sys.executable, str(WRAP), str(spans_file), "--",
        *BACKSTAY, "batch", str(suite), "--state-dir", str(state),
        "--concurrency", "1", "--executor", "ray",
    ]  # fmt: skip
    try:
        done = providers.namespace.run(argv, timeout_s=BATCH_TIMEOUT_S, env=env, cwd=tmp_path)
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    spans: list[dict[str, Any]] = json.loads(spans_file.read_text())
    (attempt,) = [s for s in spans if s["name"] == "invoke_agent claude-code"]
    requests = [s for s in spans if s["name"] == SPAN_NAME]
    stats = served.stats()
    # One span per request the CLI made, each in the attempt's trace, under its span.
    assert len(requests) == stats["requests"] - 1, (requests, stats)  # the 529 retried
    assert {s["trace_id"] for s in requests} == {attempt["trace_id"]}
    assert {s["parent_span_id"] for s in requests} == {attempt["span_id"]}
    assert {s["attributes"]["backstay.attempt_id"] for s in requests} == {
        attempt["attributes"]["backstay.attempt_id"]
    }
    assert {s["attributes"]["backstay.operation_id"] for s in requests} == {
        attempt["attributes"]["backstay.operation_id"]
    }
    assert sorted(s["attributes"]["backstay.gateway.attempts"] for s in requests)[-1] == 2
    assert all(s["attributes"]["gen_ai.provider.name"] == "anthropic" for s in requests)
    assert CANARY_KEY not in json.dumps(spans)
