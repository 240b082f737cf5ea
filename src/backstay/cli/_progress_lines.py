"""The words of a retry and of a move to a fallback candidate, as ``batch`` (``_progress``)
and ``run`` (``_run_progress``) print them. Apart from ``_progress`` so that ``run`` loads
neither the engine's events nor the batch's display for them."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from backstay.events import RetryScheduled

__all__ = ["fell_back_text", "on", "retry_text"]


def on(candidate: str | None) -> str:
    """`` on adapter/model``, or nothing when the candidate is not known."""
    return f" on {candidate}" if candidate else ""


def retry_text(event: RetryScheduled, candidate: str | None) -> str:
    return (
        f"attempt {event.attempt} failed{on(candidate)} ({event.failure.kind}); retrying in "
        f"{event.delay_s:.1f} s"
    )


def fell_back_text(attempt: int, from_candidate: str, kind: str, to_candidate: str) -> str:
    return f"attempt {attempt} failed on {from_candidate} ({kind}); moving to {to_candidate}"
