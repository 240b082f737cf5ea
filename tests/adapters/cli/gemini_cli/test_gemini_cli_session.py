"""Gemini CLI's session hooks without running it: the session id and the model's answers
read from its stream, the transcript that says a session is kept, a refused resume, the
command that continues a session, and that an attempt continues one only through the
gateway (``can_resume``; ``StartKeeper.prepare``). Real runs:
test_gemini_cli_gateway_resume.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

import pytest
from tests.adapters.support import CANARY_KEY

from backstay.adapters.capture import Capture
from backstay.adapters.cli.attempt_start import SESSION_HOME_DIR, StartKeeper, StartPath
from backstay.adapters.cli.gemini_cli import GeminiCliAdapter
from backstay.adapters.cli.gemini_cli.settings import GeminiCliSettings
from backstay.adapters.cli.gemini_cli.stream import GeminiStream, session_calls, session_usage
from backstay.adapters.cli.process import ProcessOutcome
from backstay.adapters.contract import AgentRequest
from backstay.adapters.gateway_wiring import use_gateway
from backstay.adapters.session import SessionRecord, write_session_record
from backstay.adapters.usage import Usage
from backstay.failure import Failure

SESSION_ID: Final = "6f89fc54-7ec8-413c-b761-52fdc3078daf"
# Another session whose id starts as SESSION_ID does: its transcript has the same name.
TWIN_ID: Final = "6f89fc54-0000-4000-8000-000000000000"


class _Gateway:
    """Stands in for a running gateway (``RunGateway``)."""

    url = "http://127.0.0.1:1"
    deadline_s = 900.0

    def open_run(self, **run: Any) -> str:
        raise AssertionError("no run is opened here")

    def close_run(self, token: str) -> None:
        raise AssertionError("no run is opened here")


def _request(tmp_path: Path, **env: str) -> AgentRequest:
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    return AgentRequest(
        model="gemini-2.5-flash",
        workspace=workspace,
        output_dir=tmp_path / "out",
        timeout_s=30.0,
        prompt="Run the steps.",
        env={"PATH": "/bin", **env},
    )


def _event(kind: str, **fields: Any) -> str:
    return json.dumps({"type": kind, **fields})


def test_the_stream_keeps_the_session_id_and_counts_the_models_answers(tmp_path: Path) -> None:
    with Capture(tmp_path) as capture:
        stream = GeminiStream(capture)
        lines = [
            _event("init", session_id=SESSION_ID, model="gemini-2.5-flash"),
            _event("message", role="user", content="Run the steps."),
            # Answer 1: text, then two calls.
            _event("message", role="assistant", content="Running ", delta=True),
            _event("message", role="assistant", content="step 1.", delta=True),
            _event("tool_use", tool_name="run_shell_command", tool_id="a", parameters={}),
            _event("tool_use", tool_name="run_shell_command", tool_id="b", parameters={}),
            _event("tool_result", tool_id="a", status="success", output=""),
            _event("tool_result", tool_id="b", status="success", output=""),
            # Answer 2: a call.
            _event("tool_use", tool_name="run_shell_command", tool_id="c", parameters={}),
            _event("tool_result", tool_id="c", status="success", output=""),
            # Answer 3: the final text.
            _event("message", role="assistant", content="Done.", delta=True),
            _event("result", status="success", stats={}),
        ]
        assert (stream.session_id, stream.answers) == (None, 0)
        for line in lines:
            stream.line(line)
    assert (stream.session_id, stream.answers) == (SESSION_ID, 3)


def test_a_session_is_continued_with_resume_and_its_id(tmp_path: Path) -> None:
    adapter = GeminiCliAdapter()
    request = _request(tmp_path)
    binary = Path("/opt/gemini")
    argv = adapter.resume_command(request, GeminiCliSettings(), binary, SESSION_ID)
    assert argv == [
        *adapter.command(request, GeminiCliSettings(), binary),
        "--resume",
        SESSION_ID,
    ]


def _transcript(home: Path, session_id: str, *messages: dict[str, Any]) -> Path:
    """A session transcript as Gemini CLI 0.61 keeps it in the run's ``HOME``."""
    chats = home / "home" / ".gemini" / "tmp" / "workspace" / "chats"
    chats.mkdir(parents=True, exist_ok=True)
    path = chats / f"session-2026-11-29T00-05-{session_id[:8]}.jsonl"
    lines = [{"sessionId": session_id, "kind": "main"}, *messages]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def test_a_session_is_kept_when_its_transcript_names_the_whole_id(tmp_path: Path) -> None:
    adapter = GeminiCliAdapter()
    assert not adapter.has_session(tmp_path, SESSION_ID)
    _transcript(tmp_path, TWIN_ID)
    assert not adapter.has_session(tmp_path, SESSION_ID)  # the same file name, not the id
    _transcript(tmp_path, SESSION_ID)
    assert adapter.has_session(tmp_path, SESSION_ID)


@pytest.mark.parametrize(
    ("session_id", "stderr", "refused"),
    [
        (None, "Error resuming session: No previous sessions found for this project.\n", True),
        (None, 'Error resuming session: Invalid session identifier "x".\n', True),
        (None, "fetch failed\n", False),  # not a refusal: another failure before the init
        (SESSION_ID, "Error resuming session: …\n", False),  # the session went on
    ],
)
def test_a_resume_is_refused_when_the_cli_says_so_before_a_session_starts(
    tmp_path: Path, session_id: str | None, stderr: str, refused: bool
) -> None:
    adapter = GeminiCliAdapter()
    with Capture(tmp_path) as capture:
        stream = GeminiStream(capture)
        if session_id is not None:
            stream.line(_event("init", session_id=session_id))
    run = type("Run", (), {"stream": stream})()
    outcome = ProcessOutcome(pid=1, exit_code=42, duration_s=1.0, stderr_tail=stderr)
    assert adapter.resume_refused(outcome, run) is refused


def test_only_an_attempt_through_the_gateway_can_continue_a_session(tmp_path: Path) -> None:
    adapter = GeminiCliAdapter()
    keyed = _request(tmp_path, GEMINI_API_KEY=CANARY_KEY)
    assert adapter.resumes_sessions
    assert not adapter.can_resume(keyed)  # straight to Gemini: it would refuse the resume
    with use_gateway(_Gateway()):
        assert adapter.can_resume(keyed)
        assert not adapter.can_resume(_request(tmp_path))  # no key: not sent through it


def _second_attempt(tmp_path: Path) -> tuple[AgentRequest, StartPath | None]:
    """Attempt 2 after a first whose session ended at a 503 after one answer, its
    transcript in the kept session home."""
    adapter = GeminiCliAdapter()
    request = _request(tmp_path, GEMINI_API_KEY=CANARY_KEY)
    keeper = StartKeeper(tmp_path / "run", operation="op", exclude=(request.output_dir,))
    first, path = keeper.prepare(adapter, request, number=1)
    assert path is StartPath.FRESH
    _transcript(keeper.home, SESSION_ID)
    previous = tmp_path / "attempt_1"
    write_session_record(
        previous, SessionRecord(agent=adapter.name, session_id=SESSION_ID, turns=1)
    )
    second, path = keeper.prepare(
        adapter,
        request,
        number=2,
        previous_failure=Failure(code="ERR_HTTP_503_UNAVAILABLE"),
        previous_output=previous,
    )
    assert (first.session is None) == (second.session is None)
    return second, path


def test_through_the_gateway_the_next_attempt_continues_the_session(tmp_path: Path) -> None:
    with use_gateway(_Gateway()):
        request, path = _second_attempt(tmp_path)
    assert path is StartPath.RESUMED_SESSION
    assert request.session is not None
    assert request.session.home == tmp_path / "run" / SESSION_HOME_DIR
    assert request.session.resume_id == SESSION_ID


def test_straight_to_gemini_the_next_attempt_starts_afresh_in_a_restored_workspace(
    tmp_path: Path,
) -> None:
    request, path = _second_attempt(tmp_path)
    assert path is StartPath.WORKSPACE_RESTORED
    assert request.session is None  # a fresh home of its own, as every attempt before


def _call(ident: str, **tokens: int) -> dict[str, Any]:
    return {"id": ident, "type": "gemini", "content": "", "tokens": tokens}


def test_a_kept_home_counts_only_the_model_calls_of_this_attempt(tmp_path: Path) -> None:
    path = _transcript(tmp_path, SESSION_ID, _call("a", input=100, output=10))
    before = session_calls(tmp_path / "home")
    with path.open("a", encoding="utf-8") as more:  # the continued session goes on
        more.write(json.dumps(_call("b", input=150, output=5, cached=50)) + "\n")
    assert session_usage(tmp_path / "home", before=before) == Usage(
        input_tokens=100, output_tokens=5, cache_read_tokens=50, api_calls=1
    )
    assert session_usage(tmp_path / "home") == Usage(
        input_tokens=200, output_tokens=15, cache_read_tokens=50, api_calls=2
    )
