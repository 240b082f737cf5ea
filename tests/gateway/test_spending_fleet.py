"""``backstay gateway --budget-tokens`` (``--budget-window``) over the requests that are not
of an agent run, in real ``backstay gateway`` processes: two gateways on one ``--store``
(a SQLite state directory, or a real ``redis-server``) hold one budget together — the
official anthropic SDK sends long messages to each in turn until one is refused with a 400
in Anthropic's format, unsent; what the provider's answers reported is what the gateways'
ledger holds (beside the store's, whose own ledger stays empty), within the budget; the
refusal is a ``request.refused`` line of ``--events``. Bad budget flags are usage errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Final

import anthropic
import pytest
from tests.gateway.helpers import ANTHROPIC_MODEL, CANARY_KEY, TIMEOUT_S
from tests.gateway.test_runs_budget_shared import GATEWAY_TOKEN, LONG, MAIN, _start, store

from backstay.cli._gateway_spend import gateway_ledger
from backstay.fakeprovider import FakeProvider, Scenario
from backstay.gateway.settings import TOKEN_HEADER
from backstay.policy.spend import Spend
from backstay.store.location import StoreLocation
from backstay.store.open import open_stores

__all__ = ["store"]  # the fixture, shared with test_runs_budget_shared

BUDGET_TOKENS: Final = 3_000
MAX_MESSAGES: Final = 12


def _client(url: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=url,
        api_key=CANARY_KEY,
        max_retries=0,
        timeout=TIMEOUT_S,
        default_headers={TOKEN_HEADER: GATEWAY_TOKEN},
    )


def _send(client: anthropic.Anthropic) -> tuple[int, str]:
    try:
        client.messages.create(
            model=ANTHROPIC_MODEL, max_tokens=20, messages=[{"role": "user", "content": LONG}]
        )
    except anthropic.BadRequestError as err:
        return err.status_code, err.message
    return 200, ""


def test_two_gateways_on_one_store_hold_one_budget_together(
    tmp_path: Path, store: tuple[str, StoreLocation]
) -> None:
    text, location = store
    log = tmp_path / "requests.jsonl"
    flags = ("--budget-tokens", str(BUDGET_TOKENS), "--budget-window", "day")
    statuses: list[int] = []
    message = ""
    stderr = ""
    with FakeProvider(Scenario(), log_path=log) as fake:
        processes = []
        try:
            for n in range(2):
                events = ("--events", str(tmp_path / f"events{n}.jsonl"))
                processes.append(_start(fake.url, text, *flags, *events, agent_runs=False))
            clients = [_client(url) for _, url in processes]
            for number in range(MAX_MESSAGES):
                status, message = _send(clients[number % 2])
                statuses.append(status)
                if status != 200:
                    break
            for client in clients:
                client.close()
        finally:
            for process, _ in processes:
                process.terminate()
                stderr += process.communicate(timeout=30)[1]
        requests = fake.stats().requests
    # Both gateways answered; the request with no room left was refused, never sent.
    assert statuses[-1] == 400, statuses
    assert set(statuses[:-1]) == {200}, statuses
    assert requests == len(statuses) - 1 >= 2
    assert f"budget_exceeded: the gateway's budget of {BUDGET_TOKENS} tokens a day" in message
    refused = [
        json.loads(line)
        for n in range(2)
        for line in (tmp_path / f"events{n}.jsonl").read_text(encoding="utf-8").splitlines()
        if '"request.refused"' in line
    ]
    assert len(refused) == 1, refused
    assert refused[0]["dimension"] == "tokens"
    assert refused[0]["scope"].startswith("gateway@day:")
    # What the provider's answers reported is what the shared ledger holds, settled.
    entries = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    each = [int(e["input_tokens"]) + int(e["output_tokens"]) for e in entries]
    used = sum(each)
    bundle = open_stores(location, state_dir=tmp_path / "state")
    try:
        own = gateway_ledger(bundle)
        try:
            kept = own.overview()[0]
        finally:
            own.close()
        batch = bundle.spend.overview()[0]
    finally:
        bundle.close()
    assert kept.spent.tokens == used
    # One budget for both: what came before the last admitted request fitted, and the
    # next had no room (a request's prompt is held at its estimate, its output not at all).
    assert used - max(each) <= BUDGET_TOKENS < used + max(each)
    assert kept.reserved == Spend()
    assert batch.spent == batch.reserved == Spend()
    assert CANARY_KEY not in stderr + "".join(
        (tmp_path / f"events{n}.jsonl").read_text(encoding="utf-8") for n in range(2)
    )
    assert "Traceback" not in stderr


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--budget-tokens", "100", "--budget-window", "year"], "--budget-window"),
        (["--budget-usd", "1", "--price", "claude=abc"], "--price"),
        (["--budget-window", "day"], "--budget-usd"),
        (["--budget-tokens", "100", "--agent-runs"], "--budget-tokens"),
    ],
)
def test_a_bad_budget_flag_is_a_usage_error_naming_it(flags: list[str], named: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BACKSTAY_GATEWAY")}
    done = subprocess.run(
        [sys.executable, "-c", MAIN, "gateway", "--port", "0", *flags],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert named in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
