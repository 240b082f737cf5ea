"""The agent CLIs backstay knows: where each comes from, the versions its adapter was proven
against, and the one ``backstay agents install`` installs.

A ``CliSpec`` is data. ``pinned`` is the known-good version installed by default; it is
always one of ``supported``, the versions the adapter's command lines and output parsing
were checked against (``docs/agents/install.md`` says how to add one). ``offline_env``
holds the switches that keep the CLI from reaching the network on its own (update checks,
telemetry, price lists); ``home_seed`` names files of the installation that a run's
private ``HOME`` needs so that the CLI never fetches them (Aider's price list).
"""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from backstay._checks import check_name
from backstay.errors import ConfigError

__all__ = ["CLIS", "CliSpec", "PackageKind", "cli_names", "cli_spec"]

# A release number as CLIs print it: 2.1.197, 0.61.0, 1.0.0-beta.3.
_VERSION: Final = r"\d+\.\d+\.\d+(?:-[0-9A-Za-z.\-]+)?"
_NAME: Final = re.compile(r"^[a-z][a-z0-9\-]*$")


class PackageKind(enum.StrEnum):
    """The registry a CLI is installed from."""

    NPM = "npm"
    PYPI = "pypi"


def _frozen_strings(value: object, where: str) -> Mapping[str, str]:
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and k and isinstance(v, str) for k, v in value.items()
    ):
        raise ConfigError("must map non-empty strings to strings", where=where)
    return MappingProxyType(dict(value))


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CliSpec:
    """One agent CLI (see the module docstring).

    * ``name``: the adapter name (``claude-code``); also the folder of its installation.
    * ``kind`` and ``package``: the npm package or the PyPI distribution.
    * ``binary``: the program's name on ``PATH`` (``claude``).
    * ``pinned``: the version ``backstay agents install`` installs.
    * ``supported``: every version the adapter accepts; ``pinned`` is one of them.
    * ``min_node``: the oldest Node.js major version the npm package runs on.
    """

    name: str
    kind: PackageKind
    package: str
    binary: str
    pinned: str
    supported: tuple[str, ...]
    min_node: int | None = None
    offline_env: Mapping[str, str] = dataclasses.field(default_factory=dict)
    home_seed: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        check_name(self.name, where="name")
        if not _NAME.match(self.name):
            raise ConfigError(
                f"must be lower-case letters, digits and dashes, got {self.name!r}", where="name"
            )
        try:
            object.__setattr__(self, "kind", PackageKind(self.kind))
        except ValueError:
            raise ConfigError(
                f"must be one of {[k.value for k in PackageKind]}, got {self.kind!r}",
                where=f"{self.name}.kind",
            ) from None
        for field in ("package", "binary", "pinned"):
            check_name(getattr(self, field), where=f"{self.name}.{field}")
        if "/" in self.binary:
            raise ConfigError(
                f"must be a program name, not a path: {self.binary!r}", where=f"{self.name}.binary"
            )
        given: object = self.supported
        if isinstance(given, str) or not isinstance(given, tuple | list):
            raise ConfigError(
                f"must be a list of versions, got {given!r}", where=f"{self.name}.supported"
            )
        supported = tuple(given)
        for i, version in enumerate(supported):
            if not isinstance(version, str) or not re.fullmatch(_VERSION, version):
                raise ConfigError(
                    f"must be a version such as 1.2.3, got {version!r}",
                    where=f"{self.name}.supported[{i}]",
                )
        if self.pinned not in supported:
            raise ConfigError(
                f"{self.pinned!r} is not one of the supported versions {list(supported)}",
                where=f"{self.name}.pinned",
            )
        object.__setattr__(self, "supported", supported)
        if self.min_node is not None and (
            isinstance(self.min_node, bool) or not isinstance(self.min_node, int)
        ):
            raise ConfigError(
                f"must be a Node.js major version, got {self.min_node!r}",
                where=f"{self.name}.min_node",
            )
        object.__setattr__(
            self, "offline_env", _frozen_strings(self.offline_env, f"{self.name}.offline_env")
        )
        object.__setattr__(
            self, "home_seed", _frozen_strings(self.home_seed, f"{self.name}.home_seed")
        )
        for target in self.home_seed:
            if target.startswith("/") or ".." in target.split("/"):
                raise ConfigError(
                    f"must be a path inside HOME, got {target!r}", where=f"{self.name}.home_seed"
                )

    @property
    def requirement(self) -> str:
        """The pinned package as its installer writes it: ``pkg@1.2.3`` or ``pkg==1.2.3``."""
        if self.kind is PackageKind.NPM:
            return f"{self.package}@{self.pinned}"
        return f"{self.package}=={self.pinned}"

    @property
    def install_hint(self) -> str:
        """The command that installs the pinned version."""
        return f"backstay agents install {self.name}"

    def parse_version(self, text: str) -> str | None:
        """The version in what ``<binary> --version`` printed, or ``None``."""
        match = re.search(_VERSION, text)
        return match.group(0) if match else None


# Switches that keep every run on loopback (docs: /agents/install.md, "network isolation").
_CLAUDE_OFFLINE: Final = {
    "DISABLE_AUTOUPDATER": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
}
_OPENCODE_OFFLINE: Final = {
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
}
# litellm (inside Aider) fetches its model price list on every start unless told to use
# the copy it ships, which the run's HOME gets through ``home_seed``.
_AIDER_OFFLINE: Final = {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}
_AIDER_PRICES: Final = "model_prices_and_context_window"

CLIS: Final[Mapping[str, CliSpec]] = MappingProxyType(
    {
        spec.name: spec
        for spec in (
            CliSpec(
                name="claude-code",
                kind=PackageKind.NPM,
                package="@anthropic-ai/claude-code",
                binary="claude",
                pinned="2.1.197",
                supported=("2.1.197",),
                min_node=18,
                offline_env=_CLAUDE_OFFLINE,
            ),
            CliSpec(
                name="codex",
                kind=PackageKind.NPM,
                package="@openai/codex",
                binary="codex",
                pinned="0.169.0",
                supported=("0.169.0",),
                min_node=16,
            ),
            CliSpec(
                name="gemini-cli",
                kind=PackageKind.NPM,
                package="@google/gemini-cli",
                binary="gemini",
                pinned="0.61.0",
                supported=("0.61.0",),
                min_node=20,
            ),
            CliSpec(
                name="aider",
                kind=PackageKind.PYPI,
                package="aider-chat",
                binary="aider",
                pinned="0.86.2",
                supported=("0.86.2",),
                offline_env=_AIDER_OFFLINE,
                home_seed={
                    f".aider/caches/{_AIDER_PRICES}.json": (
                        f"lib/python*/site-packages/litellm/{_AIDER_PRICES}_backup.json"
                    )
                },
            ),
            CliSpec(
                name="opencode",
                kind=PackageKind.NPM,
                package="opencode-ai",
                binary="opencode",
                pinned="1.18.33",
                supported=("1.18.33",),
                min_node=18,
                offline_env=_OPENCODE_OFFLINE,
            ),
        )
    }
)


def cli_names() -> tuple[str, ...]:
    """The names of the known CLIs, in the catalogue's order."""
    return tuple(CLIS)


def cli_spec(name: str, *, where: str = "name") -> CliSpec:
    """The known CLI ``name``; ``ConfigError`` listing the known ones otherwise."""
    spec = CLIS.get(name) if isinstance(name, str) else None
    if spec is None:
        raise ConfigError(f"unknown agent CLI {name!r} (known: {', '.join(CLIS)})", where=where)
    return spec
