"""One run (issue 24): the CPU time of one ``backstay run`` of ``anthropic-api`` against the
fake provider, beside the SDK's own import, and the cheaper path for a harness that runs
many: the library call (``BaseAdapter.run``) in one process.

Each contender is a fresh interpreter timed by its own CPU time (user + system,
``os.wait4``), the least of ``ROUNDS`` interleaved rounds; the fake provider serves from its
own process (``provider_process.py``) so that its CPU time is not counted:

* ``python -c pass`` and ``import anthropic``: the baselines;
* ``backstay run``: one run, one streamed Messages API call;
* in-process: ``get_adapter("anthropic-api").run(...)`` called ``CALLS`` times in one
  interpreter, its CPU time per call after the first (the SDK imported once).

Target: one ``backstay run`` ≤ ``import anthropic`` + 0.6 s of CPU.

Run alone with ``python bench/run_cpu.py [ROUNDS]`` (the median of the rounds is printed
beside the least: a loaded machine moves it less); ``make bench`` runs it with the rest.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Final

sys.path.insert(0, str(Path(__file__).parent))

import provider_process

ROUNDS: Final = 5
CALLS: Final = 50
MODEL: Final = "claude-sonnet-4-5"
KEY: Final = "sk-ant-bench-0000000000000000"  # the fake provider takes any key
TARGET_OVER_SDK_S: Final = 0.6
_SCRIPT = Path(sys.executable).with_name("backstay")
BACKSTAY: Final = str(_SCRIPT) if _SCRIPT.exists() else "backstay"

# CALLS runs through the library in one process; prints the CPU seconds of calls 2..N.
IN_PROCESS: Final = """\
import sys, time
from pathlib import Path
from backstay.adapters import get_adapter
url, root, calls = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
adapter = get_adapter("anthropic-api")
def one(i):
    config = {{"base_url": url, "max_tokens": 64}}
    code = adapter.run("{model}", root / "prompt.md", root / "ws", root / f"out{{i}}",
                       config, 60, env={{"ANTHROPIC_API_KEY": "{key}"}})
    assert code == 0, code
one(0)
started = time.process_time()
for i in range(1, calls):
    one(i)
print(time.process_time() - started)
"""


def _cpu(argv: list[str], env: dict[str, str]) -> float:
    """The CPU seconds of one run of ``argv`` (its output discarded); it must succeed."""
    child = subprocess.Popen(  # noqa: S603 - our own interpreter and command
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    )
    _pid, status, usage = os.wait4(child.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(argv[:3])} … exited with status {status}")
    return usage.ru_utime + usage.ru_stime


def _in_process_ms(url: str, root: Path) -> float:
    script = IN_PROCESS.format(model=MODEL, key=KEY)
    done = subprocess.run(  # noqa: S603 - our own interpreter and script
        [sys.executable, "-c", script, url, str(root), str(CALLS)],
        capture_output=True,
        text=True,
        check=True,
    )
    return float(done.stdout.strip().splitlines()[-1]) * 1e3 / (CALLS - 1)


def report(rounds: int = ROUNDS) -> None:
    """Print the one-run section (the least of ``rounds`` interleaved rounds, and the
    median, which a loaded machine moves less)."""
    with tempfile.TemporaryDirectory(prefix="backstay-run-cpu-") as tmp:
        root = Path(tmp)
        (root / "ws").mkdir()
        (root / "prompt.md").write_text("Say hello", encoding="utf-8")
        env = {**os.environ, "ANTHROPIC_API_KEY": KEY}
        with provider_process.serve() as url:
            contenders = {
                "python -c pass": [sys.executable, "-c", "pass"],
                "import anthropic": [sys.executable, "-c", "import anthropic"],
                "backstay run": [
                    BACKSTAY,
                    "run",
                    "--adapter",
                    "anthropic-api",
                    "--model",
                    MODEL,
                    "--prompt-file",
                    str(root / "prompt.md"),
                    "--workspace",
                    str(root / "ws"),
                    "--output-dir",
                    str(root / "out"),
                    "--adapter-option",
                    f"base_url={url}",
                    "--adapter-option",
                    "max_tokens=64",
                ],
            }
            seen: dict[str, list[float]] = {name: [] for name in contenders}
            for r in range(rounds):
                names = list(contenders)
                for name in names[r % len(names) :] + names[: r % len(names)]:
                    argv = [  # each run its own output folder
                        str(root / f"out{r}") if arg == str(root / "out") else arg
                        for arg in contenders[name]
                    ]
                    seen[name].append(_cpu(argv, env))
            best = {name: min(found) for name, found in seen.items()}
            middle = {name: statistics.median(found) for name, found in seen.items()}
            in_process = _in_process_ms(url, root)
    sdk = best["import anthropic"]
    print(
        f"\n== One run (anthropic-api, streamed, fake provider in its own process; least of "
        f"{rounds} interleaved rounds, CPU s of a fresh process) =="
    )
    for name, seconds in best.items():
        print(f"  {name:<22} {seconds:6.3f} s   (median {middle[name]:6.3f} s)")
    over = best["backstay run"] - sdk
    print(
        f"  backstay run − import anthropic: {over:.3f} s "
        f"(medians: {middle['backstay run'] - middle['import anthropic']:.3f} s)"
    )
    print(f"  in-process (BaseAdapter.run), CPU per call after the first: {in_process:.1f} ms")
    met = over <= TARGET_OVER_SDK_S
    print(
        f"  target: {'met    ' if met else 'not met'} backstay run ≤ import anthropic + "
        f"{TARGET_OVER_SDK_S:g} s: {best['backstay run']:.3f} s ≤ {sdk + TARGET_OVER_SDK_S:.3f} s"
    )


if __name__ == "__main__":
    # ``python bench/run_cpu.py [ROUNDS]``
    report(int(sys.argv[1]) if len(sys.argv) > 1 else ROUNDS)
