"""``Failure``: the frozen value every classifier returns.

Its ``kind`` and ``retryable`` follow from its ``code`` (``backstay.taxonomy.CODES``). Its
message and details are redacted on construction, so a ``Failure`` can be logged, stored
or printed as it is. It converts losslessly to the two contract shapes in use: the skill
error contract (``to_error_info``) and the adapter reliability contract
(``to_adapter_error``).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import math
from collections.abc import Mapping
from typing import Any, Final

from backstay.redact import redact, redact_mapping
from backstay.taxonomy import CODES, KINDS, Action, ErrorCategory, FailureKind, canonical_code

__all__ = ["Failure"]

_MAX_DETAIL_ITEMS: Final = 32
_MAX_DETAIL_TEXT: Final = 2000
_MAX_MESSAGE: Final = 4000


def _trim_details(details: Mapping[str, Any]) -> dict[str, Any]:
    """Redacted first, then trimmed: a cut must never leave half a secret behind."""
    kept = dict(list(details.items())[:_MAX_DETAIL_ITEMS])
    redacted: dict[str, Any] = redact_mapping(kept)
    for key, value in redacted.items():
        if isinstance(value, str) and len(value) > _MAX_DETAIL_TEXT:
            redacted[key] = value[:_MAX_DETAIL_TEXT] + "…"
    return redacted


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Failure:
    """One classified failure. Frozen; ``message`` and ``details`` are redacted on creation.

    ``kind`` and ``retryable`` always follow from ``code`` (see ``CODES``), so they are not
    constructor arguments; an unregistered code raises ``ValueError``. An alias the error
    contract uses (``ERR_HTTP_408_TIMEOUT``…, see ``CODE_ALIASES``) becomes the canonical code.
    """

    code: str
    kind: FailureKind = dataclasses.field(init=False)
    message: str = ""
    retry_after_s: float | None = None
    resets_at: _dt.datetime | None = None
    provider: str | None = None
    status: int | None = None
    details: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "code", canonical_code(self.code))
        info = CODES.get(self.code)
        if info is None:
            raise ValueError(f"Failure: unknown code {self.code!r} (see backstay.CODES)")
        object.__setattr__(self, "kind", info.kind)
        if self.retry_after_s is not None and not self.retry_after_s >= 0:
            raise ValueError(f"Failure.retry_after_s must be >= 0, got {self.retry_after_s!r}")
        if self.resets_at is not None and self.resets_at.tzinfo is None:
            raise ValueError("Failure.resets_at must be timezone-aware")
        message = redact(self.message)
        if len(message) > _MAX_MESSAGE:
            message = message[:_MAX_MESSAGE] + "…"
        object.__setattr__(self, "message", message)
        object.__setattr__(self, "details", _trim_details(self.details))

    @property
    def retryable(self) -> bool:
        """Whether this failure may be retried at all; decided by ``code`` alone."""
        return CODES[self.code].retryable

    @property
    def action(self) -> Action:
        """The engine's default action for this failure."""
        if not self.retryable and KINDS[self.kind].retryable:
            return Action.FAIL
        return KINDS[self.kind].action

    @property
    def category(self) -> ErrorCategory:
        """The error contract's category, decided by ``code`` alone."""
        return CODES[self.code].category

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready mapping with every field (``resets_at`` as ISO-8601)."""
        return {
            "kind": str(self.kind),
            "code": self.code,
            "retryable": self.retryable,
            "action": str(self.action),
            "retry_after_s": self.retry_after_s,
            "resets_at": self.resets_at.isoformat() if self.resets_at else None,
            "provider": self.provider,
            "status": self.status,
            "message": self.message,
            "details": dict(self.details),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, default=str)

    def to_error_info(self) -> dict[str, Any]:
        """The skill error contract: ``{code, message, category, retryable, details,
        retry_after_ms, upstream_status, provider}``. ``resets_at`` travels in ``details``."""
        details = dict(self.details)
        if self.resets_at is not None:
            details["resets_at"] = self.resets_at.isoformat()
        return {
            "code": self.code,
            "message": self.message,
            "category": str(self.category),
            "retryable": self.retryable,
            "details": details,
            "retry_after_ms": (
                None if self.retry_after_s is None else round(self.retry_after_s * 1000)
            ),
            "upstream_status": self.status,
            "provider": self.provider,
        }

    @classmethod
    def from_error_info(cls, info: Mapping[str, Any]) -> Failure:
        """The inverse of ``to_error_info``."""
        details = dict(info.get("details") or {})
        resets_raw = details.pop("resets_at", None)
        resets_at = _dt.datetime.fromisoformat(resets_raw) if resets_raw else None
        ms = info.get("retry_after_ms")
        return cls(
            code=str(info["code"]),
            message=str(info.get("message") or ""),
            retry_after_s=None if ms is None else float(ms) / 1000.0,
            resets_at=resets_at,
            provider=info.get("provider"),
            status=info.get("upstream_status"),
            details=details,
        )

    def to_adapter_error(self) -> dict[str, Any]:
        """The adapter reliability contract: ``{error_type, message, retry_after_seconds,
        raw_error}`` with its types: ``retry_after_seconds`` whole seconds (rounded up) or
        ``None``, ``raw_error`` the full ``to_error_info`` as JSON text, so nothing is lost."""
        wait = self.retry_after_s
        return {
            "error_type": KINDS[self.kind].adapter_error_type,
            "message": self.message,
            "retry_after_seconds": None if wait is None else math.ceil(wait),
            "raw_error": json.dumps(self.to_error_info(), sort_keys=True, default=str),
        }

    @classmethod
    def from_adapter_error(cls, error: Any) -> Failure:
        """The inverse of ``to_adapter_error``; also the contract's ``AdapterError`` as an
        adapter builds it (a mapping or an object with its four fields) whose ``raw_error``
        is the provider's own text: a failure of its ``error_type`` (``unknown`` when it is
        missing or not one of the contract's), its message and its Retry-After, the raw
        text kept (redacted) in ``details``."""
        if isinstance(error, Mapping):
            fields = dict(error)
        else:
            fields = {name: getattr(error, name, None) for name in _ADAPTER_ERROR_FIELDS}
        raw = fields.get("raw_error")
        info = _error_info_in(raw)
        if info is not None:
            return cls.from_error_info(info)
        code = _ADAPTER_TYPE_CODES.get(str(fields.get("error_type")), "ERR_UNKNOWN")
        wait = fields.get("retry_after_seconds")
        seconds = None
        if isinstance(wait, int | float) and not isinstance(wait, bool) and wait >= 0:
            seconds = float(wait)
        return cls(
            code=code,
            message=str(fields.get("message") or ""),
            retry_after_s=seconds,
            details={} if raw is None else {"raw_error": str(raw)},
        )

    def __str__(self) -> str:
        where = f" [{self.provider}]" if self.provider else ""
        status = f" HTTP {self.status}" if self.status is not None else ""
        return f"{self.kind}/{self.code}{where}{status}: {self.message}"


_ADAPTER_ERROR_FIELDS: Final = ("error_type", "message", "retry_after_seconds", "raw_error")
# The contract's error types (and backstay's auth and invalid_request) → a code of the kind.
_ADAPTER_TYPE_CODES: Final[Mapping[str, str]] = {
    "network": "ERR_NETWORK",
    "rate_limit": "ERR_LLM_RATE_LIMITED",
    "timeout": "ERR_TIMEOUT",
    "context_limit": "ERR_LLM_CONTEXT_LENGTH",
    "content_policy": "ERR_LLM_CONTENT_FILTER",
    "quota_exhausted": "ERR_LLM_QUOTA_EXHAUSTED",
    "auth": "ERR_AUTH_INVALID_KEY",
    "invalid_request": "ERR_HTTP_400_BAD_REQUEST",
    "unknown": "ERR_UNKNOWN",
}


def _error_info_in(raw: Any) -> Mapping[str, Any] | None:
    """The ``to_error_info`` mapping ``raw`` holds (as JSON text, or as a mapping), if any."""
    if isinstance(raw, str) and raw.startswith("{"):
        try:
            raw = json.loads(raw)
        except ValueError:
            return None
    if isinstance(raw, Mapping) and isinstance(raw.get("code"), str) and raw["code"] in CODES:
        return raw
    return None
