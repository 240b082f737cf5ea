"""Claude Code's side of a resumed session, without running it: the command lines, the
session id and answers read from stream-json, a refused resume, the kept transcript."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from backstay.adapters.capture import Capture
from backstay.adapters.cli.claude_code import ClaudeCodeAdapter
from backstay.adapters.cli.claude_code.settings import parse_settings
from backstay.adapters.cli.claude_code.stream import ClaudeStream
from backstay.adapters.cli.process import ProcessOutcome
from backstay.adapters.contract import AgentRequest
from backstay.adapters.session import SessionPlan

BINARY = Path("/opt/claude")
# What Claude Code 2.1.197 prints for `--resume` of a session its home does not hold.
REFUSED = json.dumps(
    {
        "type": "result",
        "subtype": "error_during_execution",
        "is_error": True,
        "num_turns": 0,
        "session_id": "00000000-0000-0000-0000-000000000000",
        "errors": ["No conversation found with session ID: 00000000-0000-0000-0000-000000000000"],
    }
)


def _request(tmp_path: Path, **changes: Any) -> AgentRequest:
    fields: dict[str, Any] = {
        "model": "claude-sonnet-4-5",
        "workspace": tmp_path,
        "output_dir": tmp_path / "out",
        "timeout_s": 30.0,
        "prompt": "Fix the test.",
    }
    return AgentRequest(**(fields | changes))


def _stream(tmp_path: Path, *events: dict[str, Any]) -> ClaudeStream:
    with Capture(tmp_path / "out") as capture:
        stream = ClaudeStream(capture)
        for event in events:
            stream.line(json.dumps(event))
    return stream


def test_a_kept_session_is_saved_and_a_resume_continues_it(tmp_path: Path) -> None:
    adapter = ClaudeCodeAdapter()
    request = _request(tmp_path, session=SessionPlan(home=tmp_path / "home"))
    settings = parse_settings(request.config)
    fresh = adapter.command(request, settings, BINARY)
    assert "--no-session-persistence" not in fresh
    assert adapter.resume_command(request, settings, BINARY, "abc") == [*fresh, "--resume", "abc"]
    assert "--no-session-persistence" in adapter.command(_request(tmp_path), settings, BINARY)


def test_the_stream_gives_the_session_id_and_counts_the_models_answers(tmp_path: Path) -> None:
    stream = _stream(
        tmp_path,
        {"type": "system", "subtype": "init", "session_id": "s-1", "tools": []},
        {"type": "assistant", "session_id": "s-1", "message": {"id": "m1", "content": []}},
        {"type": "assistant", "session_id": "s-1", "message": {"id": "m1", "content": []}},
        {"type": "assistant", "session_id": "s-1", "message": {"id": "m2", "content": []}},
        # Claude Code's own text for an API error is no answer of the model.
        {
            "type": "assistant",
            "session_id": "s-1",
            "message": {"id": "e1", "model": "<synthetic>", "content": []},
        },
    )
    adapter = ClaudeCodeAdapter()
    assert adapter.session_id(stream) == "s-1"
    assert adapter.session_turns(stream) == 2


def test_a_resume_of_an_unknown_session_is_refused(tmp_path: Path) -> None:
    adapter = ClaudeCodeAdapter()
    stream = _stream(tmp_path, json.loads(REFUSED))
    outcome = ProcessOutcome(pid=1, exit_code=1, duration_s=0.1, stdout_tail=REFUSED)
    assert adapter.resume_refused(outcome, stream)
    answered = _stream(
        tmp_path,
        {"type": "assistant", "message": {"id": "m1", "content": []}},
        json.loads(REFUSED),
    )
    assert not adapter.resume_refused(outcome, answered)
    other = ProcessOutcome(pid=1, exit_code=1, duration_s=0.1, stdout_tail="API Error: 529")
    assert not adapter.resume_refused(other, _stream(tmp_path))


def test_a_session_is_kept_when_its_transcript_is_in_the_home(tmp_path: Path) -> None:
    adapter = ClaudeCodeAdapter()
    assert not adapter.has_session(tmp_path, "s-1")
    project = tmp_path / "home" / ".claude" / "projects" / "-tmp-workspace"
    project.mkdir(parents=True)
    (project / "s-1.jsonl").write_text("{}\n")
    assert adapter.has_session(tmp_path, "s-1")
    assert not adapter.has_session(tmp_path, "s-2")
    assert not adapter.has_session(tmp_path, "*")
