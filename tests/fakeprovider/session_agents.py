"""Minimal agent loops over the official SDKs, one per wire format, for the scripted-session
tests: each offers a shell tool the way an agent CLI does, runs every call it gets (a real
``bash`` in ``workdir``), sends the result back with the whole conversation, and retries a
failed request as it was (the same conversation), a bounded number of times.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from google.genai import types
from tests.fakeprovider import sdk

MAX_STEPS: Final = 30  # requests per session, retries included
SHELL_TIMEOUT_S: Final = 10.0
_SCHEMA: Final = {
    "type": "object",
    "properties": {"command": {"type": "string"}, "description": {"type": "string"}},
    "required": ["command"],
}


class Agent:
    """Runs one session; ``failures`` counts the requests that failed and were retried."""

    def __init__(self, workdir: Path, *, retries: int = 0) -> None:
        self.workdir = workdir
        self.retries = retries
        self.failures = 0
        self.requests = 0

    def shell(self, arguments: dict[str, Any]) -> str:
        command = arguments.get("command", arguments.get("cmd"))
        argv = command if isinstance(command, list) else ["bash", "-c", str(command)]
        done = subprocess.run(
            argv,
            cwd=self.workdir,
            capture_output=True,
            text=True,
            timeout=SHELL_TIMEOUT_S,
            check=False,
        )
        return f"exit {done.returncode}\n{done.stdout}{done.stderr}"

    def ask(self, send: Callable[[], Any]) -> Any:
        """``send()``, retried as it is on an SDK error, at most ``retries`` times."""
        for attempt in range(self.retries + 1):
            if self.requests >= MAX_STEPS:
                raise AssertionError(f"the session took more than {MAX_STEPS} requests")
            self.requests += 1
            try:
                return send()
            except sdk.SDK_ERRORS:
                self.failures += 1
                if attempt == self.retries:
                    raise
        raise AssertionError("unreachable")


def anthropic_session(agent: Agent, url: str, *, stream: bool) -> str:
    """Claude Code's shape: a ``Bash`` tool, ``tool_use`` → ``tool_result``."""
    tools = [{"name": "Bash", "description": "Run a command.", "input_schema": _SCHEMA}]
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Do the steps."}]
    kw: dict[str, Any] = {"model": sdk.ANTHROPIC_MODEL, "max_tokens": 512, "tools": tools}
    with sdk.anthropic_client(url) as client:

        def send() -> Any:
            if not stream:
                return client.messages.create(messages=messages, **kw)
            with client.messages.stream(messages=messages, **kw) as events:
                return events.get_final_message()

        while True:
            message = agent.ask(send)
            uses = [b for b in message.content if b.type == "tool_use"]
            if not uses:
                return "".join(b.text for b in message.content if b.type == "text")
            messages.append({"role": "assistant", "content": [b.model_dump() for b in uses]})
            results = [
                {"type": "tool_result", "tool_use_id": b.id, "content": agent.shell(b.input)}
                for b in uses
            ]
            messages.append({"role": "user", "content": results})


def chat_session(agent: Agent, url: str, *, stream: bool) -> str:
    """An OpenAI Chat agent with Codex's older ``shell`` tool (an argv list)."""
    schema = {"type": "object", "properties": {"command": {"type": "array"}}}
    tools = [{"type": "function", "function": {"name": "shell", "parameters": schema}}]
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Do the steps."}]
    with sdk.openai_client(url) as client:

        def send() -> tuple[str, list[tuple[str, str, str]]]:
            kw: dict[str, Any] = {"model": sdk.OPENAI_MODEL, "messages": messages, "tools": tools}
            if not stream:
                choice = client.chat.completions.create(**kw).choices[0].message
                calls = choice.tool_calls or []
                return choice.content or "", [
                    (c.id, c.function.name, c.function.arguments) for c in calls
                ]
            text, found = "", []
            for chunk in client.chat.completions.create(stream=True, **kw):
                delta = chunk.choices[0].delta if chunk.choices else None
                if delta is None:
                    continue
                text += delta.content or ""
                for c in delta.tool_calls or []:
                    fn = c.function
                    found.append((c.id or "", fn.name or "", fn.arguments or "") if fn else None)
            return text, [f for f in found if f is not None]

        while True:
            text, calls = agent.ask(send)
            if not calls:
                return text
            messages.append(
                {
                    "role": "assistant",
                    "tool_calls": [
                        {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
                        for i, n, a in calls
                    ],
                }
            )
            messages.extend(
                {"role": "tool", "tool_call_id": i, "content": agent.shell(json.loads(a))}
                for i, _n, a in calls
            )


def responses_session(agent: Agent, url: str, *, stream: bool) -> str:
    """Codex's shape: an ``exec_command`` function, ``function_call`` → its output."""
    schema = {"type": "object", "properties": {"cmd": {"type": "string"}}}
    tools = [{"type": "function", "name": "exec_command", "parameters": schema, "strict": False}]
    items: list[dict[str, Any]] = [{"role": "user", "content": "Do the steps."}]
    with sdk.openai_client(url) as client:

        def send() -> Any:
            kw: dict[str, Any] = {"model": sdk.OPENAI_MODEL, "input": items, "tools": tools}
            if not stream:
                return client.responses.create(**kw)
            with client.responses.stream(**kw) as events:
                return events.get_final_response()

        while True:
            response = agent.ask(send)
            calls = [i for i in response.output if i.type == "function_call"]
            if not calls:
                return str(response.output_text)
            for call in calls:
                items.append(
                    {
                        "type": "function_call",
                        "call_id": call.call_id,
                        "name": call.name,
                        "arguments": call.arguments,
                    }
                )
                output = agent.shell(json.loads(call.arguments))
                items.append(
                    {"type": "function_call_output", "call_id": call.call_id, "output": output}
                )


def gemini_session(agent: Agent, url: str, *, stream: bool) -> str:
    """Gemini CLI's shape: ``run_shell_command``, ``functionCall`` → ``functionResponse``."""
    declaration = types.FunctionDeclaration(
        name="run_shell_command",
        description="Run a command.",
        parameters_json_schema=_SCHEMA,
    )
    config = types.GenerateContentConfig(tools=[types.Tool(function_declarations=[declaration])])
    contents: list[types.Content] = [
        types.Content(role="user", parts=[types.Part(text="Do the steps.")])
    ]
    with sdk.gemini_client(url) as client:

        def send() -> tuple[str, list[types.FunctionCall]]:
            kw: dict[str, Any] = {"model": sdk.GEMINI_MODEL, "contents": contents}
            if not stream:
                done = client.models.generate_content(config=config, **kw)
                return done.text or "", list(done.function_calls or [])
            text, calls = "", []
            for chunk in client.models.generate_content_stream(config=config, **kw):
                calls.extend(chunk.function_calls or [])
                text += "".join(
                    p.text or ""
                    for c in chunk.candidates or []
                    for p in (c.content.parts if c.content else None) or []
                )
            return text, calls

        while True:
            text, calls = agent.ask(send)
            if not calls:
                return text
            contents.append(
                types.Content(role="model", parts=[types.Part(function_call=c) for c in calls])
            )
            contents.append(
                types.Content(
                    role="user",
                    parts=[
                        types.Part.from_function_response(
                            name=c.name or "", response={"output": agent.shell(dict(c.args or {}))}
                        )
                        for c in calls
                    ],
                )
            )


SESSIONS: Final[dict[str, Callable[..., str]]] = {
    "anthropic": anthropic_session,
    "openai-chat": chat_session,
    "openai-responses": responses_session,
    "gemini": gemini_session,
}
