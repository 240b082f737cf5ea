"""One Aider attempt's private files, command line and environment.

Every attempt gets a fresh folder (``AiderFiles``) holding Aider's ``HOME`` (seeded with
litellm's price list, so nothing is fetched), the prompt, the model settings, the
conventions file carrying the tier's system prompt, and the logs Aider writes about
itself: its analytics events (written to a local file only; nothing is sent), its LLM
history and its chat transcript. None of them lands in the workspace.

The model settings set ``max_retries: 0`` for every model (``aider/extra_params``): the
OpenAI SDK inside litellm then makes one HTTP call per Aider attempt, so that each of
Aider's own retries shows in its output ("Retrying in 0.5 seconds...") and is one API call.

A base URL (the ``base_url`` setting, a gateway's, or the provider's variable in the
request's environment) reaches Aider as ``providers`` says for the model's provider:
``--openai-api-base`` for an OpenAI-compatible model, ``ANTHROPIC_API_BASE`` or
``GEMINI_API_BASE`` for an ``anthropic/…`` or ``gemini/…`` one; ``timeout_s`` as Aider's
``--timeout``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from backstay.adapters.cli.aider.providers import provider_for
from backstay.adapters.cli.aider.settings import AiderSettings
from backstay.adapters.contract import AgentRequest
from backstay.agents import Located

__all__ = ["AiderFiles", "base_url_of", "command", "environment", "prepare", "tools_on"]

# Rich wraps Aider's output at the terminal width (80 without one): wide enough that an
# error and its provider message stay on one line.
OUTPUT_COLUMNS: Final = "10000"
# Every setting applied to every model Aider runs (see the module docstring).
_MODEL_SETTINGS: Final = [{"name": "aider/extra_params", "extra_params": {"max_retries": 0}}]


@dataclasses.dataclass(frozen=True, slots=True)
class AiderFiles:
    """Where one attempt's private files live, all inside ``root``."""

    root: Path

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def message(self) -> Path:
        return self.root / "message.txt"

    @property
    def model_settings(self) -> Path:
        return self.root / "model-settings.yml"

    @property
    def conventions(self) -> Path:
        return self.root / "conventions.md"

    @property
    def analytics(self) -> Path:
        return self.root / "analytics.jsonl"

    @property
    def llm_history(self) -> Path:
        return self.root / "llm-history.txt"

    @property
    def chat_history(self) -> Path:
        return self.root / "chat-history.md"

    @property
    def input_history(self) -> Path:
        return self.root / "input-history.txt"


def tools_on(request: AgentRequest) -> bool:
    """Whether the tier lets Aider edit files (its only tool under ``--yes-always``)."""
    tier = request.tier
    if tier is None:
        return True
    return tier.tools_enabled and tier.allowed_tools != ()


def prepare(files: AiderFiles, located: Located, request: AgentRequest, prompt: str) -> None:
    """Write the attempt's private files (``files.root`` exists and is empty)."""
    home = files.home
    for sub in ("tmp", ".config", ".cache", ".local/share", ".local/state"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    located.seed_home(home)
    files.message.write_text(prompt, encoding="utf-8")
    # JSON is YAML: Aider reads this file with yaml.safe_load.
    files.model_settings.write_text(json.dumps(_MODEL_SETTINGS), encoding="utf-8")
    if request.tier is not None and request.tier.system_prompt:
        files.conventions.write_text(request.tier.system_prompt, encoding="utf-8")


def base_url_of(settings: AiderSettings, model: str, env: Mapping[str, str]) -> str | None:
    """The base URL of ``model``'s provider: ``base_url`` from the settings, else the
    provider's variables in the request's environment, else none."""
    if settings.base_url:
        return settings.base_url
    for name in provider_for(model).base_urls:
        value = env.get(name, "").strip()
        if value:
            return value
    return None


def command(
    binary: Path, files: AiderFiles, request: AgentRequest, settings: AiderSettings
) -> list[str]:
    """Aider's command line for one non-interactive attempt."""
    argv = [
        str(binary),
        "--model",
        request.model,
        "--message-file",
        str(files.message),
        "--yes-always",
        "--no-check-update",
        "--analytics-disable",
        "--analytics-log",
        str(files.analytics),
        "--llm-history-file",
        str(files.llm_history),
        "--chat-history-file",
        str(files.chat_history),
        "--input-history-file",
        str(files.input_history),
        "--model-settings-file",
        str(files.model_settings),
        "--no-show-release-notes",
        "--no-show-model-warnings",
        "--no-pretty",
        "--no-fancy-input",
        "--no-detect-urls",
        "--no-suggest-shell-commands",
        "--no-auto-lint",
        "--no-auto-test",
        "--stream" if settings.stream else "--no-stream",
    ]
    if settings.git:
        argv += ["--no-gitignore", "--no-dirty-commits"]
    else:
        argv.append("--no-git")
    argv.append("--auto-commits" if settings.auto_commits else "--no-auto-commits")
    base_url = base_url_of(settings, request.model, request.env)
    if base_url is not None and provider_for(request.model).base_url_env is None:
        argv += ["--openai-api-base", base_url]
    if settings.timeout_s is not None:
        argv += ["--timeout", f"{settings.timeout_s:g}"]
    if not tools_on(request):
        argv += ["--chat-mode", "ask"]
    elif settings.edit_format is not None:
        argv += ["--edit-format", settings.edit_format]
    if files.conventions.exists():
        argv += ["--read", str(files.conventions)]
    return [*argv, *settings.extra_args]


def _given(request: AgentRequest, settings: AiderSettings | None) -> dict[str, str]:
    """The request's environment with the model's base URL, if one is given, in the one
    variable litellm reads first for its provider (the provider's others taken out)."""
    given = dict(request.env)
    if settings is None:
        return given
    provider = provider_for(request.model)
    base_url = base_url_of(settings, request.model, given)
    if base_url is None:
        return given
    for name in provider.base_urls:
        given.pop(name, None)
    if provider.base_url_env is not None:
        given[provider.base_url_env] = base_url
    return given


def environment(
    files: AiderFiles,
    located: Located,
    request: AgentRequest,
    settings: AiderSettings | None = None,
) -> dict[str, str]:
    """Aider's whole environment: the request's (the entry point built it: the provider
    variables it inherited and the variables it was told to pass), with ``PATH`` and ``LANG``
    defaulted, the model's base URL where litellm reads it (given ``settings``), and the
    run's private ``HOME`` and the switches that keep Aider quiet and offline put over it."""
    given = _given(request, settings)
    home = str(files.home)
    own = {
        "HOME": home,
        "TMPDIR": str(files.home / "tmp"),
        "XDG_CONFIG_HOME": f"{home}/.config",
        "XDG_CACHE_HOME": f"{home}/.cache",
        "XDG_DATA_HOME": f"{home}/.local/share",
        "XDG_STATE_HOME": f"{home}/.local/state",
        # Lines must reach backstay as Aider prints them (retry and stall detection).
        "PYTHONUNBUFFERED": "1",
        "COLUMNS": OUTPUT_COLUMNS,
        "NO_COLOR": "1",
        **located.offline_env,
    }
    env = {"PATH": os.defpath, "LANG": "C.UTF-8", **given, **own}
    # Aider offers to open the URLs in error messages, and --yes-always accepts: the
    # "browser" is a program that does nothing.
    true = shutil.which("true", path=env["PATH"])
    if true is not None:
        env["BROWSER"] = true
    return env
