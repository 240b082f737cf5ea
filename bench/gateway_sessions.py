"""Tokens wasted per successful agent task under a 5 % rate of 529s, for a 20-turn session:
the whole session run again after a failed request (what happens without the gateway)
against the same session through the backstay gateway, which retries the failed request.

The provider is the fake provider scripting a 20-turn shell session
(``Scenario.shell_session``) with a seeded ``overloaded`` fault on 5 % of the requests.
The agent is a small loop over the official anthropic SDK (``max_retries=0``) that offers
a ``Bash`` tool, runs each call it gets (a real ``bash`` in the task's workspace) and sends
the whole conversation back each turn, as an agent CLI does:

* **session re-run**: the agent talks to the provider directly; a failed request ends the
  session, which is started again from the prompt in the same workspace (as a batch keeps
  "an existing workspace as the agent left it") until one runs through;
* **gateway**: the same agent pointed at a gateway in front of the provider; the gateway
  retries the 529 (its backoff shortened to milliseconds: time is not measured here).

Tokens are those the provider counted as worked on (input + output of answered requests;
a refused request is not billed). Wasted = tokens − tasks × the tokens of one clean
session. Also: requests per task, and the workspaces whose file holds a step twice.

Run alone with ``.venv/bin/python bench/gateway_sessions.py``, or in ``make bench``.
"""

from __future__ import annotations

import dataclasses
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Final

import anthropic

from backstay.fakeprovider import FakeProvider, Fault, FaultKind, Scenario
from backstay.gateway import GATEWAY_POLICY, Gateway, GatewaySettings, Upstreams

TURNS: Final = 20
TASKS: Final = 30
FAULT_RATE: Final = 0.05
SEED: Final = 11
MAX_RUNS: Final = 25  # session runs per task at most (P(25 failed runs) is about 3e-5)
MODEL: Final = "claude-sonnet-4-6"
KEY: Final = "sk-ant-bench-0000000000000000"
SHELL_TIMEOUT_S: Final = 10.0
TIMEOUT_S: Final = 30.0
FAST_POLICY: Final = GATEWAY_POLICY.derive(
    initial_delay_s=0.001, max_delay_s=0.005, seed=SEED, deadline_s=60.0
)
TOOLS: Final = [
    {
        "name": "Bash",
        "description": "Run a shell command.",
        "input_schema": {
            "type": "object",
            "properties": {"command": {"type": "string"}},
            "required": ["command"],
        },
    }
]


class SessionDied(Exception):
    """A request of the session failed: the session is over."""


def _shell(command: str, workdir: Path) -> str:
    done = subprocess.run(  # noqa: S603 — the scripted step, in a temporary folder
        ["bash", "-c", command],  # noqa: S607
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=SHELL_TIMEOUT_S,
        check=False,
    )
    return f"exit {done.returncode}\n{done.stdout}{done.stderr}"


def run_session(client: anthropic.Anthropic, workdir: Path) -> int:
    """One session from the prompt to the final text; the requests it sent. Raises
    ``SessionDied`` at the first failed request."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Run the steps."}]
    for sent in range(1, 2 * TURNS + 2):
        try:
            message = client.messages.create(
                model=MODEL,
                max_tokens=1024,
                messages=messages,  # type: ignore[arg-type]
                tools=TOOLS,  # type: ignore[arg-type]
            )
        except anthropic.APIError as err:
            raise SessionDied(str(err)) from None
        uses = [b for b in message.content if b.type == "tool_use"]
        if not uses:
            return sent
        messages.append({"role": "assistant", "content": [b.model_dump() for b in uses]})
        messages.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": b.id,
                        "content": _shell(str(b.input.get("command", "")), workdir),  # type: ignore[union-attr]
                    }
                    for b in uses
                ],
            }
        )
    raise AssertionError("the session did not end")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    name: str
    succeeded: int
    session_runs: int
    requests: int
    tokens: int
    doubled_workspaces: int


def _doubled(workdir: Path) -> bool:
    lines = (workdir / "progress.txt").read_text().splitlines()
    return len(lines) != len(set(lines))


def _tasks(name: str, url: str, root: Path, provider: FakeProvider) -> Outcome:
    succeeded = runs = doubled = 0
    with anthropic.Anthropic(base_url=url, api_key=KEY, max_retries=0, timeout=TIMEOUT_S) as c:
        for task in range(TASKS):
            workdir = root / f"{name}-{task}"
            workdir.mkdir()
            for _ in range(MAX_RUNS):
                runs += 1
                try:
                    run_session(c, workdir)
                except SessionDied:
                    continue
                succeeded += 1
                break
            doubled += _doubled(workdir)
    stats = provider.stats()
    return Outcome(
        name=name,
        succeeded=succeeded,
        session_runs=runs,
        requests=stats.requests,
        tokens=stats.input_tokens + stats.output_tokens,
        doubled_workspaces=doubled,
    )


def _scenario(rate: float) -> Scenario:
    scenario = Scenario.shell_session(TURNS, seed=SEED)
    if rate == 0:
        return scenario
    return scenario.with_faults(Fault(kind=FaultKind.OVERLOADED, probability=rate))


def measure() -> tuple[int, Outcome, Outcome]:
    """The tokens of one clean session, then the re-run and gateway outcomes."""
    with tempfile.TemporaryDirectory(prefix="backstay-bench-sessions-") as folder:
        root = Path(folder)
        with FakeProvider(_scenario(0)) as fake:
            workdir = root / "clean"
            workdir.mkdir()
            with anthropic.Anthropic(base_url=fake.url, api_key=KEY, max_retries=0) as client:
                run_session(client, workdir)
            clean = fake.stats().input_tokens + fake.stats().output_tokens
        with FakeProvider(_scenario(FAULT_RATE)) as fake:
            rerun = _tasks("session re-run", fake.url, root, fake)
        with FakeProvider(_scenario(FAULT_RATE)) as fake:
            settings = GatewaySettings(
                port=0, policy=FAST_POLICY, upstreams=Upstreams.all(fake.url)
            )
            with Gateway(settings) as gateway:
                through = _tasks("gateway", gateway.url, root, fake)
    return clean, rerun, through


def report() -> None:
    clean, rerun, through = measure()
    print(
        f"\nGateway sessions: {TASKS} tasks of a {TURNS}-turn shell session, "
        f"{FAULT_RATE:.0%} of requests a 529 (seeded), anthropic SDK max_retries=0"
    )
    print(f"  one clean session: {TURNS + 1} requests, {clean:,} tokens")
    header = (
        f"  {'':<16} {'succeeded':>9} {'runs':>5} {'requests':>9} {'tokens/task':>12} "
        f"{'wasted/task':>12} {'doubled files':>13}"
    )
    print(header)
    wasted = {}
    for o in (rerun, through):
        per_task = o.tokens / max(1, o.succeeded)
        wasted[o.name] = (o.tokens - o.succeeded * clean) / max(1, o.succeeded)
        print(
            f"  {o.name:<16} {o.succeeded:>6}/{TASKS} {o.session_runs:>5} {o.requests:>9,} "
            f"{per_task:>12,.0f} {wasted[o.name]:>12,.0f} {o.doubled_workspaces:>10}/{TASKS}"
        )
    ratio = (rerun.tokens / max(1, rerun.succeeded)) / (through.tokens / max(1, through.succeeded))
    print(f"  tokens per successful task, session re-run / gateway: {ratio:.2f}x")


if __name__ == "__main__":
    report()
