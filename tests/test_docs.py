"""The documentation says what the code does.

``docs/codes.md`` is rendered from ``backstay.CODES``; after adding a code, regenerate it
with ``.venv/bin/python tests/test_docs.py``.
"""

from __future__ import annotations

from pathlib import Path

from backstay import CODE_ALIASES, CODES, KINDS, FailureKind
from backstay.taxonomy import CONTRACT_SPELLING

ROOT = Path(__file__).resolve().parents[1]
CODES_DOC = ROOT / "docs" / "codes.md"

_INTRO = """# Failure codes

Every `Failure` carries one stable `ERR_*` code. The code decides the kind and whether the
failure may be retried; the same code always decides the same way. Codes are never renamed
or reused; new conditions get new codes.

Codes ending in `_NO_RETRY` mark a failure the provider itself declared not retryable
(`x-should-retry: false`): the kind stays, retrying stops.

The category is the error contract's (`Failure.to_error_info()["category"]`): the kind's,
unless the contract's tables give the code another one. Where the contract names a code
differently, its name is accepted as an alias (listed at the end): a `Failure` built with
an alias carries backstay's canonical code. A `StructuredOutcome` or `ErrorInfo` built from
a `Failure` shows the contract's spelling (the last table), backstay's code kept in
`details.backstay_code`.
"""


def render_codes() -> str:
    lines = [_INTRO]
    for kind in FailureKind:
        lines += [f"## `{kind.value}`: {KINDS[kind].summary}", ""]
        lines += ["| code | retryable | category | meaning |", "|---|---|---|---|"]
        lines += [
            f"| `{c.code}` | {'yes' if c.retryable else 'no'} | {c.category} | {c.description} |"
            for c in CODES.values()
            if c.kind is kind
        ]
        lines.append("")
    lines += ["## Aliases (the error contract's names)", ""]
    lines += ["| alias | canonical code |", "|---|---|"]
    lines += [f"| `{alias}` | `{code}` |" for alias, code in CODE_ALIASES.items()]
    lines.append("")
    lines += ["## The error contract's spelling in its outcomes", ""]
    lines += ["| backstay's code | the outcome's code |", "|---|---|"]
    lines += [f"| `{code}` | `{shown}` |" for code, shown in CONTRACT_SPELLING.items()]
    lines.append("")
    return "\n".join(lines)


def test_the_list_of_codes_is_rendered_from_the_code_table() -> None:
    assert CODES_DOC.read_text(encoding="utf-8") == render_codes()


def test_readme_names_the_two_quick_start_commands() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "make demo" in readme
    assert "make test" in readme


def test_ci_runs_what_the_readme_says() -> None:
    assert "make test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


if __name__ == "__main__":
    CODES_DOC.write_text(render_codes(), encoding="utf-8")
