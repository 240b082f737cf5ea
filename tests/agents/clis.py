"""How the agent tests run each real CLI against the fake provider: a private HOME per run
and the command line and environment of a one-shot, non-interactive prompt (as in
shared/facts/agent-clis.md, sections 1 and 4–8)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Final

from backstay.agents import Located

# A key-shaped canary: it reaches the fake provider and must never be printed.
CANARY_KEY: Final = "sk-proj-CanaryAgentKey0123456789abcdef"


@dataclasses.dataclass(frozen=True, slots=True)
class Run:
    """One CLI run: its command line and its whole environment."""

    argv: list[str]
    env: dict[str, str]


def private_home(root: Path) -> dict[str, str]:
    """A fresh HOME with every config, data, state and temp directory inside it."""
    home = root / "home"
    for sub in ("tmp", ".config", ".cache", ".local/share", ".local/state"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    return {
        "HOME": str(home),
        "TMPDIR": str(home / "tmp"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local/share"),
        "XDG_STATE_HOME": str(home / ".local/state"),
        "PATH": "/usr/bin:/bin",
        "LANG": "C.UTF-8",
    }


def claude_code(cli: Located, url: str, base: dict[str, str], prompt: str) -> Run:
    env = base | {
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": CANARY_KEY,
        "CLAUDE_CONFIG_DIR": f"{base['HOME']}/.claude",
        "CLAUDE_CODE_MAX_RETRIES": "0",
    }
    argv = [str(cli.path), "-p", prompt, "--output-format", "json", "--model", "claude-sonnet-4-5"]
    return Run(argv, env)


def codex(cli: Located, url: str, base: dict[str, str], prompt: str) -> Run:
    provider = (
        f'{{name="local",base_url="{url}/v1",env_key="LOCAL_KEY",wire_api="responses",'
        "request_max_retries=0,stream_max_retries=0,stream_idle_timeout_ms=5000}"
    )
    codex_home = Path(base["HOME"]) / ".codex"
    codex_home.mkdir(exist_ok=True)
    env = base | {"LOCAL_KEY": CANARY_KEY, "CODEX_HOME": str(codex_home)}
    argv = [
        str(cli.path),
        "exec",
        "--json",
        "--skip-git-repo-check",
        "--dangerously-bypass-approvals-and-sandbox",
        "--ephemeral",
        "-m",
        "gpt-5.4",
        "-c",
        "model_provider=local",
        "-c",
        f"model_providers.local={provider}",
        "-c",
        "check_for_update_on_startup=false",
        "-c",
        "analytics.enabled=false",
        prompt,
    ]
    return Run(argv, env)


def gemini_cli(cli: Located, url: str, base: dict[str, str], prompt: str) -> Run:
    settings = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True, "maxAttempts": 1},
    }
    folder = Path(base["HOME"]) / ".gemini"
    folder.mkdir(exist_ok=True)
    (folder / "settings.json").write_text(json.dumps(settings))
    env = base | {
        "GOOGLE_GEMINI_BASE_URL": url,
        "GEMINI_API_KEY": CANARY_KEY,
        # 0.61.0 refuses an untrusted folder in headless mode (exit 55) without it.
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
    }
    argv = [str(cli.path), "-p", prompt, "--output-format", "json", "-m", "gemini-2.5-flash"]
    return Run(argv, env)


def aider(cli: Located, url: str, base: dict[str, str], prompt: str) -> Run:
    cli.seed_home(Path(base["HOME"]))
    env = base | {"OPENAI_API_KEY": CANARY_KEY}
    argv = [
        str(cli.path),
        "--model",
        "openai/gpt-4o-mini",
        "--message",
        prompt,
        "--openai-api-base",
        f"{url}/v1",
        "--yes-always",
        "--no-git",
        "--no-auto-commits",
        "--no-check-update",
        "--analytics-disable",
        "--no-show-release-notes",
        "--no-pretty",
        "--no-fancy-input",
        "--no-show-model-warnings",
        "--map-tokens",
        "0",
        "--no-stream",
    ]
    return Run(argv, env)


def opencode(cli: Located, url: str, base: dict[str, str], prompt: str) -> Run:
    config = {
        "provider": {
            "openai": {
                "options": {"baseURL": f"{url}/v1", "apiKey": CANARY_KEY},
                "models": {"gpt-5.4": {}},
            }
        }
    }
    env = base | {"OPENCODE_CONFIG_CONTENT": json.dumps(config)}
    argv = [str(cli.path), "run", "--format", "json", "-m", "openai/gpt-5.4", prompt]
    return Run(argv, env)


Builder = Callable[[Located, str, dict[str, str], str], Run]

BUILDERS: Final[dict[str, Builder]] = {
    "claude-code": claude_code,
    "codex": codex,
    "gemini-cli": gemini_cli,
    "aider": aider,
    "opencode": opencode,
}

# What one text answer costs each CLI in calls to the fake provider, by its API.
CALLS: Final[dict[str, dict[str, int]]] = {
    "claude-code": {"anthropic": 1},
    "codex": {"openai-responses": 1},
    "gemini-cli": {"gemini": 1},
    "aider": {"openai-chat": 1},
    "opencode": {"openai-responses": 2},  # a title call and the answer
}
