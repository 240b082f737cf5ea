"""``CheckedSettings``: the settings of a batch's specs that passed their check, so that
a batch of 100,000 runs of a few tasks checks each distinct setting once.

What ``Engine`` checks of a spec's settings (its adapter's ``check_settings`` of its
``config``, and each fallback candidate's config, made from the spec's adapter, config and
limits) depends on the spec's ``adapter``, ``config``, ``fallbacks`` and ``limits`` only;
a spec whose four equal those of one that passed passes too. Only a pass is remembered, so
a bad spec is refused, naming itself, every time; at most ``KEPT`` settings are kept.
"""

from __future__ import annotations

from typing import Any, Final

from backstay.engine.task import TaskSpec

__all__ = ["KEPT", "CheckedSettings"]

KEPT: Final = 64


def _settings(spec: TaskSpec) -> tuple[Any, ...]:
    return (spec.adapter, spec.config, spec.fallbacks, spec.limits)


class CheckedSettings:
    """The settings of the specs ``passed`` was told of (see the module docstring)."""

    def __init__(self) -> None:
        self._passed: list[tuple[Any, ...]] = []

    def known(self, spec: TaskSpec) -> bool:
        """Whether a spec with the settings of ``spec`` passed its check."""
        wanted = _settings(spec)
        return any(wanted == settings for settings in self._passed)

    def passed(self, spec: TaskSpec) -> None:
        """``spec``'s settings passed their check."""
        if len(self._passed) < KEPT:
            self._passed.append(_settings(spec))
