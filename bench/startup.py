"""Start-up (issue 24): the CPU time a fresh process spends before it does anything.

Each contender is a new interpreter, timed by its own CPU time (user + system, from
``os.wait4``): a child that waits for the CPU behind another process does not count that
process's time. Every contender runs once per round, ``ROUNDS`` rounds in a row, each round
starting one contender further along (the house method of ``rounds.py``); the least of the
rounds is kept. The baselines are measured in the same rounds: a bare ``python -c pass`` and
``import tenacity``.

Targets: ``import backstay`` ≤ 2× ``import tenacity``; ``backstay --version`` ≤ 0.2 s;
every ``--help`` ≤ 0.3 s; ``backstay suite check`` (a suite of Anthropic, OpenAI and
Gemini API tasks, ``SUITE``) ≤ 0.5 s, with no SDK imported.

Run alone with ``python bench/startup.py``; ``make bench`` runs it with the rest.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Final

ROUNDS: Final = 15

_SCRIPT = Path(sys.executable).with_name("backstay")
BACKSTAY: Final = str(_SCRIPT) if _SCRIPT.exists() else (shutil.which("backstay") or "backstay")

# The suite ``suite check`` checks: one task of each API adapter (no SDK is needed to check it).
SUITE: Final = """\
suite: three-apis
defaults: {timeout_s: 60}
adapters:
  anthropic-api: {base_url: "http://127.0.0.1:9"}
  openai-api: {base_url: "http://127.0.0.1:9/v1"}
  gemini-api: {base_url: "http://127.0.0.1:9"}
tasks:
  - {id: a, adapter: anthropic-api, model: claude-sonnet-4-5, prompt: hi}
  - {id: o, adapter: openai-api, model: gpt-4o, prompt: hi}
  - {id: g, adapter: gemini-api, model: gemini-2.5-flash, prompt: hi}
"""
_SUITE_FILE = Path(tempfile.mkdtemp(prefix="backstay-startup-")) / "suite.yaml"
_SUITE_FILE.write_text(SUITE, encoding="utf-8")

CONTENDERS: Final[dict[str, list[str]]] = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "import tenacity": [sys.executable, "-c", "import tenacity"],
    "import backstay": [sys.executable, "-c", "import backstay"],
    "from backstay import retry": [sys.executable, "-c", "from backstay import retry"],
    "backstay --version": [BACKSTAY, "--version"],
    "backstay --help": [BACKSTAY, "--help"],
    # The floor of a command's --help: the command that imports least (typer builds each
    # option's checks with pydantic, about 0.1 s, whatever the command).
    "backstay explain --help": [BACKSTAY, "explain", "--help"],
    "backstay run --help": [BACKSTAY, "run", "--help"],
    "backstay batch --help": [BACKSTAY, "batch", "--help"],
    "backstay resume --help": [BACKSTAY, "resume", "--help"],
    "backstay status --help": [BACKSTAY, "status", "--help"],
    "backstay health --help": [BACKSTAY, "health", "--help"],
    "backstay suite check": [BACKSTAY, "suite", "check", str(_SUITE_FILE)],
}
# Seconds of CPU each contender may take; import backstay is held to 2× tenacity instead.
LIMITS: Final[dict[str, float]] = {
    "backstay --version": 0.2,
    "backstay --help": 0.3,
    "backstay run --help": 0.3,
    "backstay batch --help": 0.3,
    "backstay resume --help": 0.3,
    "backstay status --help": 0.3,
    "backstay health --help": 0.3,
    "backstay suite check": 0.5,
}


def cpu_seconds(argv: list[str]) -> float:
    """The CPU time (user + system) of one run of ``argv``, its output discarded."""
    child = subprocess.Popen(  # noqa: S603 - our own interpreter and command
        argv,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "COLUMNS": "100"},
    )
    _pid, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited with {child.returncode}")
    return usage.ru_utime + usage.ru_stime


def least(rounds: int = ROUNDS) -> dict[str, float]:
    """The least CPU seconds of each contender over ``rounds`` interleaved rounds."""
    names = list(CONTENDERS)
    best = dict.fromkeys(names, float("inf"))
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            best[name] = min(best[name], cpu_seconds(CONTENDERS[name]))
    return best


def report() -> None:
    """Print each contender's CPU time, its ratio to ``import tenacity``, and the targets."""
    best = least()
    tenacity = best["import tenacity"]
    print(f"\n== Start-up (least of {ROUNDS} interleaved rounds, CPU s of a fresh process) ==")
    for name, seconds in best.items():
        print(f"  {name:<28} {seconds:6.3f} s   {seconds / tenacity:5.2f}x import tenacity")
    print("  targets:")
    ratio = best["import backstay"] / tenacity
    print(
        f"    {'met    ' if ratio <= 2 else 'not met'} import backstay ≤ 2x import tenacity: "
        f"{ratio:.2f}x"
    )
    for name, limit in LIMITS.items():
        met = best[name] <= limit
        print(f"    {'met    ' if met else 'not met'} {name} ≤ {limit} s: {best[name]:.3f} s")


if __name__ == "__main__":
    report()
