"""The adapter registry: lazy imports, entry points, and errors that say what to do.

Third-party adapters are installed for real: a module and a ``.dist-info`` with an
``entry_points.txt`` in a temporary directory put on ``sys.path``.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from types import MappingProxyType

import pytest
from tests.adapters.support import PLANNED_WHAT, plan_an_adapter

from backstay.adapters import registry
from backstay.adapters.capture import Capture
from backstay.adapters.contract import Adapter, AgentRequest
from backstay.adapters.mock import MockAdapter
from backstay.adapters.registry import (
    BUILTIN_ADAPTERS,
    ENTRY_POINT_GROUP,
    PLANNED_ADAPTERS,
    adapter_names,
    get_adapter,
)
from backstay.errors import ConfigError

ECHO_ADAPTER = """
from typing import ClassVar

from backstay.adapters import AgentResult, AgentStatus, BaseAdapter


class EchoAdapter(BaseAdapter):
    name: ClassVar[str] = "echo"

    async def execute(self, request, *, operation_id, attempt_id, capture):
        return AgentResult(status=AgentStatus.SUCCEEDED, output=request.read_prompt())


NOT_A_CLASS = 42


class NotAnAdapter:
    pass
"""

Install = Callable[..., str]


@pytest.fixture
def install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Install]:
    """Install a distribution with ``entry_points`` (name → target, ``{module}`` filled
    with the module made from ``source``); returns the module's name."""
    modules: list[str] = []

    def _install(entry_points: dict[str, str], source: str = ECHO_ADAPTER) -> str:
        module = f"backstay_test_plugin_{uuid.uuid4().hex[:8]}"
        modules.append(module)
        root = tmp_path / module
        root.mkdir()
        (root / f"{module}.py").write_text(textwrap.dedent(source), encoding="utf-8")
        dist = root / f"{module}-1.0.dist-info"
        dist.mkdir()
        (dist / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {module}\nVersion: 1.0\n", encoding="utf-8"
        )
        lines = [f"[{ENTRY_POINT_GROUP}]"]
        lines += [
            f"{name} = {target.format(module=module)}" for name, target in entry_points.items()
        ]
        (dist / "entry_points.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
        monkeypatch.syspath_prepend(str(root))
        return module

    yield _install
    for module in modules:
        sys.modules.pop(module, None)


def test_mock_is_built_in() -> None:
    assert "mock" in adapter_names()
    adapter = get_adapter("mock")
    assert isinstance(adapter, MockAdapter)
    assert isinstance(adapter, Adapter)


def test_adapter_modules_are_imported_only_when_asked_for() -> None:
    code = textwrap.dedent(
        """
        import sys
        from backstay.adapters import adapter_names, get_adapter
        adapter_names()
        assert "backstay.adapters.mock" not in sys.modules, "imported too early"
        get_adapter("mock")
        assert "backstay.adapters.mock" in sys.modules
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr


def test_a_planned_adapter_says_it_is_not_available_yet(monkeypatch: pytest.MonkeyPatch) -> None:
    name = plan_an_adapter(monkeypatch)
    with pytest.raises(ConfigError) as info:
        get_adapter(name)
    assert f"adapter {name!r} for {PLANNED_WHAT} is not available yet" in str(info.value)
    assert info.value.where == "adapter"


def test_every_adapter_backstay_set_out_to_ship_is_built_in() -> None:
    assert PLANNED_ADAPTERS == {}
    for name in ("claude-code", "codex", "gemini-cli", "aider", "opencode"):
        assert name in BUILTIN_ADAPTERS
    for name in ("anthropic-api", "openai-api", "gemini-api"):
        assert name in BUILTIN_ADAPTERS


def test_an_unknown_adapter_lists_the_available_ones() -> None:
    with pytest.raises(ConfigError) as info:
        get_adapter("no-such-agent")
    assert "unknown adapter 'no-such-agent'" in str(info.value)
    available = str(info.value).partition("available: ")[2].partition(";")[0]
    assert available.split(", ") == sorted(BUILTIN_ADAPTERS)
    assert "aider" in available


def test_an_entry_point_registers_a_third_party_adapter(install: Install) -> None:
    install({"echo": "{module}:EchoAdapter"})
    assert "echo" in adapter_names()
    adapter = get_adapter("echo")
    assert adapter.name == "echo"


def test_a_third_party_adapter_runs_under_the_contract(install: Install, tmp_path: Path) -> None:
    install({"echo": "{module}:EchoAdapter"})
    request = AgentRequest(
        model="m", prompt="hello", workspace=tmp_path, output_dir=tmp_path / "o", timeout_s=5
    )

    async def main() -> str:
        with Capture(request.output_dir) as capture:
            result = await get_adapter("echo").dispatch(
                request, operation_id="op", attempt_id="op/1", capture=capture
            )
        return result.output

    assert asyncio.run(main()) == "hello"


def test_an_entry_point_may_fill_a_planned_name(
    install: Install, monkeypatch: pytest.MonkeyPatch
) -> None:
    planned = {**registry.PLANNED_ADAPTERS, "planned-agent": "an agent still to come"}
    monkeypatch.setattr(registry, "PLANNED_ADAPTERS", MappingProxyType(planned))
    install({"planned-agent": "{module}:EchoAdapter"})
    assert type(get_adapter("planned-agent")).__name__ == "EchoAdapter"


def test_a_built_in_name_wins_over_an_entry_point(install: Install) -> None:
    install({"mock": "{module}:EchoAdapter"})
    assert isinstance(get_adapter("mock"), MockAdapter)


def test_a_missing_optional_dependency_names_the_install_command(
    install: Install, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(registry.OPTIONAL_DEPENDENCIES, "backstay_absent_sdk", "absent")
    install({"needs-sdk": "{module}:Adapter"}, source="import backstay_absent_sdk\n")
    with pytest.raises(ConfigError) as info:
        get_adapter("needs-sdk")
    assert "pip install 'backstay[absent]'" in str(info.value)


def test_a_missing_dependency_without_an_extra_names_the_package(install: Install) -> None:
    install({"needs-sdk": "{module}:Adapter"}, source="import backstay_absent_sdk.client\n")
    with pytest.raises(ConfigError) as info:
        get_adapter("needs-sdk")
    assert "'backstay_absent_sdk' package" in str(info.value)
    assert "pip install backstay_absent_sdk" in str(info.value)


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("backstay_test_missing_module:Adapter", "is not installed"),
        ("{module}:Missing", "does not exist"),
        ("{module}:NOT_A_CLASS", "is not a class"),
        ("{module}:NotAnAdapter", "does not implement the Adapter protocol"),
    ],
)
def test_a_broken_entry_point_is_a_clear_config_error(
    install: Install, target: str, message: str
) -> None:
    install({"broken": target})
    with pytest.raises(ConfigError) as info:
        get_adapter("broken")
    assert message in str(info.value)
    assert info.value.where == "adapter"
