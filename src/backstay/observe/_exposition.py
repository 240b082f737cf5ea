"""The Prometheus text exposition format (version 0.0.4), written by hand: metric families
with ``# HELP`` and ``# TYPE``, escaped label values, histograms as cumulative buckets."""

from __future__ import annotations

import bisect
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Final

__all__ = ["CONTENT_TYPE", "Exposition", "Histogram", "counts", "sums"]

CONTENT_TYPE: Final = "text/plain; version=0.0.4; charset=utf-8"
Labels = tuple[tuple[str, str], ...]


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(labels: Labels) -> str:
    if not labels:
        return ""
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in labels) + "}"


def _number(value: float) -> str:
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(float(value))


class Histogram:
    """Observations of one labelled series: counts per bucket upper bound, sum, count."""

    __slots__ = ("bounds", "count", "counts", "total")

    def __init__(self, bounds: Sequence[float]) -> None:
        self.bounds = tuple(bounds)
        self.counts = [0] * len(self.bounds)
        self.total = 0.0
        self.count = 0

    def observe(self, value: float) -> None:
        i = bisect.bisect_left(self.bounds, value)
        if i < len(self.counts):
            self.counts[i] += 1
        self.total += value
        self.count += 1


class Exposition:
    """Families in the order added; ``text()`` is the whole exposition."""

    def __init__(self) -> None:
        self._parts: list[str] = []

    def _head(self, name: str, kind: str, help_text: str) -> None:
        self._parts.append(f"# HELP {name} {help_text}\n# TYPE {name} {kind}\n")

    def family(self, name: str, kind: str, help_text: str, samples: Mapping[Labels, float]) -> None:
        """A counter or gauge family: one sample per label set."""
        self._head(name, kind, help_text)
        self._parts.extend(
            f"{name}{_labels(labels)} {_number(value)}\n"
            for labels, value in sorted(samples.items())
        )

    def histogram(self, name: str, help_text: str, series: Mapping[Labels, Histogram]) -> None:
        self._head(name, "histogram", help_text)
        for labels, hist in sorted(series.items()):
            running = 0
            for bound, n in zip(hist.bounds, hist.counts, strict=True):
                running += n
                le = (*labels, ("le", _number(bound)))
                self._parts.append(f"{name}_bucket{_labels(le)} {running}\n")
            inf = (*labels, ("le", "+Inf"))
            self._parts.append(f"{name}_bucket{_labels(inf)} {hist.count}\n")
            self._parts.append(f"{name}_sum{_labels(labels)} {_number(hist.total)}\n")
            self._parts.append(f"{name}_count{_labels(labels)} {hist.count}\n")

    def text(self) -> str:
        return "".join(self._parts)


def counts(items: Iterable[Labels]) -> dict[Labels, float]:
    """How often each label set occurs."""
    return {labels: float(n) for labels, n in Counter(items).items()}


def sums(items: Iterable[tuple[Labels, float]]) -> dict[Labels, float]:
    """The sum of the values of each label set."""
    out: defaultdict[Labels, float] = defaultdict(float)
    for labels, value in items:
        out[labels] += value
    return dict(out)
