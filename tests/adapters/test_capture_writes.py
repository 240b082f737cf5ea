"""How ``Capture`` writes: each line straight to its file (whole after short writes),
``metrics.json`` in the very text ``json.dumps(indent=2)`` gives, private modes."""

from __future__ import annotations

import datetime as dt
import enum
import json
import math
import os
import random
import stat
from pathlib import Path

import pytest

from backstay.adapters.capture import Capture, Stream, json_indented, write_json_atomic
from backstay.adapters.usage import Usage

T0 = dt.datetime(2026, 4, 23, 1, 0, tzinfo=dt.UTC)

_STRINGS = (
    "",
    "plain",
    'quote " and \\ backslash',
    "new\nline\ttab\r\x00\x1f\x7f",
    "caf\u00e9 \u65e5\u672c \U0001f600",
    "\ud800 lone surrogate",
    ",\n  separator-looking",
    "{}[]: ,",
)
_NUMBERS = (
    0,
    -1,
    2**70,
    -(2**64),
    0.0,
    -0.0,
    1.5,
    1e308,
    5e-324,
    0.1 + 0.2,
    1e16,
    math.inf,
    math.nan,
)


def _scalar(rng: random.Random) -> object:
    kind = rng.randrange(5)
    if kind == 0:
        return rng.choice(_STRINGS) + str(rng.random())
    if kind == 1:
        return rng.choice(_NUMBERS)
    if kind == 2:
        return rng.uniform(-1e6, 1e6)
    if kind == 3:
        return rng.choice((True, False))
    return None


def test_flat_objects_are_written_as_json_dumps_with_indent_writes_them() -> None:
    rng = random.Random(7)
    for _ in range(2000):
        value = {rng.choice(_STRINGS) + str(i): _scalar(rng) for i in range(rng.randrange(1, 16))}
        assert json_indented(value) == json.dumps(value, indent=2)


class _Level(enum.IntEnum):
    HIGH = 3


@pytest.mark.parametrize(
    "value",
    [
        {},
        [],
        "text",
        7,
        {"candidates": [{"adapter": "a", "model": "m"}], "n": 1},
        {"nested": {"a": 1}},
        {"empty": [], "obj": {}},
        {1: "int key", "b": 2},
        {"level": _Level.HIGH},
        {"nan": math.nan, "ninf": -math.inf},
        [{"a": 1}, 2, "three"],
    ],
)
def test_any_other_value_is_written_as_json_dumps_with_indent_writes_it(value: object) -> None:
    assert json_indented(value) == json.dumps(value, indent=2)


@pytest.mark.parametrize("durable", [True, False])
def test_metrics_json_is_the_indented_dump_of_its_keys(tmp_path: Path, durable: bool) -> None:
    extra = {"requested_adapter": "anthropic-api", "model": "claude", "candidates": None}
    with Capture(tmp_path / "attempt_1") as capture:
        path = capture.write_metrics(
            usage=Usage(input_tokens=3, output_tokens=8, api_calls=1, cost_usd=0.000129),
            duration_s=0.0724,
            exit_code=0,
            failure=None,
            started_at=T0,
            ended_at=T0,
            durable=durable,
            extra=extra,
        )
    text = path.read_text(encoding="utf-8")
    assert text == json.dumps(json.loads(text), indent=2) + "\n"
    assert json.loads(text)["duration_seconds"] == 0.072
    assert sorted(os.listdir(path.parent)) == [
        "agent.log",
        "metrics.json",
        "stderr.log",
        "stdout.log",
    ]


def test_write_json_atomic_takes_a_relative_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write_json_atomic(Path("m.json"), {"a": [1, 2]})
    assert (tmp_path / "m.json").read_text(
        encoding="utf-8"
    ) == '{\n  "a": [\n    1,\n    2\n  ]\n}\n'


def _write_everything(capture: Capture) -> None:
    for n in range(20):
        capture.log(f"event {n} with key sk-ant-api03-{'x' * 40} and caf\u00e9")
    capture.write(Stream.STDOUT, b"first line\nsecond caf\xc3")
    capture.write(Stream.STDOUT, b"\xa9 line\nno newline yet")
    capture.write(Stream.STDERR, "x" * 70_000 + "\n")


def _contents(folder: Path) -> dict[str, bytes]:
    return {name: (folder / name).read_bytes() for name in sorted(os.listdir(folder))}


def test_short_writes_are_written_again_until_the_whole_line_is_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_write = os.write
    with Capture(tmp_path / "whole") as capture:
        _write_everything(capture)
    calls = 0

    def short_write(fd: int, data: bytes) -> int:
        nonlocal calls
        calls += 1
        return real_write(fd, bytes(data[:7]))

    monkeypatch.setattr(os, "write", short_write)
    with Capture(tmp_path / "short") as capture:
        _write_everything(capture)
    monkeypatch.undo()
    whole, short = _contents(tmp_path / "whole"), _contents(tmp_path / "short")
    assert calls > 10_000
    assert [len(v) for v in short.values()] == [len(v) for v in whole.values()]
    for name in whole:  # the stamps differ; the rest is the same
        cut = [line[30:] for line in whole[name].split(b"\n")]
        assert [line[30:] for line in short[name].split(b"\n")] == cut
    assert b"sk-ant" not in short["agent.log"]
    assert short["stdout.log"] == b"first line\nsecond caf\xc3\xa9 line\nno newline yet"


def test_each_line_is_in_the_file_before_log_returns(tmp_path: Path) -> None:
    capture = Capture(tmp_path / "attempt_1")
    try:
        for n in range(5):
            capture.log(f"line {n}")
            text = capture.path(Stream.AGENT).read_text(encoding="utf-8")
            assert text.count("\n") == n + 1
            assert text.endswith(f" line {n}\n")
            capture.write(Stream.STDOUT, f"out {n}\n")
            assert capture.path(Stream.STDOUT).read_text(encoding="utf-8").endswith(f"out {n}\n")
    finally:
        capture.close()
    capture.close()  # twice is fine


def test_the_folder_is_private_and_the_files_too(tmp_path: Path) -> None:
    with Capture(tmp_path / "attempt_1") as capture:
        capture.log("hello")
        capture.write_metrics(
            usage=Usage(),
            duration_s=1.0,
            exit_code=0,
            failure=None,
            started_at=T0,
            ended_at=T0,
        )
    folder = tmp_path / "attempt_1"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    for name in os.listdir(folder):
        assert stat.S_IMODE((folder / name).stat().st_mode) == 0o600 & ~os.umask(os.umask(0))
