"""``GatewaySettings``: where the gateway listens, where each provider's upstream is, and
how a request is retried. Frozen, validated on construction (``ConfigError`` names the
field), changed with ``dataclasses.replace``.

A gateway binds a loopback address unless ``allow_remote`` is set, and then only with a
``token`` every request must present (``TOKEN_HEADER``): anyone who can reach it spends
the keys its clients send."""

from __future__ import annotations

import dataclasses
import ipaddress
from typing import Final
from urllib.parse import urlsplit

from backstay._checks import check_name, check_number
from backstay.breaker import BreakerSettings
from backstay.errors import ConfigError
from backstay.fallback.rules import FallbackRules
from backstay.policy import KindOverride, PolicyRegistry, RetryPolicy
from backstay.taxonomy import FailureKind

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_UPSTREAMS",
    "GATEWAY_POLICY",
    "GATEWAY_POLICY_NAME",
    "MIN_TOKEN_LEN",
    "TOKEN_HEADER",
    "GatewaySettings",
    "Upstreams",
    "configured_policy",
]

DEFAULT_HOST: Final = "127.0.0.1"
DEFAULT_PORT: Final = 8787
# The header a client sends the gateway's token in; never forwarded upstream.
TOKEN_HEADER: Final = "x-backstay-gateway-token"  # noqa: S105 - a header name
MIN_TOKEN_LEN: Final = 16
DEFAULT_CONNECT_TIMEOUT_S: Final = 10.0
# As the SDKs' read timeout: a long answer may take minutes before its first byte.
DEFAULT_READ_TIMEOUT_S: Final = 600.0
# A buffered stream larger than this is an error rather than memory without bound.
DEFAULT_MAX_BUFFER_BYTES: Final = 64 * 1024 * 1024
# A request body larger than this gets a 413 (a long conversation is a few MB).
DEFAULT_MAX_REQUEST_BYTES: Final = 64 * 1024 * 1024
# The first SSE event of a stream is checked before anything is forwarded; one this long
# without its end is forwarded unchecked.
DEFAULT_PEEK_BYTES: Final = 64 * 1024

# An agent session's request waits here rather than failing the session: more attempts and
# longer waits than a single API call's policy, bounded by a deadline.
GATEWAY_POLICY: Final = RetryPolicy(
    name="gateway",
    max_attempts=8,
    initial_delay_s=0.5,
    max_delay_s=30.0,
    max_retry_after_s=300.0,
    deadline_s=900.0,
    per_kind={FailureKind.UNKNOWN: KindOverride(max_attempts=2)},
)
# The configuration's policy a gateway retries with, when it has one of this name
# (``retry.policies.gateway`` of backstay.yaml).
GATEWAY_POLICY_NAME: Final = "gateway"


def configured_policy(registry: PolicyRegistry | None) -> RetryPolicy:
    """The retry policy of a gateway: ``registry``'s policy named ``GATEWAY_POLICY_NAME``
    (``retry.policies.gateway``) when it has one, else ``GATEWAY_POLICY``."""
    if registry is not None and GATEWAY_POLICY_NAME in registry:
        return registry.get(GATEWAY_POLICY_NAME)
    return GATEWAY_POLICY


def _check_url(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"must be an http(s) URL, got {value!r}", where=where)
    parts = urlsplit(value)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise ConfigError(f"must be an http(s) URL, got {value!r}", where=where)
    if parts.query or parts.fragment or parts.username or parts.password:
        raise ConfigError("must have no query, fragment or credentials", where=where)
    return value.rstrip("/")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Upstreams:
    """The base URL each provider's requests go to (the request's path is appended)."""

    anthropic: str = "https://api.anthropic.com"
    openai: str = "https://api.openai.com"
    gemini: str = "https://generativelanguage.googleapis.com"

    def __post_init__(self) -> None:
        for name in ("anthropic", "openai", "gemini"):
            url = _check_url(getattr(self, name), f"upstream {name}")
            object.__setattr__(self, name, url)

    def url_for(self, provider: str) -> str:
        """The base URL of ``provider`` (``anthropic``, ``openai`` or ``gemini``)."""
        url: str = getattr(self, provider)
        return url

    @classmethod
    def all(cls, url: str) -> Upstreams:
        """Every provider at one base URL (a fake provider, another gateway)."""
        return cls(anthropic=url, openai=url, gemini=url)


DEFAULT_UPSTREAMS: Final = Upstreams()


def is_loopback(host: str) -> bool:
    """Whether ``host`` names only this machine (``localhost`` or a loopback address)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class GatewaySettings:
    """How a gateway listens, forwards and retries.

    * ``buffer_streams``: hold a whole stream until it completed cleanly, then replay it
      (a failure mid-stream is retried); otherwise a stream is retried only until its first
      event is forwarded.
    * ``token``: when set, every request must carry it in ``TOKEN_HEADER``; required with
      ``allow_remote``, which alone permits a non-loopback ``host``.
    * ``fallbacks``: (model, fallback model) pairs of one provider's models; a model given
      in several pairs has a chain, in the order given. A request for the model moves
      along it while the model's circuit is open, to the first model whose circuit is not
      (a run's own fallback model comes first).
    * ``fallback_rules``: when set, a request with a chain also moves by its failure's
      kind, as a batch's task does (``backstay.fallback.FallbackRules``: a spent quota or
      a long Retry-After moves on at once, a context overflow never moves; the failing
      model cools down for what the table says). ``None``: by the circuit only.
    """

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    upstreams: Upstreams = DEFAULT_UPSTREAMS
    policy: RetryPolicy = GATEWAY_POLICY
    breaker: BreakerSettings = dataclasses.field(default_factory=BreakerSettings)
    buffer_streams: bool = False
    allow_remote: bool = False
    token: str | None = dataclasses.field(default=None, repr=False)
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S
    read_timeout_s: float = DEFAULT_READ_TIMEOUT_S
    max_buffer_bytes: int = DEFAULT_MAX_BUFFER_BYTES
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    peek_bytes: int = DEFAULT_PEEK_BYTES
    fallbacks: tuple[tuple[str, str], ...] = ()
    fallback_rules: FallbackRules | None = None

    def __post_init__(self) -> None:
        check_name(self.host, where="host")
        check_number(self.port, where="port", maximum=65535, integer=True)
        if not isinstance(self.upstreams, Upstreams):
            raise ConfigError(f"must be Upstreams, got {self.upstreams!r}", where="upstreams")
        if not isinstance(self.policy, RetryPolicy):
            raise ConfigError(f"must be a RetryPolicy, got {self.policy!r}", where="policy")
        if not isinstance(self.breaker, BreakerSettings):
            raise ConfigError(f"must be BreakerSettings, got {self.breaker!r}", where="breaker")
        if self.token is not None and (
            not isinstance(self.token, str) or len(self.token) < MIN_TOKEN_LEN
        ):
            raise ConfigError(f"must be at least {MIN_TOKEN_LEN} characters", where="token")
        if not is_loopback(self.host):
            if not self.allow_remote:
                raise ConfigError(
                    f"{self.host!r} is not a loopback address: binding it needs allow_remote "
                    "(--allow-remote) and a token (--token-env)",
                    where="host",
                )
            if self.token is None:
                raise ConfigError(
                    f"binding the non-loopback address {self.host!r} needs a token (--token-env)",
                    where="token",
                )
        check_number(self.connect_timeout_s, where="connect_timeout_s", minimum=0.001)
        check_number(self.read_timeout_s, where="read_timeout_s", minimum=0.001)
        check_number(self.max_buffer_bytes, where="max_buffer_bytes", minimum=1, integer=True)
        check_number(self.max_request_bytes, where="max_request_bytes", minimum=1, integer=True)
        check_number(self.peek_bytes, where="peek_bytes", minimum=1, integer=True)
        _check_fallbacks(self.fallbacks)
        if self.fallback_rules is not None and not isinstance(self.fallback_rules, FallbackRules):
            raise ConfigError(
                f"must be FallbackRules, got {self.fallback_rules!r}", where="fallback_rules"
            )

    def fallback_chains(self) -> dict[str, tuple[str, ...]]:
        """Each model's fallback models, in order (``fallbacks`` grouped by model)."""
        chains: dict[str, tuple[str, ...]] = {}
        for model, fallback in self.fallbacks:
            chains[model] = (*chains.get(model, ()), fallback)
        return chains


def _check_fallbacks(fallbacks: object) -> None:
    if not isinstance(fallbacks, tuple):
        raise ConfigError(f"must be (model, fallback) pairs, got {fallbacks!r}", where="fallbacks")
    seen: set[tuple[str, str]] = set()
    for pair in fallbacks:
        if not (
            isinstance(pair, tuple)
            and len(pair) == 2
            and all(isinstance(name, str) and name.strip() for name in pair)
        ):
            raise ConfigError(f"must be a (model, fallback) pair, got {pair!r}", where="fallbacks")
        model, fallback = pair
        if model == fallback:
            raise ConfigError(f"{model!r} cannot fall back to itself", where="fallbacks")
        if pair in seen:
            raise ConfigError(f"{model!r} falls back to {fallback!r} twice", where="fallbacks")
        seen.add(pair)
