"""The raw configuration tree while it is loaded: plain data, where each key came from,
and every problem found so far."""

from __future__ import annotations

import dataclasses
from typing import Any

from backstay.config._paths import Path, format_path
from backstay.config._source import Source, SourceKind
from backstay.errors import ConfigError


@dataclasses.dataclass(frozen=True, slots=True)
class Problem:
    """One mistake: the key path it concerns, why, and where that key was written."""

    path: Path
    reason: str
    source: Source | None

    def render(self, fallback: str) -> str:
        """``backstay.yaml:12: retry.policies.x.max_attempts: must be >= 1, got 0``."""
        origin = str(self.source) if self.source is not None else fallback
        key = format_path(self.path)
        return f"{origin}: {key}: {self.reason}" if key else f"{origin}: {self.reason}"


_RANK = {SourceKind.DEFAULT: 0, SourceKind.FILE: 1, SourceKind.ENV: 2, SourceKind.CLI: 3}


def _order(problem: Problem) -> tuple[int, int]:
    source = problem.source
    if source is None:
        return (0, 0)
    line = source.location.rpartition(":")[2]
    return (_RANK[source.kind], int(line) if line.isdigit() else 0)


@dataclasses.dataclass(slots=True)
class Document:
    """``data`` as read (then overridden); ``sources`` holds where each key path was set."""

    name: str
    data: dict[str, Any] = dataclasses.field(default_factory=dict)
    sources: dict[Path, Source] = dataclasses.field(default_factory=dict)
    problems: list[Problem] = dataclasses.field(default_factory=list)

    def source_of(self, path: Path) -> Source | None:
        """Where ``path`` (or its nearest ancestor) was set."""
        for end in range(len(path), 0, -1):
            found = self.sources.get(path[:end])
            if found is not None:
                return found
        return None

    def problem(self, path: Path, reason: str, *, source: Source | None = None) -> None:
        self.problems.append(Problem(path, reason, source or self.source_of(path)))

    def sorted_problems(self) -> list[Problem]:
        """File problems in line order, then those of variables, then of ``--set``."""
        return sorted(self.problems, key=_order)

    def rendered_problems(self) -> list[str]:
        return [p.render(self.name) for p in self.sorted_problems()]

    def error(self) -> ConfigError:
        """One ``ConfigError`` naming every problem."""
        if len(self.problems) == 1:
            (only,) = self.problems
            origin = str(only.source) if only.source is not None else self.name
            key = format_path(only.path)
            return ConfigError(only.reason, where=f"{origin}: {key}" if key else origin)
        lines = "\n".join(f"  {line}" for line in self.rendered_problems())
        return ConfigError(f"{len(self.problems)} problems:\n{lines}", where=self.name)

    def set(self, path: Path, value: Any, source: Source) -> None:
        """Set ``path`` to ``value`` (an override), creating mappings on the way; a problem
        if the way passes through a value that is not a mapping."""
        node = self.data
        for end in range(1, len(path)):
            part = path[end - 1]
            child = node.get(part)
            if child is None:
                child = node[part] = {}
                self.sources.setdefault(path[:end], source)
            elif not isinstance(child, dict):
                self.problem(
                    path[:end],
                    f"is {child!r}, not a mapping, so {format_path(path)} cannot be set",
                    source=source,
                )
                return
            node = child
        node[path[-1]] = value
        for key in [k for k in self.sources if k[: len(path)] == path]:
            del self.sources[key]
        self.sources[path] = source
