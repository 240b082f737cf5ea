"""The evaluation harness adapter interface, as a harness calls it.

The interface's text: ``docs/design/adapter-interface.md`` in the public repository
``HomericIntelligence/ProjectScylla`` (its "Configuration Dictionary" example, its
``BaseAdapter`` with ``get_name`` and ``validate_config``, its "Tier-Specific Settings"
table and its timeout handling are what these tests follow).

A harness runs one agent with ``adapter.run(model, prompt_file, workspace, output_dir,
config, timeout)`` and reads ``stdout.log``, ``stderr.log`` and ``metrics.json`` from the
output directory; it asks an adapter its name with ``get_name()`` and checks a
configuration with ``validate_config()``. The agent here is backstay's mock agent, a real
subprocess acting out a script.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from backstay import get_adapter
from backstay.adapters import TIER_PRESET_IDS, tier_preset
from backstay.adapters.api.anthropic import AnthropicApiAdapter
from backstay.adapters.contract import TierConfig
from backstay.adapters.harness.config import refuse_harness_keys, split_harness_config
from backstay.adapters.mock import MockAdapter
from backstay.errors import ConfigError
from backstay.redact import REDACTED


@pytest.fixture
def run_dirs(tmp_path: Path) -> dict[str, Path]:
    prompt = tmp_path / "prompt.md"
    prompt.write_text("solve it", encoding="utf-8")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    return {"prompt": prompt, "workspace": workspace, "out": tmp_path / "out"}


def _run(dirs: dict[str, Path], steps: list[dict[str, Any]], timeout: float) -> int:
    return MockAdapter().run(
        "mock-model",
        dirs["prompt"],
        dirs["workspace"],
        dirs["out"],
        {"scenario": {"attempts": [steps]}},
        timeout,
        policy="no_retry",
    )


def test_get_name_is_the_registered_name() -> None:
    assert MockAdapter().get_name() == "mock"
    assert get_adapter("claude-code").get_name() == "claude-code"


def test_api_direct_names_the_anthropic_api_adapter() -> None:
    adapter = get_adapter("api-direct")
    assert isinstance(adapter, AnthropicApiAdapter)
    assert adapter.get_name() == "anthropic-api"


def test_validate_config_returns_true_for_valid_settings() -> None:
    assert MockAdapter().validate_config({"scenario": {"attempts": [[{"print": "ok"}]]}}) is True


def test_validate_config_returns_true_for_an_api_adapter() -> None:
    assert get_adapter("api-direct").validate_config({"max_tokens": 64}) is True


def test_validate_config_raises_value_error_for_an_unknown_setting() -> None:
    with pytest.raises(ValueError, match="unknown setting for adapter 'mock'"):
        MockAdapter().validate_config({"no_such_setting": 1})


def test_validate_config_raises_a_config_error_which_is_a_value_error() -> None:
    assert issubclass(ConfigError, ValueError)


def test_a_successful_run_exits_0_with_its_logs_and_metrics(run_dirs: dict[str, Path]) -> None:
    assert _run(run_dirs, [{"print": "done"}], timeout=10.0) == 0
    out = run_dirs["out"]
    assert "done" in (out / "stdout.log").read_text(encoding="utf-8")
    assert json.loads((out / "metrics.json").read_text(encoding="utf-8"))["exit_code"] == 0


def test_an_error_is_also_written_to_stderr_log(run_dirs: dict[str, Path]) -> None:
    assert _run(run_dirs, [{"stderr": "boom"}, {"exit": 3}], timeout=10.0) == 3
    stderr = (run_dirs["out"] / "stderr.log").read_text(encoding="utf-8")
    assert "boom" in stderr
    assert "backstay: error: ERR_" in stderr


def test_the_timeout_message_is_also_written_to_stderr_log(run_dirs: dict[str, Path]) -> None:
    assert _run(run_dirs, [{"print": "working"}, {"hang": True}], timeout=0.5) == 124
    stderr = (run_dirs["out"] / "stderr.log").read_text(encoding="utf-8")
    assert "backstay: error (timed out): ERR_" in stderr
    metrics = json.loads((run_dirs["out"] / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["exit_code"] == 124


_CANARY = "canary-harness-key-7f3a9c2e51d04b86"


def _merged_config(steps: list[dict[str, Any]], **harness: Any) -> dict[str, Any]:
    """The merged dictionary a harness passes to ``run()``, as the interface's example
    prints it (its key elided), beside the adapter's own settings."""
    return {
        "scenario": {"attempts": [steps]},
        # Tier settings
        "tier_id": "T1",
        "tier_name": "Prompted",
        "tier_prompt": "Think step by step...",
        "tools_enabled": False,
        "delegation_enabled": False,
        # Test settings
        "test_id": "justfile-001",
        "task_description": "Convert Justfile to Makefile",
        **harness,
    }


def _config_as_printed() -> dict[str, Any]:
    """The interface's "Configuration Dictionary" example as it prints it; only its key
    (printed as ``"..."``) is a canary here."""
    config = {
        # Tier settings
        "tier_id": "T1",
        "tier_name": "Prompted",
        "tier_prompt": "Think step by step...",  # May be None for T0
        "tools_enabled": False,
        "delegation_enabled": False,
        # Test settings
        "test_id": "justfile-001",
        "task_description": "Convert Justfile to Makefile",
        # Environment
        "api_keys": {
            "ANTHROPIC_API_KEY": "...",
        },
    }
    config["api_keys"] = {"ANTHROPIC_API_KEY": _CANARY}
    return config


def test_validate_config_returns_true_for_the_merged_config_as_printed() -> None:
    assert get_adapter("api-direct").validate_config(_config_as_printed()) is True


def test_validate_config_returns_true_for_the_merged_config_beside_the_adapters_settings() -> None:
    config = {**_config_as_printed(), "scenario": {"attempts": [[{"print": "ok"}]]}}
    assert MockAdapter().validate_config(config) is True


@pytest.mark.parametrize(
    ("change", "where"),
    [
        ({"tools_enabled": "no"}, r"tier\.tools_enabled"),
        ({"test_id": ""}, r"config\.test_id"),
        ({"api_keys": [_CANARY]}, r"config\.api_keys"),
        ({"api_keys": {"ANTHROPIC_API_KEY": 7}}, r"config\.api_keys\.ANTHROPIC_API_KEY"),
        ({"max_tokens": 0}, r"config\.max_tokens"),
        ({"no_such_setting": 1}, r"config\.no_such_setting"),
    ],
)
def test_validate_config_raises_value_error_naming_a_wrong_setting_never_the_key(
    change: dict[str, Any], where: str
) -> None:
    with pytest.raises(ValueError, match=where) as raised:
        get_adapter("api-direct").validate_config({**_config_as_printed(), **change})
    assert _CANARY not in str(raised.value)
    assert _CANARY not in repr(raised.value)


def test_an_engine_task_gives_settings_only_and_is_told_where_a_key_goes() -> None:
    # Merged-config keys belong to run(): a task whose config holds them is refused, its
    # key never shown, so that no api_keys mapping is recorded with the task.
    with pytest.raises(ConfigError, match=r"its environment \(env\)") as raised:
        refuse_harness_keys(_config_as_printed(), adapter=get_adapter("api-direct"))
    assert raised.value.where == "config.api_keys"
    assert _CANARY not in str(raised.value)


def test_run_accepts_the_merged_config_and_records_the_test_id(run_dirs: dict[str, Path]) -> None:
    config = _merged_config([{"print": "done"}])
    code = MockAdapter().run(
        "mock-model", run_dirs["prompt"], run_dirs["workspace"], run_dirs["out"], config, 10.0
    )
    assert code == 0
    metrics = json.loads((run_dirs["out"] / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["test_id"] == "justfile-001"


def test_the_task_description_is_the_prompt_when_there_is_no_prompt_file(
    run_dirs: dict[str, Path],
) -> None:
    config = _merged_config([{"echo_prompt": True}])
    code = MockAdapter().run(
        "mock-model", None, run_dirs["workspace"], run_dirs["out"], config, 10.0
    )
    assert code == 0
    stdout = (run_dirs["out"] / "stdout.log").read_text(encoding="utf-8")
    assert "Convert Justfile to Makefile" in stdout


def test_the_tier_keys_make_the_runs_tier() -> None:
    split = split_harness_config(
        _merged_config([{"print": "done"}]), adapter_keys=MockAdapter.config_keys, tier=None
    )
    assert split.tier == TierConfig(
        tier_id="T1",
        tier_name="Prompted",
        system_prompt="Think step by step...",
        tools_enabled=False,
        delegation_enabled=False,
    )
    assert split.settings == {"scenario": {"attempts": [[{"print": "done"}]]}}


def test_a_tier_key_with_a_wrong_value_is_named(run_dirs: dict[str, Path]) -> None:
    config = _merged_config([{"print": "done"}], tools_enabled="no")
    with pytest.raises(ValueError, match=r"tier\.tools_enabled"):
        MockAdapter().run(
            "mock-model", run_dirs["prompt"], run_dirs["workspace"], run_dirs["out"], config, 10.0
        )


def test_api_keys_reach_the_agents_environment_and_are_never_written(
    run_dirs: dict[str, Path], tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    config = _merged_config(
        [{"print_env": "HARNESS_API_KEY"}, {"stderr": "failing"}, {"exit": 3}],
        api_keys={"HARNESS_API_KEY": _CANARY},
    )
    code = MockAdapter().run(
        "mock-model",
        run_dirs["prompt"],
        run_dirs["workspace"],
        run_dirs["out"],
        config,
        10.0,
        policy="no_retry",
    )
    assert code == 3
    stdout = (run_dirs["out"] / "stdout.log").read_text(encoding="utf-8")
    # The agent saw the key (redacted in its log), not "HARNESS_API_KEY is unset".
    assert f"HARNESS_API_KEY={REDACTED}" in stdout
    written = [path for path in tmp_path.rglob("*") if path.is_file()]
    assert {path.name for path in written} >= {"stdout.log", "stderr.log", "metrics.json"}
    for path in written:
        assert _CANARY not in path.read_text(encoding="utf-8", errors="replace"), path
    captured = capfd.readouterr()
    assert _CANARY not in captured.out + captured.err


def test_api_keys_that_are_not_a_mapping_are_refused_naming_the_key(
    run_dirs: dict[str, Path],
) -> None:
    config = _merged_config([{"print": "done"}], api_keys=[_CANARY])
    with pytest.raises(ValueError, match=r"config\.api_keys") as raised:
        MockAdapter().run(
            "mock-model", run_dirs["prompt"], run_dirs["workspace"], run_dirs["out"], config, 10.0
        )
    assert _CANARY not in str(raised.value)
    assert not run_dirs["out"].exists()


# The interface's "Tier-Specific Settings" table: tier prompt, tools, delegation.
@pytest.mark.parametrize(
    ("tier_id", "tools", "delegation"),
    [("T1", False, False), ("T2", False, False), ("T3", True, True), ("T5", True, True)],
)
def test_a_preset_tier_has_the_tables_settings(tier_id: str, tools: bool, delegation: bool) -> None:
    tier = tier_preset(tier_id, prompt="Think step by step...")
    assert (tier.tier_id, tier.system_prompt) == (tier_id, "Think step by step...")
    assert (tier.tools_enabled, tier.delegation_enabled) == (tools, delegation)


def test_t0_has_no_tier_prompt_and_the_agents_defaults() -> None:
    assert tier_preset("T0") == TierConfig(tier_id="T0")
    with pytest.raises(ValueError, match="T0 runs without a tier prompt"):
        tier_preset("T0", prompt="Think step by step...")


def test_a_prompted_preset_tier_needs_its_prompt() -> None:
    with pytest.raises(ValueError, match=r"T2 needs its tier prompt \(the domain skills prompt\)"):
        tier_preset("T2")


def test_an_id_the_table_does_not_cover_is_refused() -> None:
    with pytest.raises(ValueError, match="is not a preset tier"):
        tier_preset("T1b", prompt="x")
    assert TIER_PRESET_IDS == ("T0", "T1", "T2", "T3")


def test_the_merged_config_takes_a_preset_tiers_flags_it_leaves_out() -> None:
    config = {"tier_id": "T3", "tier_prompt": "the full prompt", "scenario": "s.yaml"}
    split = split_harness_config(config, adapter_keys=MockAdapter.config_keys, tier=None)
    assert split.tier is not None
    assert (split.tier.tools_enabled, split.tier.delegation_enabled) == (True, True)


# -- "Adding New Adapters" and the printed adapters, as printed ---------------------------

from backstay.adapters.base import BaseAdapter  # noqa: E402
from backstay.adapters.streaming import StreamingCapture  # noqa: E402


class MyAdapter(BaseAdapter):
    """ "2. Implement BaseAdapter": a subclass that overrides only run()."""

    def run(self, model, prompt_file, workspace, output_dir, config, timeout):  # type: ignore[no-untyped-def,override]  # noqa: PLR0917 - as printed
        with StreamingCapture(output_dir) as capture:
            capture.write_stdout(f"ran {model} on {Path(prompt_file).name}\n")
            capture.set_exit_code(0)
        return 0


def test_a_subclass_that_overrides_only_run_is_instantiated_and_used(tmp_path: Path) -> None:
    # "## Adding New Adapters": class MyAdapter(BaseAdapter): def run(self, model,
    # prompt_file, workspace, output_dir, config, timeout); "4. Add tests": adapter =
    # MyAdapter(); result = adapter.run(...); assert result == 0
    adapter = MyAdapter()
    assert adapter.get_name() == "MyAdapter"  # "return self.__class__.__name__"
    assert adapter.validate_config({}) is True
    adapters = {"api-direct": type(get_adapter("api-direct")), "my-adapter": MyAdapter}
    result = adapters["my-adapter"]().run(
        model="test-model",
        prompt_file=Path("test.md"),
        workspace=Path("."),
        output_dir=tmp_path,
        config={},
        timeout=60,
    )
    assert result == 0
    # "def test_adapter_creates_output_files"
    assert (tmp_path / "stdout.log").exists()
    assert (tmp_path / "metrics.json").exists()
    metrics = json.loads((tmp_path / "metrics.json").read_text(encoding="utf-8"))
    assert (metrics["exit_code"], metrics["error"]) == (0, None)


def test_a_run_only_adapter_is_refused_by_the_engine_with_the_reason(tmp_path: Path) -> None:
    # backstay's engine dispatches execute(); a harness's run()-only adapter is named
    import asyncio  # noqa: PLC0415

    from backstay.adapters.capture import Capture  # noqa: PLC0415
    from backstay.adapters.contract import AgentRequest  # noqa: PLC0415

    request = AgentRequest(
        model="m", prompt="p", workspace=tmp_path, output_dir=tmp_path / "o", timeout_s=5.0
    )

    async def one() -> None:
        with Capture(tmp_path / "o") as capture:
            await MyAdapter().execute(
                request, operation_id="w:t:r", attempt_id="a", capture=capture
            )

    with pytest.raises(ConfigError, match="MyAdapter implements run\\(\\) only"):
        asyncio.run(one())


class APIDirectAdapter(BaseAdapter):
    """ "### API Direct Adapter", as printed (its client told the fake provider's URL by
    ANTHROPIC_BASE_URL, as the SDK reads it)."""

    def run(self, model, prompt_file, workspace, output_dir, config, timeout):  # type: ignore[no-untyped-def,override]  # noqa: PLR0917 - as printed
        import anthropic  # noqa: PLC0415

        client = anthropic.Anthropic(max_retries=0)

        # Load prompt
        prompt = prompt_file.read_text()

        # Build messages
        messages = [{"role": "user", "content": prompt}]

        # Add tier system prompt if present
        system = config.get("tier_prompt")

        with StreamingCapture(output_dir) as capture:
            try:
                response = client.messages.create(
                    model=model,
                    max_tokens=4096,
                    system=system,
                    messages=messages,
                )

                # Capture output
                output = response.content[0].text
                capture.write_stdout(output)

                # Record metrics
                capture.update_metrics(
                    tokens_input=response.usage.input_tokens,
                    tokens_output=response.usage.output_tokens,
                    api_calls=1,
                )

                return 0  # noqa: TRY300 - as printed

            except Exception as e:
                capture.write_stderr(str(e))
                capture.set_error(str(e))
                return 1


def test_the_printed_api_direct_adapter_runs_with_streaming_capture(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "### API Direct Adapter" with StreamingCapture: write_stdout, update_metrics,
    # write_stderr, set_error — against the project's fake provider
    from backstay.fakeprovider import FakeProvider, Reply, Scenario, parse_fault  # noqa: PLC0415

    prompt = tmp_path / "prompt.md"
    prompt.write_text("Say hello.", encoding="utf-8")
    monkeypatch.setenv("ANTHROPIC_API_KEY", _CANARY)
    with FakeProvider(Scenario(reply=Reply(text="Hello there."))) as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        code = APIDirectAdapter().run(
            "claude-haiku-4-5", prompt, tmp_path, tmp_path / "ok", {"tier_prompt": "Be brief."}, 60
        )
    assert code == 0
    assert (tmp_path / "ok" / "stdout.log").read_text(encoding="utf-8") == "Hello there."
    metrics = json.loads((tmp_path / "ok" / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["api_calls"] == 1
    assert metrics["tokens_output"] > 0
    with FakeProvider(Scenario(faults=(parse_fault("server_error"),))) as broken:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", broken.url)
        code = APIDirectAdapter().run(
            "claude-haiku-4-5", prompt, tmp_path, tmp_path / "bad", {}, 60
        )
    assert code == 1
    failed = json.loads((tmp_path / "bad" / "metrics.json").read_text(encoding="utf-8"))
    assert failed["error"]
    assert _CANARY not in (tmp_path / "bad" / "stderr.log").read_text(encoding="utf-8")
