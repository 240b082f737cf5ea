"""Start-up of the command line: ``backstay --version`` and ``backstay --help`` import no
command's module, each command loads only its own, and the one-liners ``backstay --help``
lists without loading them are the commands' own. ``run --help`` lists the variables of
every adapter without importing one, and ``suite check`` checks API tasks without
importing their SDKs."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer.main
from tests.store.summary_support import fill, fill_redis

from backstay.adapters.capture import METRICS_FILE
from backstay.cli import app, run
from backstay.cli._lazy import COMMANDS, LazyCommands, Listed, load
from backstay.cli._options import ServePortOption
from backstay.cli._state import _BATCH_FILES, configured
from backstay.cli._store_in_force import CONFIG_ENV_PREFIX, CONFIG_FILES
from backstay.cli._store_in_force import CONFIG_ENV_VAR as STATE_COMMANDS_CONFIG_ENV_VAR
from backstay.config import CONFIG_ENV_VAR, DEFAULT_CONFIG_FILE, ENV_PREFIX, load_config
from backstay.config._dialect import AGENT_CONFIG_FILE, CONTRACT_DEFAULTS_FILE
from backstay.observe import health
from backstay.observe.server import TOKEN_ENV_VAR
from backstay.store.location import StoreLocation
from backstay.store.sqlite.circuit_log import SQLiteCircuitLog
from backstay.store.sqlite.operations import SQLiteOperationStore
from backstay.store.sqlite.tasks import STATE_FILE, SQLiteTaskStore

# What a command's module may pull in; none of it belongs to --version or the root's --help.
HEAVY = (
    "backstay.engine",
    "backstay.store",
    "backstay.adapters",
    "backstay.runtime",
    "backstay.observe",
    "backstay.config",
    "backstay.gateway",
    "backstay.fakeprovider",
)


SDKS = ("anthropic", "openai", "google", "httpx", "httpx2", "aiohttp")
# The modules of the adapters themselves (their SDK glue), as against their shared base.
ADAPTER_MODULES = (
    "backstay.adapters.api.anthropic",
    "backstay.adapters.api.openai",
    "backstay.adapters.api.gemini",
    "backstay.adapters.mock",
    "backstay.adapters.cli.claude_code",
    "backstay.adapters.cli.codex",
    "backstay.adapters.cli.gemini_cli",
    "backstay.adapters.cli.opencode",
    "backstay.adapters.cli.aider",
    "backstay.frameworks",
    "backstay.runtime",
)
SUITE = """\
suite: three-apis
defaults: {timeout_s: 60}
adapters:
  anthropic-api: {base_url: "http://127.0.0.1:9"}
  openai-api: {base_url: "http://127.0.0.1:9/v1", api: responses}
  gemini-api: {base_url: "http://127.0.0.1:9", stream: false}
tasks:
  - {id: a, adapter: anthropic-api, model: claude-sonnet-4-5, prompt: hi}
  - {id: o, adapter: openai-api, model: gpt-4o, prompt: hi}
  - {id: g, adapter: gemini-api, model: gemini-2.5-flash, prompt: hi}
"""


def _loaded_after(
    args: list[str], prefix: str = "backstay", *, cwd: Path | None = None
) -> list[str]:
    """The modules (those under ``prefix``) loaded by ``backstay ARGS`` run in a fresh
    interpreter (in ``cwd``, without the ``BACKSTAY_*`` variables of this one)."""
    script = (
        "import json, sys\n"
        f"sys.argv = ['backstay', *{args!r}]\n"
        "from backstay.cli import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
        f"loaded = sorted(m for m in sys.modules if m.startswith({prefix!r}))\n"
        "sys.stderr.write(json.dumps(loaded))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("BACKSTAY")}
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        cwd=cwd,
        env=env,
    )
    loaded: list[str] = json.loads(done.stderr.strip().splitlines()[-1])
    return loaded


def _first_paragraph(command: Any) -> str:
    return inspect.cleandoc(command.short_help or command.help or "").split("\n\n")[0].strip()


@pytest.mark.parametrize("listed", COMMANDS, ids=lambda listed: listed.name)
def test_each_one_liner_is_the_commands_own(listed: Listed) -> None:
    assert listed.help == _first_paragraph(load(listed))


def test_the_root_lists_every_command_once_in_order() -> None:
    root = typer.main.get_command(app)
    assert isinstance(root, LazyCommands)
    names = root.list_commands(root.make_context("backstay", ["--version"], resilient_parsing=True))
    assert names == [listed.name for listed in COMMANDS]
    assert len(set(names)) == len(names)


@pytest.mark.parametrize("args", [["--version"], ["--help"], []], ids=" ".join)
def test_the_root_imports_no_command(args: list[str]) -> None:
    loaded = _loaded_after(args)
    commands = {listed.module for listed in COMMANDS}
    assert not commands & set(loaded)
    assert not [name for name in loaded if name.startswith(HEAVY)]


def test_a_command_loads_its_own_module_only() -> None:
    loaded = set(_loaded_after(["explain", "--help"]))
    assert "backstay.cli.explain" in loaded
    assert not ({listed.module for listed in COMMANDS} - {"backstay.cli.explain"}) & loaded


@pytest.mark.parametrize("command", ["run", "batch"])
def test_the_variables_in_a_commands_help_import_no_adapter(command: str) -> None:
    loaded = _loaded_after([command, "--help"], prefix="")
    assert not [name for name in loaded if name.startswith(ADAPTER_MODULES)]
    assert not [name for name in loaded if name.split(".")[0] in SDKS]


def test_suite_check_checks_api_tasks_without_their_sdks(tmp_path: Path) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE, encoding="utf-8")
    loaded = _loaded_after(["suite", "check", str(suite)], prefix="")
    assert "backstay.cli.suite" in loaded
    assert not [name for name in loaded if name.split(".")[0] in SDKS]
    assert not [name for name in loaded if name.startswith(("backstay.engine", "backstay.store"))]


def test_suite_check_still_says_a_key_is_wrong_without_the_sdk(tmp_path: Path) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE.replace("stream: false", "stream: maybe"), encoding="utf-8")
    done = subprocess.run(
        [str(Path(sys.executable).with_name("backstay")), "suite", "check", str(suite)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 2
    assert "stream" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_roots_help_reads_no_package_metadata() -> None:
    # The version is read when --version asks for it, not by every command.
    loaded = _loaded_after(["--help"], prefix="importlib.metadata")
    assert loaded == []


def test_the_version_is_read_without_importlib_metadata() -> None:
    # backstay._version finds it as importlib.metadata does (tests/test_version.py).
    loaded = _loaded_after(["--version"], prefix="importlib.metadata")
    assert loaded == []


# What a command needs only when it runs: the engine's runner, the stores, the configuration
# models and loader, the adapters' harness, the observe server and the Ray executor.
RUN_ONLY = (
    "backstay.engine.runner",
    "backstay.engine.driver",
    "backstay.store.open",
    "backstay.store.sqlite.tasks",
    "backstay.store.redis",
    "backstay.config._model",
    "backstay.config._load",
    "backstay.adapters.base",
    "backstay.observe.server",
    "backstay.observe.snapshot",
    "backstay.observe.report",
    "backstay.executors.ray_executor",
    "backstay.runtime",
    "backstay.gateway",
)


@pytest.mark.parametrize(
    "command", ["run", "batch", "resume", "status", "health", "retry", "cancel", "events"]
)
def test_a_state_commands_help_loads_what_it_runs_with_only_when_it_runs(command: str) -> None:
    loaded = _loaded_after([command, "--help"], prefix="")
    assert f"backstay.cli.{command}" in loaded
    assert not [name for name in loaded if name.startswith(RUN_ONLY)]
    assert not [name for name in loaded if name.split(".")[0] in SDKS]


def test_the_serve_port_option_names_the_servers_token_variable() -> None:
    (option,) = ServePortOption.__metadata__
    assert f"${TOKEN_ENV_VAR} " in option.help


def test_a_batchs_own_files_include_the_sqlite_stores() -> None:
    assert STATE_FILE in _BATCH_FILES
    assert health.STATE_FILE == STATE_FILE


def test_run_names_the_metrics_file_the_adapters_write() -> None:
    assert run.METRICS_FILE == METRICS_FILE


@pytest.mark.parametrize("command", [["health", "--json"], ["status"]])
def test_reading_a_batch_imports_no_runner_adapter_or_configuration_model(
    tmp_path: Path, command: list[str]
) -> None:
    with SQLiteTaskStore(tmp_path / "batch"):
        pass  # a batch's state file, on SQLite
    loaded = _loaded_after([*command, "--state-dir", "batch"], prefix="", cwd=tmp_path)
    # It did read the batch: health through its stores, as the file has no operation store
    # or circuit log yet (they are made then); below, health of a whole file without them.
    assert "backstay.store.sqlite.tasks" in loaded
    unwanted = ("backstay.engine.runner", "backstay.adapters.base", "backstay.config._model")
    assert not [name for name in loaded if name.startswith(unwanted)]
    assert not [name for name in loaded if name.split(".")[0] in SDKS]
    # typer checks --state-dir and the other text and path flags without pydantic.
    assert not [name for name in loaded if name.split(".")[0] in ("pydantic", "pydantic_core")]
    # The counts, not a snapshot of the batch or its metrics.
    unread = ("backstay.observe.prometheus", "backstay.observe.snapshot")
    assert not [name for name in loaded if name.startswith(unread)]
    # The engine's controls and their events are a reopen's, not a reader's.
    unopened = ("backstay.engine.controls", "backstay.engine.events")
    assert not [name for name in loaded if name.startswith(unopened)]
    if command[0] == "health":  # JSON: nothing is formatted with rich
        assert not [name for name in loaded if name.split(".")[0] == "rich"]
        # Answered by the entry point before the command line is built (cli._health_probe).
        assert not [name for name in loaded if name.split(".")[0] == "typer"]
        # The task store, operation store and circuit log: not every store of the file.
        assert "backstay.store.sqlite.bundle" not in loaded
    else:  # a table: the --json writer is not loaded
        assert "backstay.cli._status_json" not in loaded


def test_health_of_a_whole_sqlite_file_imports_none_of_its_stores(tmp_path: Path) -> None:
    state = tmp_path / "batch"
    with SQLiteTaskStore(state) as store:
        fill(store, tmp_path)
    SQLiteOperationStore(state / STATE_FILE).close()
    SQLiteCircuitLog(state).close()
    loaded = _loaded_after(["health", "--json", "--state-dir", "batch"], prefix="", cwd=tmp_path)
    assert "backstay.store.sqlite.health_reads" in loaded  # it did read the batch
    # Neither the stores nor the engine's records and spec codec they load.
    heavy = ("backstay.store.sqlite.tasks", "backstay.store.sqlite.operations",
             "backstay.store.sqlite.circuit_log", "backstay.engine.records",
             "backstay.engine._spec_codec", "backstay.observe.batch_view")  # fmt: skip
    assert not [name for name in loaded if name.startswith(heavy)]
    assert not [name for name in loaded if name.split(".")[0] in ("typer", "rich", "pydantic")]


def test_health_on_a_plain_redis_url_imports_no_redis_py_and_no_redis_store(
    tmp_path: Path, redis_location: StoreLocation
) -> None:
    fill_redis(redis_location, tmp_path)
    args = ["health", "--json", "--state-dir", "batch", "--store", str(redis_location.url)]
    loaded = _loaded_after(args, prefix="", cwd=tmp_path)
    assert "backstay.store.redis.health_reads" in loaded  # it did read the batch
    # redis-py (with its asyncio client and the OpenTelemetry SDK it loads), pydantic, rich
    # (nothing is formatted), the stores.
    unwanted = ("redis", "opentelemetry", "pydantic", "pydantic_core", "rich", "typer")
    assert not [name for name in loaded if name.split(".")[0] in unwanted]
    heavy = ("backstay.store.redis.tasks", "backstay.store.open", "backstay.engine.task_index")
    assert not [name for name in loaded if name.startswith(heavy)]


def test_status_on_a_plain_redis_url_imports_no_redis_py_and_no_redis_store(
    tmp_path: Path, redis_location: StoreLocation
) -> None:
    fill_redis(redis_location, tmp_path)
    args = ["status", "--state-dir", "batch", "--store", str(redis_location.url)]
    loaded = _loaded_after(args, prefix="", cwd=tmp_path)
    assert "backstay.store.redis.status_reads" in loaded  # it did read the batch
    assert "backstay.cli._report" in loaded  # and showed its table
    # redis-py (with its asyncio client and the OpenTelemetry SDK it loads), pydantic, the
    # stores and the --json writer.
    unwanted = ("redis", "opentelemetry", "pydantic", "pydantic_core")
    assert not [name for name in loaded if name.split(".")[0] in unwanted]
    heavy = (
        "backstay.store.redis.tasks",
        "backstay.store.redis.bundle",
        "backstay.store.redis._client",
        "backstay.store.open",
        "backstay.cli._status_json",
    )
    assert not [name for name in loaded if name.startswith(heavy)]


def test_one_run_loads_no_engine_batch_display_or_store(tmp_path: Path) -> None:
    (tmp_path / "prompt.md").write_text("solve it", encoding="utf-8")
    (tmp_path / "ws").mkdir()
    (tmp_path / "scenario.yaml").write_text("{attempts: [[{result: done}]]}", encoding="utf-8")
    args = ["run", "--adapter", "mock", "--model", "m", "--prompt-file", "prompt.md"]
    args += ["--workspace", "ws", "--output-dir", "out", "--policy", "none"]
    loaded = _loaded_after(
        [*args, "--adapter-option", "scenario=scenario.yaml"], prefix="", cwd=tmp_path
    )
    assert "backstay.adapters.mock" in loaded  # it did run
    # Its lines are plain text: no rich; a fallback chain is loaded for a chain only.
    assert not [name for name in loaded if name.split(".")[0] == "rich"]
    assert "backstay.fallback.harness" not in loaded
    # Its flags, --timeout's default among them, are taken without typer's pydantic adapters
    # (cli._plain_values): an SDK that needs pydantic imports it in the attempt.
    assert not [name for name in loaded if name.split(".")[0] in ("pydantic", "pydantic_core")]
    assert "typer._adapters" not in loaded
    assert (tmp_path / "out" / METRICS_FILE).is_file()
    # A run's progress lines come from cli._progress_lines, not the batch's display.
    unwanted = (
        "backstay.engine",
        "backstay.cli._progress",
        "backstay.cli._report",
        "backstay.cli._state",
        "backstay.store.sqlite",
        "backstay.store.redis",
        "backstay.observe",
    )
    assert [name for name in loaded if name.startswith(unwanted)] == [
        "backstay.cli._progress_lines"
    ]


def test_what_the_state_commands_look_for_is_what_the_configuration_reads() -> None:
    assert STATE_COMMANDS_CONFIG_ENV_VAR == CONFIG_ENV_VAR
    assert CONFIG_ENV_PREFIX == ENV_PREFIX
    assert (
        DEFAULT_CONFIG_FILE,
        str(AGENT_CONFIG_FILE),
        str(CONTRACT_DEFAULTS_FILE),
    ) == CONFIG_FILES


def test_with_nothing_to_read_the_configuration_names_no_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [n for n in os.environ if n.upper().startswith("BACKSTAY")]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    assert not configured(None)
    config = load_config()
    # What store_location takes when it does not load the configuration.
    assert (config.store, config.store_unavailable) == (None, "stop")


@pytest.mark.parametrize(
    "where", ["backstay.yaml", "agent/config.yml", "config/defaults.yaml", "set", "env", "named"]
)
def test_a_configuration_to_read_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    for name in [n for n in os.environ if n.upper().startswith("BACKSTAY")]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    sets = None
    if where == "set":
        sets = ["store=redis://127.0.0.1:1"]
    elif where == "env":
        monkeypatch.setenv("backstay__store", "redis://127.0.0.1:1")
    elif where == "named":
        monkeypatch.setenv("BACKSTAY_CONFIG", "elsewhere.yaml")
    else:
        (tmp_path / where).parent.mkdir(exist_ok=True)
        (tmp_path / where).write_text("store: redis://127.0.0.1:1\n", encoding="utf-8")
    assert configured(sets)
