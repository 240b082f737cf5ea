"""Agent runs through the gateway, end to end: ``backstay run`` started inside a private
network namespace with nothing but the standard exported variables (the key, the
provider's base URL pointing at a fake provider in the namespace), running the real
Claude Code, Codex and Gemini CLI through a scripted five-turn session whose turn 3 is
refused with a 529 (or 503) and turn 5 with a 429 and ``retry-after``.

The gateway ``backstay run`` starts absorbs both failures: the run succeeds, the CLI
starts once, the provider sees each turn once plus the two refused requests, the
workspace file has each line once, and metrics.json counts what the provider answered,
once. While the CLI runs, the real key is in no environment of its processes; afterwards
it is in no file the run left.

Skipped, with the reason, when a CLI is not installed (``make agents``) or no namespace
can be made here.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, Final

import pytest
from tests.adapters.cli_provider import (
    BACKSTAY,
    BASE_ENV,
    Providers,
    installed,
    namespace_providers,
)
from tests.adapters.support import CANARY_KEY

from backstay.adapters.cli.orphans import ATTEMPT_TAG

TURNS: Final = 5
TIMEOUT_S: Final = 240.0
FINAL: Final = "All five steps are done."
_PROC: Final = Path("/proc")
POLL_S: Final = 0.02


def _scenario(first_fault: str) -> dict[str, Any]:
    return {
        "session": {
            "turns": [{"shell": f"echo step-{i} >> progress.txt"} for i in range(1, TURNS + 1)],
            "final": FINAL,
        },
        "faults": [
            {"fault": first_fault, "turn": 3, "retry_after_s": 1},
            {"fault": "rate_limit", "turn": 5, "retry_after_s": 1},
        ],
    }


class Environs:
    """While open, a thread reads every ``POLL_S`` the environment of each process whose
    ``ATTEMPT_TAG`` starts with ``prefix`` (the agent CLI of this test and its children):
    ``seen`` counts them, ``holding`` names those whose environment holds ``needle``."""

    def __init__(self, prefix: str, needle: str) -> None:
        self._needle = needle.encode()
        self._tag = f"{ATTEMPT_TAG}={prefix}".encode()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self.seen: set[int] = set()
        self.holding: set[int] = set()

    def __enter__(self) -> Environs:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=5.0)

    def _poll(self) -> None:
        while not self._stop.is_set():
            for entry in _PROC.iterdir():
                if not entry.name.isdigit():
                    continue
                try:
                    environ = (entry / "environ").read_bytes()
                except OSError:
                    continue
                if not any(v.startswith(self._tag) for v in environ.split(b"\0")):
                    continue
                self.seen.add(int(entry.name))
                if self._needle in environ:
                    self.holding.add(int(entry.name))
            time.sleep(POLL_S)


@pytest.fixture(scope="module")
def providers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Providers]:
    yield from namespace_providers(tmp_path_factory)


def _files_text(folder: Path) -> str:
    return "".join(
        p.read_text(encoding="utf-8", errors="replace") for p in folder.rglob("*") if p.is_file()
    )


def _run(
    providers: Providers,
    tmp_path: Path,
    *,
    adapter: str,
    model: str,
    exported: dict[str, str],
    first_fault: str,
    flags: tuple[str, ...] = (),
) -> None:
    served = providers.serve(_scenario(first_fault))
    workspace, out = tmp_path / "workspace", tmp_path / "out"
    workspace.mkdir()
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Run the five steps, one command at a time.", encoding="utf-8")
    base_url = served.url + ("/v1" if adapter in {"codex", "opencode"} else "")
    env = {
        **BASE_ENV,
        "HOME": os.environ.get("HOME", "/root"),
        **{name: value.replace("{url}", base_url) for name, value in exported.items()},
    }
    argv = [
        *BACKSTAY,
        "run",
        "--adapter",
        adapter,
        "--model",
        model,
        "--prompt-file",
        str(prompt),
        "--workspace",
        str(workspace),
        "--output-dir",
        str(out),
        "--timeout",
        str(TIMEOUT_S),
        *flags,
    ]
    with Environs(str(tmp_path), CANARY_KEY) as environs:
        done = providers.namespace.run(argv, timeout_s=TIMEOUT_S + 60, env=env)
    stats = served.stats()
    log = (out / "agent.log").read_text() if (out / "agent.log").exists() else ""
    assert done.returncode == 0, f"{done.stderr}\n{log}"
    # The CLI started once; its requests went through the gateway.
    assert log.count("started pid ") == 1, log
    assert "through the gateway at http://127.0.0.1:" in log, log
    lines = (workspace / "progress.txt").read_text().splitlines()
    assert lines == [f"step-{i}" for i in range(1, TURNS + 1)], log
    # Each turn once, the refused turns 3 and 5 twice, the final answer (turn 6) once.
    expected = {str(t): 1 for t in range(1, TURNS + 2)} | {"3": 2, "5": 2}
    assert stats["by_turn"] == expected, stats
    assert sum(stats["by_fault"].values()) == 2, stats
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["api_calls"] == stats["requests"], (metrics, stats)
    assert metrics["tokens_input"] == stats["input_tokens"], (metrics, stats)
    assert metrics["tokens_output"] == stats["output_tokens"], (metrics, stats)
    # The real key: in no environment of the agent's processes, in no file of the run.
    assert environs.seen, "no process of the agent was seen"
    assert environs.holding == set(), "the real key was in an agent process's environment"
    assert CANARY_KEY not in _files_text(out)
    assert CANARY_KEY not in done.stdout + done.stderr


def test_claude_code_survives_a_529_and_a_429_in_one_session_through_backstay_run(
    providers: Providers, tmp_path: Path
) -> None:
    installed("claude-code")
    _run(
        providers,
        tmp_path,
        adapter="claude-code",
        model="claude-sonnet-4-5",
        exported={"ANTHROPIC_API_KEY": CANARY_KEY, "ANTHROPIC_BASE_URL": "{url}"},
        first_fault="overloaded",
    )


def test_codex_survives_a_503_and_a_429_in_one_session_through_backstay_run(
    providers: Providers, tmp_path: Path
) -> None:
    installed("codex")
    _run(
        providers,
        tmp_path,
        adapter="codex",
        model="gpt-5.4",
        exported={"OPENAI_API_KEY": CANARY_KEY, "OPENAI_BASE_URL": "{url}"},
        first_fault="unavailable",
    )


def test_gemini_cli_survives_a_503_and_a_429_in_one_session_through_backstay_run(
    providers: Providers, tmp_path: Path
) -> None:
    installed("gemini-cli")
    _run(
        providers,
        tmp_path,
        adapter="gemini-cli",
        model="gemini-2.5-flash",
        exported={"GEMINI_API_KEY": CANARY_KEY, "GOOGLE_GEMINI_BASE_URL": "{url}"},
        first_fault="unavailable",
    )


@pytest.mark.slow
def test_opencode_survives_a_503_and_a_429_in_one_session_through_backstay_run(
    providers: Providers, tmp_path: Path
) -> None:
    installed("opencode")
    _run(
        providers,
        tmp_path,
        adapter="opencode",
        model="gpt-5.4",
        exported={"OPENAI_API_KEY": CANARY_KEY, "OPENAI_BASE_URL": "{url}"},
        first_fault="unavailable",
    )


@pytest.mark.slow
def test_claude_code_goes_through_a_shared_gateway_with_backstay_run_gateway_url(
    providers: Providers, tmp_path: Path
) -> None:
    installed("claude-code")
    port = 8790
    token = "shared-gateway-token-for-runs-0123"
    gateway = providers.namespace.popen(
        [*BACKSTAY, "gateway", "--agent-runs", "--port", str(port)],
        env={**BASE_ENV, "BACKSTAY_GATEWAY_TOKEN": token},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert gateway.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(gateway.stdout, selectors.EVENT_READ)
            assert selector.select(60.0), "the shared gateway did not start"
        assert "gateway listening" in gateway.stdout.readline()
        _run(
            providers,
            tmp_path,
            adapter="claude-code",
            model="claude-sonnet-4-5",
            exported={
                "ANTHROPIC_API_KEY": CANARY_KEY,
                "ANTHROPIC_BASE_URL": "{url}",
                "BACKSTAY_GATEWAY_TOKEN": token,
            },
            first_fault="overloaded",
            flags=("--gateway", f"http://127.0.0.1:{port}"),
        )
    finally:
        gateway.terminate()
        gateway.wait(timeout=30)


@pytest.mark.slow
def test_a_failed_codex_session_counts_its_tokens_and_its_refused_request(
    providers: Providers, tmp_path: Path
) -> None:
    """A failure the gateway does not absorb (a 400 at turn 3) fails the run: its
    metrics.json still counts the two turns answered and the refused request, tokens
    included, as the provider saw them (Codex itself reports none of a failed turn)."""
    installed("codex")
    served = providers.serve(
        {
            "session": {
                "turns": [{"shell": f"echo step-{i} >> progress.txt"} for i in (1, 2, 3)],
                "final": FINAL,
            },
            "faults": [{"fault": "context_overflow", "turn": 3}],
        }
    )
    workspace, out = tmp_path / "workspace", tmp_path / "out"
    workspace.mkdir()
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Run the steps.", encoding="utf-8")
    env = {
        **BASE_ENV,
        "HOME": os.environ.get("HOME", "/root"),
        "OPENAI_API_KEY": CANARY_KEY,
        "OPENAI_BASE_URL": f"{served.url}/v1",
    }
    argv = [*BACKSTAY, "run", "--adapter", "codex", "--model", "gpt-5.4", "--no-retry"]
    argv += ["--prompt-file", str(prompt), "--workspace", str(workspace)]
    argv += ["--output-dir", str(out), "--timeout", str(TIMEOUT_S)]
    done = providers.namespace.run(argv, timeout_s=TIMEOUT_S + 60, env=env)
    stats = served.stats()
    assert done.returncode != 0
    assert stats["by_status"].get("400") == 1, stats
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["api_calls"] == stats["requests"] == 3, (metrics, stats)
    assert metrics["tokens_input"] == stats["input_tokens"] > 0, (metrics, stats)
    assert metrics["tokens_output"] == stats["output_tokens"], (metrics, stats)


@pytest.mark.slow
def test_aider_survives_a_503_and_a_429_through_backstay_run(
    providers: Providers, tmp_path: Path
) -> None:
    """Aider (an ``openai/…`` model, ``--openai-api-base`` the gateway): the two refused
    requests are retried by the gateway, so Aider's own retry loop never starts."""
    installed("aider")
    served = providers.serve(
        {
            "reply": {"text": "Here it is.\n\nhello.txt\n```\nhello world\n```\n"},
            "faults": [
                {"fault": "unavailable", "requests": [1], "retry_after_s": 1},
                {"fault": "rate_limit", "requests": [2], "retry_after_s": 1},
            ],
        }
    )
    workspace, out = tmp_path / "workspace", tmp_path / "out"
    workspace.mkdir()
    prompt = tmp_path / "prompt.md"
    prompt.write_text("Write hello world into hello.txt.", encoding="utf-8")
    env = {
        **BASE_ENV,
        "HOME": os.environ.get("HOME", "/root"),
        "OPENAI_API_KEY": CANARY_KEY,
        "OPENAI_API_BASE": f"{served.url}/v1",
    }
    argv = [*BACKSTAY, "run", "--adapter", "aider", "--model", "openai/gpt-4o-mini"]
    argv += ["--prompt-file", str(prompt), "--workspace", str(workspace)]
    argv += ["--output-dir", str(out), "--timeout", str(TIMEOUT_S)]
    with Environs(str(tmp_path), CANARY_KEY) as environs:
        done = providers.namespace.run(argv, timeout_s=TIMEOUT_S + 60, env=env)
    stats = served.stats()
    log = (out / "agent.log").read_text() if (out / "agent.log").exists() else ""
    assert done.returncode == 0, f"{done.stderr}\n{log}"
    assert log.count("started pid ") == 1, log
    assert "through the gateway at http://127.0.0.1:" in log, log
    assert (workspace / "hello.txt").read_text() == "hello world\n"
    assert stats["by_status"] == {"503": 1, "429": 1, "200": 1}, stats
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["api_calls"] == stats["requests"], (metrics, stats)
    assert metrics["tokens_input"] == stats["input_tokens"], (metrics, stats)
    assert environs.seen
    assert environs.holding == set()
    assert CANARY_KEY not in _files_text(out) + done.stdout + done.stderr
