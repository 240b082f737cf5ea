"""What the model answers to a ``Prompt``: text or a tool call, and the token counts, all
decided before a byte is written so that streamed and JSON answers agree. A request of a
scripted session (``turn`` given) gets that turn's shell call, or the session's final
text; any other request gets the scenario's ``Reply``."""

from __future__ import annotations

import dataclasses
import json
from typing import Final

from backstay.fakeprovider._prompt import Prompt
from backstay.fakeprovider.scenario import Reply
from backstay.fakeprovider.session import Session, shell_arguments, shell_tool
from backstay.fakeprovider.tokens import count_tokens, split_pieces

_ECHO_WORDS: Final = 12


@dataclasses.dataclass(frozen=True, slots=True)
class Answer:
    """``pieces`` (the text in stream deltas) or a tool call; ``truncated`` when the text
    was cut at the request's output-token limit."""

    text: str
    pieces: tuple[str, ...]
    tool_name: str | None
    tool_arguments: str  # JSON text
    call_id: str
    input_tokens: int
    output_tokens: int
    truncated: bool = False

    @property
    def is_tool_call(self) -> bool:
        return self.tool_name is not None


def default_text(user_text: str) -> str:
    words = user_text.split()
    if not words:
        return "Fake reply."
    more = " …" if len(words) > _ECHO_WORDS else ""
    return f"Fake reply to: {' '.join(words[:_ECHO_WORDS])}{more}"


def _truncate(pieces: list[str], limit: int | None) -> tuple[list[str], bool]:
    if limit is None:
        return pieces, False
    kept: list[str] = []
    used = 0
    for piece in pieces:
        cost = count_tokens(piece)
        if used + cost > limit:
            return kept, True
        kept.append(piece)
        used += cost
    return kept, False


def _tool_call(prompt: Prompt, name: str, arguments: object, call_id: str) -> Answer:
    text = json.dumps(arguments, separators=(",", ":"))
    return Answer(
        text="",
        pieces=(),
        tool_name=name,
        tool_arguments=text,
        call_id=call_id,
        input_tokens=prompt.input_tokens,
        output_tokens=count_tokens(name) + count_tokens(text),
    )


def answer(
    prompt: Prompt,
    reply: Reply,
    *,
    number: int,
    session: Session | None = None,
    turn: int | None = None,
) -> Answer:
    """The answer to the ``number``-th request (the number makes ids unique), at ``turn``
    of ``session`` when the request belongs to it."""
    call_id = f"{number:024x}"
    if session is not None and turn is not None:
        command = session.command(turn)
        tool = shell_tool(prompt.tools)
        if command is not None and tool is not None:
            return _tool_call(prompt, tool, shell_arguments(tool, command), call_id)
        return _text(prompt, session.final, call_id)
    call = reply.tool_call
    if call is not None and call.name in prompt.tools and not prompt.has_tool_result:
        return _tool_call(prompt, call.name, dict(call.arguments), call_id)
    return _text(
        prompt, reply.text if reply.text is not None else default_text(prompt.user_text), call_id
    )


def _text(prompt: Prompt, text: str, call_id: str) -> Answer:
    pieces, truncated = _truncate(split_pieces(text), prompt.max_tokens)
    kept = "".join(pieces)
    return Answer(
        text=kept,
        pieces=tuple(pieces),
        tool_name=None,
        tool_arguments="",
        call_id=call_id,
        input_tokens=prompt.input_tokens,
        output_tokens=count_tokens(kept),
        truncated=truncated,
    )
