"""One Aider attempt's private files, command line and environment.

Every attempt gets a fresh folder (``AiderFiles``) holding Aider's ``HOME`` (seeded with
litellm's price list, so nothing is fetched), the prompt, the model settings, the
conventions file carrying the tier's system prompt, and the logs Aider writes about
itself: its analytics events (written to a local file only; nothing is sent), its LLM
history and its chat transcript. None of them lands in the workspace.

The model settings set ``max_retries: 0`` for every model (``aider/extra_params``): the
OpenAI SDK inside litellm then makes one HTTP call per Aider attempt, so that each of
Aider's own retries shows in its output ("Retrying in 0.5 seconds...") and is one API call.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from backstay.adapters.cli.aider.settings import AiderSettings
from backstay.adapters.contract import AgentRequest
from backstay.agents import Located

__all__ = ["AiderFiles", "command", "environment", "prepare", "tools_on"]

# Rich wraps Aider's output at the terminal width (80 without one): wide enough that an
# error and its provider message stay on one line.
OUTPUT_COLUMNS: Final = "10000"
BASE_URL_VARIABLES: Final = ("OPENAI_API_BASE", "OPENAI_BASE_URL")
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


def base_url_of(settings: AiderSettings, env: Mapping[str, str]) -> str | None:
    """``base_url`` from the settings, else from the request's environment, else none."""
    if settings.base_url:
        return settings.base_url
    for name in BASE_URL_VARIABLES:
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
    base_url = base_url_of(settings, request.env)
    if base_url is not None:
        argv += ["--openai-api-base", base_url]
    if not tools_on(request):
        argv += ["--chat-mode", "ask"]
    elif settings.edit_format is not None:
        argv += ["--edit-format", settings.edit_format]
    if files.conventions.exists():
        argv += ["--read", str(files.conventions)]
    return [*argv, *settings.extra_args]


def environment(files: AiderFiles, located: Located, request: AgentRequest) -> dict[str, str]:
    """Aider's whole environment: the request's (the entry point built it: the provider
    variables it inherited and the variables it was told to pass), with ``PATH`` and ``LANG``
    defaulted, and the run's private ``HOME`` and the switches that keep Aider quiet and
    offline put over it."""
    given = request.env
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
