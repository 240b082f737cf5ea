"""The three providers' wire formats, as ``Canned`` replies of the test API server.

Each provider class builds a reply (streamed or whole) with known usage, the failures
the adapter contract names (rate limit, context overflow, content policy, quota) and
broken streams, in the shapes the official SDKs parse. Usage everywhere: 12 uncached
input tokens, 3 cache-read tokens, 5 output tokens.
"""

from __future__ import annotations

from typing import Any, ClassVar, Final

from tests.adapters.api_server import Canned, sse

UNCACHED: Final = 12
CACHED: Final = 3
OUTPUT: Final = 5


class Wire:
    """What every provider can answer."""

    name: ClassVar[str] = ""
    # Stream chunks that come before the first text.
    prefix: ClassVar[int] = 0

    def __init__(self, *, stream: bool = True) -> None:
        self.stream = stream

    def reply(self, parts: tuple[str, ...], *, stream: bool) -> Canned:
        raise NotImplementedError

    def stream_error(self, parts: tuple[str, ...]) -> Canned:
        """Some text, then an overload error inside the 200 stream."""
        raise NotImplementedError

    def cut(self, parts: tuple[str, ...]) -> Canned:
        """Some text, then the connection breaks mid-body."""
        whole = self.reply((*parts, "never sent"), stream=True)
        return dataclass_replace(whole, cut=True, keep=self.prefix + len(parts))

    def rate_limited(self, retry_after_s: float) -> Canned:
        raise NotImplementedError

    def context_overflow(self) -> Canned:
        raise NotImplementedError

    def content_policy(self) -> Canned:
        raise NotImplementedError

    def quota(self) -> Canned:
        raise NotImplementedError

    def overloaded(self) -> Canned:
        raise NotImplementedError


def dataclass_replace(canned: Canned, *, cut: bool, keep: int) -> Canned:
    chunks = canned.chunks or ()
    return Canned(status=canned.status, headers=canned.headers, chunks=chunks[:keep], cut=cut)


class AnthropicWire(Wire):
    name = "anthropic"
    prefix = 2
    usage: ClassVar[dict[str, int]] = {
        "input_tokens": UNCACHED,
        "output_tokens": OUTPUT,
        "cache_read_input_tokens": CACHED,
        "cache_creation_input_tokens": 0,
    }

    def _message(self, text: str, stop: str | None = "end_turn") -> dict[str, Any]:
        return {
            "id": "msg_01",
            "type": "message",
            "role": "assistant",
            "model": "contract-model",
            "content": [{"type": "text", "text": text}] if text else [],
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": self.usage,
        }

    def _events(self, parts: tuple[str, ...]) -> list[tuple[str | None, Any]]:
        start = {**self._message("", None), "usage": {**self.usage, "output_tokens": 1}}
        events: list[tuple[str | None, Any]] = [
            ("message_start", {"type": "message_start", "message": start}),
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
            ),
        ]
        events += [
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": part},
                },
            )
            for part in parts
        ]
        return events

    def reply(self, parts: tuple[str, ...], *, stream: bool, stop: str = "end_turn") -> Canned:
        if not stream:
            return Canned(body=self._message("".join(parts), stop))
        events = self._events(parts)
        events += [
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": OUTPUT},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
        return Canned(chunks=sse(*events))

    def stream_error(self, parts: tuple[str, ...]) -> Canned:
        error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
        return Canned(chunks=sse(*self._events(parts), ("error", error)))

    @staticmethod
    def _error(
        status: int, kind: str, message: str, headers: dict[str, str] | None = None
    ) -> Canned:
        body = {"type": "error", "error": {"type": kind, "message": message}}
        return Canned(status=status, body=body, headers=headers or {})

    def rate_limited(self, retry_after_s: float) -> Canned:
        return self._error(
            429,
            "rate_limit_error",
            "Number of request tokens has exceeded your per-minute rate limit",
            {"retry-after": f"{retry_after_s:g}"},
        )

    def context_overflow(self) -> Canned:
        return self._error(
            400, "invalid_request_error", "prompt is too long: 208656 tokens > 200000 maximum"
        )

    def content_policy(self) -> Canned:
        return self.reply(("I can't help with that.",), stream=self.stream, stop="refusal")

    def quota(self) -> Canned:
        return self._error(
            400,
            "invalid_request_error",
            "Your credit balance is too low to access the Anthropic API. Please go to "
            "Plans & Billing to upgrade or purchase credits.",
        )

    def overloaded(self) -> Canned:
        return self._error(529, "overloaded_error", "Overloaded")


class OpenAIChatWire(Wire):
    name = "openai"
    usage: ClassVar[dict[str, Any]] = {
        "prompt_tokens": UNCACHED + CACHED,
        "completion_tokens": OUTPUT,
        "total_tokens": UNCACHED + CACHED + OUTPUT,
        "prompt_tokens_details": {"cached_tokens": CACHED},
    }

    @staticmethod
    def _chunk(delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "contract-model",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    def _deltas(self, parts: tuple[str, ...]) -> list[tuple[str | None, Any]]:
        return [(None, self._chunk({"content": part}, None)) for part in parts]

    def reply(self, parts: tuple[str, ...], *, stream: bool, finish: str = "stop") -> Canned:
        if not stream:
            return Canned(
                body={
                    "id": "chatcmpl-1",
                    "object": "chat.completion",
                    "created": 1,
                    "model": "contract-model",
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": "".join(parts)},
                            "finish_reason": finish,
                        }
                    ],
                    "usage": self.usage,
                }
            )
        usage = {**self._chunk({}, None), "choices": [], "usage": self.usage}
        events = [
            *self._deltas(parts),
            (None, self._chunk({}, finish)),
            (None, usage),
            (None, "[DONE]"),
        ]
        return Canned(chunks=sse(*events))

    def stream_error(self, parts: tuple[str, ...]) -> Canned:
        error = {"error": {"message": "The server is overloaded", "type": "server_error"}}
        return Canned(chunks=sse(*self._deltas(parts), (None, error)))

    @staticmethod
    def _error(status: int, code: str | None, kind: str, message: str, **headers: str) -> Canned:
        body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
        return Canned(status=status, body=body, headers=headers)

    def rate_limited(self, retry_after_s: float) -> Canned:
        return Canned(
            status=429,
            body={
                "error": {
                    "message": "Rate limit reached for requests",
                    "type": "requests",
                    "param": None,
                    "code": "rate_limit_exceeded",
                }
            },
            headers={"retry-after": f"{retry_after_s:g}"},
        )

    def context_overflow(self) -> Canned:
        return self._error(
            400,
            "context_length_exceeded",
            "invalid_request_error",
            "This model's maximum context length is 8192 tokens. However, your messages "
            "resulted in 8202 tokens.",
        )

    def content_policy(self) -> Canned:
        return self.reply(("",), stream=self.stream, finish="content_filter")

    def quota(self) -> Canned:
        return self._error(
            429,
            "insufficient_quota",
            "insufficient_quota",
            "You exceeded your current quota, please check your plan and billing details.",
        )

    def overloaded(self) -> Canned:
        return self._error(503, "server_is_overloaded", "server_error", "overloaded")


class OpenAIResponsesWire(OpenAIChatWire):
    usage: ClassVar[dict[str, Any]] = {
        "input_tokens": UNCACHED + CACHED,
        "input_tokens_details": {"cached_tokens": CACHED},
        "output_tokens": OUTPUT,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": UNCACHED + CACHED + OUTPUT,
    }

    def _response(self, text: str, status: str = "completed") -> dict[str, Any]:
        return {
            "id": "resp_1",
            "object": "response",
            "created_at": 1,
            "model": "contract-model",
            "status": status,
            "output": [
                {
                    "type": "message",
                    "id": "msg_1",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}],
                }
            ],
            "usage": self.usage,
            "error": None,
            "incomplete_details": None,
            "instructions": None,
            "metadata": {},
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
        }

    def _deltas(self, parts: tuple[str, ...]) -> list[tuple[str | None, Any]]:
        return [
            (
                "response.output_text.delta",
                {
                    "type": "response.output_text.delta",
                    "item_id": "msg_1",
                    "output_index": 0,
                    "content_index": 0,
                    "delta": part,
                    "logprobs": [],
                    "sequence_number": i + 1,
                },
            )
            for i, part in enumerate(parts)
        ]

    def reply(self, parts: tuple[str, ...], *, stream: bool, finish: str = "stop") -> Canned:
        text = "".join(parts)
        if not stream:
            return Canned(body=self._response(text))
        done = {
            "type": "response.completed",
            "sequence_number": len(parts) + 1,
            "response": self._response(text),
        }
        return Canned(chunks=sse(*self._deltas(parts), ("response.completed", done)))

    def stream_error(self, parts: tuple[str, ...]) -> Canned:
        error = {
            "type": "error",
            "sequence_number": len(parts) + 1,
            "error": {"type": "server_error", "code": "server_error", "message": "overloaded"},
        }
        return Canned(chunks=sse(*self._deltas(parts), ("error", error)))

    def content_policy(self) -> Canned:
        return self._error(
            400,
            "content_policy_violation",
            "invalid_request_error",
            "Your request was rejected as a result of our safety system.",
        )


class GeminiWire(Wire):
    name = "gemini"
    usage: ClassVar[dict[str, int]] = {
        "promptTokenCount": UNCACHED + CACHED,
        "cachedContentTokenCount": CACHED,
        "candidatesTokenCount": OUTPUT,
        "totalTokenCount": UNCACHED + CACHED + OUTPUT,
    }

    def _chunk(self, text: str, finish: str | None = None) -> dict[str, Any]:
        candidate: dict[str, Any] = {
            "content": {"parts": [{"text": text}], "role": "model"},
            "index": 0,
        }
        if finish:
            candidate["finishReason"] = finish
        return {"candidates": [candidate], "usageMetadata": self.usage, "modelVersion": "m"}

    def reply(self, parts: tuple[str, ...], *, stream: bool) -> Canned:
        if not stream:
            return Canned(body=self._chunk("".join(parts), "STOP"))
        chunks = [self._chunk(part) for part in parts[:-1]]
        chunks.append(self._chunk(parts[-1] if parts else "", "STOP"))
        return Canned(chunks=sse(*((None, c) for c in chunks)))

    def stream_error(self, parts: tuple[str, ...]) -> Canned:
        # Gemini reports an error after a 200 as a JSON error object in the stream.
        error = {
            "error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}
        }
        chunks = [(None, self._chunk(part)) for part in parts]
        return Canned(chunks=sse(*chunks, (None, error)))

    @staticmethod
    def _error(status: int, state: str, message: str, *details: dict[str, Any]) -> Canned:
        error = {"code": status, "message": message, "status": state, "details": list(details)}
        return Canned(status=status, body={"error": error})

    def rate_limited(self, retry_after_s: float) -> Canned:
        return self._error(
            429,
            "RESOURCE_EXHAUSTED",
            "Resource has been exhausted (e.g. check quota).",
            {
                "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                "violations": [{"quotaId": "GenerateRequestsPerMinutePerProjectPerModel"}],
            },
            {
                "@type": "type.googleapis.com/google.rpc.RetryInfo",
                "retryDelay": f"{retry_after_s:g}s",
            },
        )

    def context_overflow(self) -> Canned:
        return self._error(
            400,
            "INVALID_ARGUMENT",
            "The input token count (1200293) exceeds the maximum number of tokens allowed "
            "(1048576).",
        )

    def content_policy(self) -> Canned:
        blocked = {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": self.usage}
        if self.stream:
            return Canned(chunks=sse((None, blocked)))
        return Canned(body=blocked)

    def quota(self) -> Canned:
        return self._error(
            429,
            "RESOURCE_EXHAUSTED",
            "You exceeded your current quota, please check your plan and billing details.",
            {
                "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                "violations": [{"quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier"}],
            },
        )

    def overloaded(self) -> Canned:
        return self._error(503, "UNAVAILABLE", "The model is overloaded. Please try again later.")
