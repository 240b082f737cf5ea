"""Gemini CLI's request timeout (``request_timeout_s``, ``gemini_cli.fetch_timeouts``): the
preload script and the variables a run gets, and, through the real CLI inside a private
network namespace, that the limit it sets is the one the CLI's requests live by: a 2 s
limit ends a request the provider holds for 6 s, a 30 s one lets it through (the CLI's
own limit is 60 s, too long to show here: tests/gateway/test_runs_timeouts.py holds a
request longer than that, through the gateway).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest
from tests.adapters.cli_provider import BASE_ENV, Providers, installed, namespace_providers
from tests.adapters.support import CANARY_KEY

from backstay.adapters.cli.gemini_cli import GeminiCliAdapter
from backstay.adapters.cli.gemini_cli.fetch_timeouts import FILE_NAME, TIMEOUT_ENV, timeout_env
from backstay.adapters.cli.gemini_cli.settings import parse_settings
from backstay.adapters.contract import AgentRequest
from backstay.errors import ConfigError

MODEL: Final = "gemini-2.5-flash"
HELD_S: Final = 6.0


def test_the_setting_is_checked() -> None:
    assert parse_settings({}).request_timeout_s is None
    assert parse_settings({"request_timeout_s": 90}).request_timeout_s == 90.0
    with pytest.raises(ConfigError, match="request_timeout_s"):
        parse_settings({"request_timeout_s": 0})
    with pytest.raises(ConfigError, match="request_timeout_s"):
        parse_settings({"request_timeout_s": "soon"})


def test_timeout_env_writes_the_preload_and_keeps_the_node_options_given(tmp_path: Path) -> None:
    env = timeout_env(tmp_path / "g", 960.0, {"NODE_OPTIONS": "--max-old-space-size=4096"})
    preload = tmp_path / "g" / FILE_NAME
    assert preload.is_file()
    assert preload.stat().st_mode & 0o777 == 0o600
    assert env[TIMEOUT_ENV] == "960000"
    assert env["NODE_OPTIONS"] == f'--max-old-space-size=4096 --require "{preload}"'
    assert env["BACKSTAY_FETCH_TIMEOUT_REQUIRE"] == f'--require "{preload}"'


def test_node_loads_the_preload_from_a_folder_whose_name_has_quotes_and_backslashes(
    tmp_path: Path,
) -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    folder = tmp_path / 'a "quoted\\ folder'
    env = timeout_env(folder, 5.0, {"NODE_OPTIONS": "--max-old-space-size=512"})
    script = "console.log(String(fetch).includes('dispatcher'), process.env.NODE_OPTIONS || '-')"
    base = {"PATH": os.environ.get("PATH", "/usr/bin"), "HOME": str(tmp_path)}
    loaded = subprocess.run(
        [node, "-e", script],
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.split()[0] == "true"  # fetch wrapped by the preload
    relaunched = subprocess.run(
        [node, "-e", script],
        check=False,
        env={**base, **env, "GEMINI_CLI_NO_RELAUNCH": "true"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert relaunched.returncode == 0, relaunched.stderr
    assert relaunched.stdout.split() == ["true", "--max-old-space-size=512"]  # took itself out


def _request(tmp_path: Path, **config: Any) -> AgentRequest:
    return AgentRequest(
        model=MODEL,
        workspace=tmp_path,
        output_dir=tmp_path / "out",
        timeout_s=60.0,
        prompt="hi",
        env={"PATH": "/usr/bin", "NODE_OPTIONS": "--inspect", "GEMINI_API_KEY": CANARY_KEY},
        config=config,
    )


def test_a_run_without_the_setting_gets_no_preload(tmp_path: Path) -> None:
    adapter = GeminiCliAdapter()
    request = _request(tmp_path)
    env = adapter.write_home(request, adapter.settings_for(request), tmp_path / "home")
    assert "NODE_OPTIONS" not in env
    assert not (tmp_path / "home" / ".gemini" / FILE_NAME).exists()


def test_a_run_with_the_setting_loads_the_preload_and_only_passed_node_options(
    tmp_path: Path,
) -> None:
    adapter = GeminiCliAdapter()
    request = _request(tmp_path, request_timeout_s=75)
    env = adapter.write_home(request, adapter.settings_for(request), tmp_path / "home")
    preload = tmp_path / "home" / ".gemini" / FILE_NAME
    assert env["NODE_OPTIONS"] == f'--require "{preload}"'  # NODE_OPTIONS not in pass_env
    assert env[TIMEOUT_ENV] == "75000"
    passed = _request(tmp_path, request_timeout_s=75, pass_env=["NODE_OPTIONS"])
    env = adapter.write_home(passed, adapter.settings_for(passed), tmp_path / "home2")
    assert env["NODE_OPTIONS"].startswith("--inspect --require ")


@pytest.fixture(scope="module")
def providers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Providers]:
    yield from namespace_providers(tmp_path_factory)


def _run_held(providers: Providers, tmp_path: Path, timeout_s: float) -> tuple[int, str]:
    """One run whose only request the provider holds ``HELD_S`` before answering."""
    installed("gemini-cli")
    served = providers.serve(
        {
            "session": {
                "turns": [{"shell": 'echo "options=$NODE_OPTIONS" > seen.txt'}],
                "final": "Done.",
            },
            "faults": [{"fault": "slow", "requests": [1], "delay_s": HELD_S}],
        }
    )
    workspace, out = tmp_path / "workspace", tmp_path / "out"
    workspace.mkdir()
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Say done.", encoding="utf-8")
    config = {
        "base_url": served.url,
        "launcher": providers.launcher,
        "request_timeout_s": timeout_s,
    }
    env = {**BASE_ENV, "GEMINI_API_KEY": CANARY_KEY}
    code = GeminiCliAdapter().run(
        MODEL, prompt, workspace, out, config, 90.0, env=env, policy="no_retry"
    )
    return code, (out / "agent.log").read_text()


def test_the_real_cli_gives_up_on_a_request_held_past_its_limit(
    providers: Providers, tmp_path: Path
) -> None:
    code, log = _run_held(providers, tmp_path, timeout_s=2.0)
    assert code != 0, log
    assert "fetch failed" in log, log


def test_the_real_cli_waits_for_a_request_held_within_its_limit(
    providers: Providers, tmp_path: Path
) -> None:
    code, log = _run_held(providers, tmp_path, timeout_s=30.0)
    assert code == 0, log
    assert json.loads((tmp_path / "out" / "metrics.json").read_text())["api_calls"] == 2
    # The relaunched CLI took the preload out of NODE_OPTIONS: its shell commands lack it.
    assert (tmp_path / "workspace" / "seen.txt").read_text() == "options=\n"
