"""The names of a namespace's keys: ``{namespace:tag}:part:…``. The part in braces is the
Redis Cluster hash tag, so the keys one script or transaction touches share a slot.
Kept apart from the connection so that a reader without redis-py names keys alike."""

from __future__ import annotations

__all__ = ["key"]


def key(namespace: str, tag: str, *parts: str) -> str:
    """``{namespace:tag}:part:…`` — keys with one ``tag`` share a cluster slot."""
    return ":".join((f"{{{namespace}:{tag}}}", *parts))
