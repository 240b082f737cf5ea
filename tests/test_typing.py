"""``@backstay.retry`` keeps the decorated function's signature for type checkers."""

from __future__ import annotations

import textwrap
from pathlib import Path

from mypy import api

SNIPPET = """
import backstay


@backstay.retry(policy="standard")
def fetch(url: str, *, timeout: float = 1.0) -> bytes:
    return b""


@backstay.retry
async def afetch(url: str) -> int:
    return 1


async def main() -> None:
    data: bytes = fetch("u", timeout=2.0)
    n: int = await afetch("x")
    fetch(1)
"""


def test_the_decorator_keeps_parameter_and_return_types(tmp_path: Path) -> None:
    source = tmp_path / "snippet.py"
    source.write_text(textwrap.dedent(SNIPPET), encoding="utf-8")
    out, _err, status = api.run(
        ["--strict", "--no-incremental", "--cache-dir", str(tmp_path / "cache"), str(source)]
    )
    assert status == 1
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert len(errors) == 1, out
    assert 'Argument 1 to "fetch" has incompatible type "int"; expected "str"' in errors[0]
