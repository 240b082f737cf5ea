"""Message patterns: the second line of evidence, after structured codes.

Each pattern is gated by the statuses it can honestly appear with, so a 400 whose echoed
prompt mentions "rate limit" is not read as a rate limit. ``None`` (no status: exception
text, agent output) and 2xx (errors inside a stream) pass every gate.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Sequence

from backstay.classify._bounds import bounded

StatusGate = Callable[[int | None], bool]


def _any(status: int | None) -> bool:
    return True


def _not_5xx(status: int | None) -> bool:
    return status is None or status < 500


def _client(status: int | None) -> bool:
    return status is None or status < 300 or 400 <= status < 500


def _overflow(status: int | None) -> bool:
    """Context overflows come as 400/413/422 (never 429: "too many tokens" there is a
    throttle), inside streams, or as text."""
    return status is None or status < 300 or status in (400, 413, 422)


def _policy(status: int | None) -> bool:
    return status is None or status < 300 or status in (400, 403, 422, 451)


def _not_4xx_request(status: int | None) -> bool:
    """Rate-limit and overload words are believed on 429, 5xx, stream errors and text."""
    return status is None or status < 300 or status in (408, 429) or status >= 500


@functools.cache
def _compiled(source: str) -> re.Pattern[str]:
    """``source`` compiled on first use: importing classification compiles nothing."""
    return re.compile(source, re.IGNORECASE)


@dataclasses.dataclass(frozen=True, slots=True)
class Pattern:
    code: str
    source: str
    gate: StatusGate
    families: frozenset[str] | None = None  # None: every provider

    @property
    def regex(self) -> re.Pattern[str]:
        return _compiled(self.source)

    def search(self, message: str, status: int | None, family: str | None) -> str | None:
        """The words of ``message`` this pattern matches under ``status``, or ``None``."""
        if self.families is not None and family is not None and family not in self.families:
            return None
        if not self.gate(status):
            return None
        found = self.regex.search(message)
        return None if found is None else found.group(0)


def _p(code: str, pattern: str, gate: StatusGate = _any, families: str | None = None) -> Pattern:
    fams = frozenset(families.split(",")) if families else None
    return Pattern(code, pattern, gate, fams)


# Order matters: the first match wins. Specific conditions before generic ones.
PATTERNS: tuple[Pattern, ...] = (
    # Quota, credit and spend: waiting seconds never helps.
    _p(
        "ERR_LLM_CREDIT_BALANCE",
        r"credit balance (is )?too low|insufficient (credit|balance|funds)|"
        r"(prepayment|prepaid) credits (are |have been )?(depleted|exhausted)|credits are depleted|"
        r"balance is insufficient|(run|ran) out of credits|no credits remaining|"
        r"used all (your |the |available )*credits|please (top up|recharge)|"
        # Chinese providers: insufficient balance, in arrears, please recharge
        "\u4f59\u989d\u4e0d\u8db3|\u6b20\u8d39|\u8bf7\u5145\u503c",
        _not_5xx,
    ),
    # A budget the run itself was given (agent harness, rollout) is our own limit.
    _p(
        "ERR_LIMIT_BUDGET",
        r"(token|rollout|run|step|cost|turn) budget (has been |is )?(exhausted|exceeded|reached)",
        _not_5xx,
    ),
    _p(
        "ERR_LLM_SPEND_LIMIT",
        r"spend(ing)? limit|(workspace|organization|specified) (api )?usage limits?|"
        r"you will regain access|monthly (usage |spend |key )?(limit|cap|budget)|"
        r"key limit exceeded|enable overages|add \d* ?credits|purchase (more )?credits|"
        r"subscribe to (continue|\w+)|(max |key |team |user )?budget (has been )?exceeded|"
        r"budget_exceeded",
        _not_5xx,
    ),
    _p(
        "ERR_LLM_USAGE_LIMIT",
        r"usage limit reached|"
        r"(hit|reached) your (?![\w .'-]{0,40}?\brate limit)[\w .'-]{0,40}?limit|"
        r"(weekly|session) (usage )?limit|5-hour limit|"
        r"upgrade to (continue|increase)|out of (extra )?usage|"
        r"(extra usage|usage credits) (is |are )?required|free[ _-]?usage (limit|exceeded)|"
        r"exhausted your (capacity|quota)|quota will reset|"
        r"\b(individual|daily|weekly|monthly) quota (reached|exceeded|exhausted)",
        _not_5xx,
    ),
    _p(
        "ERR_LLM_DAILY_QUOTA",
        r"exhausted your daily quota|daily (request |token )?(quota|limit)|"
        r"quota.{0,120}\bper[ _-]?day\b|\b(limit_)?(rpd|tpd)\b|(requests|tokens) per day|"
        r"\bper[ _-]day\b",
        _not_5xx,
    ),
    _p(
        "ERR_LLM_QUOTA_EXHAUSTED",
        r"exceeded your current quota|insufficient_quota|quota exceeded\. check your plan|"
        r"check your plan and billing|billing (details|hard limit)|payment required",
        _not_5xx,
        "openai,anthropic",
    ),
    # An output-length parameter out of range is a bad request, not an overflowing prompt.
    _p(
        "ERR_REQUEST_INVALID",
        r"max(imum)?[_ ]tokens (you requested |value )?(is too large|exceeds? the model limit)|"
        r"supports at most \d+ completion tokens|max_(new_)?tokens must be (at least|greater)",
        _client,
    ),
    # Context overflow: the big three's words, and token counts against a maximum in the
    # words of other providers and servers (TGI, vLLM, SGLang, llama.cpp, LM Studio …).
    _p(
        "ERR_LLM_CONTEXT_LENGTH",
        r"`?inputs?`? tokens \+ `?max_new_tokens`? must be|max_seq_len|max_model_len|"
        r"max_prompt_tokens|(input|prompt|requested) tokens?( \(\d+\))? exceeds?|"
        r"\btokens?\b[^.]{0,60}\b(exceeds?|is longer than|greater than)\b[^.]{0,40}"
        r"\bcontext\b|context (size|limit|length) (has been |was |is )?exceeded|"
        r"tokens to keep[^.]{0,60}context length|context the overflows",
        _overflow,
    ),
    _p(
        "ERR_LLM_CONTEXT_LENGTH",
        r"prompt is too long|prompt_too_long|context[ _]length|context[_ ]window|"
        r"maximum context|input token count.{0,40}exceeds|exceeds? the (model's )?(maximum )?"
        r"(context|token limit)|max(imum)? (number of )?tokens allowed|"
        r"input length and .?max_tokens.? exceed|ran out of room in the model|"
        r"has hit a token limit|too many (input )?tokens|reduce the length of the messages|"
        r"input is too long|tokens? exceed(s|ed)? .{0,30}limit|"
        r"exceeds? (the )?(available )?context size|\bn_ctx|exceed_context_size",
        _overflow,
    ),
    # Content policy. A refusal in a provider's own specific words is believed under any
    # status: gateways relabel it as a 429 or a 500, and retrying it never helps.
    _p(
        "ERR_LLM_CONTENT_FILTER",
        r"content[_ ]filter|content_policy_violation|responsibleaipolicyviolation|"
        r"content management policy|considered (high|too) risk|high[ -]risk (content|request)|"
        r"data ?inspection ?failed|(may |might )?contain\w* (inappropriate|unsafe|sensitive) "
        r"content|prohibited[ _]content|block(ed)?[ _]?reason|blocked (due to|by) safety|"
        r"(violates|violating|violation of) (our|the) (content|usage|safety) (polic|guideline)|"
        # Chinese providers: unsafe or sensitive content
        "\u4e0d\u5b89\u5168|\u654f\u611f\u5185\u5bb9",
        _any,
    ),
    _p(
        "ERR_LLM_CONTENT_FILTER",
        r"content (filtering|management) policy|content[_ ]filter|content_policy_violation|"
        r"responsibleaipolicyviolation|safety system|usage polic(y|ies)|"
        r"flagged as potentially violating|violat\w+ (our|the) (content|usage) polic|"
        r"blocked (due to|by) safety|prohibited content|invalid_prompt|safeguards|"
        r"safety (measures|filters?)|flagged (this|the|your) (message|content|request|prompt)|"
        r"(content|message|request|prompt) (was|has been) flagged|flagged for (possible|potential)",
        _policy,
    ),
    # A request that can never fit a per-minute budget (OpenAI "Request too large for …").
    _p("ERR_LLM_REQUEST_TOO_LARGE", r"request too large for|too large for .{0,40}per min", _any),
    # Auth.
    _p(
        "ERR_AUTH_INVALID_KEY",
        r"invalid (x-)?api[ _-]?key|incorrect api key|api key not valid|api_key_invalid|"
        r"invalid authentication|invalid bearer token|api key (is )?(expired|revoked|disabled)",
        _client,
    ),
    _p(
        "ERR_AUTH_MISSING_CREDENTIALS",
        r"not logged in|missing (environment variable|api key|credentials)|"
        r"no api key (was )?(provided|found)|must specify the \w+_api_key|please run /login|"
        r"could not resolve authentication method|api key is required|"
        r"set an auth(entication)? method|missing [\w ]{0,20}api key",
        _client,
    ),
    # Expired, revoked or reused sign-in tokens of agent CLIs: a person must sign in again.
    _p(
        "ERR_HTTP_401_UNAUTHORIZED",
        r"refresh token (was |has )?(already )?(been )?(used|revoked|expired|reused)|"
        r"access token could not be refreshed|failed to refresh token|"
        r"(oauth |access )?token (has )?expired|please (log ?in|sign in) again|"
        r"sign in again|require[sd]? authentication with",
        _client,
    ),
    _p(
        "ERR_AUTH_ACCOUNT_DISABLED",
        r"(organi[sz]ation|account|workspace|project) (has been |is |was )?"
        r"(disabled|suspended|deactivated|banned|terminated)",
        _client,
    ),
    _p(
        "ERR_AUTH_REGION_UNSUPPORTED",
        r"(country|region|territory|location) (is )?not supported|unsupported_country|"
        r"user location is not supported|not available in your (country|region)",
        _client,
    ),
    _p(
        "ERR_LLM_MODEL_NOT_FOUND",
        r"model[_ ]not[_ ]found|\bmodels?[ /`'\"].{0,100}?(does not exist|is not found|not found)"
        # Anthropic's 404 not_found_error for an unknown model says only "model: <name>".
        r"|^model: \S+$",
        _client,
    ),
    # Transport trouble reported as text (agent CLIs, wrapped exceptions).
    _p("ERR_REQUEST_CORRUPTED", r"could not parse the json body of your request", _any),
    _p(
        "ERR_STREAM_STALLED",
        r"idle timeout waiting for sse|(stream|response|request) (stalled|idle)|"
        r"stalled mid-?stream|no (data|chunk) received (for|in)",
    ),
    _p(
        "ERR_OUTPUT_INVALID",
        r"invalid chunk|missing finish reason|stream ended (unexpectedly|with an invalid)",
    ),
    # A tool call the model got wrong, reported by the host as a 400: a resample may succeed.
    _p(
        "ERR_OUTPUT_INVALID",
        r"tool_use_failed|failed to call a function|tool call validation failed|"
        r"(does not|did not) match (the )?(expected )?schema for tool|"
        r"malformed (function|tool) call",
        _client,
    ),
    # Rate limits and overload, believed only where the status allows.
    _p(
        "ERR_LLM_RAMP_LIMIT",
        r"ramp(ing)?[_ ]limit|slow_down|ramped up too (fast|quickly)",
        _not_4xx_request,
    ),
    _p(
        "ERR_LLM_RATE_LIMITED",
        r"rate[ _-]?limit|too many requests|resource has been exhausted|"
        r"requests per (min|minute|second)|tokens per min|\b429\b|resource_exhausted",
        _not_4xx_request,
    ),
    _p(
        "ERR_LLM_OVERLOADED",
        r"overloaded|high demand|(over|at) capacity|capacity constraints|no capacity available",
        _not_4xx_request,
    ),
)


# Provider messages repeat ("Overloaded", "Connection refused"): short texts are matched
# once and remembered. The cache is bounded in entries and, through _CACHED_TEXT_LEN, in size.
_CACHED_TEXT_LEN = 4096
_CACHE_ENTRIES = 4096


def match_message(
    message: str | Sequence[str], status: int | None, family: str | None
) -> str | None:
    """The code of the first pattern (in priority order) that matches any of the texts."""
    found = find_message(message, status, family)
    return None if found is None else found[0]


def find_message(
    message: str | Sequence[str], status: int | None, family: str | None
) -> tuple[str, str] | None:
    """``(code, matched words)`` of the first pattern that matches any of the texts."""
    texts = (message,) if isinstance(message, str) else tuple(message)
    texts = tuple(t for t in texts if t)
    if sum(map(len, texts)) <= _CACHED_TEXT_LEN:
        return _match_cached(texts, status, family)
    return _match(tuple(map(bounded, texts)), status, family)


def _match(
    texts: tuple[str, ...], status: int | None, family: str | None
) -> tuple[str, str] | None:
    for pattern in PATTERNS:
        for text in texts:
            words = pattern.search(text, status, family)
            if words is not None:
                return pattern.code, words
    return None


_match_cached = functools.lru_cache(maxsize=_CACHE_ENTRIES)(_match)


# Transport words: used for exception text and agent output, never for HTTP bodies.
TRANSPORT_PATTERNS: tuple[tuple[str, str], ...] = tuple(
    (code, rx)
    for code, rx in (
        (
            "ERR_SSL_CERTIFICATE",
            r"certificate verify failed|certificate_verify_failed|self[- ]signed",
        ),
        ("ERR_SSL_ERROR", r"\bssl\b|\btls\b|handshake"),
        (
            "ERR_DNS_FAILURE",
            r"name or service not known|nodename nor servname|getaddrinfo|enotfound|"
            r"temporary failure in name resolution|failed to resolve|name resolution|"
            r"no address associated",
        ),
        ("ERR_CONNECTION_REFUSED", r"connection refused|econnrefused|errno 111\b|actively refused"),
        ("ERR_CONNECTION_RESET", r"connection reset|econnreset|broken pipe|epipe|errno 104\b"),
        (
            "ERR_NETWORK_UNREACHABLE",
            r"network is unreachable|no route to host|enetunreach|ehostunreach",
        ),
        (
            "ERR_CONNECTION_CLOSED",
            r"server disconnected|remote end closed|connection (was )?closed|socket hang up|"
            r"incomplete (chunked )?read|premature(ly)? (end|close)|stream disconnected|"
            r"peer closed connection|connection aborted",
        ),
        ("ERR_PROXY_ERROR", r"proxy error|proxyerror|tunnel connection failed"),
        (
            "ERR_CONNECT_TIMEOUT",
            r"connect ?timeout|timed out while connecting|connect\(\) timed out",
        ),
        ("ERR_TIMEOUT", r"timed out|time ?out|deadline exceeded|etimedout"),
        (
            "ERR_NETWORK",
            r"unable to connect|fetch failed|network error|connection error|econnaborted",
        ),
    )
)


def match_transport(text: str) -> str | None:
    """The transport code the words of ``text`` name, or ``None``."""
    if len(text) <= _CACHED_TEXT_LEN:
        return _transport_cached(text)
    return _transport(bounded(text))


def _transport(text: str) -> str | None:
    for code, source in TRANSPORT_PATTERNS:
        if _compiled(source).search(text):
            return code
    return None


_transport_cached = functools.lru_cache(maxsize=_CACHE_ENTRIES)(_transport)
