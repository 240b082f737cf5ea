"""Which requests a fault applies to: counted per fault, after its filters, reproducibly."""

from __future__ import annotations

import pytest

from backstay.errors import ConfigError
from backstay.fakeprovider import Fault, FaultKind, Outage
from backstay.fakeprovider._select import FaultPicker

RATE = FaultKind.RATE_LIMIT


def _picks(faults: tuple[Fault, ...], requests: list[tuple[str, str]], **kw: float) -> list[str]:
    picker = FaultPicker(faults, seed=int(kw.get("seed", 0)), started=0.0)
    out = []
    for number, (api, model) in enumerate(requests):
        fault = picker.pick(api, model, stream=False, now=kw.get("step", 0.0) * number)
        out.append("-" if fault is None else str(fault.kind))
    return out


def test_first_applies_to_the_first_n_requests() -> None:
    picks = _picks((Fault(kind=RATE, first=2),), [("anthropic", "m")] * 4)
    assert picks == ["rate_limit", "rate_limit", "-", "-"]


def test_requests_name_request_numbers_counted_after_the_filters() -> None:
    fault = Fault(kind=RATE, api="openai", requests=(2,))
    requests = [("openai-chat", "m"), ("gemini", "m"), ("openai-responses", "m")]
    assert _picks((fault,), requests) == ["-", "-", "rate_limit"]


def test_the_model_filter_is_exact() -> None:
    fault = Fault(kind=RATE, model="gpt-5")
    assert _picks((fault,), [("openai-chat", "gpt-5-mini"), ("openai-chat", "gpt-5")]) == [
        "-",
        "rate_limit",
    ]


def test_the_first_fault_that_applies_wins_and_every_fault_counts() -> None:
    faults = (Fault(kind=RATE, first=1), Fault(kind=FaultKind.SERVER_ERROR, requests=(1, 2)))
    assert _picks(faults, [("gemini", "m")] * 3) == ["rate_limit", "server_error", "-"]


def test_probability_is_reproducible_for_a_seed() -> None:
    fault = Fault(kind=RATE, probability=0.3)
    requests = [("anthropic", "m")] * 200
    one = _picks((fault,), requests, seed=7)
    assert one == _picks((fault,), requests, seed=7)
    assert one != _picks((fault,), requests, seed=8)
    assert 30 <= one.count("rate_limit") <= 90


def test_an_outage_by_time_covers_its_window_only() -> None:
    fault = Fault(kind=FaultKind.UNAVAILABLE, outage=Outage(start_s=2.0, duration_s=3.0))
    picks = _picks((fault,), [("anthropic", "m")] * 7, step=1.0)  # at t = 0, 1, … 6
    assert picks == ["-", "-", "unavailable", "unavailable", "unavailable", "-", "-"]


def test_an_outage_can_start_at_a_request() -> None:
    fault = Fault(kind=FaultKind.UNAVAILABLE, outage=Outage(start_request=3, duration_s=2.5))
    picks = _picks((fault,), [("anthropic", "m")] * 7, step=1.0)
    assert picks == ["-", "-", "unavailable", "unavailable", "unavailable", "-", "-"]


def test_stream_faults_skip_json_requests_without_counting_them() -> None:
    picker = FaultPicker((Fault(kind=FaultKind.STREAM_ERROR, first=1),), seed=0, started=0.0)
    assert picker.pick("anthropic", "m", stream=False, now=0.0) is None
    assert picker.pick("anthropic", "m", stream=True, now=0.0) is not None


@pytest.mark.parametrize(
    ("kwargs", "where"),
    [
        ({"first": 0}, "first"),
        ({"requests": (0,)}, "requests"),
        ({"probability": 1.5}, "probability"),
        ({"first": 1, "probability": 0.5}, "fault"),
        ({"api": "azure"}, "api"),
        ({"delay_s": 1.0}, "delay_s"),
        ({"after_events": 1}, "after_events"),
    ],
)
def test_bad_faults_name_the_field(kwargs: dict[str, object], where: str) -> None:
    with pytest.raises(ConfigError) as caught:
        Fault(kind=RATE, **kwargs)  # type: ignore[arg-type]
    assert caught.value.where == where


def test_an_outage_takes_one_start() -> None:
    with pytest.raises(ConfigError, match="not both"):
        Outage(duration_s=1.0, start_s=1.0, start_request=2)
