"""A suite's ``api_key_env`` reaches the API adapters, whatever the variable is called:
a suite file run by the engine against the fake provider, with only non-standard
variables holding the keys."""

from __future__ import annotations

from pathlib import Path
from typing import Final

from tests.adapters.support import CANARY_KEY

from backstay.config import load_suite
from backstay.engine import Engine, SuiteBatch, TaskState, suite_adapters
from backstay.fakeprovider import FakeProvider

# Only these hold the keys: none of the providers' usual variables is set.
ENVIRON: Final = {
    "TEAM_ANTHROPIC_SECRET": CANARY_KEY,
    "TEAM_OPENAI_SECRET": CANARY_KEY,
    "TEAM_GEMINI_SECRET": CANARY_KEY,
}


def _suite_file(folder: Path, url: str) -> Path:
    path = folder / "suite.yaml"
    path.write_text(
        f"""suite: keys
defaults: {{adapter: anthropic-api, model: claude-haiku-4-5, timeout_s: 30}}
adapters:
  anthropic-api: {{base_url: "{url}", api_key_env: TEAM_ANTHROPIC_SECRET}}
  openai-api: {{base_url: "{url}/v1", api_key_env: TEAM_OPENAI_SECRET, stream: false}}
  gemini-api: {{base_url: "{url}", api_key_env: TEAM_GEMINI_SECRET}}
tasks:
  - {{id: claude, prompt: "Say hello"}}
  - {{id: gpt, adapter: openai-api, model: gpt-5-mini, prompt: "Say hello"}}
  - {{id: gemini, adapter: gemini-api, model: gemini-2.5-flash, prompt: "Say hello"}}
""",
        encoding="utf-8",
    )
    return path


def test_a_key_variable_of_any_name_reaches_each_api_adapter(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with FakeProvider() as fake:
        suite = load_suite(_suite_file(tmp_path, fake.url))
        batch = SuiteBatch.open(suite, state, environ=ENVIRON)
        batch.prepare()
        with Engine(state, adapters=suite_adapters(suite), env=ENVIRON) as engine:
            summary = engine.run_sync(batch.specs)
            attempts = engine.store.attempts()
        served = fake.stats()
    assert summary.count(TaskState.SUCCEEDED) == 3, [t.reason for t in summary.tasks]
    assert served.requests == 3
    logs = {Path(a.output_dir).parents[2].name: Path(a.output_dir) / "agent.log" for a in attempts}
    for task, variable in (
        ("claude", "TEAM_ANTHROPIC_SECRET"),
        ("gpt", "TEAM_OPENAI_SECRET"),
        ("gemini", "TEAM_GEMINI_SECRET"),
    ):
        assert variable in logs[task].read_text(encoding="utf-8")


def test_the_key_is_never_written_to_the_state_directory(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with FakeProvider() as fake:
        suite = load_suite(_suite_file(tmp_path, fake.url))
        batch = SuiteBatch.open(suite, state, environ=ENVIRON)
        batch.prepare()
        with Engine(state, adapters=suite_adapters(suite), env=ENVIRON) as engine:
            engine.run_sync(batch.specs)
    written = [p for p in state.rglob("*") if p.is_file()]
    assert written
    for path in written:
        assert CANARY_KEY.encode() not in path.read_bytes(), path
