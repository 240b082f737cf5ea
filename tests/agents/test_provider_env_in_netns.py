"""``backstay run`` with each real CLI, inside a private network namespace against the fake
provider there, given nothing but the provider's standard variables: no adapter option
names a key or a variable to pass, and codex is pointed at the fake by ``OPENAI_BASE_URL``
alone (which Codex itself ignores). The run succeeds with its usage recorded, and the key
appears nowhere; with no ``--policy``, a 429 is retried and the run succeeds — by the
gateway ``backstay run`` starts, inside the CLI's one session, or with ``--no-gateway`` by a
second attempt (the contract's ``agent_dispatch``) — and a context overflow is not retried
and is recorded.

Skipped, with the reason, when the CLI is not installed (`make agents`) or namespaces
cannot be made here.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any, Final

import pytest
from tests.agents.clis import CANARY_KEY
from tests.agents.test_clis_in_netns import BACKSTAY, PORT, URL, installed, stats

import backstay
from backstay.testing.netns import NetworkNamespace

# CLI → its model, and the standard variables a user of its provider exports.
RUNS: Final[dict[str, tuple[str, dict[str, str]]]] = {
    "claude-code": (
        "claude-sonnet-4-5",
        {"ANTHROPIC_API_KEY": CANARY_KEY, "ANTHROPIC_BASE_URL": URL},
    ),
    "codex": ("gpt-5.4", {"OPENAI_API_KEY": CANARY_KEY, "OPENAI_BASE_URL": f"{URL}/v1"}),
    "gemini-cli": (
        "gemini-2.5-flash",
        {"GEMINI_API_KEY": CANARY_KEY, "GOOGLE_GEMINI_BASE_URL": URL},
    ),
}
# What backstay itself needs to start and to find the managed installs: not the agent's.
BACKSTAY_ENV: Final = ("PATH", "HOME", "XDG_CACHE_HOME", "BACKSTAY_AGENTS_DIR")
# The backstay under test, wherever the run's working directory is.
SOURCE: Final = str(Path(backstay.__file__).resolve().parents[1])
RUN_TIMEOUT_S: Final = 120


def _backstay_run(
    name: str, ns: NetworkNamespace, tmp_path: Path, *faults: str, flags: tuple[str, ...] = ()
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """``backstay run`` of ``name`` (no ``--policy``, only the standard variables, and
    ``flags``) against a fake provider in ``ns`` injecting ``faults``; the finished run and
    its output folder."""
    installed(name)
    model, exported = RUNS[name]
    fault_args = [arg for fault in faults for arg in ("--fault", fault)]
    ns.popen(
        [*BACKSTAY, "fake-provider", "serve", "--port", str(PORT), *fault_args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    assert stats(ns)["requests"] == 0
    (tmp_path / "ws").mkdir()
    (tmp_path / "prompt.md").write_text("say hi", encoding="utf-8")
    out = tmp_path / "out"
    own = {key: os.environ[key] for key in BACKSTAY_ENV if key in os.environ}
    own["PYTHONPATH"] = SOURCE
    argv = [
        *BACKSTAY,
        "run",
        *("--adapter", name, "--model", model),
        *("--prompt-file", str(tmp_path / "prompt.md"), "--workspace", str(tmp_path / "ws")),
        *("--output-dir", str(out), "--timeout", str(RUN_TIMEOUT_S)),
        *flags,
    ]
    done = ns.run(argv, env=own | exported, cwd=tmp_path, timeout_s=RUN_TIMEOUT_S * 2)
    for path in out.rglob("*"):
        if path.is_file():
            assert CANARY_KEY.encode() not in path.read_bytes(), path
    assert CANARY_KEY not in done.stdout + done.stderr
    return done, out


def _metrics(out: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    return loaded


@pytest.mark.parametrize("name", list(RUNS))
def test_backstay_run_succeeds_with_only_the_standard_variables_exported(
    name: str, backstay_netns: NetworkNamespace, tmp_path: Path
) -> None:
    done, out = _backstay_run(name, backstay_netns, tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    metrics = _metrics(out)
    assert metrics["exit_code"] == 0
    assert metrics["api_calls"] >= 1
    assert metrics["tokens_input"] > 0
    seen = stats(backstay_netns)
    assert seen["requests"] >= 1
    assert set(seen["by_status"]) == {"200"}


@pytest.mark.parametrize("name", list(RUNS))
def test_a_429_is_retried_by_default_within_the_cli_s_session(
    name: str, backstay_netns: NetworkNamespace, tmp_path: Path
) -> None:
    done, out = _backstay_run(name, backstay_netns, tmp_path, "rate_limit:first=1:retry_after_s=1")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert stats(backstay_netns)["by_status"] == {"429": 1, "200": 1}
    # The gateway retried the request: the CLI ran once, its one attempt succeeded.
    assert not (out / "attempt_2").exists()
    metrics = _metrics(out)
    assert (metrics["exit_code"], metrics["error"]) == (0, None)
    assert metrics["api_calls"] == 2  # the refused call counts, though the CLI saw none
    assert metrics["tokens_input"] > 0


@pytest.mark.parametrize("name", list(RUNS))
def test_a_429_is_retried_by_a_second_attempt_without_the_gateway(
    name: str, backstay_netns: NetworkNamespace, tmp_path: Path
) -> None:
    done, out = _backstay_run(
        name,
        backstay_netns,
        tmp_path,
        "rate_limit:first=1:retry_after_s=1",
        flags=("--no-gateway",),
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert stats(backstay_netns)["by_status"] == {"429": 1, "200": 1}
    first, second = _metrics(out / "attempt_1"), _metrics(out / "attempt_2")
    assert first["exit_code"] != 0
    assert first["api_calls"] >= 1  # the refused call counts, though the CLI reports none
    assert "429" in first["error"] or "RATE_LIMIT" in first["error"], first["error"]
    assert second["exit_code"] == 0
    assert not (out / "attempt_3").exists()
    metrics = _metrics(out)
    assert (metrics["exit_code"], metrics["error"]) == (0, None)
    assert metrics["api_calls"] >= 2
    assert metrics["tokens_input"] > 0


@pytest.mark.parametrize("name", list(RUNS))
def test_a_context_overflow_is_not_retried_and_is_recorded(
    name: str, backstay_netns: NetworkNamespace, tmp_path: Path
) -> None:
    done, out = _backstay_run(name, backstay_netns, tmp_path, "context_overflow")
    assert done.returncode not in (0, 124), done.stdout[-2000:] + done.stderr[-2000:]
    assert stats(backstay_netns)["requests"] == 1
    assert not (out / "attempt_2").exists()
    metrics = _metrics(out)
    assert metrics["exit_code"] == done.returncode
    assert metrics["error"].startswith("ERR_LLM_CONTEXT"), metrics["error"]
    assert metrics["api_calls"] == 1
