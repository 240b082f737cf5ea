"""opencode's request timeout (``request_timeout_s``: the provider's ``headerTimeout`` and
``chunkTimeout`` in ``OPENCODE_CONFIG_CONTENT``), and, through the real opencode inside a
private network namespace, that it is the limit opencode's requests live by: a 2 s limit
ends a request the provider holds for 6 s, a 30 s one lets it through (opencode's own
limit, 300 s, is too long to show in a test). The real runs are ``slow``: opencode starts
slowly.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest
from tests.adapters.cli_provider import BASE_ENV, Providers, installed, namespace_providers
from tests.adapters.support import CANARY_KEY

from backstay.adapters.cli.opencode import OpencodeAdapter
from backstay.adapters.cli.opencode.settings import OpencodeSettings, config_content
from backstay.errors import ConfigError

MODEL: Final = "gpt-5.4"
HELD_S: Final = 6.0


def test_the_setting_becomes_the_providers_header_and_chunk_timeouts() -> None:
    settings = OpencodeSettings.from_config({"request_timeout_s": 960})
    options = json.loads(config_content(settings, MODEL, None))["provider"]["openai"]["options"]
    assert (options["headerTimeout"], options["chunkTimeout"]) == (960_000, 960_000)
    unset = json.loads(config_content(OpencodeSettings.from_config({}), MODEL, None))
    assert "headerTimeout" not in unset["provider"]["openai"]["options"]
    with pytest.raises(ConfigError, match="request_timeout_s"):
        OpencodeSettings.from_config({"request_timeout_s": -1})


@pytest.fixture(scope="module")
def providers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Providers]:
    yield from namespace_providers(tmp_path_factory)


def _run_held(providers: Providers, tmp_path: Path, timeout_s: float) -> tuple[int, str]:
    """One run whose first request the provider holds ``HELD_S`` before answering."""
    installed("opencode")
    served = providers.serve(
        {
            "reply": {"text": "Done."},
            "faults": [{"fault": "slow", "requests": [1], "delay_s": HELD_S}],
        }
    )
    workspace, out = tmp_path / "workspace", tmp_path / "out"
    workspace.mkdir()
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Say done.", encoding="utf-8")
    config = {"base_url": f"{served.url}/v1", "request_timeout_s": timeout_s}
    env = {**BASE_ENV, "OPENAI_API_KEY": CANARY_KEY}
    adapter = OpencodeAdapter(launcher=providers.launcher)
    code = adapter.run(MODEL, prompt, workspace, out, config, 90.0, env=env, policy="no_retry")
    return code, (out / "agent.log").read_text()


@pytest.mark.slow
def test_the_real_cli_gives_up_on_a_request_held_past_its_limit(
    providers: Providers, tmp_path: Path
) -> None:
    code, log = _run_held(providers, tmp_path, timeout_s=2.0)
    assert code != 0, log
    assert "ProviderHeaderTimeoutError" in log, log


@pytest.mark.slow
def test_the_real_cli_waits_for_a_request_held_within_its_limit(
    providers: Providers, tmp_path: Path
) -> None:
    code, log = _run_held(providers, tmp_path, timeout_s=30.0)
    assert code == 0, log
